"""Statistics of samples that scipy's resampling tests call: vectorised along `axis`.

`scipy.stats.bootstrap` and `scipy.stats.permutation_test` call these with a batch of resamples
stacked on the leading axes, so each reduces along `axis` only.
"""

from __future__ import annotations

import numpy as np


def sample_mean(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(sample, axis=axis)


def mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean(a) - mean(b) along `axis`."""
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)
