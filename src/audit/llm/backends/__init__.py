"""Backends behind one Protocol, created by the name used in `conf/model/*.yaml`.

The registry maps a name to an import path and imports lazily, so choosing the embedded model
never imports a server client and a missing optional client only fails when it is chosen.
Adding a backend is one file and one line here.
"""

from __future__ import annotations

import importlib
import os

from audit.errors import AuditError, did_you_mean
from audit.llm.backends.base import (UNREACHABLE_KINDS, Backend, BackendError, ChatRequest,
                                     Completion, Message, backend_request_key, check_reply_text,
                                     request_key)
from audit.config import ModelConfig

BACKENDS: dict[str, str] = {
    # The default: llama.cpp in-process from a prebuilt wheel (xllamacpp), parallel slots.
    "embedded": "audit.llm.backends.embedded:EmbeddedBackend",
    # llama-cpp-python, compiled from source: only with the `llamacpp` extra.
    "llamacpp": "audit.llm.backends.llamacpp:LlamaCppBackend",
    "ollama": "audit.llm.backends.ollama:OllamaBackend",
    "openai_compatible": "audit.llm.backends.openai_compatible:OpenAICompatibleBackend",
    # Answers collected elsewhere (python -m audit.ingest): identifies the model, asks nothing.
    "imported": "audit.llm.backends.imported:ImportedBackend",
    # Scripted replies for unit tests of the plumbing; never used for an audit's findings.
    "fake": "audit.llm.backends.fake:FakeBackend",
}


def backend_class(name: str) -> type:
    """The class registered as `name`, imported now."""
    try:
        target = BACKENDS[name]
    except KeyError:
        valid = ", ".join(sorted(BACKENDS))
        raise AuditError(f"unknown backend '{name}': set `backend` in conf/model/ to one of "
                         f"{valid}{did_you_mean(name, BACKENDS)}") from None
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def can_score_options(config: ModelConfig) -> bool:
    """Whether the backend `config` names can score option continuations
    (`ChatRequest.score_options`): a backend that cannot says so with a class attribute
    `scores_options = False`. Read from the class, so a config is checked before any model loads."""
    return bool(getattr(backend_class(config.backend), "scores_options", True))


def missing_api_key(config: ModelConfig) -> str | None:
    """The environment variable `api_key_env` names when `config`'s backend reads an API key
    (a class attribute `reads_api_key = True`) and the variable is unset or empty; None otherwise.
    Read from the class, so a missing key is found before any client is built."""
    reads_key = getattr(backend_class(config.backend), "reads_api_key", False)
    if reads_key and config.api_key_env and not os.environ.get(config.api_key_env):
        return config.api_key_env
    return None


def create_backend(config: ModelConfig) -> Backend:
    if config.base_urls:
        from audit.llm.backends.fleet import Fleet

        return Fleet(config, create_backend)
    return backend_class(config.backend)(config)


__all__ = [
    "BACKENDS",
    "UNREACHABLE_KINDS",
    "Backend",
    "BackendError",
    "ChatRequest",
    "Completion",
    "Message",
    "backend_class",
    "backend_request_key",
    "can_score_options",
    "check_reply_text",
    "create_backend",
    "missing_api_key",
    "request_key",
]
