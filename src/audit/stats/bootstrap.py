"""Bootstrap intervals of means and of differences in means (scipy's `stats.bootstrap`).

`bootstrap_interval` is the IAT's (BCa by default, falling back to the percentile interval where
BCa is undefined); `mean_interval` and `difference_interval` are the counterfactual method's
percentile intervals. All are undefined (nan, nan) below two values in a sample, which say
nothing of its spread, and give the point interval on constant data, where resampling has
nothing to say.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from scipy import stats

from audit.stats.differences import mean_difference, sample_mean

log = logging.getLogger(__name__)


def constant(*samples: np.ndarray) -> bool:
    """True when the pooled samples hold no value or a single repeated value."""
    values = np.concatenate(samples)
    return bool(values.size == 0 or np.all(values == values[0]))


def bootstrap_interval(values: np.ndarray, resamples: int, confidence_level: float, method: str,
                       seed: int) -> tuple[float, float]:
    """scipy's bootstrap interval of the mean; (nan, nan) below two values.

    Constant data gives the point interval (every resample has the same mean, where BCa is
    undefined); BCa that still comes out undefined on near-constant data falls back to the
    percentile interval, with a log line saying so."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float("nan"), float("nan")
    if np.all(values == values[0]):
        mean = float(values.mean())  # not values[0]: the mean of equal floats may differ by an ulp
        return mean, mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap((values,), sample_mean, n_resamples=resamples, vectorized=True,
                                 confidence_level=confidence_level, method=method,
                                 rng=np.random.default_rng(seed))
        low, high = result.confidence_interval
        if not (np.isfinite(low) and np.isfinite(high)) and method != "percentile":
            log.info("the %s interval is undefined for these %d values; using the percentile "
                     "interval", method, values.size)
            result = stats.bootstrap((values,), sample_mean, n_resamples=resamples,
                                     vectorized=True, confidence_level=confidence_level,
                                     method="percentile", rng=np.random.default_rng(seed))
            low, high = result.confidence_interval
    return float(low), float(high)


def _bounds(result) -> tuple[float, float]:
    low, high = result.confidence_interval
    return float(low), float(high)


def mean_interval(values: np.ndarray, resamples: int, confidence_level: float,
                  seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean; (nan, nan) below two values (one value gave
    the point interval, as if it were certain); a point when the data cannot vary."""
    if values.size < 2:
        return float("nan"), float("nan")
    if constant(values):
        return float(values.mean()), float(values.mean())
    result = stats.bootstrap((values,), np.mean, n_resamples=resamples,
                             confidence_level=confidence_level, method="percentile",
                             random_state=np.random.default_rng(seed))
    return _bounds(result)


def difference_interval(a: np.ndarray, b: np.ndarray, resamples: int, confidence_level: float,
                        seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a) - mean(b), resampling each group on its own;
    (nan, nan) when a group has fewer than two values."""
    if a.size < 2 or b.size < 2:
        return float("nan"), float("nan")
    point = float(a.mean() - b.mean())
    if constant(a) and constant(b):
        return point, point
    result = stats.bootstrap((a, b), mean_difference, n_resamples=resamples,
                             confidence_level=confidence_level, method="percentile",
                             random_state=np.random.default_rng(seed))
    return _bounds(result)
