"""A scripted backend for unit tests of the plumbing (design, engine, store, judge wiring).

It answers from a deterministic function of the request, so tests can check that each reply lands
on its own prompt; it is registered like any backend so tests choose it by config, not by patching.
"""

from __future__ import annotations

import hashlib
import json

from audit.backends.base import BackendError, ChatRequest, Completion
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
        if request.json_schema is not None:
            # A judge request: answer with the first allowed value of the schema's only field.
            field, spec = next(iter(request.json_schema["properties"].items()))
            return Completion(json.dumps({field: spec["enum"][0]}), 8, "stop", 0.0)
        digest = hashlib.sha256(f"{prompt}|{request.seed}".encode()).digest()
        text = FAVOURABLE_REPLY if digest[0] % 2 == 0 else UNFAVOURABLE_REPLY
        return Completion(text, len(text.split()), "stop", 0.0)
