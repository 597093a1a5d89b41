"""audit.config_entries: one line for a mistake about a named entry (a model under `model`, a
judge's model under `judge.models`), checked on the lines themselves; the command-line paths to
them are in tests/cli/test_config_errors.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from audit.__main__ import CONF_DIR
from audit.config_entries import config_folders, flat_entry, unknown_entry


def test_the_users_conf_folder_is_searched_before_the_shipped_one(tmp_path: Path, monkeypatch):
    """Bug it would catch: the user's ./conf left out (or searched after the shipped folder),
    so `model.mine.x=1` for a model only ./conf/model/mine.yaml holds said there was no file."""
    monkeypatch.chdir(tmp_path)
    assert config_folders(Path(CONF_DIR)) == [Path(CONF_DIR)]
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "mine.yaml").write_text("mine:\n  backend: fake\n")
    assert config_folders(Path(CONF_DIR)) == [(tmp_path / "conf").resolve(), Path(CONF_DIR)]
    line = unknown_entry(["model"], "mine", SimpleNamespace(parent_node={"m": None}),
                         Path(CONF_DIR), "")
    assert line is not None and "to audit mine, choose it first: model=mine" in line, line


def test_a_key_that_is_no_setting_of_an_entry_is_not_called_a_flat_file():
    """Bug it would catch: any unknown key under `model` (`model.bogus`, a mistyped model name)
    read as a model file written flat, with advice to nest settings it does not have."""
    text = "Key 'bogus' not in 'ModelConfig'\n    full_key: model.bogus\nIn 'model/mine'"
    assert flat_entry(text) is None
    assert flat_entry(text.replace("bogus", "backend")) is not None


@pytest.mark.parametrize(("parent", "present", "expected"), [
    (["judge", "models"], ["smollm2"], "unknown key 'judge.models.smolm2': this run's "
                                       "judge.models has smollm2 (did you mean 'smollm2'?)"),
    (["judge", "models"], [], "unknown key 'judge.models.smolm2': this run's judge.models has "
                              "no entries"),
])
def test_an_unknown_judge_model_names_the_ones_the_run_has(parent, present, expected):
    """Bugs it would catch: no `did you mean` for a mistyped judge model, or a run with none
    read "has " and nothing."""
    cause = SimpleNamespace(parent_node=dict.fromkeys(present))
    assert unknown_entry(parent, "smolm2", cause, Path(CONF_DIR), "") == expected


def test_a_section_of_settings_is_not_described_as_named_entries():
    """Bug it would catch: an unknown key under a section of settings (`design`) described as
    an entry the run did not compose, "this run's design has ...", naming its settings."""
    cause = SimpleNamespace(parent_node={"seed": 1})
    assert unknown_entry(["design"], "sede", cause, Path(CONF_DIR), "") is None
