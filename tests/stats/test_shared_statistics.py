"""audit.stats: the permutation test of a mean difference against a hand enumeration, and the
p-value adjustment's handling of missing p-values and of Holm's step-down."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from audit.stats.differences import mean_difference_p_value, stratified_permutation_p_value
from audit.stats.intervals import (
    jeffreys_interval,
    mean_t_interval,
    stratified_difference_t_interval,
)
from audit.stats.multiple_testing import adjust_p_values


def enumerated_p(a: np.ndarray, b: np.ndarray, alternative: str) -> float:
    """Every split of the pooled values into groups of the original sizes, by hand."""
    pooled, observed = np.concatenate([a, b]), a.mean() - b.mean()
    differences = []
    for chosen in itertools.combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, bool)
        mask[list(chosen)] = True
        differences.append(pooled[mask].mean() - pooled[~mask].mean())
    differences = np.array(differences)
    if alternative == "greater":
        return float(np.mean(differences >= observed - 1e-12))
    # two-sided as scipy defines it: twice the smaller one-sided p-value
    return float(min(1.0, 2 * min(np.mean(differences >= observed - 1e-12),
                                  np.mean(differences <= observed + 1e-12))))


@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
def test_the_permutation_p_value_is_the_exact_enumeration(alternative: str):
    """5 + 4 values have 126 splits, fewer than the resamples, so scipy enumerates them: a
    swapped group order, a wrong statistic or a wrong alternative would change the p-value."""
    rng = np.random.default_rng(4)
    a, b = rng.normal(0.8, 1, 5), rng.normal(0, 1, 4)
    assert math.comb(9, 5) == 126
    assert mean_difference_p_value(a, b, 1000, alternative, seed=1) == pytest.approx(
        enumerated_p(a, b, alternative))


def test_missing_p_values_stay_missing_and_do_not_count_in_the_family():
    # Holm over the three present ones: sorted 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04 (step-down)
    assert adjust_p_values([0.04, None, 0.01, float("nan"), 0.02], "holm") == pytest.approx(
        [0.04, None, 0.03, None, 0.04])
    assert adjust_p_values([0.01, 0.02], "bonferroni") == pytest.approx([0.02, 0.04])
    with pytest.raises(ValueError, match="unknown p-value adjustment"):  # a bug, not user input
        adjust_p_values([0.1], "fdr")


def test_the_stratified_permutation_p_value_is_the_enumeration_within_strata():
    """Two strata (3 + 3 and 2 + 3 units): the test relabels units only within a stratum, 20 x
    10 = 200 arrangements, enumerated by hand here. Bugs it catches: labels moved across strata
    (every split of the 11 units), the unweighted statistic, a stratum's arrangements not
    combined with every arrangement of the other, a side counted without its ties."""
    rng = np.random.default_rng(7)
    a_parts = (rng.normal(1.0, 1, 3), rng.normal(3.0, 1, 2))
    b_parts = (rng.normal(0.0, 1, 3), rng.normal(2.0, 1, 3))
    weights = [a.size * b.size / (a.size + b.size) for a, b in zip(a_parts, b_parts)]

    def statistic(parts_a, parts_b):
        return sum(w * (a.mean() - b.mean()) for w, a, b in zip(weights, parts_a, parts_b)) \
            / sum(weights)

    splits = []
    for a, b in zip(a_parts, b_parts):
        pooled = np.concatenate([a, b])
        splits.append([(pooled[list(chosen)], np.delete(pooled, list(chosen)))
                       for chosen in itertools.combinations(range(pooled.size), a.size)])
    null = np.array([statistic([s[0] for s in combo], [s[1] for s in combo])
                     for combo in itertools.product(*splits)])
    observed = statistic(a_parts, b_parts)
    expected = min(1.0, 2 * min(np.mean(null >= observed - 1e-12),
                                np.mean(null <= observed + 1e-12)))
    p_value, min_p = stratified_permutation_p_value(a_parts, b_parts, 1000, seed=1)
    assert null.size == 200 and min_p == pytest.approx(2 / 200)
    assert p_value == pytest.approx(expected)
    # With one stratum it is scipy's test, and its smallest p that of the draws when the
    # arrangements are too many to enumerate.
    a, b = rng.normal(0.5, 1, 5), rng.normal(0, 1, 4)
    assert stratified_permutation_p_value((a,), (b,), 1000, seed=1)[0] == pytest.approx(
        enumerated_p(a, b, "two-sided"))
    assert stratified_permutation_p_value((a,), (b,), 99, seed=1)[1] == pytest.approx(2 / 100)


def test_the_design_tests_intervals_keep_their_level_over_few_units():
    """Bug caught (statistics review 2026-12-02): the counterfactual design tests' "95%"
    intervals were percentile bootstraps over their units, which covered 0.74 of the time over
    3 templates and 0.80 over 3 names against 3. The t intervals cover 0.95 (2,000 normal data
    sets each, measured); the bound here, 0.92 over 600, is three binomial standard errors
    below 0.95, far above what the bootstrap gave. A stratified difference with a gap between
    strata (women shifted by 1) keeps its level too."""
    rng = np.random.default_rng(3)
    runs = 600
    floor = 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs)

    def covered(interval) -> bool:
        return interval[0] <= 0.0 <= interval[1]

    templates = sum(covered(mean_t_interval(rng.normal(0, 1, 3), 0.95)) for _ in range(runs))
    names = sum(covered(stratified_difference_t_interval(
        (rng.normal(0, 1, 3),), (rng.normal(0, 1, 3),), 0.95)) for _ in range(runs))
    strata = sum(covered(stratified_difference_t_interval(
        (rng.normal(1, 1, 4), rng.normal(0, 1, 5)), (rng.normal(1, 1, 4), rng.normal(0, 1, 3)),
        0.95)) for _ in range(runs))
    assert min(templates, names, strata) / runs >= floor, (templates, names, strata)
    assert mean_t_interval(np.array([0.3]), 0.95) is None
    assert stratified_difference_t_interval((np.array([1.0]),), (np.array([0.0]),), 0.95) is None


@pytest.mark.parametrize(("level", "t_quantile"), [(0.9, 2.919986), (0.95, 4.302653)])
def test_the_mean_interval_is_students_t_at_the_asked_level(level: float, t_quantile: float):
    """Bug caught (test review 2026-12-05): the coverage test above bounds the template
    interval's coverage from below only, so a wider interval (a hard-coded 0.99) passed. By hand:
    1, 2, 3 have mean 2 and standard error 1/sqrt(3); the t quantiles with 2 degrees of freedom
    are from printed tables."""
    low, high = mean_t_interval(np.array([1.0, 2.0, 3.0]), level)
    half_width = t_quantile / math.sqrt(3)
    assert (low, high) == pytest.approx((2 - half_width, 2 + half_width), rel=1e-6)
    assert mean_t_interval(np.array([0.4, 0.4]), level) == (0.4, 0.4)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_the_one_stratum_difference_interval_is_the_pooled_two_sample_t_interval(level: float):
    """Bug caught (test review 2026-12-05): the coverage test above bounds coverage from below
    only, so an interval at a hard-coded 0.99 level, or any wider one, passed. With one stratum
    the stratified interval must be scipy's pooled two-sample t interval at the asked level."""
    from scipy import stats as scipy_stats

    a = np.array([0.61, 0.72, 0.55, 0.80])
    b = np.array([0.40, 0.52, 0.47])
    expected = scipy_stats.ttest_ind(a, b, equal_var=True).confidence_interval(level)
    low, high = stratified_difference_t_interval([a], [b], level)
    assert low == pytest.approx(expected.low, rel=1e-9)
    assert high == pytest.approx(expected.high, rel=1e-9)


