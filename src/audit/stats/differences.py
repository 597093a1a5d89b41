"""Means and differences in means, and the permutation test of a difference in means.

`scipy.stats.bootstrap` and `scipy.stats.permutation_test` call the statistics with a batch of
resamples stacked on the leading axes, so each reduces along `axis` only.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats


def sample_mean(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(sample, axis=axis)


def mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean(a) - mean(b) along `axis`."""
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def mean_difference_p_value(a: np.ndarray, b: np.ndarray, resamples: int, alternative: str,
                            seed: int) -> float:
    """Permutation test of mean(a) - mean(b), the groups exchangeable under the null (exact when
    the arrangements number no more than `resamples`); `alternative` as scipy's."""
    result = stats.permutation_test((a, b), mean_difference, permutation_type="independent",
                                    vectorized=True, n_resamples=resamples,
                                    alternative=alternative,
                                    random_state=np.random.default_rng(seed))
    return float(result.pvalue)


# --- within strata of a crossed factor -----------------------------------------------------------
# scipy's permutation_test and bootstrap know no strata, so the stratified test is written here:
# labels permuted only within each stratum (the arrangements enumerated when they are few), and
# the statistic the precision-weighted mean of the strata's differences.

Parts = tuple[np.ndarray, ...]  # one array of unit values per stratum


def stratum_weights(a_parts: Parts, b_parts: Parts) -> np.ndarray:
    """n_a n_b / (n_a + n_b) per stratum: the inverse of the variance factor of a difference of
    two means, so a stratum counts by how well it measures the difference."""
    n_a = np.array([part.shape[-1] for part in a_parts], dtype=float)
    n_b = np.array([part.shape[-1] for part in b_parts], dtype=float)
    return n_a * n_b / (n_a + n_b)


def stratified_mean_difference(*parts: np.ndarray, axis: int = -1) -> np.ndarray:
    """The weighted mean over strata of mean(a_s) - mean(b_s); ``parts`` alternate a_1, b_1,
    a_2, b_2, ... (the form scipy's bootstrap passes samples in). One stratum: mean(a) - mean(b);
    strata of equal shares (nine names of each race among women and among men): the same."""
    a_parts, b_parts = parts[0::2], parts[1::2]
    weights = stratum_weights(a_parts, b_parts)
    differences = [mean_difference(a, b, axis=axis) for a, b in zip(a_parts, b_parts,
                                                                     strict=True)]
    return sum(weight * difference for weight, difference in zip(weights, differences,
                                                                 strict=True)) / weights.sum()


def _stratum_differences(a: np.ndarray, b: np.ndarray, resamples: int,
                         rng: np.random.Generator | None) -> np.ndarray:
    """mean(a) - mean(b) under every relabelling of the stratum's units (rng None), or under
    ``resamples`` random ones."""
    pooled = np.concatenate([a, b])
    if rng is None:
        chosen = np.array(list(itertools.combinations(range(pooled.size), a.size)), dtype=int)
        in_a = np.zeros((chosen.shape[0], pooled.size), dtype=bool)
        np.put_along_axis(in_a, chosen, True, axis=1)
    else:
        order = rng.permuted(np.tile(np.arange(pooled.size), (resamples, 1)), axis=1)
        in_a = order < a.size
    sum_a = (in_a * pooled).sum(axis=1)
    return sum_a / a.size - (pooled.sum() - sum_a) / b.size


def stratified_permutation_p_value(a_parts: Parts, b_parts: Parts, resamples: int,
                                   seed: int) -> tuple[float, float]:
    """Two-sided permutation test of the stratified mean difference, labels exchanged only
    within a stratum; (p, the smallest p it can give). Exact over every arrangement when they
    number at most ``resamples``; else ``resamples`` random ones, p = (1 + count) / (1 +
    resamples) a side, as scipy's. Two-sided: twice the smaller side, at most 1."""
    weights = stratum_weights(a_parts, b_parts)
    observed = float(stratified_mean_difference(*[part for pair in zip(a_parts, b_parts)
                                                  for part in pair]))
    arrangements = math.prod(math.comb(a.size + b.size, a.size)
                             for a, b in zip(a_parts, b_parts, strict=True))
    exact = arrangements <= resamples
    rng = None if exact else np.random.default_rng(seed)
    null = np.zeros(1)
    for weight, a, b in zip(weights, a_parts, b_parts, strict=True):
        stratum = weight * _stratum_differences(a, b, resamples, rng)
        # Every combination of the strata's arrangements (exact), or the r-th of each (random).
        null = (null[:, None] + stratum[None, :]).ravel() if exact else null + stratum
    null = null / weights.sum()
    tolerance = 1e-12 * max(1.0, abs(observed))  # equal statistics up to round-off are ties
    above, below = np.sum(null >= observed - tolerance), np.sum(null <= observed + tolerance)
    if exact:
        return (float(min(1.0, 2.0 * min(above, below) / null.size)),
                min(1.0, 2.0 / arrangements))
    return (float(min(1.0, 2.0 * (1 + min(above, below)) / (1 + resamples))),
            min(1.0, 2.0 / (1 + resamples)))
