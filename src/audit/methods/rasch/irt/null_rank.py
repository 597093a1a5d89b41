"""Where a demographic contrast ranks among null-vs-null contrasts: the null arm as a diagnostic.

Null personas (random strings) change the prompt as much as a persona does but name no group. Two
groups of n_a and n_b null personas, split at random, differ by some gap; the share of such
null-vs-null gaps smaller in size than a demographic contrast's is its ``null_percentile``: 97
says only 3% of placebo splits of the same sizes moved the model as much. It is read next to the
decision, never instead of it: a `different` contrast at the 50th percentile is still
`different` (the group effect is estimated with the text spread already in its interval), and
the percentile says that any change of persona text moves this model that much.

Splits draw the null personas without replacement while there are enough of them (n_a + n_b at
most the null count), and with replacement (a bootstrap of the null arm) when there are not, so a
run with four null personas can still rank a contrast between two levels of four texts each.
"""

from __future__ import annotations

import numpy as np

# Random splits per contrast: the percentile's Monte Carlo sd is below 1.2 points at 2,000.
NULL_SPLITS = 2000
# Fixed, so a rerun of a report computes the same percentiles from the same posterior.
SPLIT_SEED = 20251123


def null_percentile(null_means: np.ndarray | None, n_a: int, n_b: int,
                    gap: float) -> float | None:
    """Percent of null-vs-null gaps (groups of n_a and n_b null personas, by their posterior mean
    favourability) smaller in size than ``gap``; None without two null personas or a group."""
    if null_means is None or null_means.size < 2 or n_a < 1 or n_b < 1:
        return None
    rng = np.random.default_rng(SPLIT_SEED)
    if n_a + n_b <= null_means.size:
        order = rng.permuted(np.tile(np.arange(null_means.size), (NULL_SPLITS, 1)), axis=1)
        group_a, group_b = order[:, :n_a], order[:, n_a:n_a + n_b]
    else:
        group_a = rng.integers(0, null_means.size, (NULL_SPLITS, n_a))
        group_b = rng.integers(0, null_means.size, (NULL_SPLITS, n_b))
    null_gaps = null_means[group_a].mean(axis=1) - null_means[group_b].mean(axis=1)
    return float(100.0 * (np.abs(null_gaps) < abs(gap)).mean())
