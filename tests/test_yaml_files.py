"""audit.yaml_files: what is wrong with a YAML file a user wrote, as a phrase for one line, and
which file under the config folders a loader failed on without naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.yaml_files import not_settings, unreadable_yaml_file, yaml_load_problem


def _decode_error(data: bytes) -> UnicodeDecodeError:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error
    raise AssertionError("decoded")


def _load_error(path: Path) -> Exception:
    try:
        OmegaConf.load(path)
    except Exception as error:  # noqa: BLE001 - the test looks at whichever it is
        return error
    raise AssertionError("loaded")


def test_utf16_text_of_either_byte_order_is_named_as_utf16():
    """Bug it would catch: only little-endian UTF-16 (its BOM ff fe) recognised, so a file
    saved as UTF-16 big-endian (BOM fe ff) was called Latin-1."""
    for encoding in ("utf-16-le", "utf-16-be"):
        bom = "\ufeff".encode(encoding)
        error = _decode_error(bom + "fit: {}\n".encode(encoding))
        assert yaml_load_problem(error) == "it is UTF-16 text, as PowerShell's `>` writes"


def test_a_file_that_cannot_be_opened_differs_from_one_holding_a_single_value(tmp_path: Path):
    """Bug it would catch: the two OSErrors swapped, so a missing file was said to hold no
    mapping of settings and a file holding `3` to be unreadable."""
    missing = _load_error(tmp_path / "missing.yaml")
    assert yaml_load_problem(missing) == "it cannot be read (No such file or directory)"
    (tmp_path / "number.yaml").write_text("3\n")
    number = _load_error(tmp_path / "number.yaml")
    assert isinstance(number, OSError)
    assert yaml_load_problem(number).startswith("it holds no mapping of settings ("), number


@pytest.mark.parametrize(("text", "held"), [
    ("fit: {draws: 5}\n", None), ("", "holds no settings"),
    ("# nothing yet\n", "holds no settings"), ("[]\n", "holds no settings"),
    ("- fit\n", "holds a list")])
def test_only_a_mapping_with_settings_counts_as_settings(tmp_path: Path, text: str,
                                                        held: str | None):
    """Bugs it would catch: an empty file taken as settings (every default, silently), or an
    empty list called a list of settings rather than none."""
    path = tmp_path / "params.yaml"
    path.write_text(text)
    assert not_settings(OmegaConf.load(path)) == held


def test_the_file_a_decode_error_came_from_is_the_first_not_utf8_in_name_order(tmp_path: Path):
    """Bug it would catch: the folder's files read in another order, so of two files that are
    not UTF-8 the line named a different one from run to run (or the last)."""
    for name in ("b.yaml", "a.yaml", "c.yaml"):
        (tmp_path / name).write_bytes(b"notes: caf\xe9\n")
    (tmp_path / "0_fine.yaml").write_text("fine: 1\n")
    found = unreadable_yaml_file([tmp_path], _decode_error(b"\xe9"))
    assert found is not None
    path, error = found
    assert path == tmp_path / "a.yaml" and isinstance(error, UnicodeDecodeError)


def test_the_file_a_recursion_came_from_is_not_one_with_another_problem(tmp_path: Path):
    """Bug it would catch: the first file failing in any way (a syntax error) named as the one
    whose alias contains itself."""
    (tmp_path / "a_broken.yaml").write_text("a: {b: 1\n")
    (tmp_path / "b_loop.yaml").write_text("a: &x [*x]\n")
    found = unreadable_yaml_file([tmp_path], RecursionError())
    assert found is not None and found[0] == tmp_path / "b_loop.yaml"
    assert isinstance(found[1], RecursionError)
    assert unreadable_yaml_file([tmp_path / "none"], RecursionError()) is None
