"""The cell likelihood Ops (logit_ops.py): gradients against finite differences, and the models'
densities and gradients against PyMC's Binomial and against the judge-error likelihood written
with PyTensor's own functions, on the numba backend (nutpie's) and on the Python one."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.gradient import NullTypeGradError, verify_grad
from scipy.special import expit, gammaln

from audit.methods.rasch.irt.likelihood import binomial_cells, misclassified_binomial_cells
from audit.methods.rasch.irt.logit_ops import (
    binomial_logit_terms_op,
    misclassified_logit_terms_op,
)

MODES = ["NUMBA", "FAST_COMPILE"]


def test_binomial_gradient_of_both_outputs_matches_finite_differences():
    # In all three inputs: the counts are data in every model, but a gradient PyTensor offers
    # must be right wherever it is asked for.
    rng = np.random.default_rng(5)
    successes = rng.integers(0, 8, 12).astype(float)
    inputs = [successes, successes + rng.integers(1, 8, 12), rng.normal(0.0, 2.0, 12)]

    def summed_logp(successes, trials, logit_p):
        return binomial_logit_terms_op(successes, trials, logit_p)[0].sum()

    def summed_slope_squared(successes, trials, logit_p):  # the second derivative, via output 1
        return (binomial_logit_terms_op(successes, trials, logit_p)[1] ** 2).sum()

    for cost in (summed_logp, summed_slope_squared):
        verify_grad(cost, inputs, rng=rng)


def test_judge_error_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    trials = rng.integers(1, 9, 15)
    successes = rng.binomial(trials, 0.5)

    def weighted_logp(logit_p, sensitivity, specificity):
        logp = misclassified_logit_terms_op(successes, trials, logit_p, sensitivity,
                                            specificity)[0]
        return (logp * np.linspace(0.5, 1.5, trials.size)).sum()

    verify_grad(weighted_logp, [rng.normal(0.0, 2.0, trials.size), np.array(0.85),
                                np.array(0.7)], rng=rng)


def test_judge_error_second_derivatives_fail_loudly():
    logit_p = pt.dvector("logit_p")
    d_logit = misclassified_logit_terms_op(np.ones(3), np.full(3, 2.0), logit_p, 0.9, 0.8)[1]
    with pytest.raises(NullTypeGradError):
        pytensor.grad(d_logit.sum(), logit_p)


@pytest.mark.parametrize("mode", MODES)
def test_cells_have_pymcs_binomial_density_less_log_choose(mode):
    # PyMC's own Binomial is the independent reference; log C(n, k) is what binomial_cells omits.
    rng = np.random.default_rng(11)
    trials = rng.integers(1, 12, 300)
    successes = rng.binomial(trials, 0.4)
    log_choose = gammaln(trials + 1) - gammaln(successes + 1) - gammaln(trials - successes + 1)
    with pm.Model(coords={"cell": np.arange(trials.size)}) as model:
        logit_p = pm.Normal("logit_p", 0.0, 3.0, dims="cell")
        binomial_cells("y", pm.Data("trials", trials, dims="cell"), logit_p,
                       observed=pm.Data("successes", successes, dims="cell"), dims="cell")
    point = {"logit_p": rng.normal(0.0, 3.0, trials.size)}
    cell_logp = pytensor.function([model.rvs_to_values[model["logit_p"]]],
                                  model.logp(vars=[model["y"]], sum=False)[0], mode=mode)
    cells = cell_logp(point["logit_p"])
    reference = pm.logp(pm.Binomial.dist(n=trials, logit_p=point["logit_p"]), successes).eval()
    np.testing.assert_allclose(cells + log_choose, reference, rtol=1e-12)
    gradient = model.compile_dlogp(vars=[model["logit_p"]], mode=mode)(point)
    prior_gradient = -point["logit_p"] / 9.0
    np.testing.assert_allclose(gradient - prior_gradient,
                               successes - trials * expit(point["logit_p"]), rtol=1e-10,
                               atol=1e-10)


def logaddexp_judge_error_logp(successes, trials, logit_p, sensitivity, specificity):
    """The judge-error likelihood as the project wrote it before the kernel: the reference."""
    log_p, log_q = -pt.softplus(-logit_p), -pt.softplus(logit_p)
    log_one = pt.logaddexp(pt.log(sensitivity) + log_p, pt.log1p(-specificity) + log_q)
    log_zero = pt.logaddexp(pt.log1p(-sensitivity) + log_p, pt.log(specificity) + log_q)
    return successes * log_one + (trials - successes) * log_zero


def judge_error_model(trials, successes, cells) -> pm.Model:
    with pm.Model(coords={"cell": np.arange(trials.size)}) as model:
        logit_p = pm.Normal("logit_p", 0.0, 3.0, dims="cell")
        sensitivity = pm.Beta("sensitivity", 30, 4)
        specificity = pm.Beta("specificity", 20, 6)
        cells("y", pm.Data("trials", trials, dims="cell"), logit_p, sensitivity, specificity,
              observed=pm.Data("successes", successes, dims="cell"))
    return model


@pytest.mark.parametrize("mode", MODES)
def test_judge_error_model_density_and_gradient_match_pytensors_own_functions(mode):
    rng = np.random.default_rng(12)
    trials = rng.integers(1, 12, 200)
    successes = rng.binomial(trials, 0.6)

    def kernel_cells(name, trials, logit_p, sensitivity, specificity, observed):
        return misclassified_binomial_cells(name, trials, logit_p, sensitivity, specificity,
                                            observed=observed, dims="cell")

    def reference_cells(name, trials, logit_p, sensitivity, specificity, observed):
        return pm.CustomDist(name, trials, logit_p, sensitivity, specificity,
                             logp=logaddexp_judge_error_logp, observed=observed, dims="cell")

    models = [judge_error_model(trials, successes, cells)
              for cells in (kernel_cells, reference_cells)]
    functions = [(model.compile_logp(mode=mode), model.compile_dlogp(mode=mode))
                 for model in models]
    for _ in range(5):
        point = {"logit_p": rng.normal(0.0, 3.0, trials.size),
                 "sensitivity_logodds__": rng.normal(1.5, 1.0),
                 "specificity_logodds__": rng.normal(1.0, 1.0)}
        (logp, dlogp), (reference_logp, reference_dlogp) = [
            (compiled_logp(point), compiled_dlogp(point))
            for compiled_logp, compiled_dlogp in functions]
        np.testing.assert_allclose(logp, reference_logp, rtol=1e-12)
        np.testing.assert_allclose(dlogp, reference_dlogp, rtol=1e-9, atol=1e-9)
