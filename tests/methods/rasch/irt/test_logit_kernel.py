"""The one-exp Binomial-logit kernel: its hand-written exp and log1p against numpy and scipy, its
non-finite inputs, its gradient, and the identified models' likelihood against PyMC's Binomial."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from pytensor.gradient import verify_grad
from scipy.special import expit, gammaln

from audit.methods.rasch.irt.likelihood import binomial_cells
from audit.methods.rasch.irt.logit_kernel import binomial_logit_terms, binomial_logit_terms_op

# Measured against x87 extended precision: at most 4.3e-16 (softplus) and 3.2e-16 (sigmoid), about
# two units in the last place; numpy's logaddexp and scipy's expit reach 2.2e-16 and 2.4e-16.
# Dropping any term of the exp polynomial or of the log1p series, or the low part of ln 2, moves
# some result by more than 1e-15.
RELATIVE_TOLERANCE = 5e-16
pytestmark = pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                                reason="the reference needs extended-precision long double")


def softplus_and_sigmoid(logit_p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # successes = 0 and trials = -1 make the kernel's outputs softplus and sigmoid themselves.
    logp, gradient = binomial_logit_terms(np.zeros_like(logit_p), -np.ones_like(logit_p), logit_p)
    return logp, gradient


def assert_accurate(logit_p: np.ndarray) -> None:
    softplus, sigmoid = softplus_and_sigmoid(logit_p)
    extended = logit_p.astype(np.longdouble)
    for value, reference in ((softplus, np.logaddexp(np.longdouble(0.0), extended)),
                             (sigmoid, 1.0 / (1.0 + np.exp(-extended)))):
        assert float((np.abs(value - reference) / reference).max()) <= RELATIVE_TOLERANCE


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 64),
              elements=st.floats(-700.0, 700.0, allow_nan=False, allow_subnormal=False)))
def test_softplus_and_sigmoid_are_within_two_units_in_the_last_place(logit_p):
    assert_accurate(logit_p)


def test_accuracy_holds_on_a_dense_grid_and_at_the_branch_points():
    # Every range-reduction interval from e^-700 to 1, and the points where a branch switches:
    # eta = 0 (sign), k ln 2 +- ln 2 / 2 (rounding of the exponent), the clamp.
    grid = np.concatenate([np.linspace(-700.0, 700.0, 400_001),
                           np.log(2.0) * (np.arange(-1000, 1001) + 0.5),
                           [0.0, -0.0, 5e-324, -5e-324, 1e-300, 708.0, -708.0]])
    assert_accurate(grid)


def test_cell_terms_weight_softplus_and_sigmoid_by_the_counts():
    rng = np.random.default_rng(3)
    logit_p = rng.normal(0.0, 3.0, 1_000)
    trials = rng.integers(1, 20, logit_p.size)
    successes = rng.binomial(trials, expit(logit_p))
    logp, gradient = binomial_logit_terms(successes, trials, logit_p)
    # atol: k * eta - n * softplus(eta) cancels to near zero in well-fitted cells.
    np.testing.assert_allclose(logp, successes * logit_p - trials * np.logaddexp(0.0, logit_p),
                               rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(gradient, successes - trials * expit(logit_p), rtol=1e-13,
                               atol=1e-13)


def test_non_finite_logits_give_non_finite_terms_for_nutpie_to_reject():
    # A NaN logit comes from a diverging proposal; the sampler must see it in the gradient too,
    # where the kernel's sigmoid of a NaN would otherwise come out finite.
    logit_p = np.array([np.nan, np.nan, np.inf, -np.inf])
    logp, gradient = binomial_logit_terms(np.array([0, 3, 0, 2]), np.array([5, 5, 5, 5]), logit_p)
    assert np.isnan(logp[:2]).all() and np.isnan(gradient[:2]).all()
    # Infinite logits: log 0 for the cells' failures (p = 1) and successes (p = 0).
    assert not np.isfinite(logp[2:]).any()


def test_cells_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="same length"):
        binomial_logit_terms(np.zeros(3), np.ones(3), np.zeros(4))


def test_gradient_of_both_outputs_matches_finite_differences():
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


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_COMPILE"])
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