def test_the_jeffreys_interval_reaches_the_boundary_at_zero_and_all():
    """Brown, Cai & DasGupta's convention: at s = 0 the lower end is 0 and at s = n the upper is
    1; the Beta(s + 1/2, n - s + 1/2) quantile alone stops short (0.9996 at 5 of 5 and 90%), which
    no other test noticed. Elsewhere the ends are the Beta posterior's equal-tailed quantiles."""
    low, high = jeffreys_interval(np.array([0, 5, 2]), np.array([5, 5, 5]), 0.9)
    assert low[0] == 0.0 and high[1] == 1.0
    assert high[0] == pytest.approx(stats.beta.ppf(0.95, 0.5, 5.5))
    assert low[1] == pytest.approx(stats.beta.ppf(0.05, 5.5, 0.5))
    assert (low[2], high[2]) == pytest.approx(tuple(stats.beta.ppf([0.05, 0.95], 2.5, 3.5)))


def test_a_drawn_stratified_p_value_is_never_below_its_smallest_p():
    """Bug caught: with the arrangements too many to enumerate, p counted the draws as count /
    resamples instead of (1 + count) / (1 + resamples), so the most extreme data gave p = 0, a
    certainty 99 draws cannot give. By hand: every a value is above every b value, so the
    observed split is the single largest of C(20, 10) = 184,756; the 99 draws (seeded) miss it,
    a side counts 0, and p = 2 (1 + 0) / (1 + 99) = 0.02, the smallest p it can give."""
    a, b = np.arange(10.0, 20.0), np.arange(0.0, 10.0)
    p_value, min_p = stratified_permutation_p_value((a,), (b,), 99, seed=1)
    assert min_p == pytest.approx(2 / 100)
    assert p_value == pytest.approx(2 / 100)


def test_a_drawn_stratified_p_value_estimates_the_enumerated_one():
    """Bug caught: a random relabelling that put one unit too many in group a (`<=` for `<`)
    gave a null centred away from 0, so the p-value of drawn arrangements was not the exact
    one's estimate. 7 + 7 units have C(14, 7) = 3,432 splits, more than the 2,000 draws, so they
    are drawn; the enumerated p (the helper above, by hand) is 0.055, and 2,000 draws estimate
    it with a standard error of 2 sqrt(0.027 * 0.973 / 2000) = 0.007: within 0.025."""
    rng = np.random.default_rng(11)
    a, b = rng.normal(5.9, 1, 7), rng.normal(5.0, 1, 7)
    expected = enumerated_p(a, b, "two-sided")
    assert 0.03 < expected < 0.08
    p_value, _ = stratified_permutation_p_value((a,), (b,), 2000, seed=3)
    assert p_value == pytest.approx(expected, abs=0.025)
