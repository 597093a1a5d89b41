"""The labeller's error rates for `python -m audit.fit`: a gold file or a confusion-count file.

Imported labels come from someone's labeller too, so they get the audit's correction (a cut,
irt/judge_cut.py) when the user says how good that labeller is:

* ``gold=PATH``: one row per hand-checked answer, ``truth`` and ``judged`` as 0/1 (or
  true/false), in the input table's own coding;
* ``confusion=PATH``: the counts themselves, columns ``true_1_judged_1, true_1_judged_0,
  true_0_judged_0, true_0_judged_1`` as CSV or parquet (an audit run's
  fit/diagnostics.json records these counts under judge_error.OUTCOME.paths; copy them
  into such a table, one row per path with its ``label_source``).

Either may carry a ``label_source`` column (one matrix per labelling path); the input table then
names its own path column with ``source=COLUMN``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.methods.rasch.irt.judge_error import (
    ANY_PATH,
    JudgeConfusion,
    JudgeCorrection,
    check_better_than_coin,
)
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.tables import named_as, read_frame, require_columns

COUNT_COLUMNS = ("true_1_judged_1", "true_1_judged_0", "true_0_judged_0", "true_0_judged_1")
GOLD_COLUMNS = ("truth", "judged")
CODING = "imported"  # the input's own 0/1, whatever it codes


def _text_numbers(values: pl.Series) -> pl.Series:
    """A text column's values as floats: true/false in any case as 1/0, surrounding spaces
    ignored; null where the text is no number. Other columns as they are."""
    if values.dtype != pl.String:
        return values
    text = values.str.strip_chars()
    lowered = text.str.to_lowercase()
    text = pl.select(pl.when(lowered == "true").then(pl.lit("1"))
                     .when(lowered == "false").then(pl.lit("0"))
                     .otherwise(text)).to_series()
    return text.cast(pl.Float64, strict=False)


def as_numbers(values: pl.Series) -> pl.Series:
    """The values as numbers where every one reads as a number (so a column's offending values
    show as 2.5, not '2.5'); otherwise as they are."""
    numbers = _text_numbers(values)
    return values if (numbers.is_null() & values.is_not_null()).any() else numbers


def not_whole(values: pl.Series) -> pl.Series:
    """Where a value is not a whole number (an empty cell is not counted): a fraction, NaN or
    infinity; text that is no number ("yes"). CSV files are read as text, so that ids keep
    their digits ("007"): their numbers are read here."""
    numbers = _text_numbers(values)
    if not (numbers.dtype.is_float() or numbers.dtype.is_integer() or numbers.dtype == pl.Boolean):
        return numbers.is_not_null()  # a column of another type (dates, lists): no numbers
    unreadable = numbers.is_null() & values.is_not_null()
    if numbers.dtype.is_float():
        return unreadable | (~numbers.is_finite() | (numbers != numbers.floor())).fill_null(False)
    return unreadable


def whole_numbers(values: pl.Series) -> pl.Series | None:
    """The values as Int64 (true/false as 1/0), or None when one is not a whole number: polars
    would truncate 0.6 to 0 in a plain cast, silently turning a probability into a label."""
    if not_whole(values).any():
        return None
    try:
        return _text_numbers(values).cast(pl.Int64, strict=True)
    except pl.exceptions.PolarsError:
        return None


def _zero_one(frame: pl.DataFrame, column: str, path: Path) -> pl.Series:
    values = whole_numbers(frame.get_column(column))
    if values is None or values.null_count() or not values.is_in([0, 1]).all():
        raise AuditError(f"gold file {path}: column {column!r} must hold only 0 or 1 (or "
                         "true/false) in every row")
    return values


def _paths(frame: pl.DataFrame, described: str) -> list[tuple[str, pl.DataFrame]]:
    """The rows of each labelling path; the paths compared as text, as the input's are."""
    if PATH_COLUMN not in frame.columns:
        return [(ANY_PATH, frame)]
    frame = frame.with_columns(pl.col(PATH_COLUMN).cast(pl.String))
    if frame.get_column(PATH_COLUMN).null_count():
        raise AuditError(f"{described} has empty {PATH_COLUMN} cells: name the labelling path of "
                         "every row (or drop the column to use one matrix for all)")
    return [(path, frame.filter(pl.col(PATH_COLUMN) == path))
            for path in sorted(frame.get_column(PATH_COLUMN).unique().to_list())]


