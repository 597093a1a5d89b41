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


# A sample HDI's ends are order statistics of the draws: with few draws outside the interval they
# are the draws' extremes, which move outwards as draws are added. An adaptive run's interim look
# decides at 99.998% (1% of alpha 0.05 over three looks and seven contrasts): 32,000 draws leave
# 0.8 outside, so the "HDI" was the range of the draws, 4.14 posterior sds from the mean on a normal
# posterior against the interval's 4.23, and 1,600 draws (a benchmark's fast fit) called a contrast
# different at 3.38 sds. With at least this many draws outside, each end is placed to about a
# tenth of a posterior sd.
MIN_DRAWS_OUTSIDE = 20


def decision_bounds(draws, prob: float) -> tuple[float, float, str]:
    """The interval a decision is taken on, of mass ``prob``: the sample HDI (hdi_bounds) when
    the draws resolve it (at least MIN_DRAWS_OUTSIDE outside it), else the normal interval of
    the draws' mean and sd, whose ends do not depend on how many draws there are; the third
    value names which ("hdi" or "normal")."""
    flat = np.asarray(draws, dtype=float).ravel()
    if flat.size * (1.0 - prob) >= MIN_DRAWS_OUTSIDE:
        return (*hdi_bounds(flat, prob), "hdi")
    mean, sd = float(flat.mean()), float(flat.std(ddof=1))
    z = float(stats.norm.ppf(1.0 - (1.0 - prob) / 2.0))
    return mean - z * sd, mean + z * sd, "normal"


def hdi_bounds(draws, prob: float) -> tuple[float, float]:
    """The highest-density interval of a sample of draws (all axes pooled), as two floats.

    ArviZ's definition (the shortest interval holding ``prob`` of the sorted draws), so a reviewer
    can recompute any reported interval with ``arviz.hdi``."""
    low, high = az.hdi(np.asarray(draws, dtype=float).ravel(), prob=prob)
    return float(low), float(high)
