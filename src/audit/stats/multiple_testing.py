"""Multiple testing: p-values adjusted over the family of tests a method reports together.

The one wrapper of statsmodels' `multipletests` (Benjamini-Hochberg, Holm, Bonferroni) that the
methods share, so every table treats a missing p-value the same way: it stays missing and does
not count as a member of the family.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from statsmodels.stats.multitest import multipletests

ADJUSTMENTS = ("fdr_bh", "holm", "bonferroni")  # statsmodels' names


def adjust_p_values(p_values: Sequence[float | None] | np.ndarray,
                    method: str = "fdr_bh") -> list[float | None]:
    """Adjusted p-values in the input's order; a missing one (None or NaN) stays None.

    `fdr_bh` is Benjamini-Hochberg (false discovery rate), `holm` and `bonferroni` control the
    family-wise error rate.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown p-value adjustment {method!r}; one of {ADJUSTMENTS}")
    values = [None if p is None else float(p) for p in p_values]
    present = [index for index, p in enumerate(values) if p is not None and np.isfinite(p)]
    adjusted: list[float | None] = [None] * len(values)
    if present:
        corrected = multipletests([values[index] for index in present], method=method)[1]
        for index, value in zip(present, corrected, strict=True):
            adjusted[index] = float(value)
    return adjusted
