"""Where a configured input file is: the user's own file, else the copy shipped with audit.

The configs name shipped inputs by their place in the repository (`data/items/decision_items.csv`),
which only exists in the folder a checkout is run from; `python -m audit.iat import_dir=...` run
from any other folder used to stop with "IAT stimuli not found at data/iat/iat_stimuli.csv: run from
the project root". A built wheel carries the repository's top-level data/ folder as `audit/data`
(setup.py maps the package `audit.data` onto it), so every read point resolves its path here, in
one order:

1. an absolute path, as it is;
2. a relative path that exists from the current folder: the user's own file (and, in a checkout
   run from its root, the repository's data/, which is also what `dvc repro` reads);
3. the shipped copy: `audit/data` in an installed wheel, the repository's data/ in a source
   checkout used without installing (PYTHONPATH=src), with a leading `data/` dropped.

A file in neither place is one line naming the path, where it looked and the setting to change.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandera.polars as pa
import polars as pl

from audit.errors import AuditError
from audit.tables import read_table

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent
SHIPPED_PREFIX = "data"  # how the configs name the shipped folder


class DataFileNotFound(AuditError):
    """A configured input file that is neither the user's own nor shipped with audit."""


def shipped_data_dir(package_dir: Path = PACKAGE_DIR) -> Path:
    """`audit/data` in an installed wheel, else the data/ of the source checkout holding the
    package (src/audit -> the folder with pyproject.toml); the wheel's path when neither exists,
    so an error names where an install should have put it."""
    installed = package_dir / SHIPPED_PREFIX
    checkout = package_dir.parents[1]
    if not installed.is_dir() and (checkout / "pyproject.toml").is_file() \
            and (checkout / SHIPPED_PREFIX).is_dir():
        return checkout / SHIPPED_PREFIX
    return installed


def shipped_path(path: Path, shipped: Path) -> Path:
    """Where a relative config path lies in the shipped folder: `data/<path>` -> `<path>`."""
    parts = path.parts
    return shipped.joinpath(*parts[1:]) if parts and parts[0] == SHIPPED_PREFIX \
        else shipped / path


def data_file(path: str | Path, what: str, setting: str, *, cwd: Path | None = None,
              shipped: Path | None = None) -> Path:
    """The file a config path names, in the order of the module docstring.

    `what` names the file for people ("item bank"), `setting` the config key that points at it
    ("items.bank"); `cwd` and `shipped` default to the current folder and the shipped data.
    """
    if not str(path).strip():  # `items.bank=` read "item bank at . is a folder, not a file"
        raise DataFileNotFound(f"{setting} is empty: name the {what} file, or leave the "
                               "setting out")
    given = Path(path)
    if given.is_absolute():
        if given.is_file():
            return given
        if given.is_dir():
            raise DataFileNotFound(f"{what} at {given} is a folder, not a file: set {setting} "
                                   "to a file")
        raise DataFileNotFound(f"{what} not found at {given}: set {setting} to an existing file")
    here = (cwd or Path.cwd()) / given
    if here.is_file():
        return here if cwd is not None else given
    folder = shipped or shipped_data_dir()
    candidate = shipped_path(given, folder)
    if candidate.is_file():
        log.debug("%s: %s is not in %s; using the copy shipped with audit, %s", what, given,
                  here.parent, candidate)
        return candidate
    if here.is_dir():
        raise DataFileNotFound(f"{what} at {given} is a folder, not a file: set {setting} to a "
                               "file")
    raise DataFileNotFound(
        f"{what} not found at {given} (looked in {(cwd or Path.cwd())} and in the data shipped "
        f"with audit, {candidate}): set {setting} to an existing file, or run from the folder "
        f"that holds {given}")


def users_file_fix(setting: str) -> str:
    """The fix for a data file a setting names (item bank, persona file, gold set) that cannot be
    read: the user wrote it, so no earlier stage will (the default, "run the stage that writes
    it first", sent a user with an empty gold file looking for a stage; review 2026-12-04)."""
    return (f"save it as UTF-8 CSV with a header row, quote fields that contain commas (write it "
            f"with a CSV library), or point {setting} at another file")


def read_users_table(path: str, schema: type[pa.DataFrameModel], what: str,
                     setting: str) -> pl.DataFrame:
    """An item bank, persona file or gold set as written: every column read as text, so an id
    "001" stays "001" (inferred as a number, it became "1", and items.item_ids=[001] was then
    unknown)."""
    return read_table(data_file(path, what, setting), schema, what, users_file_fix(setting),
                      as_text=True)
