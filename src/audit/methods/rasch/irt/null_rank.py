"""Where a demographic contrast ranks among null-vs-null contrasts: the null arm as a diagnostic.

Null personas (random strings) change the prompt as much as a persona does but name no group. Two
groups of n_a and n_b null personas differ by some gap; the share of such null-vs-null gaps
smaller in size than a demographic contrast's is its ``null_percentile``. Like is compared with
like: the contrast's posterior mean is an estimate, so it is ranked among null-vs-null gaps
*estimated as precisely as it was*, not among true null gaps and not among the null personas'
posterior means (which partial pooling shrinks towards each other). Then, when persona texts
move the model no more than random strings do and no group differs, a contrast ranks above 97%
about 3% of the time (benchmarks/bench_null_rank.py measures it). It is read next to the
decision, never instead of it: a `different` contrast at the 50th percentile is still
`different`.

* Fits that estimate the spreads (``fit=population``, ``explanatory``): a null-vs-null gap of
  n_a and n_b new null texts is normal with variance sigma_null^2 k + e^2, k = 1/n_a + 1/n_b, and
  e^2 the contrast's own error variance: its posterior variance less the share its text spread
  carries (mean sigma_residual^2 k). Averaged over sigma_null's draws, so an uncertain null
  spread widens the reference instead of being taken at its mean.
* Plain fits (``rasch``, ``twopl``, ``hurdle``): the null personas' posterior means are
  estimates of the same kind as the contrast's level means (no pooling shrinks them), so a
  null-vs-null gap of those sizes has sd s * sqrt(k), s their sample sd; with a handful of null
  personas s is itself uncertain, which Student's t with (nulls - 1) degrees of freedom carries.

The rule before this one ranked the contrast's mean among resampled splits of the null personas'
posterior means: on 40 no-gap default-shaped designs it put 16% of the rasch fit's contrasts and
52% of the population fit's (whose null means partial pooling shrinks) at 97 or above; this one
puts 1.8% of each there. On 200 designs of the audit's fit config it puts 1.8-3.6% there,
balanced or with 5 of the 16 texts left out (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def _group_factor(n_a: int, n_b: int) -> float:
    return 1.0 / n_a + 1.0 / n_b


def percentile_among_estimated_nulls(gap_mean: float, gap_sd: float, n_a: int, n_b: int,
                                     null_sd: np.ndarray, text_sd: np.ndarray,
                                     k: float | None = None) -> float | None:
    """Percent of null-vs-null gaps (n_a and n_b new null texts, estimated with the contrast's
    own error) smaller in size than ``gap_mean``; ``null_sd`` and ``text_sd`` are draws of the
    two spreads; ``k`` the gap's group factor when it is not 1/n_a + 1/n_b. None without a
    group."""
    if n_a < 1 or n_b < 1:
        return None
    k = _group_factor(n_a, n_b) if k is None else k
    error_variance = max(gap_sd ** 2 - k * float(np.mean(text_sd ** 2)), 0.0)
    reference_sd = np.sqrt(error_variance + k * null_sd ** 2)
    below = 2.0 * stats.norm.cdf(abs(gap_mean) / reference_sd) - 1.0
    return float(100.0 * below.mean())


def percentile_among_null_estimates(gap_mean: float, null_means: np.ndarray | None, n_a: int,
                                    n_b: int, k: float | None = None) -> float | None:
    """Percent of null-vs-null gaps (n_a and n_b null personas, by posterior means of the same
    unpooled kind as the contrast's) smaller in size than ``gap_mean``; None without two null
    personas, a group or any spread among the nulls. ``k``: the gap's group factor when it is
    not 1/n_a + 1/n_b (a cell-balanced mean, balance.py)."""
    if null_means is None or null_means.size < 2 or n_a < 1 or n_b < 1:
        return None
    spread = float(null_means.std(ddof=1))
    if spread == 0.0:
        return None
    ratio = abs(gap_mean) / (spread * np.sqrt(_group_factor(n_a, n_b) if k is None else k))
    return float(100.0 * (2.0 * stats.t.cdf(ratio, null_means.size - 1) - 1.0))
