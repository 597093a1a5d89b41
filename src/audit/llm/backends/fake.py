"""A scripted backend for unit tests of the plumbing (design, engine, store, judge wiring).

It answers from a deterministic function of the request, so tests can check that each reply lands
on its own prompt; it is registered like any backend so tests choose it by config, not by patching.
"""

from __future__ import annotations

import hashlib
import json

from audit.llm.backends.base import BackendError, ChatRequest, Completion
from audit.config import ModelConfig

FAVOURABLE_REPLY = "APPROVE. The profile meets the stated criteria."
UNFAVOURABLE_REPLY = "DENY. The profile does not meet the stated criteria."


class FakeBackend:
    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.requests: list[ChatRequest] = []

    def identity(self) -> dict[str, str]:
        return {"backend": "fake", "model": self.config.model, "digest": "none"}

    def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        prompt = request.messages[-1].content
        if "FAIL" in prompt:
            raise BackendError("connection", "scripted failure")
        if request.score_options:
            return Completion(json.dumps({option: _scripted_logprob(prompt, option)
                                          for option in request.score_options}), 0, "scored", 0.0)
        if request.json_schema is not None:
            return Completion(json.dumps(_first_allowed(request.json_schema)), 8, "stop", 0.0)
        digest = hashlib.sha256(f"{prompt}|{request.seed}".encode()).digest()
        text = FAVOURABLE_REPLY if digest[0] % 2 == 0 else UNFAVOURABLE_REPLY
        return Completion(text, len(text.split()), "stop", 0.0)


def _first_allowed(schema: dict) -> object:
    """A judge request: the first allowed value of a string enum, or of each enum property."""
    if "enum" in schema:
        return schema["enum"][0]
    return {field: _first_allowed(spec) for field, spec in schema.get("properties", {}).items()}


def _scripted_logprob(prompt: str, option: str) -> float:
    """A deterministic log-probability in (-12, -0.1], different for each prompt and option."""
    digest = hashlib.sha256(f"{prompt}|{option}".encode()).digest()
    return -0.1 - 11.9 * digest[0] / 255
