"""Backends behind one Protocol, created by the name used in `conf/model/*.yaml`.

The registry maps a name to an import path and imports lazily, so choosing the embedded model
never imports a server client and a missing optional client only fails when it is chosen.
Adding a backend is one file and one line here.
"""

from __future__ import annotations

import importlib

from audit.llm.backends.base import Backend, BackendError, ChatRequest, Completion, Message, request_key
from audit.config import ModelConfig

BACKENDS: dict[str, str] = {
    # The default: llama.cpp in-process from a prebuilt wheel (xllamacpp), parallel slots.
    "embedded": "audit.llm.backends.embedded:EmbeddedBackend",
    # llama-cpp-python, compiled from source: only with the `llamacpp` extra.
    "llamacpp": "audit.llm.backends.llamacpp:LlamaCppBackend",
    "ollama": "audit.llm.backends.ollama:OllamaBackend",
    "openai_compatible": "audit.llm.backends.openai_compatible:OpenAICompatibleBackend",
    # Scripted replies for unit tests of the plumbing; never used for an audit's findings.
    "fake": "audit.llm.backends.fake:FakeBackend",
}


def create_backend(config: ModelConfig) -> Backend:
    if config.base_urls:
        from audit.llm.backends.fleet import Fleet

        return Fleet(config, create_backend)
    try:
        target = BACKENDS[config.backend]
    except KeyError:
        valid = ", ".join(sorted(BACKENDS))
        raise ValueError(
            f"unknown backend '{config.backend}': set `backend` in conf/model/ to one of {valid}"
        ) from None
    module_name, class_name = target.split(":")
    backend_class = getattr(importlib.import_module(module_name), class_name)
    return backend_class(config)


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "ChatRequest",
    "Completion",
    "Message",
    "create_backend",
    "request_key",
]
