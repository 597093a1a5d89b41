"""The cell likelihood kernels and their hand-written exp, log1p and log (logit_kernel.py):
accuracy against extended precision, the judge-error density against a direct formula,
non-finite inputs, and refused shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import expit

from audit.methods.rasch.irt.logit_kernel import (
    binomial_logit_terms,
    exp_minus_abs,
    log_positive,
    misclassified_logit_terms,
)

# Measured against x87 extended precision: at most 4.3e-16 (softplus) and 3.2e-16 (sigmoid),
# about two units in the last place; numpy's logaddexp and scipy's expit reach 2.2e-16 and
# 2.4e-16. Dropping the low part of ln 2 or a low term of the exp polynomial or the log
# series moves some result by more than 1e-15; the top terms matter less (exp's degree-13 term
# moves exp by 3.5e-16: test_exp_is_within_one_unit_in_the_last_place) or, for the log's
# atanh series, not at all at double precision (mutation review 2026-12-06).
RELATIVE_TOLERANCE = 5e-16
pytestmark = pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                                reason="the reference needs extended-precision long double")


def worst_relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    """Where the reference is 0 (log 1) only an exact 0 will do."""
    zero = reference == 0
    assert (value[zero] == 0).all()
    return float((np.abs(value - reference)[~zero] / np.abs(reference[~zero])).max())


def assert_softplus_and_sigmoid_accurate(logit_p: np.ndarray) -> None:
    # successes = 0 and trials = -1 make the kernel's outputs softplus and sigmoid themselves.
    softplus, sigmoid = binomial_logit_terms(np.zeros_like(logit_p), -np.ones_like(logit_p),
                                             logit_p)
    extended = logit_p.astype(np.longdouble)
    assert worst_relative_error(softplus, np.logaddexp(np.longdouble(0.0), extended)) \
        <= RELATIVE_TOLERANCE
    assert worst_relative_error(sigmoid, 1.0 / (1.0 + np.exp(-extended))) <= RELATIVE_TOLERANCE


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 64),
              elements=st.floats(-700.0, 700.0, allow_nan=False, allow_subnormal=False)))
def test_softplus_and_sigmoid_are_within_two_units_in_the_last_place(logit_p):
    assert_softplus_and_sigmoid_accurate(logit_p)


def test_softplus_and_sigmoid_on_a_dense_grid_and_at_the_branch_points():
    # Every range-reduction interval from e^-700 to 1, and the points where a branch switches:
    # eta = 0 (sign), k ln 2 +- ln 2 / 2 (rounding of the exponent), the clamp.
    grid = np.concatenate([np.linspace(-700.0, 700.0, 400_001),
                           np.log(2.0) * (np.arange(-1000, 1001) + 0.5),
                           [0.0, -0.0, 5e-324, -5e-324, 1e-300, 708.0, -708.0]])
    assert_softplus_and_sigmoid_accurate(grid)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 64),
              elements=st.floats(5e-324, 1.7e308, allow_nan=False, allow_subnormal=True)))
def test_log_is_within_two_units_in_the_last_place(values):
    assume((values != 1.0).any())
    reference = np.log(values.astype(np.longdouble))
    assert worst_relative_error(log_positive(values), reference) <= RELATIVE_TOLERANCE


def test_log_near_one_subnormals_and_special_values():
    # Near 1 the log is small and the reduction's m - 1 must stay exact; subnormals are rescaled.
    near_one = 1.0 + np.arange(1, 2001) * 2.0**-40 * np.array([1, -1] * 1000)
    tiny = np.array([5e-324, 1e-320, 2.2e-308, 2.2250738585072014e-308])
    for values in (near_one, tiny, np.geomspace(1e-300, 1e300, 100_001)):
        reference = np.log(values.astype(np.longdouble))
        assert worst_relative_error(log_positive(values), reference) <= RELATIVE_TOLERANCE
    special = log_positive(np.array([1.0, 0.0, np.inf, -1.0, np.nan]))
    assert special[0] == 0.0 and special[1] == -np.inf and special[2] == np.inf
    assert np.isnan(special[3:]).all()


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


def misclassified_reference(successes, trials, logit_p, sensitivity, specificity):
    """The judge-error density written directly, in extended precision."""
    p = 1.0 / (1.0 + np.exp(-logit_p.astype(np.longdouble)))
    judged_one = sensitivity * p + (1.0 - specificity) * (1.0 - p)
    return successes * np.log(judged_one) + (trials - successes) * np.log1p(-judged_one)


@pytest.mark.parametrize(("sensitivity", "specificity"),
                         [(0.9, 0.8), (0.999, 0.6), (0.55, 0.9999), (0.3, 0.2)])
def test_judge_error_density_matches_the_direct_formula(sensitivity, specificity):
    # (0.3, 0.2) is a judge worse than chance: sens + spec - 1 < 0 flips the slope in eta.
    rng = np.random.default_rng(7)
    logit_p = np.concatenate([rng.normal(0.0, 4.0, 2_000), [-700.0, -40.0, 0.0, 40.0, 700.0]])
    trials = rng.integers(1, 15, logit_p.size)
    successes = rng.binomial(trials, 0.5)
    logp, d_logit, d_sensitivity, d_specificity = misclassified_logit_terms(
        successes, trials, logit_p, sensitivity, specificity)
    reference = misclassified_reference(successes, trials, logit_p, sensitivity, specificity)
    np.testing.assert_allclose(logp, reference.astype(float), rtol=1e-14, atol=1e-13)
    # The derivatives against central differences of the extended-precision density.
    for derivative, shift in ((d_logit, (1e-6, 0, 0)), (d_sensitivity, (0, 1e-7, 0)),
                              (d_specificity, (0, 0, 1e-7))):
        step_logit, step_sensitivity, step_specificity = shift
        step = max(shift)
        upper = misclassified_reference(successes, trials, logit_p + step_logit,
                                        sensitivity + step_sensitivity,
                                        specificity + step_specificity)
        lower = misclassified_reference(successes, trials, logit_p - step_logit,
                                        sensitivity - step_sensitivity,
                                        specificity - step_specificity)
        np.testing.assert_allclose(derivative, ((upper - lower) / (2 * step)).astype(float),
                                   rtol=1e-6, atol=1e-6)


def test_empty_cells_sides_contribute_nothing_even_where_their_log_is_infinite():
    # A judge that never says 1 (sensitivity 0, specificity 1): log r = -inf, but a cell with no
    # ones has density 1 (0 * -inf would be NaN), and a cell with ones is impossible.
    logp, d_logit, d_sensitivity, _ = misclassified_logit_terms(
        np.array([0, 2]), np.array([3, 3]), np.array([0.5, 0.5]), 0.0, 1.0)
    assert logp[0] == 0.0 and np.isfinite(d_logit[0]) and np.isfinite(d_sensitivity[0])
    assert logp[1] == -np.inf
    # And the mirror image: a judge that always says 1, a cell of ones only.
    logp, d_logit, _, d_specificity = misclassified_logit_terms(
        np.array([3]), np.array([3]), np.array([0.5]), 1.0, 0.0)
    assert logp[0] == 0.0 and np.isfinite(d_logit[0]) and np.isfinite(d_specificity[0])


def test_non_finite_logits_give_non_finite_terms_for_nutpie_to_reject():
    # A NaN logit comes from a diverging proposal; the sampler must see it in every output,
    # where the kernels' sigmoid of a NaN would otherwise come out finite.
    logit_p = np.array([np.nan, np.nan, np.inf, -np.inf])
    successes, trials = np.array([0, 3, 0, 2]), np.array([5, 5, 5, 5])
    logp, gradient = binomial_logit_terms(successes, trials, logit_p)
    assert np.isnan(logp[:2]).all() and np.isnan(gradient[:2]).all()
    # Infinite logits: log 0 for the cells' failures (p = 1) and successes (p = 0).
    assert not np.isfinite(logp[2:]).any()
    for output in misclassified_logit_terms(successes, trials, logit_p, 0.9, 0.8):
        assert np.isnan(output[:2]).all()


@pytest.mark.parametrize("kernel", [binomial_logit_terms, misclassified_logit_terms])
def test_cells_of_different_lengths_are_refused(kernel):
    rates = (0.9, 0.8) if kernel is misclassified_logit_terms else ()
    with pytest.raises(ValueError, match="same length"):
        kernel(np.zeros(3), np.ones(3), np.zeros(4), *rates)


@pytest.mark.parametrize("kernel", [binomial_logit_terms, misclassified_logit_terms])
@pytest.mark.parametrize("short", ["successes", "trials"])
def test_cells_with_one_array_of_another_length_are_refused(kernel, short):
    """Catches the length check reading only one of successes and trials: the kernels index
    both by logit_p's length without bounds checks, so the other one read past its end."""
    rates = (0.9, 0.8) if kernel is misclassified_logit_terms else ()
    arrays = {"successes": np.zeros(4), "trials": np.ones(4)}
    arrays[short] = arrays[short][:3]
    with pytest.raises(ValueError, match="same length"):
        kernel(arrays["successes"], arrays["trials"], np.zeros(4), *rates)


