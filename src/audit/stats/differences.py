"""Means and differences in means, and the permutation test of a difference in means.

`scipy.stats.bootstrap` and `scipy.stats.permutation_test` call the statistics with a batch of
resamples stacked on the leading axes, so each reduces along `axis` only.
"""

from __future__ import annotations

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
