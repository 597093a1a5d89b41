"""Counterfactual statistics against scipy and statsmodels, zero variance, and planted effects."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from audit.methods.counterfactual.schemas import GroupTestSchema, PairwiseSchema
from audit.methods.counterfactual.analyse import (
    Comparison,
    StatsSettings,
    comparisons,
    group_summary,
    group_tests,
    kruskal_wallis,
    length_ratio,
    mann_whitney,
    observations,
    pairwise_tests,
    rank_biserial,
)
from audit.schemas import validate
from audit.stats.bootstrap import difference_interval, mean_interval
from audit.stats.multiple_testing import adjust_p_values
from counterfactual_fixtures import simulated

SAMPLES = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=15).map(np.array)


def test_kruskal_wallis_matches_scipy_on_known_input() -> None:
    groups = [np.array([2.9, 3.0, 2.5, 2.6, 3.2]), np.array([3.8, 2.7, 4.0, 2.4]),
              np.array([2.8, 3.4, 3.7, 2.2, 2.0])]
    h_statistic, p_value = kruskal_wallis(groups)
    expected = stats.kruskal(*groups)
    assert (h_statistic, p_value) == pytest.approx((expected.statistic, expected.pvalue))
    assert h_statistic == pytest.approx(0.7714, abs=1e-4)  # scipy's documented example


def test_mann_whitney_matches_scipy_on_known_input() -> None:
    males = np.array([19, 22, 16, 29, 24], dtype=float)
    females = np.array([20, 11, 17, 12], dtype=float)
    u_statistic, p_value = mann_whitney(males, females)
    assert (u_statistic, p_value) == pytest.approx((17.0, 0.1111111), abs=1e-6)  # scipy's docs
    assert rank_biserial(u_statistic, 5, 4) == pytest.approx(2 * 17 / 20 - 1)


@settings(max_examples=60, deadline=None)
@given(SAMPLES, SAMPLES)
def test_rank_biserial_is_the_probability_of_superiority_difference(a, b) -> None:
    u_statistic, p_value = mann_whitney(a, b)
    greater = sum(x > y for x, y in itertools.product(a, b))
    less = sum(x < y for x, y in itertools.product(a, b))
    assert rank_biserial(u_statistic, a.size, b.size) == pytest.approx(
        (greater - less) / (a.size * b.size))
    swapped, swapped_p = mann_whitney(b, a)
    assert rank_biserial(swapped, b.size, a.size) == pytest.approx(
        -rank_biserial(u_statistic, a.size, b.size))
    assert 0 <= p_value <= 1 and swapped_p == pytest.approx(p_value)
    if not np.all(np.concatenate([a, b]) == a[0]):
        assert p_value == pytest.approx(stats.mannwhitneyu(a, b).pvalue)


def test_zero_variance_gives_numbers_not_nan() -> None:
    constant = [np.full(4, 2.0), np.full(3, 2.0), np.full(5, 2.0)]
    assert kruskal_wallis(constant) == (0.0, 1.0)
    with pytest.warns(RuntimeWarning):  # what scipy alone reports: NaN
        assert np.isnan(stats.kruskal(*constant).pvalue)
    assert mann_whitney(constant[0], constant[1]) == (6.0, 1.0)
    assert rank_biserial(6.0, 4, 3) == 0.0
    # Each group constant but different from the other: a real, maximal difference.
    u_statistic, p_value = mann_whitney(np.zeros(6), np.ones(6))
    assert rank_biserial(u_statistic, 6, 6) == -1.0 and p_value < 0.01
    assert difference_interval(np.zeros(6), np.ones(6), 999, 0.95, 0) == (-1.0, -1.0)
    assert length_ratio(np.zeros(3), np.zeros(2)) == 1.0
    assert length_ratio(np.full(3, 120.0), np.full(2, 100.0)) == pytest.approx(1.2)


def test_corrections_match_statsmodels() -> None:
    p_values = [0.01, 0.04, 0.03, 0.2]
    assert adjust_p_values(p_values, "fdr_bh") == pytest.approx(
        [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    assert adjust_p_values(p_values, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.8])
    assert adjust_p_values(p_values, "fdr_bh") == pytest.approx(
        list(multipletests(p_values, method="fdr_bh")[1]))
    assert adjust_p_values([], "fdr_bh") == []


def test_bootstrap_interval_covers_the_difference() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(1.0, 1.0, 40), rng.normal(0.0, 1.0, 40)
    low, high = difference_interval(a, b, 999, 0.95, seed=2)
    assert low < a.mean() - b.mean() < high and low > 0



def test_one_constant_group_still_gets_a_bootstrap_interval():
    """review2 tests.md finding 1: a point interval when only one group is constant. Zero
    refusals in 20 answers against 3 in 20 is the commonest shape of refusal data; the gap
    (-0.15) still varies with the second group, so its interval has width. By hand: with group a
    fixed at 0 the resampled gap is -Binomial(20, 0.15) / 20, whose 2.5% and 97.5% quantiles are
    -6/20 (P(6 or more) = 6.7%, P(7 or more) = 2.2%) and 0 (P(no refusal) = 0.85^20 = 3.9%).
    The tolerance is one refusal in 20, a third of the point interval's error."""
    a, b = np.zeros(20), np.array([1.0] * 3 + [0.0] * 17)
    low, high = difference_interval(a, b, 999, 0.95, seed=0)
    assert low == pytest.approx(-6 / 20, abs=0.05) and high == 0.0

