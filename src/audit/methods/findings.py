"""What a run found, in the shape every method reports it: its headline comparisons.

Each method's report module builds `Findings` from its own tables (`AuditMethod.findings`);
summary.py turns them into the lines a run ends with and the MLflow run's description.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from audit.methods.checks import signed


def number(value: float) -> str:
    """Signed, two decimals; three for small values (a DIF-score gap of 0.012). A value that
    rounds to zero reads +0.000, not "-0.000" (a gap of -0.0004 beside its interval)."""
    return signed(value, 2 if value == 0 or abs(value) >= 0.1 else 3)


@dataclass(frozen=True)
class Headline:
    """One headline comparison, as a method reports it."""

    compared: str  # what is compared: "race: Black vs White (qwen_coder_0_5b)"
    decision: str  # the decision in words: "no practical difference"
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    interval: str = ""  # what [low, high] is: "94% HDI", "95% bootstrap CI"
    detail: str = ""  # what else decides it: "Holm-adjusted p 0.03"
    metric: str | None = None  # the MLflow metric holding the estimate: a runs-table column
    # What the estimate is measured in, said beside it: "log-odds" (a reviewer read a bare
    # "-0.80" and had to find the unit in the docs).
    unit: str = ""

    def line(self) -> str:
        evidence = []
        if self.estimate is not None:
            evidence.append(number(self.estimate) + (f" {self.unit}" if self.unit else ""))
        bounds = []
        if self.low is not None and self.high is not None:
            bounds.append(f"{self.interval} {number(self.low)} to {number(self.high)}".strip())
        if self.detail:
            bounds.append(self.detail)
        text = f"{self.compared}: {self.decision}"
        if evidence:
            text += f", {evidence[0]}"
        return text + (f" ({'; '.join(bounds)})" if bounds else "")


@dataclass(frozen=True)
class Findings:
    """What a run found, from its own tables."""

    headlines: Sequence[Headline]
    notes: Sequence[str] = ()  # sentences that qualify every headline, said first
    source: Path | None = None  # the table that holds every comparison
    empty: str = "no comparison to report"  # said when there are no headlines
    metrics: Sequence[str] = ()  # further metrics to show as runs-table columns
