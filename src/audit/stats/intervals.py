"""Intervals: for rates (label rates, judge accuracy), for posterior draws (contrasts, floors)
and for means over a design's few units (the counterfactual design tests)."""

from __future__ import annotations

import arviz as az
import numpy as np
from scipy import stats

from audit.stats.differences import stratified_mean_difference, stratum_weights


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


# --- intervals over a design's few units (the counterfactual design tests) ----------------------
# With 3 to 8 templates, or a few names a group, the percentile bootstrap covers far less than
# its level (0.74 at 3 templates, 0.86 at 6; 0.80 at 3 names against 3; 2,000 normal data sets,
# 95% intervals): it resamples the spread of so few values, which is narrower than the
# population's. Student's t keeps the level for normal unit means (benchmarks/RESULTS.md).


def mean_t_interval(values: np.ndarray, confidence_level: float) -> tuple[float, float] | None:
    """Student's t interval of a mean; None below two values. Constant values: the point."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return None
    mean = float(values.mean())
    if np.all(values == values[0]):
        return mean, mean
    low, high = stats.ttest_1samp(values, 0.0).confidence_interval(confidence_level)
    return float(low), float(high)


def stratified_difference_t_interval(a_parts, b_parts,
                                     confidence_level: float) -> tuple[float, float] | None:
    """t interval of the stratified mean difference (differences.stratified_mean_difference):
    with strata weights w_s = n_a n_b / (n_a + n_b), its variance is sigma^2 / sum(w_s), sigma^2
    the variance of a unit mean within its group and stratum, pooled over every group x stratum
    (df: units less two a stratum). One stratum: the pooled two-sample t interval. None when
    no degree of freedom is left."""
    parts = [np.asarray(part, dtype=float) for pair in zip(a_parts, b_parts, strict=True)
             for part in pair]
    point = float(stratified_mean_difference(*parts))
    df = sum(part.size for part in parts) - len(parts)
    if df < 1:
        return None
    squares = sum(float(((part - part.mean()) ** 2).sum()) for part in parts)
    weight = float(stratum_weights(parts[0::2], parts[1::2]).sum())
    half = float(stats.t.ppf(0.5 + confidence_level / 2.0, df)) * np.sqrt(squares / df / weight)
    return point - half, point + half
