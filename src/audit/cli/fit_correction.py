"""The labeller's error rates for `python -m audit.fit`: a gold file or a confusion-count file.

Imported labels come from someone's labeller too, so they get the audit's correction (a cut,
irt/judge_cut.py) when the user says how good that labeller is:

* ``gold=PATH``: one row per hand-checked answer, ``truth`` and ``judged`` as 0/1 (or
  true/false), in the input table's own coding;
* ``confusion=PATH``: the counts themselves, columns ``true_1_judged_1, true_1_judged_0,
  true_0_judged_0, true_0_judged_1`` (what an audit run's fit/diagnostics.json records).

Either may carry a ``label_source`` column (one matrix per labelling path); the input table then
names its own path column with ``source=COLUMN``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.methods.rasch.irt.judge_error import ANY_PATH, JudgeConfusion, JudgeCorrection
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.tables import read_frame, require_columns

COUNT_COLUMNS = ("true_1_judged_1", "true_1_judged_0", "true_0_judged_0", "true_0_judged_1")
GOLD_COLUMNS = ("truth", "judged")
CODING = "imported"  # the input's own 0/1, whatever it codes


def _zero_one(frame: pl.DataFrame, column: str, path: Path) -> pl.Series:
    values = frame.get_column(column)
    try:
        values = values.cast(pl.Int64, strict=True)
    except pl.exceptions.PolarsError:
        values = pl.Series(column, [None])
    if values.null_count() or not values.is_in([0, 1]).all():
        raise AuditError(f"gold file {path}: column {column!r} must hold only 0 or 1 (or "
                         "true/false) in every row")
    return values


def _paths(frame: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    if PATH_COLUMN not in frame.columns:
        return [(ANY_PATH, frame)]
    return [(str(path), frame.filter(pl.col(PATH_COLUMN) == path))
            for path in sorted(frame.get_column(PATH_COLUMN).cast(pl.String).unique().to_list())]


def gold_correction(path: Path) -> JudgeCorrection:
    """Counts per path from hand-checked 0/1 pairs."""
    frame = read_frame(path, "gold file", "pass gold=PATH to a CSV or parquet file")
    require_columns(frame, list(GOLD_COLUMNS), path, "gold file",
                    "it needs truth and judged (0/1 each), one row per hand-checked answer")
    frame = frame.with_columns(truth=_zero_one(frame, "truth", path),
                               judged=_zero_one(frame, "judged", path))
    by_path = {}
    for name, rows in _paths(frame):
        def count(truth: int, judged: int, rows: pl.DataFrame = rows) -> int:
            return rows.filter((pl.col("truth") == truth) & (pl.col("judged") == judged)).height
        by_path[name] = JudgeConfusion(CODING, count(1, 1), count(1, 0), count(0, 0), count(0, 1))
    if not by_path:
        raise AuditError(f"gold file {path} has no rows: it needs one row per hand-checked answer")
    return JudgeCorrection(CODING, by_path)


def confusion_correction(path: Path) -> JudgeCorrection:
    """Counts per path as given."""
    frame = read_frame(path, "confusion file", "pass confusion=PATH to a CSV or parquet file")
    require_columns(frame, list(COUNT_COLUMNS), path, "confusion file",
                    "it needs the four counts " + ", ".join(COUNT_COLUMNS))
    by_path = {}
    for name, rows in _paths(frame):
        if rows.height != 1:
            raise AuditError(f"confusion file {path} has {rows.height} rows for labelling path "
                             f"{name!r}: give one row of counts per path")
        try:
            counts = [int(rows.get_column(column).cast(pl.Int64, strict=True).item())
                      for column in COUNT_COLUMNS]
        except (pl.exceptions.PolarsError, TypeError):
            counts = [-1]
        if min(counts) < 0:
            raise AuditError(f"confusion file {path}: the counts must be whole numbers >= 0")
        by_path[name] = JudgeConfusion(CODING, *counts)
    return JudgeCorrection(CODING, by_path)


def read_correction(gold: str | None, confusion: str | None) -> JudgeCorrection | None:
    if gold and confusion:
        raise AuditError("pass gold=PATH or confusion=PATH, not both: they describe the same "
                         "labeller")
    if gold:
        return gold_correction(Path(gold))
    if confusion:
        return confusion_correction(Path(confusion))
    return None