def test_logits_past_the_clamp_give_the_limits_and_nan_gives_one():
    """Catches the clamp at |x| = 708 (LARGEST_EXPONENT) dropped: exp(-750)'s exponent no
    longer fits the bits it is written to, so a far-out logit (a diverging proposal's) gets a
    garbage softplus and sigmoid; and the NaN reset dropped (exp_minus_abs says a NaN gives 1;
    a NaN's exponent bits are undefined)."""
    e = exp_minus_abs(np.array([np.nan, 750.0, -1e4, 708.0, 0.0]))
    assert e[0] == 1.0 and e[4] == 1.0
    assert e[1] == e[2] == e[3] == pytest.approx(np.exp(-708.0), rel=1e-15)
    logit_p = np.array([-750.0, 750.0, -1e4, 1e4, -1e300, 1e300])
    softplus, sigmoid = binomial_logit_terms(np.zeros(6), -np.ones(6), logit_p)
    assert np.all((softplus[0::2] >= 0) & (softplus[0::2] < 1e-300))
    assert softplus[1::2].tolist() == logit_p[1::2].tolist()
    assert np.all((sigmoid[0::2] >= 0) & (sigmoid[0::2] < 1e-300))
    assert sigmoid[1::2].tolist() == [1.0, 1.0, 1.0]


def test_exp_is_within_one_unit_in_the_last_place():
    """Catches the Taylor polynomial cut at degree 12: exp(-|x|) then errs by up to 3.5e-16
    on this grid (1.4e-16 as written), which softplus and sigmoid partly hide (their grid
    above still passed it). Each reduction interval's worst point, ln 2 (k + 1/2), is in."""
    x = np.concatenate([np.linspace(0.0, 700.0, 200_001),
                        np.log(2.0) * (np.arange(0, 1001) + 0.5)])
    reference = np.exp(-x.astype(np.longdouble))
    assert worst_relative_error(exp_minus_abs(x), reference) <= 2.5e-16
    assert worst_relative_error(exp_minus_abs(-x), reference) <= 2.5e-16