def gold_correction(path: Path) -> JudgeCorrection:
    """Counts per path from hand-checked 0/1 pairs."""
    frame = named_as(read_frame(path, "gold file", "pass gold=PATH to a CSV or parquet file",
                                as_text=True),
                     [*GOLD_COLUMNS, PATH_COLUMN], path, "gold file")
    require_columns(frame, list(GOLD_COLUMNS), path, "gold file",
                    "it needs truth and judged (0/1 each), one row per hand-checked answer")
    if frame.height == 0:  # it would measure nothing: flat rates, a labeller of unknown worth
        raise AuditError(f"gold file {path} has no rows: it needs one row per hand-checked answer")
    frame = frame.with_columns(truth=_zero_one(frame, "truth", path),
                               judged=_zero_one(frame, "judged", path))
    by_path = {}
    for name, rows in _paths(frame, f"gold file {path}"):
        def count(truth: int, judged: int, rows: pl.DataFrame = rows) -> int:
            return rows.filter((pl.col("truth") == truth) & (pl.col("judged") == judged)).height
        by_path[name] = JudgeConfusion(CODING, count(1, 1), count(1, 0), count(0, 0), count(0, 1))
    return JudgeCorrection(CODING, by_path)


def confusion_correction(path: Path) -> JudgeCorrection:
    """Counts per path as given."""
    frame = named_as(read_frame(path, "confusion file",
                                "pass confusion=PATH to a CSV or parquet file", as_text=True),
                     [*COUNT_COLUMNS, PATH_COLUMN], path, "confusion file")
    require_columns(frame, list(COUNT_COLUMNS), path, "confusion file",
                    "it needs the four counts " + ", ".join(COUNT_COLUMNS))
    by_path = {}
    for name, rows in _paths(frame, f"confusion file {path}"):
        # A file without label_source has one matrix, of no path the user named ('any').
        where = "" if name == ANY_PATH else f" of labelling path {name!r}"
        if rows.height != 1:
            raise AuditError(f"confusion file {path} has {rows.height} rows"
                             + (f" for labelling path {name!r}: give one row of counts per path"
                                if where else ": give one row of counts (or a label_source "
                                "column naming each row's labelling path)"))
        columns = [whole_numbers(rows.get_column(column)) for column in COUNT_COLUMNS]
        counts = [-1 if column is None or column.null_count() else int(column.item())
                  for column in columns]
        if min(counts) < 0:
            # Named: "the counts must be whole numbers" named no column, and a file of rates
            # (0.9, 0.95) read as a typo (judge review 2026-12-02).
            bad = next(column for column, count in zip(COUNT_COLUMNS, counts) if count < 0)
            value = as_numbers(rows.get_column(bad)).item()
            # A rate (0.9) gets the advice for rates; a negative or missing count does not
            # (bad-input probe 2026-12-07: "-2 ... not rates" named a mistake it was not).
            rate = value is not None and 0 < value < 1
            shown = "empty" if value is None else f"{value:g}"
            raise AuditError(f"confusion file {path}: {bad}{where} is {shown}, and the file "
                             "takes counts (whole numbers >= 0 of hand-checked answers)"
                             + ("; for a judge measured only as rates, count its gold answers, "
                                "or pass gold=" if rate else ": correct the count"))
        if not sum(counts):
            raise AuditError(f"confusion file {path}: the counts{where} are all 0, which "
                             "measures nothing; give the hand-checked counts (or leave out the "
                             "file to read the labels as truth)")
        by_path[name] = JudgeConfusion(CODING, *counts)
    return JudgeCorrection(CODING, by_path)


def read_correction(gold: str | None, confusion: str | None) -> JudgeCorrection | None:
    if gold and confusion:
        raise AuditError("pass gold=PATH or confusion=PATH, not both: they describe the same "
                         "labeller")
    correction = (gold_correction(Path(gold)) if gold else
                  confusion_correction(Path(confusion)) if confusion else None)
    check_better_than_coin(correction, "leave out gold= and confusion= to read the labels as "
                           "truth")
    return correction
