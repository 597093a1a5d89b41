"""The optional `llamacpp` backend: a GGUF model run in-process by llama-cpp-python.

The default embedded backend is `embedded` (audit.llm.backends.embedded, the prebuilt xllamacpp
wheel). This one needs the `llamacpp` extra, which compiles llama.cpp from source (`make
setup-llamacpp`, with the portable flags): it decodes one request at a time, with a fresh context
for each, and is kept for comparison with earlier audits made with it.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import log_softmax

from audit.llm.backends.base import (
    NO_SCORING_FIX,
    BackendError,
    ChatRequest,
    Completion,
    first_tokens_decide,
    usable_threads,
)
# Re-exported: callers (and tests) that located models through this module keep working.
from audit.llm.backends.packaged import PACKAGED_MODELS, file_digest  # noqa: F401
from audit.llm.model_sources import model_file
from audit.config import ModelConfig

log = logging.getLogger(__name__)

# One loaded model per file and context settings, shared by the audited model and the judge when
# they name the same file: loading twice would double memory for no gain. llama.cpp contexts are
# not thread-safe, so each shared model carries its own lock.
_LOADED: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LOADED_GUARD = threading.Lock()


def _load(path: Path, n_ctx: int, n_threads: int) -> tuple[Any, threading.Lock]:
    key = (str(path), n_ctx, n_threads)
    with _LOADED_GUARD:
        if key not in _LOADED:
            from llama_cpp import Llama  # imported here: a heavy native import

            started = time.perf_counter()
            llm = Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False, seed=0
            )
            log.info("loaded %s in %.2f s", path.name, time.perf_counter() - started)
            _LOADED[key] = (llm, threading.Lock())
        return _LOADED[key]


def close_models() -> None:
    """Free every loaded model now, while the interpreter is whole. Left to interpreter teardown,
    llama-cpp-python's `Llama.__del__` runs after the module globals it calls are gone and prints
    "TypeError: 'NoneType' object is not callable" under "Exception ignored" (seen at the end of
    benchmarks/bench_embedded.py)."""
    with _LOADED_GUARD:
        loaded = list(_LOADED.values())
        _LOADED.clear()
    for llm, lock in loaded:
        with lock:
            llm.close()


atexit.register(close_models)


class LlamaCppBackend:
    # llama.cpp contexts are not thread-safe: the engine sends one request at a time, always on
    # the same thread.
    serial = True

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.path = model_file(config)

    def identity(self) -> dict[str, str]:
        return {"backend": "llamacpp", "model": self.path.name, "digest": file_digest(self.path)}

    def complete(self, request: ChatRequest) -> Completion:
        llm, lock = _load(self.path, self.config.n_ctx, usable_threads(self.config.n_threads))
        if request.score_options:
            with lock:
                started = time.perf_counter()
                scores = score_continuations(llm, request)
                latency = time.perf_counter() - started
            return Completion(json.dumps(scores, sort_keys=True), 0, "scored", latency)
        options: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "repeat_penalty": request.repeat_penalty,
            "seed": request.seed,
        }
        if request.json_schema is not None:
            options["response_format"] = {"type": "json_object", "schema": request.json_schema}
        with lock:
            # A fresh context for every request: no KV-cache prefix reuse from the previous prompt,
            # so each answer depends on its own messages only.
            llm.reset()
            started = time.perf_counter()
            try:
                reply = llm.create_chat_completion(**options)
            except ValueError as error:  # llama-cpp-python raises ValueError for context overflow
                raise BackendError("context_length", str(error)) from error
            latency = time.perf_counter() - started
        return Completion.from_chat_reply(reply, latency)


def _last_log_softmax(llm: Any) -> np.ndarray:
    from llama_cpp import llama_get_logits_ith

    logits = np.ctypeslib.as_array(llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    return log_softmax(logits.astype(np.float64))


def chat_prompt_tokens(llm: Any, messages: Sequence[Any]) -> list[int]:
    """The prompt exactly as create_chat_completion builds it from the model's own chat template,
    ending with the assistant turn's opening, so the scores are those of the answer's first words."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise BackendError("unsupported", "the GGUF file has no chat template in its metadata, "
                                          "so its answers cannot be scored; use "
                                          f"{NO_SCORING_FIX}, or a GGUF file with a template")
    special_text = lambda token: llm.detokenize([token], special=True).decode("utf-8", "replace")  # noqa: E731
    formatter = Jinja2ChatFormatter(template=template, eos_token=special_text(llm.token_eos()),
                                    bos_token=special_text(llm.token_bos()),
                                    add_generation_prompt=True)
    prompt = formatter(messages=[{"role": m.role, "content": m.content} for m in messages]).prompt
    return llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)


def score_continuations(llm: Any, request: ChatRequest) -> dict[str, float]:
    """Log-probability of each continuation as the opening of the answer: the sum of its tokens'
    log-probabilities given the prompt and the tokens before them.

    Whole continuations, not first tokens: an option word often splits ("DENY" starts with "D",
    which also opens "Dear"), and only the full word's probability means what it says. llama.cpp's
    own logprobs need logits for every position (`logits_all`, ~400 MB at n_ctx 2048); here the
    prompt is evaluated once and each continuation token reads the last logits, rewinding the KV
    cache to the end of the prompt between continuations."""
    prompt_tokens = chat_prompt_tokens(llm, request.messages)
    llm.reset()
    try:
        llm.eval(prompt_tokens)
    except Exception as error:  # llama.cpp reports an overlong prompt as a decode failure
        raise BackendError("context_length", f"prompt of {len(prompt_tokens)} tokens could not "
                                             f"be evaluated: {error}") from error
    prompt_length = llm.n_tokens
    first_token = _last_log_softmax(llm)
    tokenized = {continuation: llm.tokenize(continuation.encode("utf-8"), add_bos=False,
                                            special=False)
                 for continuation in request.score_options}
    first_only = first_tokens_decide(request, tokenized)
    scores: dict[str, float] = {}
    for continuation, tokens in tokenized.items():
        total = float(first_token[tokens[0]])
        if first_only:
            scores[continuation] = total
            continue
        llm.n_tokens = prompt_length  # eval() drops KV cells past n_tokens before decoding
        for previous, following in zip(tokens, tokens[1:]):
            llm.eval([previous])
            total += float(_last_log_softmax(llm)[following])
        scores[continuation] = total
    return scores
