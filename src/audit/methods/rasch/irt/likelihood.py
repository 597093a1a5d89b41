"""The Binomial-cell likelihood every identified model shares, written for speed.

PyMC's Binomial recomputes log C(n, k) (three gammaln per cell) and its parameter checks at every
gradient, because trials and successes live in pm.Data and cannot be constant-folded. Those terms
do not depend on any parameter, so the posterior is the same without them; dropping them made a
10,000-cell Rasch fit sample 3.5 times faster here (21.7 s against 6.1 s for the same draws;
freezing the data instead gave 11.4 s). Random draws (prior predictive, simulation-based
calibration) still come from PyMC's own Binomial.

Consequence: log-likelihood values are off by the constant sum of log C(n, k), which cancels when
two models are compared on the same cells.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from audit.methods.rasch.irt.logit_ops import binomial_logit_logp, misclassified_logit_logp


def _kernel_logp(successes, trials, logit_p):
    # k log p + (n - k) log(1 - p), with log p = logit - softplus(logit), log(1 - p) = -softplus,
    # value and gradient from one exp per cell (logit_kernel.py).
    return binomial_logit_logp(successes, trials, logit_p)


def _binomial_draws(trials, logit_p, size):
    return pm.Binomial.dist(n=trials, logit_p=logit_p, size=size)


def binomial_cells(name: str, trials, logit_p, observed, dims: str) -> pt.TensorVariable:
    """An observed Binomial variable whose log-density omits log C(n, k)."""
    return pm.CustomDist(name, trials, logit_p, logp=_kernel_logp, dist=_binomial_draws,
                         observed=observed, dims=dims)


def _misclassified_logp(successes, trials, logit_p, sensitivity, specificity, groups=None):
    # The judge reports 1 with probability sens * p + (1 - spec) * (1 - p); value and gradients
    # from one exp and two logs per cell (logit_kernel.py). With ``groups`` (the cells of each
    # labelling path) the rates are vectors, one entry per path, and each path's cells go through
    # the kernel with that path's scalar rates.
    if groups is None:
        return misclassified_logit_logp(successes, trials, logit_p, sensitivity, specificity)
    successes, trials, logit_p = pt.broadcast_arrays(successes, trials, logit_p)
    logp = pt.zeros(logit_p.shape, dtype="float64")
    for position, cells in enumerate(groups):
        part = misclassified_logit_logp(successes[cells], trials[cells], logit_p[cells],
                                        sensitivity[position], specificity[position])
        logp = pt.set_subtensor(logp[cells], part)
    return logp


def _misclassified_draws(trials, logit_p, sensitivity, specificity, size, cell_path=None):
    p = pm.math.sigmoid(logit_p)
    if cell_path is not None:
        sensitivity, specificity = sensitivity[cell_path], specificity[cell_path]
    return pm.Binomial.dist(n=trials, p=sensitivity * p + (1 - specificity) * (1 - p), size=size)


def misclassified_binomial_cells(name: str, trials, logit_p, sensitivity, specificity, observed,
                                 dims: str, cell_path: np.ndarray | None = None
                                 ) -> pt.TensorVariable:
    """Binomial cells of judge labels, each the true decision passed through the judge's errors.

    The true decision is 1 with probability logistic(logit_p); the judge calls a true 1 a 1 with
    probability ``sensitivity`` and a true 0 a 0 with probability ``specificity``, so every
    observed label is Bernoulli(sens * p + (1 - spec) * (1 - p)) and a cell of n labels is still
    Binomial: the correction costs no extra dimensions. ``cell_path`` (each cell's position in
    the rate vectors) lets cells of different labelling paths carry different rates; a cell holds
    the labels of one path only (indexing.index_design(by_path=True)). As in binomial_cells,
    log C(n, k) is left out.
    """
    if cell_path is None:
        logp, draws = _misclassified_logp, _misclassified_draws
    else:
        # Constant index sets, closed over with partial (picklable, unlike a closure).
        groups = [np.flatnonzero(cell_path == position)
                  for position in range(int(cell_path.max()) + 1)]
        logp = partial(_misclassified_logp, groups=groups)
        draws = partial(_misclassified_draws, cell_path=cell_path)
    return pm.CustomDist(name, trials, logit_p, sensitivity, specificity, logp=logp, dist=draws,
                         observed=observed, dims=dims)
