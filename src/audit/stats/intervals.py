"""Intervals: for rates (label rates, judge accuracy) and for posterior draws (contrasts, floors)."""

from __future__ import annotations

import arviz as az
import numpy as np
from scipy import stats


def jeffreys_interval(successes, trials, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed interval of the Beta(s + 1/2, n - s + 1/2) posterior (Jeffreys prior), with the
    usual convention of 0 and 1 at the boundaries; it keeps near-nominal coverage at the 0% and
    100% rates that refusals and judge accuracy often have (Brown, Cai & DasGupta 2001)."""
    successes, trials = np.asarray(successes, float), np.asarray(trials, float)
    tail = (1 - prob) / 2
    low = stats.beta.ppf(tail, successes + 0.5, trials - successes + 0.5)
    high = stats.beta.ppf(1 - tail, successes + 0.5, trials - successes + 0.5)
    return np.where(successes == 0, 0.0, low), np.where(successes == trials, 1.0, high)


def hdi_bounds(draws, prob: float) -> tuple[float, float]:
    """The highest-density interval of a sample of draws (all axes pooled), as two floats.

    ArviZ's definition (the shortest interval holding ``prob`` of the sorted draws), so a reviewer
    can recompute any reported interval with ``arviz.hdi``."""
    low, high = az.hdi(np.asarray(draws, dtype=float).ravel(), prob=prob)
    return float(low), float(high)
