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
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key
from scipy.special import expit, gammaln

from audit.methods.rasch.irt import logit_ops
from audit.methods.rasch.irt.likelihood import binomial_cells, misclassified_binomial_cells
from audit.methods.rasch.irt.logit_kernel import binomial_logit_terms, misclassified_logit_terms
from audit.methods.rasch.irt.logit_ops import (
    binomial_logit_logp,
    binomial_logit_terms_op,
    misclassified_logit_logp,
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


def test_the_ops_refuse_anything_but_vector_cells_and_scalar_rates():
    """Catches an Op reading a matrix of cells as flat vectors, or per-cell rates as one rate."""
    with pytest.raises(TypeError, match="take vectors"):
        binomial_logit_terms_op(np.ones((2, 2)), np.full((2, 2), 3.0), np.zeros((2, 2)))
    with pytest.raises(TypeError, match="one sensitivity and one specificity"):
        misclassified_logit_terms_op(np.ones(2), np.full(2, 3.0), np.zeros(2),
                                     np.array([0.9, 0.7]), 0.8)


def test_cell_densities_broadcast_their_inputs_and_keep_the_cells_shape():
    """Catches the densities coming back flattened, or a scalar trial count not broadcast to every
    cell (the kernel refuses counts and logits of different lengths)."""
    successes = np.array([[0, 1, 2], [3, 1, 0]])
    logit_p = np.array([[-1.0, 0.0, 2.0], [0.5, -2.0, 1.0]])
    binomial = binomial_logit_logp(successes, 3, logit_p).eval(mode="FAST_COMPILE")
    assert binomial.shape == (2, 3)
    np.testing.assert_allclose(binomial, successes * logit_p - 3 * np.logaddexp(0.0, logit_p),
                               rtol=1e-12)
    judged = misclassified_logit_logp(successes, 3, logit_p, 0.9, 0.8).eval(
        mode="FAST_COMPILE")
    says_one = 0.9 * expit(logit_p) + 0.2 * expit(-logit_p)
    assert judged.shape == (2, 3)
    np.testing.assert_allclose(judged, successes * np.log(says_one)
                               + (3 - successes) * np.log1p(-says_one), rtol=1e-12)


def test_random_draws_follow_the_true_rate_and_each_paths_judge_rates():
    """Catches prior-predictive draws with the logit's sign flipped, the false-positive rate
    applied to true ones, or a path's sensitivity and specificity swapped."""
    logit_p = np.array([-40.0, 40.0, -40.0, 40.0])  # true decisions 0, 1, 0, 1, all but surely
    with pm.Model():
        truth = binomial_cells("truth", np.full(4, 5), logit_p, observed=None, dims=None)
        # Path 0 calls every answer 1 (sensitivity 1, specificity 0); path 1 is never wrong.
        judged = misclassified_binomial_cells("judged", np.full(4, 5), logit_p,
                                              np.array([1.0, 1.0]), np.array([0.0, 1.0]),
                                              observed=None, dims=None,
                                              cell_path=np.array([0, 0, 1, 1]))
    assert pm.draw(truth, random_seed=1, mode="FAST_COMPILE").tolist() == [0, 5, 0, 5]
    assert pm.draw(judged, random_seed=1, mode="FAST_COMPILE").tolist() == [5, 5, 0, 5]


def test_observed_cells_carry_their_dimension():
    """Catches binomial_cells or misclassified_binomial_cells dropping ``dims``: the fit's
    observed data and log-likelihood would lose their cell coordinate."""
    with pm.Model(coords={"cell": ["a", "b"]}) as model:
        binomial_cells("y", np.array([2, 3]), np.zeros(2), observed=np.array([1, 2]), dims="cell")
        misclassified_binomial_cells("z", np.array([2, 3]), np.zeros(2), 0.9, 0.8,
                                     observed=np.array([1, 2]), dims="cell")
    assert model.named_vars_to_dims["y"] == ("cell",)
    assert model.named_vars_to_dims["z"] == ("cell",)


def test_each_op_compiles_its_own_kernel_under_a_key_the_kernels_source_sets(monkeypatch):
    """Bugs caught: an Op pointed at the other kernel (the judge-error arithmetic for plain
    cells), which passed every test on a machine whose ~/.pytensor cache held the right function
    under the hand-bumped KERNEL_VERSION; and a cache key that stays put when logit_kernel.py
    changes, so a cached model function keeps the old arithmetic."""
    ops = {binomial_logit_terms_op: binomial_logit_terms,
           misclassified_logit_terms_op: misclassified_logit_terms}
    keys = {}
    for op, kernel in ops.items():
        function, keys[op] = numba_funcify_and_cache_key(op)
        assert function is kernel
    assert len(set(keys.values())) == 2
    edited = logit_ops.KERNEL_SOURCE.replace(b"LARGEST_EXPONENT = 708.0",
                                             b"LARGEST_EXPONENT = 700.0")
    assert edited != logit_ops.KERNEL_SOURCE
    monkeypatch.setattr(logit_ops, "KERNEL_SOURCE", edited)
    for op in ops:
        assert numba_funcify_and_cache_key(op)[1] != keys[op]


def test_the_ops_are_made_without_a_deprecation_of_our_own():
    """Catches an Op method with a signature PyTensor deprecates (infer_shape's `fgraph`, which
    PyTensor 3.3 warns about as each class is made, attributing it to its own metaclass): every
    deprecation is an error in a fresh interpreter that imports the Ops (the pinned stack
    itself raises none on this import)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           "import audit.methods.rasch.irt.logit_ops"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
