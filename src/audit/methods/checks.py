"""What every method's verdict rules (methods/NAME/verdict.py) share: the checked comparison, the
bad-input error and the reading of a run's tables with one-line errors.

`python -m audit.verdict` (audit.cli.verdict) finds a method's rules through the registry
(`method_module(name, "verdict").judge_run`), so each method keeps its rules beside its schemas and
a new method adds its verdict in its own folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandera.polars as pa
import polars as pl

from audit.errors import AuditError


class VerdictError(AuditError, ValueError):
    """Bad arguments or a malformed run directory: reported as one line, exit status 2."""


@dataclass(frozen=True)
class Check:
    """One checked comparison: a JUnit testcase, failed when flagged, skipped when untestable."""

    method: str
    group: str  # JUnit classname: method, model and what is compared
    name: str
    failed: bool
    message: str
    skipped: bool = False


def finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def read_csv(path: Path, schema: type[pa.DataFrameModel], what: str) -> pl.DataFrame:
    """A run's table validated by the method's own schema. NaN (a statistic that could not be
    computed, written as `NaN` by some writers) reads as null, which every schema's nullable
    statistic accepts: an untestable row is skipped by the rules, not bad input."""
    if not path.is_file():
        raise VerdictError(f"{what} not found at {path}: the run did not finish (rerun it)")
    try:
        frame = pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise VerdictError(f"cannot read {what} at {path}: {str(error).splitlines()[0]}") from None
    missing = [name for name, column in schema.to_schema().columns.items()
               if column.required and name not in frame.columns]
    if missing:
        raise VerdictError(f"{what} at {path} lacks columns {missing} (see {schema.__name__})")
    frame = frame.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None))
    try:
        return schema.validate(frame, lazy=False)
    except pl.exceptions.PolarsError as error:
        raise VerdictError(f"cannot read {what} at {path}: {str(error).splitlines()[0]}") from None
    except (pa.errors.SchemaError, pa.errors.SchemaErrors) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise VerdictError(f"{what} at {path} does not match {schema.__name__}: {first}") from None
