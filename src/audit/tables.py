"""Tables on disk: one reader for CSV and parquet with one-line errors, and atomic, validated writes.

Every method reads its inputs and writes its tables through these functions, so a bad file is
always reported the same way (one line naming the file and the problem) and a crash never leaves a
half-written table behind.
"""

from __future__ import annotations

from pathlib import Path

import pandera.polars as pa
import polars as pl

from audit.errors import AuditError
from audit.schemas import validate


def read_frame(path: Path, what: str) -> pl.DataFrame:
    """Read parquet (by suffix) or CSV, turning a reader's error into one line naming the file."""
    try:
        return pl.read_parquet(path) if Path(path).suffix == ".parquet" else pl.read_csv(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise AuditError(f"cannot read {what} at {path}: {first_line}") from error


def required_columns(schema: type[pa.DataFrameModel]) -> list[str]:
    """The columns a schema cannot do without (its optional ones left out), in its order."""
    return [name for name, column in schema.to_schema().columns.items()
            if column.required and not column.regex]


def require_columns(frame: pl.DataFrame, columns: list[str], path: Path, what: str,
                    fix: str) -> None:
    """One line naming the file, every missing column and the fix.

    Checked before pandera sees the table: with `coerce=True` pandera 0.35 casts the columns it
    expects before it checks that they exist, so a missing column surfaced as polars'
    ColumnNotFoundError with a 70-line traceback (a misspelt one was already one line).
    """
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise AuditError(f"{what} at {path} lacks the column(s) {', '.join(map(repr, missing))} "
                         f"(its columns: {', '.join(frame.columns) or 'none'}): {fix}")


def read_table(path: Path, schema: type[pa.DataFrameModel], what: str) -> pl.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise AuditError(f"{what} not found at {path}: run the stage that writes it first "
                         f"(or check the path in the config)")
    frame = read_frame(path, what)
    require_columns(frame, required_columns(schema), path, what,
                    f"add the missing columns to the file (see {schema.__name__} in "
                    f"{schema.__module__} and data/README.md for what each holds), or point the "
                    f"config at a file that has them")
    return validate(frame, schema, f"{what} ({path})")


def write_table(frame: pl.DataFrame, path: Path, schema: type[pa.DataFrameModel], what: str) -> None:
    validate(frame, schema, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".partial")
    frame.write_parquet(partial)
    partial.replace(path)  # atomic: a crash never leaves a half-written table behind
