"""What the per-method schema tests ask of a table schema, given one valid row of it: that a bad
value in a column is refused naming the column, that rows repeat only under another key, and
what becomes of a column the schema does not name."""

from __future__ import annotations

import polars as pl
import pytest

from audit.errors import AuditError
from audit.schemas import validate


def assert_value_refused(schema, row: dict, column: str, value) -> None:
    with pytest.raises(AuditError, match=f"column '{column}'"):
        validate(pl.DataFrame([{**row, column: value}]), schema, "table")


def assert_rows_repeat_only_under_another_key(schema, row: dict, other: dict) -> None:
    """`row` twice is refused; `row` and `row` with `other` changed (a key column) are not."""
    assert validate(pl.DataFrame([row, {**row, **other}]), schema, "table").height == 2
    with pytest.raises(AuditError, match=schema.__name__):
        validate(pl.DataFrame([row, row]), schema, "table")


def extra_column_outcome(schema, row: dict) -> str:
    """"refused", "dropped" or "kept": a column `note` the schema does not name."""
    try:
        frame = validate(pl.DataFrame([{**row, "note": "x"}]), schema, "table")
    except AuditError as error:
        assert "note" in str(error), error
        return "refused"
    return "kept" if "note" in frame.columns else "dropped"
