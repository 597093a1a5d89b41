"""An Ollama server, through the official `ollama` client.

A tag such as `llama3.1:8b` can point at new weights after a `ollama pull`, so the identity holds
the digest the server reports for the tag: new weights make new request keys, and answers stored
for the old weights are never served for the new ones.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlsplit

from audit.llm.backends.base import (NO_SCORING_FIX, UNREACHABLE_KINDS, BackendError,
                                     ChatRequest, Completion, connection_problem)
from audit.config import ModelConfig
from audit.errors import first_line

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaBackend:
    # The Ollama API returns no log-probabilities, so it cannot score option words: a judge that
    # scores (judge.decoding options, first_token, letters, or the refusal check) is refused up
    # front rather than labelling every answer unparseable.
    scores_options = False

    def __init__(self, config: ModelConfig) -> None:
        import httpx
        import ollama  # imported here: only this backend needs the client

        self.config = config
        self.host = config.base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        self._ollama, self._httpx = ollama, httpx
        self._client = ollama.Client(host=self.host, timeout=config.timeout_s)
        self._digest: str | None = None

    def identity(self) -> dict[str, str]:
        if self._digest is None:
            try:
                listed = self._call(self._client.list)
            except BackendError as error:
                if error.kind not in UNREACHABLE_KINDS:
                    raise
                # Asked before anything is sent (the digest is in every request key), so this
                # is the run's first contact: the preflight's line, and why a run served from
                # the store still needs the server.
                raise BackendError(error.kind, f"model '{self.config.model}': {error}. Nothing "
                                               "was sent: start Ollama (ollama serve) or fix "
                                               "base_url in conf/model/ (a judge's: conf/judge/), "
                                               "and rerun; even a rerun "
                                               "from the store asks Ollama for the model's "
                                               "digest, part of every answer's key") from error
            digests = {model.model: model.digest for model in listed.models}
            name = self.config.model if ":" in self.config.model else f"{self.config.model}:latest"
            if name not in digests:
                known = ", ".join(sorted(digests)) or "none"
                raise BackendError("model_not_found", f"Ollama at {self.host} has no model "
                                                      f"'{name}' (it has: {known}); run "
                                                      f"`ollama pull {self.config.model}`")
            self._digest = str(digests[name])
        return {"backend": "ollama", "model": self.config.model, "digest": self._digest}

    def reply_settings(self, request: ChatRequest) -> dict[str, Any]:
        """The context size decides what of a long prompt the model sees: in the request key
        when it is not the default n_ctx, so the keys of runs that never set it stay."""
        if self.config.n_ctx == ModelConfig.n_ctx:
            return {}
        return {"num_ctx": self.config.n_ctx}

    def health_check(self) -> None:
        """Raise BackendError unless the server lists its models."""
        self._call(self._client.list)

    def complete(self, request: ChatRequest) -> Completion:
        if request.score_options:
            raise BackendError("unsupported", "the Ollama API gives no log-probabilities to "
                                              f"score option words; use {NO_SCORING_FIX}")
        options = {"temperature": request.temperature, "top_p": request.top_p,
                   "num_predict": request.max_tokens, "repeat_penalty": request.repeat_penalty,
                   "seed": request.seed, "num_ctx": self.config.n_ctx}
        arguments: dict[str, Any] = {
            "model": self.config.model, "options": options, "stream": False,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.json_schema is not None:
            arguments["format"] = request.json_schema
        if self.config.keep_alive is not None:
            arguments["keep_alive"] = self.config.keep_alive
        started = time.perf_counter()
        reply = self._call(self._client.chat, **arguments)
        latency = time.perf_counter() - started
        message = getattr(reply, "message", None)
        if message is None:
            raise BackendError("malformed_reply", "Ollama reply without a message")
        # No content is an empty reply, which the engine records as one (empty_reply).
        return Completion(message.content or "", int(reply.eval_count or 0),
                          str(reply.done_reason or ""), latency)

    def _call(self, method, **arguments) -> Any:
        ollama, httpx = self._ollama, self._httpx
        try:
            return method(**arguments)
        except ollama.ResponseError as error:
            status = error.status_code
            kind = ("rate_limit" if status == 429 else "server_error" if status >= 500
                    else "model_not_found" if status == 404 else "http_status")
            # Ollama's OpenAI-compatible API lives under /v1, a URL many guides give: this
            # backend speaks the native API at the root, where /v1/api/... is "404 page not
            # found", which named no fix (server probe 2026-12-07).
            at_v1 = status == 404 and urlsplit(self.host).path.rstrip("/").endswith("/v1")
            hint = (": backend ollama takes the server's root URL, not its OpenAI-compatible "
                    "/v1: drop /v1 from base_url (or use backend openai_compatible with it)"
                    if at_v1 else "")
            raise BackendError(kind, f"HTTP {status} from Ollama at {self.host}: "
                                     f"{str(error.error)[:200]}{hint}") from error
        except httpx.TimeoutException as error:
            raise BackendError("timeout", f"no reply from {self.host} within "
                                          f"{self.config.timeout_s} s") from error
        except (httpx.TransportError, ConnectionError) as error:
            raise BackendError("connection", f"cannot reach Ollama at {self.host}: "
                                             f"{connection_problem(error, self.host)}") from error
        except (ValueError, TypeError) as error:  # a reply that is not the JSON Ollama sends
            raise BackendError("malformed_reply", f"unreadable reply from {self.host}: "
                                                  f"{_reply_problem(error)}") from error


def _reply_problem(error: ValueError | TypeError) -> str:
    """One line for a reply the client could not read. The client checks replies with pydantic,
    whose error is several lines ("1 validation error for ChatResponse", then the field): a 200
    reply without `message` (a proxy's own error JSON) broke the one-line failure summary."""
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic's ValidationError: name the fields
        problems = [f"{'.'.join(map(str, item['loc'])) or 'reply'}: {item['msg']}"
                    for item in errors()[:3]]
        return f"{first_line(error)} ({'; '.join(problems)})"[:200]
    return first_line(error)[:200]
