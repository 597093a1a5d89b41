"""audit.data_files: a configured input is the user's own file first, else the shipped copy, and a
file in neither place is one line naming the path, where it looked and the setting to change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.data_files import DataFileNotFound, data_file, shipped_data_dir
from audit.errors import AuditError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SOURCE = PROJECT_ROOT / "src" / "audit"
ITEMS = "data/items/decision_items.csv"


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    folder = tmp_path / "site" / "audit" / "data"
    (folder / "items").mkdir(parents=True)
    (folder / "items" / "decision_items.csv").write_text("shipped\n")
    return folder


@pytest.fixture
def user(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_a_users_file_wins_over_the_shipped_copy(shipped: Path, user: Path):
    (user / "data" / "items").mkdir(parents=True)
    (user / ITEMS).write_text("mine\n")
    found = data_file(ITEMS, "item bank", "items.bank", cwd=user, shipped=shipped)
    assert found == user / ITEMS and found.read_text() == "mine\n"


def test_without_a_users_file_the_shipped_copy_is_read(shipped: Path, user: Path):
    found = data_file(ITEMS, "item bank", "items.bank", cwd=user, shipped=shipped)
    assert found == shipped / "items" / "decision_items.csv"  # the leading data/ dropped
    # a path named inside the shipped folder without the data/ prefix resolves there too
    assert data_file("items/decision_items.csv", "item bank", "items.bank", cwd=user,
                     shipped=shipped) == found


def test_an_absolute_path_is_taken_as_it_is(shipped: Path, user: Path):
    mine = user / "bank.csv"
    mine.write_text("mine\n")
    assert data_file(mine, "item bank", "items.bank", cwd=user, shipped=shipped) == mine
    # an absolute path that does not exist never falls back to a shipped file of the same name
    absent = user / "data" / "items" / "decision_items.csv"
    with pytest.raises(DataFileNotFound,
                       match=re.escape(f"item bank not found at {absent}: set items.bank")):
        data_file(absent, "item bank", "items.bank", cwd=user, shipped=shipped)


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_setting_is_named_as_empty(shipped: Path, user: Path, value: str):
    """Bug caught: `items.bank=` read "item bank at . is a folder, not a file" (the empty path
    is the working folder), naming neither the empty setting nor its default."""
    with pytest.raises(DataFileNotFound, match=r"^items.bank is empty: name the item bank file, "
                                               r"or leave the setting out$"):
        data_file(value, "item bank", "items.bank", cwd=user, shipped=shipped)


def test_a_file_in_neither_place_names_the_path_both_places_and_the_setting(shipped: Path,
                                                                             user: Path):
    with pytest.raises(DataFileNotFound) as raised:
        data_file("data/items/mine.csv", "item bank", "items.bank", cwd=user, shipped=shipped)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("item bank not found at data/items/mine.csv")
    assert str(user) in message and str(shipped / "items" / "mine.csv") in message
    assert "set items.bank to an existing file" in message
    # one of the family every entry point reports as one line
    assert isinstance(raised.value, AuditError)


def test_the_shipped_folder_is_the_installed_one_else_the_checkouts(tmp_path: Path):
    installed = tmp_path / "site-packages" / "audit"
    (installed / "data").mkdir(parents=True)
    assert shipped_data_dir(installed) == installed / "data"
    checkout = tmp_path / "repo"
    (checkout / "src" / "audit").mkdir(parents=True)
    (checkout / "data").mkdir()
    (checkout / "pyproject.toml").write_text("")
    assert shipped_data_dir(checkout / "src" / "audit") == checkout / "data"
    # a data/ folder next to an installed package's parent that is no checkout is not taken
    lone = tmp_path / "lib"
    (lone / "python3.11" / "audit").mkdir(parents=True)
    (lone / "data").mkdir()
    assert shipped_data_dir(lone / "python3.11" / "audit") == lone / "python3.11" / "audit" / "data"


def test_every_shipped_path_the_code_and_configs_name_resolves_from_another_folder(user: Path):
    """A source checkout used without installing (PYTHONPATH=src), run from an empty folder: each
    `data/....csv` that a config default or a shipped YAML names is a file of the repository's
    data/ (a default pointing at a file that does not exist fails here too)."""
    named = sorted({match for path in SOURCE.rglob("*") if path.suffix in (".py", ".yaml")
                    for match in re.findall(r"data/[\w./-]+\.csv", path.read_text())})
    assert ITEMS in named and "data/iat/iat_stimuli.csv" in named and len(named) >= 10
    for path in named:
        found = data_file(path, "shipped file", "-", cwd=user)
        assert found.is_file() and found.is_relative_to(PROJECT_ROOT / "data"), path


def test_an_installed_data_folder_wins_inside_a_folder_that_looks_like_a_checkout(tmp_path: Path):
    """Bugs it would catch: the checkout's data/ taken over the wheel's own `audit/data` when
    the package sat two levels under a folder with a pyproject.toml and a data/ folder; a
    checkout with no data/ named as where the data should be."""
    project = tmp_path / "project"
    installed = project / "venv" / "audit"
    (installed / "data").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "pyproject.toml").write_text("")
    assert shipped_data_dir(installed) == installed / "data"
    # a checkout without data/ is no source of data: an error names the wheel's folder
    (installed / "data").rmdir()
    (project / "data").rmdir()
    assert shipped_data_dir(installed) == installed / "data"


def test_a_shipped_folder_of_the_configured_name_is_not_taken_for_the_file(shipped: Path,
                                                                           user: Path):
    """Bug it would catch: a path naming a shipped folder (`data/items`) returned as the file,
    to fail later as an unreadable table instead of here, naming the setting."""
    with pytest.raises(DataFileNotFound, match=r"^item bank .*data/items.*set items\.bank "):
        data_file("data/items", "item bank", "items.bank", cwd=user, shipped=shipped)


def test_a_missing_file_names_the_folder_a_relative_path_is_read_from(shipped: Path, user: Path):
    """Bug it would catch: the line named the missing file's own folder (`project/data/items`)
    as where it looked, not the folder relative paths are read from."""
    with pytest.raises(DataFileNotFound, match=re.escape(f"(looked in {user} and in the data")):
        data_file("data/items/mine.csv", "item bank", "items.bank", cwd=user, shipped=shipped)
