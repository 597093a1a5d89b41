"""What every method's verdict rules (methods/NAME/verdict.py) share: the checked comparison and
the bad-input error (a run's tables are read by `audit.tables.read_table`).

audit.methods.verdict (for `python -m audit.verdict` and every run's summary) finds a method's
rules through the registry (`method_module(name, "verdict").judge_run`), so each method keeps its
rules beside its schemas and a new method adds its verdict in its own folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from audit.errors import AuditError


class VerdictError(AuditError):
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
    # False for a check of the run itself (a fit's convergence), which can fail a run but not
    # pass one: a run whose comparisons of groups were all untestable is NOT TESTED.
    about_groups: bool = True
    # What a run's summary calls the check when it fails; "" for the group's last part and the
    # name ("race Black vs White"). A check named for what it asks needs it: a failed
    # convergence check read "fit converged" (CI review 2026-12-02).
    failed_title: str = ""
    # A comparison that passed because its method could not decide it either way (a Rasch
    # contrast `undecided`): no gap shown, none ruled out. A PASS counts them in its phrase, so
    # a gate that passed on too little data does not read as evidence of equal treatment.
    undecided: bool = False

    def title_when_failed(self) -> str:
        return self.failed_title or f"{self.group.split('.', 1)[-1]} {self.name}"


def finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def decimals_beside(value: float, threshold: float, fewest: int = 2, most: int = 12) -> int:
    """The fewest decimals (from ``fewest``) that keep ``value``, once written, on its own side of
    ``threshold`` (at or above it, or below): a mass of 0.99996 must not read 100%, nor a
    probability of 0.1996 read "0.20" beside a threshold of 0.2 it does not reach."""
    digits = fewest
    while digits < most and (round(value, digits) >= threshold) != (value >= threshold):
        digits += 1
    return digits


def signed(value: float, digits: int = 2) -> str:
    """A signed number to `digits` decimals; a value that rounds to zero reads +0.00, not
    "-0.00" (a gap of -0.001 printed as a negative zero beside its interval)."""
    text = f"{value:+.{digits}f}"
    return "+" + text[1:] if text.startswith("-") and float(text) == 0 else text


def percent(probability: float) -> str:
    """An interval's mass as a report writes it: 94%, 99.29% (1 - 0.05 / 7); digits are added
    while a mass below 1 would read 100% (an adaptive run's interim look over many contrasts)."""
    digits = decimals_beside(100 * probability, 100.0)
    return f"{100 * probability:.{digits}f}".rstrip("0").rstrip(".") + "%"