def analyse(effect: float, by_template: bool = True, seed: int = 0):
    metrics, groups = simulated(effect, seed=seed)
    long = observations(metrics, groups, ["sentiment", "word_count", "refusal"])
    overall, pairs = comparisons(long, by_template)
    config = StatsSettings(bootstrap_resamples=200, by_template=by_template)
    return (validate(group_tests(overall), GroupTestSchema, "tests"),
            validate(pairwise_tests(pairs, config), PairwiseSchema, "pairs"),
            group_summary(long, config))


def test_a_planted_gap_is_flagged_and_nothing_else() -> None:
    tests, pairs, _ = analyse(effect=0.6)
    flagged = pairs.filter(pl.col("flagged"))
    assert set(flagged["metric"]) == {"sentiment"}
    assert set(zip(flagged["group_a"], flagged["group_b"])) <= {("A", "B"), ("B", "C")}
    pooled = pairs.filter((pl.col("scope") == "all") & (pl.col("metric") == "sentiment")
                          & (pl.col("group_a") == "A") & (pl.col("group_b") == "B")).row(
        0, named=True)
    assert pooled["flagged"] and pooled["rank_biserial"] < -0.5
    assert pooled["mean_difference"] == pytest.approx(pooled["mean_a"] - pooled["mean_b"])
    assert pooled["difference_ci_low"] < pooled["mean_difference"] < pooled["difference_ci_high"]
    refusal = pairs.filter(pl.col("metric") == "refusal")
    assert (refusal["p_value"] == 1.0).all() and (refusal["rank_biserial"] == 0.0).all()
    floats = pairs.select(pl.col(pl.Float64))
    assert not any(floats[column].is_nan().any() for column in floats.columns)
    assert tests.filter((pl.col("metric") == "sentiment") & (pl.col("scope") == "t2"))[
        "p_bh"].item() < 0.05


def test_no_gap_flags_nothing() -> None:
    flagged = sum(analyse(effect=0.0, seed=seed)[1]["flagged"].sum() for seed in range(3))
    assert flagged == 0


def test_pools_never_mix_templates_a_group_is_missing_from() -> None:
    _, pairs, _ = analyse(effect=0.0)
    scopes = {(row["group_a"], row["group_b"], row["scope"]): row["templates"]
              for row in pairs.filter(pl.col("metric") == "sentiment").iter_rows(named=True)}
    assert scopes[("A", "B", "all")] == "t1,t2"
    # C only appears in t2 (where texts run longer and more positive): compared only there.
    assert ("A", "C", "all") not in scopes and scopes[("A", "C", "t2")] == "t2"
    ratio = pairs.filter((pl.col("group_a") == "A") & (pl.col("group_b") == "C"))[
        "length_ratio"][0]
    assert 0.8 < ratio < 1.25  # same template, so no spurious length gap


