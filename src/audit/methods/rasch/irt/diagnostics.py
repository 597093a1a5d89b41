"""Convergence diagnostics of a fit, as numbers a run logs and a user can act on.

A fit that did not converge still returns (its posterior may be what the user needs to see to
debug it), but it carries a ``converged`` flag and readable problems, logged as warnings and
as MLflow metrics and tags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl
from xarray import DataTree

from audit.methods.rasch.config import FitConfig


@dataclass(frozen=True)
class Diagnostics:
    rhat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int
    rhat_limit: float
    ess_limit: float

    @property
    def converged(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        """One sentence per failed check, each with the usual fix."""
        found = []
        if math.isnan(self.rhat_max):
            # One chain: R-hat compares chains, and "R-hat max nan > 1.01: chains disagree"
            # blamed chains there were none of (judge review 2026-12-02).
            found.append("R-hat could not be computed: it compares chains, so it needs "
                         "fit.chains of 2 or more (with one chain nothing shows the fit "
                         "converged)")
        elif not self.rhat_max <= self.rhat_limit:
            found.append(f"R-hat max {self.rhat_max:.3f} > {self.rhat_limit}: chains disagree; "
                         "raise fit.tune and fit.draws")
        if not self.ess_bulk_min >= self.ess_limit:
            found.append(f"bulk ESS min {self.ess_bulk_min:.0f} < {self.ess_limit:.0f}: "
                         "raise fit.draws")
        if not self.ess_tail_min >= self.ess_limit:
            found.append(f"tail ESS min {self.ess_tail_min:.0f} < {self.ess_limit:.0f}: "
                         "HDIs are unreliable; raise fit.draws")
        if self.divergences:
            found.append(f"{self.divergences} divergent transitions: raise fit.target_accept "
                         "(for example 0.95)")
        return found


def checked(column: str) -> pl.Expr:
    """The summary rows whose ``column`` the convergence check reads, and the report's plots
    with it. Not null: a rate the judge cut held fixed. Not NaN: a parameter with no spread in
    any chain, whose R-hat and ESS ArviZ computes as 0/0. Draws that are not numbers never
    reach here: the summary stops on them with NonFiniteDraws (test_diagnostics.py).
    """
    return pl.col(column).is_not_null() & pl.col(column).is_not_nan()


def _worst(summary: pl.DataFrame, column: str, worst: str) -> float:
    values = summary.filter(checked(column)).get_column(column) if column in summary.columns \
        else pl.Series([], dtype=pl.Float64)
    if values.is_empty():
        return float("nan")
    return float(values.max() if worst == "max" else values.min())


def diagnose(idata: DataTree, summary: pl.DataFrame, fit: FitConfig) -> Diagnostics:
    sample_stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    divergences = 0
    if sample_stats is not None and "diverging" in sample_stats.data_vars:
        divergences = int(sample_stats["diverging"].sum())
    return Diagnostics(
        rhat_max=_worst(summary, "r_hat", "max"),
        ess_bulk_min=_worst(summary, "ess_bulk", "min"),
        ess_tail_min=_worst(summary, "ess_tail", "min"),
        divergences=divergences,
        rhat_limit=fit.rhat_max,
        ess_limit=fit.ess_min,
    )
