"""The default embedded backend: a GGUF model run in-process by xllamacpp.

xllamacpp is a prebuilt (abi3 manylinux) wheel of llama.cpp with its server embedded in the
process, so a fresh machine installs it in seconds with no compiler, where llama-cpp-python
compiles llama.cpp for 4 to 6 minutes (the optional `llamacpp` backend). The server decodes
`max_concurrency` requests at once in parallel slots with continuous batching; the engine sends
that many requests concurrently (`serial` is False: the server queues requests itself).

Reproducibility, measured here: the same prompt and seed give the same text only when the
logits do not depend on what else the runtime processed. Two things break that in llama.cpp on
CPU: (1) prefix reuse: a prompt whose prefix is already in the slot's KV cache evaluates only its
last token, and the logits of a 66-token prompt then differed from a fresh evaluation by 0.04
nats (batch-size-dependent matmul kernels); (2) parallel slots: a token decoded in a batch with
other sequences gets slightly different logits, and the output tokens of 24 prompts changed
with the number of slots (849 with 1 slot, 809 with 8). So prompt caching is always off, and
the default is one slot (`max_concurrency: 1`); more slots are faster and documented as not
reproducible (benchmarks/bench_embedded.py measures both).

Runtimes are closed at interpreter exit, before Python tears down the modules they use.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
import xllamacpp

from audit.llm.backends.base import (
    BackendError,
    ChatRequest,
    Completion,
    first_tokens_decide,
    usable_threads,
)
from audit.llm.backends.packaged import file_digest
from audit.llm.model_sources import model_file
from audit.config import ModelConfig

log = logging.getLogger(__name__)

# Samplers that ChatRequest does not carry, pinned to llama.cpp's defaults so that a runtime
# upgrade that changes a default cannot change an answer silently; the rest are switched off.
PINNED_SAMPLING: dict[str, Any] = {
    "top_k": 40, "min_p": 0.05, "typical_p": 1.0, "repeat_last_n": 64,
    "presence_penalty": 0.0, "frequency_penalty": 0.0, "mirostat": 0, "dry_multiplier": 0.0,
    "xtc_probability": 0.0, "n_probs": 0,
    # Prefix reuse changes logits (see the module docstring): every prompt is evaluated whole.
    "cache_prompt": False,
}
# Raw next-token entries read from the one evaluation that opens every option scoring. The K-th
# entry's log-probability bounds every token outside them: on four discrim-eval prompts (Qwen2.5
# 0.5B, system prompt of the default model) it was -12.4 to -12.6 at K=200, and 11 of the 12
# case and spacing variants of "yes"/"no" were inside (10 at K=20, which cost two or three
# forced evaluations an answer).
TOP_LOGPROBS = 200
# An option whose first token is outside the top entries is read at that bound, not forced,
# when the bounds of all such options together are at most this share of the listed options'
# probability: its exact score could move a preference between them by no more than this.
NEGLIGIBLE_SHARE = 1e-4

# One runtime per file and settings, shared by the audited model and the judge when they name
# the same file and settings: loading twice would double memory for no gain.
_RUNTIMES: dict[tuple[str, int, int, int], Any] = {}
_RUNTIMES_GUARD = threading.Lock()


def load_runtime(path: Path, n_ctx: int, n_threads: int, n_parallel: int) -> Any:
    """The shared xllamacpp server for these settings, started on first use. Each of the
    `n_parallel` slots gets `n_ctx` tokens of context (llama.cpp divides the total among
    slots)."""
    key = (str(path), n_ctx, n_threads, n_parallel)
    with _RUNTIMES_GUARD:
        if key not in _RUNTIMES:
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = n_ctx * n_parallel
            params.n_parallel = n_parallel
            params.cpuparams.n_threads = n_threads
            params.cpuparams_batch.n_threads = n_threads
            params.cache_prompt = False
            params.cache_ram_mib = 0  # no host-memory prompt cache either
            params.verbosity = -1  # llama.cpp's per-request log lines say nothing to a user
            params.hostnames = ["127.0.0.1"]
            started = time.perf_counter()
            try:
                _RUNTIMES[key] = xllamacpp.Server(params)
            except Exception as error:  # noqa: BLE001 - a bad file fails inside llama.cpp
                raise BackendError("model_not_found", f"llama.cpp could not load {path}: "
                                                      f"{error}") from error
            log.info("loaded %s in %.2f s (%d slot(s), %d threads)", path.name,
                     time.perf_counter() - started, n_parallel, n_threads)
        return _RUNTIMES[key]


def close_runtimes() -> None:
    """Stop every runtime now (their slots finish, their threads join), while the interpreter
    is whole: left to module teardown, a runtime's destructor runs after the modules it needs
    are gone."""
    with _RUNTIMES_GUARD:
        runtimes = list(_RUNTIMES.values())
        _RUNTIMES.clear()
        # Tokens are cached by the runtime's loopback address, which a later runtime (another
        # model) may be given again.
        _tokenize.cache_clear()
    del runtimes


atexit.register(close_runtimes)


class EmbeddedBackend:
    # The runtime queues requests and decodes up to max_concurrency of them at once.
    serial = False

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.path = model_file(config)
        self.slots = max(1, config.max_concurrency)

    def identity(self) -> dict[str, str]:
        return {"backend": "embedded", "model": self.path.name, "digest": file_digest(self.path)}

    def runtime(self) -> Any:
        return load_runtime(self.path, self.config.n_ctx, usable_threads(self.config.n_threads),
                            self.slots)

    def complete(self, request: ChatRequest) -> Completion:
        if request.score_options:
            started = time.perf_counter()
            scores = self._score_options(request)
            return Completion(json.dumps(scores, sort_keys=True), 0, "scored",
                              time.perf_counter() - started)
        payload = self._payload(request)
        if request.json_schema is not None:
            payload["json_schema"] = request.json_schema
        started = time.perf_counter()
        reply = self._chat(payload)
        latency = time.perf_counter() - started
        return Completion.from_chat_reply(reply, latency)

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        return {
            **PINNED_SAMPLING,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "repeat_penalty": request.repeat_penalty,
            "seed": request.seed,
        }

    def _chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        reply = self.runtime().handle_chat_completions(payload)
        error = reply.get("error") if isinstance(reply, dict) else None
        if error is not None:
            kind = ("context_length" if error.get("type") == "exceed_context_size_error"
                    else "malformed_request" if error.get("code") == 400 else "server_error")
            raise BackendError(kind, f"embedded llama.cpp: {error.get('message', error)}")
        if not isinstance(reply, dict) or not reply.get("choices"):
            raise BackendError("malformed_reply", f"embedded llama.cpp replied {reply!r:.200}")
        return reply

    def _score_options(self, request: ChatRequest) -> dict[str, float]:
        """Each option's log-probability as the opening of the answer, from ONE evaluation of the
        prompt where it can be read there (a single-token option among the top entries: the
        number the forced path reports for its first step), and a forced evaluation of the
        prompt for the rest (a multi-token option, or an option outside the top entries
        that is not negligible). Whole options unless score_first_token asks for first tokens
        and they differ. Every forced evaluation costs a whole prompt evaluation (no prompt
        cache, module docstring): the 12 variants of "yes"/"no" took 45-60 s an answer forced one
        by one on a loaded machine, against one evaluation of about 5 s."""
        tokens = {option: self._tokens(option) for option in request.score_options}
        if first_tokens_decide(request, tokens):
            tokens = {option: ids[:1] for option, ids in tokens.items()}
        top, floor = self._first_step(request)
        scores = {option: top[ids[0]] for option, ids in tokens.items()
                  if len(ids) == 1 and ids[0] in top}
        unlisted = [option for option, ids in tokens.items() if ids[0] not in top]
        listed_mass = sum(math.exp(score) for score in scores.values())
        negligible = len(unlisted) * math.exp(floor) <= NEGLIGIBLE_SHARE * listed_mass
        for option, ids in tokens.items():
            if option in scores:
                continue
            scores[option] = (floor if option in unlisted and negligible
                              else self._forced_logprob(request, ids))
        return scores

    def _first_step(self, request: ChatRequest) -> tuple[dict[int, float], float]:
        """The raw next-token log-probabilities of the top TOP_LOGPROBS entries after the prompt,
        by token id, and the lowest of them (a bound on every other token)."""
        payload = {**self._payload(request), "temperature": 0.0, "max_tokens": 1,
                   "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        steps = self._logprob_steps(self._chat(payload))
        top = {entry.get("id"): float(entry["logprob"])
               for entry in (steps[0].get("top_logprobs") or [])} if steps else {}
        return top, min(top.values(), default=0.0)

    def _forced_logprob(self, request: ChatRequest, tokens: tuple[int, ...]) -> float:
        """Log-probability of `tokens` as the opening of the answer: the sum of each token's
        log-probability given the prompt and the tokens before it.

        The tokens (an option's canonical tokenization) are forced one by one with a token-id
        grammar, and llama.cpp reports each forced token's probability under the model's raw
        logits (before any sampler or grammar). A string grammar would not do: it lets the
        runtime pick another split ("A"+"P"+"PRO"+"VE" for "APPROVE", whose "P" has a
        log-probability of -11), which is not the word's probability."""
        payload = {**self._payload(request), "temperature": 0.0, "max_tokens": len(tokens),
                   "logprobs": True, "top_logprobs": 1,
                   "grammar": "root ::= " + " ".join(f"<[{token}]>" for token in tokens)}
        steps = self._logprob_steps(self._chat(payload))
        if [step.get("id") for step in steps] != list(tokens):
            raise BackendError("malformed_reply", f"scoring decoded "
                                                  f"{[step.get('id') for step in steps]}, "
                                                  f"not the forced tokens {list(tokens)}")
        return float(sum(step["logprob"] for step in steps))

    @staticmethod
    def _logprob_steps(reply: dict[str, Any]) -> list[dict[str, Any]]:
        return (reply["choices"][0].get("logprobs") or {}).get("content") or []

    def _tokens(self, text: str) -> tuple[int, ...]:
        return _tokenize(self.runtime().listening_address, text)


@lru_cache(maxsize=4096)
def _tokenize(address: str, text: str) -> tuple[int, ...]:
    """The model's own tokenization of `text` (no BOS, special tokens read as text), from the
    runtime's loopback endpoint: xllamacpp exposes no tokenizer call in Python."""
    reply = httpx.post(f"{address}/tokenize",
                       json={"content": text, "add_special": False, "parse_special": False},
                       timeout=30)
    reply.raise_for_status()
    return tuple(int(token) for token in reply.json()["tokens"])