def test_without_per_template_rows_every_comparison_still_appears_once() -> None:
    tests, pairs, _ = analyse(effect=0.0, by_template=False)
    sentiment = pairs.filter(pl.col("metric") == "sentiment")
    assert sorted(zip(sentiment["group_a"], sentiment["group_b"], sentiment["scope"])) == [
        ("A", "B", "all"), ("A", "C", "t2"), ("B", "C", "t2")]
    assert sorted(tests.filter(pl.col("metric") == "sentiment")["scope"]) == ["t1", "t2"]


def _step_up_bh(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg written out: p_(i) * m / i, then the running minimum from the
    largest p down, capped at 1, back in the original order."""
    m = p_values.size
    order = np.argsort(p_values)
    scaled = p_values[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted[np.argsort(order)]


def test_bh_is_over_the_whole_run() -> None:
    """Both corrections recomputed by hand over every pairwise test of the run (m = 15 rows): a
    correction per metric (the largest BH p then differs by 0.46 here) or per scope would fail;
    the step-up minimum itself is checked on hand values in
    test_corrections_match_statsmodels."""
    _, pairs, _ = analyse(effect=0.6)
    p_values = pairs["p_value"].to_numpy()
    assert np.isfinite(p_values).all() and pairs.height > 3
    assert pairs["p_bh"].to_numpy() == pytest.approx(_step_up_bh(p_values))
    assert pairs["p_bonferroni"].to_numpy() == pytest.approx(
        np.minimum(1.0, p_values * pairs.height))


def test_group_summary_intervals() -> None:
    _, _, summary = analyse(effect=0.6)
    assert (summary["ci_low"] <= summary["mean"]).all()
    assert (summary["mean"] <= summary["ci_high"]).all()
    refusal = summary.filter(pl.col("metric") == "refusal")
    assert (refusal["sd"] == 0).all() and (refusal["ci_low"] == refusal["ci_high"]).all()


@pytest.mark.parametrize(("level", "bounds_a", "bounds_b"),
                         [(0.95, (6, 14), (1, 8)), (0.8, (7, 13), (2, 6))])
def test_group_summary_interval_of_a_zero_one_group_is_the_binomial_one(
        level: float, bounds_a: tuple[int, int], bounds_b: tuple[int, int]) -> None:
    """Bug caught (test review 2026-12-05): the interval was checked only for bracketing the
    mean, so one at the wrong level, or the wrong group's, passed. Resampling n values of which
    k are 1 makes the bootstrap mean Binomial(n, k/n) / n, so the percentile interval is that
    distribution's quantiles: for 10 of 20 and 4 of 20 the bounds above (in twentieths, from
    binomial tables; each quantile's cdf is 0.007 or more from the cut, over four Monte Carlo
    standard errors at 9,999 resamples)."""
    values = {"A": [1.0] * 10 + [0.0] * 10, "B": [1.0] * 4 + [0.0] * 16}
    long = pl.DataFrame([{"model_name": "m", "template_id": "t1", "metric": "refusal",
                          "factor": "race", "group": group, "value": value}
                         for group, part in values.items() for value in part])
    summary = group_summary(long, StatsSettings(bootstrap_resamples=9_999,
                                                confidence_level=level, seed=5))
    for group, bounds in (("A", bounds_a), ("B", bounds_b)):
        rows = summary.filter(pl.col("group") == group)
        assert rows["scope"].n_unique() == 2  # the template and the pooled scope
        for row in rows.iter_rows(named=True):
            assert (row["ci_low"] * 20, row["ci_high"] * 20) == pytest.approx(bounds)
            assert row["mean"] == sum(values[group]) / 20 and row["n"] == 20


def test_truncated_shares_are_reported() -> None:
    metrics, groups = simulated(0.0)
    metrics = metrics.with_columns(truncated=pl.col("prompt_id").str.contains("-B-"))
    _, pairs = comparisons(observations(metrics, groups, ["word_count"]), by_template=True)
    table = pairwise_tests(pairs, StatsSettings(bootstrap_resamples=50))
    row = table.filter((pl.col("scope") == "all") & (pl.col("group_a") == "A")
                       & (pl.col("group_b") == "B")).row(0, named=True)
    assert (row["truncated_share_a"], row["truncated_share_b"]) == (0.0, 1.0)


def test_a_length_ratio_over_an_empty_group_b_is_infinite():
    """Mutation review 2026-12-06: words in a only is inf, none in either is 1."""
    assert length_ratio(np.array([40.0, 20.0]), np.array([0.0, 0.0])) == float("inf")
    assert length_ratio(np.zeros(2), np.zeros(3)) == 1.0


def test_observations_keep_answered_prompts_sorted_and_untruncated_by_default():
    """Mutation review 2026-12-06: a prompt without metrics (a failed request) is left out, a
    metrics table without `truncated` reads as never cut off, and rows come sorted by group,
    template and prompt whatever order the inputs were in (the bootstrap reads them in order)."""
    metrics = pl.DataFrame({"prompt_id": ["p1", "p2", "p4"], "word_count": [10, 20, 40],
                            "sentiment": [0.1, 0.2, 0.4]})
    groups = pl.DataFrame({"prompt_id": ["p4", "p3", "p2", "p1"], "model_name": ["m"] * 4,
                           "template_id": ["t0", "t0", "t0", "t1"], "factor": ["race"] * 4,
                           "group": ["B", "B", "A", "A"]})
    long = observations(metrics, groups, ["sentiment"])
    assert long.select("prompt_id", "group", "template_id", "length", "truncated",
                       "value").rows() == [("p2", "A", "t0", 20, False, 0.2),
                                           ("p1", "A", "t1", 10, False, 0.1),
                                           ("p4", "B", "t0", 40, False, 0.4)]


def test_kruskal_wallis_needs_two_groups_in_a_template_and_a_factor():
    """Mutation review 2026-12-06: a template holding one group of the factor, and a factor
    with a single group, give no Kruskal-Wallis comparison (and no pair)."""
    rows = [("race", group, template) for group in "AB" for template in ("t1", "t2")]
    rows += [("race", "A", "t3"), ("solo", "X", "t1"), ("solo", "X", "t2")]
    long = pl.DataFrame([{"model_name": "m", "metric": "sentiment", "factor": factor,
                          "group": group, "template_id": template, "value": float(index),
                          "length": 10, "truncated": False}
                         for index, (factor, group, template) in enumerate(rows)])
    overall, pairs = comparisons(long, by_template=True)
    assert sorted((c.factor, c.scope, tuple(sorted(c.samples))) for c in overall) == [
        ("race", "all", ("A", "B")), ("race", "t1", ("A", "B")), ("race", "t2", ("A", "B"))]
    assert all(c.factor == "race" for c in pairs)


def test_kruskal_wallis_rows_are_bh_adjusted_over_the_run():
    """Mutation review 2026-12-06: the group tests' p_bh is Benjamini-Hochberg by hand, not
    Bonferroni (which it would equal if the two were swapped)."""
    tests, _, _ = analyse(effect=0.6)
    p_values = tests["p_value"].to_numpy()
    assert tests["p_bh"].to_numpy() == pytest.approx(_step_up_bh(p_values))
    assert tests["p_bonferroni"].to_numpy() == pytest.approx(
        np.minimum(1.0, p_values * tests.height))
    assert not np.allclose(tests["p_bh"].to_numpy(), tests["p_bonferroni"].to_numpy())


def test_hand_made_comparison_gives_sizes_length_ratio_and_constant_groups():
    """Mutation review 2026-12-06: n_a and n_b are each group's own size, the length ratio is
    a over b, and a group whose values are all equal counts as constant."""
    comparison = Comparison(
        "m", "t1", ("t1",), "word_count", "race",
        samples={"A": np.array([1.0, 2.0, 3.0]), "B": np.array([5.0, 5.0])},
        lengths={"A": np.array([10.0, 10.0, 10.0]), "B": np.array([20.0, 20.0])},
        truncated={"A": np.zeros(3, dtype=bool), "B": np.array([True, False])})
    row = pairwise_tests([comparison], StatsSettings(bootstrap_resamples=50)).row(0, named=True)
    assert (row["n_a"], row["n_b"], row["length_ratio"]) == (3, 2, 0.5)
    assert (row["truncated_share_a"], row["truncated_share_b"]) == (0.0, 0.5)
    tests = group_tests([comparison]).row(0, named=True)
    assert (tests["n_groups"], tests["n"], tests["constant_groups"]) == (2, 5, 1)


def test_a_pair_is_flagged_at_the_threshold_effect_and_below_alpha_only():
    """Mutation review 2026-12-06: |rank-biserial| equal to the threshold is meaningful, a
    significant pair below the threshold is not flagged, and a p_bh equal to alpha is not."""
    a, b = np.arange(1.0, 9.0), np.arange(11.0, 19.0)
    comparison = Comparison("m", "t1", ("t1",), "sentiment", "race", {"A": a, "B": b},
                            {"A": a, "B": b}, {"A": np.zeros(8, bool), "B": np.zeros(8, bool)})
    p_value = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
    assert p_value < 0.01
    at = pairwise_tests([comparison], StatsSettings(min_rank_biserial=1.0, bootstrap_resamples=20))
    assert at["meaningful"].to_list() == [True] and at["flagged"].to_list() == [True]
    assert at["practical_threshold"].to_list() == [1.0]
    above = pairwise_tests([comparison], StatsSettings(min_rank_biserial=1.01,
                                                       bootstrap_resamples=20))
    assert above["meaningful"].to_list() == [False] and above["flagged"].to_list() == [False]
    at_alpha = pairwise_tests([comparison], StatsSettings(alpha=p_value, bootstrap_resamples=20))
    assert at_alpha["p_bh"].to_list() == [p_value] and at_alpha["flagged"].to_list() == [False]


def test_group_summary_gives_the_sample_sd_and_median_per_template_and_pooled():
    """Mutation review 2026-12-06: by hand, [1, 2, 9] has mean 4, sample sd sqrt(19) and median
    2; rows are sorted with the pooled scope named "all". Bug caught: a single answer had sd 0
    and the point interval (4, 4), as if it could not vary; both are now empty."""
    long = pl.DataFrame({"model_name": "m", "template_id": "t1", "metric": "sentiment",
                         "factor": "race", "group": ["B", "A", "A", "A"],
                         "value": [4.0, 9.0, 1.0, 2.0]})
    summary = group_summary(long, StatsSettings(bootstrap_resamples=20))
    assert summary.select("scope", "group", "n", "mean", "sd", "median").rows() == [
        ("all", "A", 3, 4.0, pytest.approx(19 ** 0.5), 2.0), ("all", "B", 1, 4.0, None, 4.0),
        ("t1", "A", 3, 4.0, pytest.approx(19 ** 0.5), 2.0), ("t1", "B", 1, 4.0, None, 4.0)]
    single = summary.filter(pl.col("group") == "B")
    assert single["ci_low"].null_count() == single["ci_high"].null_count() == 2
    assert summary.filter(pl.col("group") == "A")["ci_low"].null_count() == 0


def test_a_group_of_one_answer_has_no_interval_of_its_mean_or_of_a_difference():
    """Bug caught: one value gave the point interval of its mean, and of its difference from
    another group, a width of 0 for a sample that says nothing of its spread."""
    assert all(np.isnan(mean_interval(np.array([3.0]), 99, 0.95, 0)))
    assert all(np.isnan(difference_interval(np.array([3.0]), np.arange(5.0), 99, 0.95, 0)))
    assert all(np.isnan(difference_interval(np.arange(5.0), np.array([3.0]), 99, 0.95, 0)))
    assert mean_interval(np.full(3, 2.0), 99, 0.95, 0) == (2.0, 2.0)  # constant: nothing varies
    a, b = np.array([3.0]), np.arange(4.0)
    comparison = Comparison("m", "t1", ("t1",), "sentiment", "race", {"A": a, "B": b},
                            {"A": a, "B": b}, {"A": np.zeros(1, bool), "B": np.zeros(4, bool)})
    row = PairwiseSchema.validate(pairwise_tests([comparison], StatsSettings(
        bootstrap_resamples=20))).row(0, named=True)
    assert (row["difference_ci_low"], row["difference_ci_high"]) == (None, None)  # not NaN
    assert row["mean_difference"] == 1.5
