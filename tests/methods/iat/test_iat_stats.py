"""Statistics of D on known inputs: scipy recomputed independently, an exact sign-flip
enumeration, Benjamini-Hochberg by hand, and planted effects recovered."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr, ndtri

from audit.methods.iat.config import IATConfig
from audit.methods.iat.design import IATError
from audit.methods.iat.schemas import SCORE_COLUMNS
from audit.methods.iat.analyse import (
    iat_metrics,
    iat_statistics,
    left_out_counts,
    log_left_out,
    sign_flip_p_value,
    smallest_sign_flip_p,
)
from audit.stats.bootstrap import bootstrap_interval
from audit.stats.multiple_testing import adjust_p_values

FAST = IATConfig(bootstrap_resamples=2000, permutation_resamples=2000)


def hand_bca(values: np.ndarray, resamples: int, level: float, seed: int) -> np.ndarray:
    """Efron's BCa interval of the mean written out with numpy: bias correction z0 from the
    share of resampled means below the mean, acceleration from the jackknife's skewness."""
    n = values.size
    means = values[np.random.default_rng(seed).integers(0, n, size=(resamples, n))].mean(axis=1)
    z0 = ndtri((means < values.mean()).mean())
    jackknife = (values.sum() - values) / (n - 1)
    spread = jackknife.mean() - jackknife
    acceleration = (spread ** 3).sum() / (6 * ((spread ** 2).sum()) ** 1.5)
    z = ndtri(np.array([(1 - level) / 2, (1 + level) / 2]))
    return np.quantile(means, ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z))))


def test_bootstrap_interval_is_the_bca_interval_computed_independently():
    """On skewed D values BCa sits about 0.006 to 0.009 right of the percentile interval; the
    function must agree with a hand-written BCa on its own stream to within Monte Carlo error
    (0.0025 here), so a percentile interval, a wrong level or statistic would fail."""
    values = np.clip(np.random.default_rng(3).exponential(0.3, size=40) - 0.2, -1, 1)
    expected = hand_bca(values, 200_000, 0.95, seed=99)
    low, high = bootstrap_interval(values, 50_000, 0.95, "BCa", seed=123)
    assert (low, high) == pytest.approx(tuple(expected), abs=0.0025)
    percentile = np.quantile(values[np.random.default_rng(7).integers(0, 40, (200_000, 40))]
                             .mean(axis=1), [0.025, 0.975])
    assert np.abs(percentile - expected).min() > 0.005  # the check can tell them apart


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_a_groups_interval_takes_the_configured_level_and_method_on_the_scored_d(level: float):
    """Bugs caught (test review 2026-12-05), each passing every other test: the group's interval
    at a hard-coded 0.95 whatever iat.confidence_level says, at BCa whatever iat.ci_method says,
    and over the tested values (one-group answers scored 0) instead of the reported mean_d's.
    The oracle is a percentile bootstrap written here in numpy (200,000 resamples); at 0.95 it
    lies more than 0.005 from BCa (test above)."""
    from audit.methods.iat.analyse import mean_with_interval

    values = np.clip(np.random.default_rng(3).exponential(0.3, size=40) - 0.2, -1, 1)
    one_group = np.zeros(40, bool)
    one_group[:10] = True
    values[:10] = -0.5  # how Bai et al. score an answer giving every word to one group
    config = IATConfig(ci_method="percentile", confidence_level=level,
                       bootstrap_resamples=50_000)
    result = mean_with_interval(values, config, "m", "d", one_group=one_group)
    tail = (1 - level) / 2
    expected = np.quantile(values[np.random.default_rng(7).integers(0, 40, (200_000, 40))]
                           .mean(axis=1), [tail, 1 - tail])
    assert (result.ci_low, result.ci_high) == pytest.approx(tuple(expected), abs=0.0025)
    assert result.mean_d == pytest.approx(values.mean())


def test_bootstrap_interval_edge_cases():
    assert np.isnan(bootstrap_interval(np.array([0.5]), 100, 0.95, "BCa", 1)).all()
    constant = np.full(200, 2 * 8 / 8.01 - 1)
    assert bootstrap_interval(constant, 100, 0.95, "BCa", 1) == (constant.mean(), constant.mean())
    # one value apart from 49 equal ones: BCa is undefined there, the percentile interval is not
    nearly_constant = np.r_[np.full(49, 1.0), 0.0]
    low, high = bootstrap_interval(nearly_constant, 2000, 0.95, "BCa", 1)
    assert np.isfinite([low, high]).all() and low <= 0.98 <= high <= 1.0


def exact_sign_flip_p(values: np.ndarray) -> float:
    """Every one of the 2**n sign patterns, enumerated by hand."""
    observed = abs(values.mean())
    flips = np.array(list(itertools.product([1, -1], repeat=values.size)))
    means = np.abs((flips * values).mean(axis=1))
    return float(np.mean(means >= observed - 1e-12))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_flip_p_value_is_the_exact_enumeration_for_small_n(seed):
    values = np.random.default_rng(seed).normal(0.3, 0.5, size=10)
    assert sign_flip_p_value(values, 10_000, seed=5) == pytest.approx(exact_sign_flip_p(values))


def test_sign_flip_p_value_edge_cases():
    assert np.isnan(sign_flip_p_value(np.array([0.7]), 100, 1))
    assert sign_flip_p_value(np.zeros(20), 100, 1) == 1.0
    # 200 equal positive values: every random flip is less extreme; p is the smallest possible
    assert sign_flip_p_value(np.full(200, 0.99), 9999, 1) == pytest.approx(2 / 10_000)


def test_the_smallest_sign_flip_p_is_two_patterns_or_the_resample_floor():
    """Bug caught: two answers were given no reachable p (1.0), though all of one sign is 2 of
    their 4 sign patterns (0.5); or the random-resample floor was 2 / R, not 2 / (R + 1) as
    scipy counts the observed mean among the R resamples. By hand: 2 answers 2/4, 8 answers
    2/256, 30 answers at R = 999 the floor 2/1000; fewer than 2 answers: 1."""
    assert smallest_sign_flip_p(0, 999) == 1.0 and smallest_sign_flip_p(1, 999) == 1.0
    assert smallest_sign_flip_p(2, 999) == pytest.approx(0.5)
    assert smallest_sign_flip_p(8, 10_000) == pytest.approx(2 / 256)
    assert smallest_sign_flip_p(30, 999) == pytest.approx(2 / 1000)


def test_bh_adjust_matches_hand_values_and_keeps_missing_ones_missing():
    # sorted 0.005, 0.01, 0.03, 0.04 -> p*m/rank 0.02, 0.02, 0.04, 0.04 (already monotone)
    assert adjust_p_values([0.01, 0.04, None, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, None, 0.04, 0.02])
    # a step-up: 0.02*3/2 = 0.03 > 0.025*3/3 = 0.025, so the middle one takes 0.025
    assert adjust_p_values([0.001, 0.02, 0.025]) == pytest.approx([0.003, 0.025, 0.025])
    assert adjust_p_values([]) == [] and adjust_p_values([None]) == [None]


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_bh_adjusted_p_values_are_monotone_and_never_below_the_raw_ones(p_values):
    adjusted = adjust_p_values(p_values)
    assert all(a >= p - 1e-12 and a <= 1 for a, p in zip(adjusted, p_values, strict=True))
    order = np.argsort(p_values, kind="stable")
    ranked = [adjusted[i] for i in order]
    assert all(a <= b + 1e-12 for a, b in zip(ranked, ranked[1:], strict=False))


def scores_table(groups: dict[tuple[str, str], np.ndarray], parsed_share: float = 1.0,
                 counted: bool = True) -> pl.DataFrame:
    rows = []
    for (model, dataset), values in groups.items():
        for index, value in enumerate(values):
            rows.append({"model": model, "category": "race", "dataset": dataset,
                         "variation": ["replication", "synonym"][index % 2],
                         "response_id": f"{dataset}:{index:04d}", "iteration": index,
                         "response_text": "", "parsed": index < parsed_share * len(values),
                         "n_expected": 16, "n_assigned": 16, "n_conflicting": 0, "n_missing": 0,
                         "default_positive": int(counted or value != 0), "default_negative": 0,
                         "stigma_positive": 0, "stigma_negative": 0, "one_group": False,
                         "d_score": float(value) if counted or value != 0 else None})
    return pl.DataFrame(rows, schema=SCORE_COLUMNS)


def test_planted_effects_are_recovered_and_nulls_are_not_rejected():
    rng = np.random.default_rng(20251123)
    groups = {("m", "biased"): np.clip(rng.normal(0.35, 0.4, 80), -1, 1),
              ("m", "unbiased"): np.clip(rng.normal(0.0, 0.4, 80), -1, 1),
              ("m", "reversed"): np.clip(rng.normal(-0.25, 0.4, 80), -1, 1)}
    table = iat_statistics(scores_table(groups), FAST).sort("dataset")
    rows = {row["dataset"]: row for row in table.iter_rows(named=True)}
    assert rows["biased"]["ci_low"] < 0.35 < rows["biased"]["ci_high"]
    assert rows["biased"]["ci_low"] > 0 and rows["biased"]["p_adjusted"] < 0.01
    assert rows["reversed"]["ci_high"] < 0 and rows["reversed"]["p_adjusted"] < 0.01
    assert rows["unbiased"]["ci_low"] < 0 < rows["unbiased"]["ci_high"]
    assert rows["unbiased"]["p_value"] > 0.05
    assert rows["unbiased"]["mean_d"] == pytest.approx(groups[("m", "unbiased")].mean())
    assert table.columns == ["model", "category", "dataset", "n", "n_left_out_strict",
                             "n_left_out_lenient", "n_one_group", "parse_rate", "mean_d",
                             "ci_low", "ci_high", "mean_d_test", "p_value", "min_p",
                             "p_adjusted"]


def test_the_bootstrap_keeps_its_nominal_coverage():
    """Over 300 simulated groups of 80 answers the 95% interval covers the true mean about 95%
    of the time (this seed: 0.95; at n = 50 BCa undercovers a little, 0.91 to 0.93)."""
    rng = np.random.default_rng(7)
    truth = 0.2
    config = IATConfig(bootstrap_resamples=1000, permutation_resamples=100)
    groups = {("m", f"g{index:03d}"): np.clip(rng.normal(truth, 0.5, 80), -1, 1)
              for index in range(300)}
    # the truth of the clipped normal, from a large sample
    true_mean = np.clip(np.random.default_rng(8).normal(truth, 0.5, 2_000_000), -1, 1).mean()
    table = iat_statistics(scores_table(groups), config)
    low, high = table["ci_low"].to_numpy(), table["ci_high"].to_numpy()
    covered = ((low <= true_mean) & (true_mean <= high)).mean()
    assert 0.92 <= covered <= 0.98


def test_a_groups_result_does_not_depend_on_the_other_groups():
    rng = np.random.default_rng(1)
    alone = {("m", "a"): rng.normal(0.1, 0.3, 30)}
    together = {**alone, ("m", "b"): rng.normal(0.0, 0.3, 30)}
    first = iat_statistics(scores_table(alone), FAST).drop("p_adjusted")
    second = iat_statistics(scores_table(together), FAST).filter(pl.col("dataset") == "a")
    assert first.equals(second.drop("p_adjusted"))
    assert iat_statistics(scores_table(together), FAST).equals(
        iat_statistics(scores_table(together), FAST))


ONE_GROUP_D = 8 / 16.01 - 1  # every word given to one group: the D of a one-group answer


def five_answers(dataset: str) -> pl.DataFrame:
    """Scores of five answers: two complete (D 0.5, 0.7), one complete giving every word to one
    group (ONE_GROUP_D, flagged), one partial with a word on each side (D 0.3) and one with
    nothing readable (no D)."""
    rows = [(True, False, 0.5), (True, False, 0.7), (True, True, ONE_GROUP_D),
            (False, False, 0.3), (False, False, None)]
    return pl.DataFrame([{
        "model": "m", "category": "race", "dataset": dataset, "variation": "replication",
        "response_id": f"a:{index}", "iteration": index, "response_text": "", "parsed": parsed,
        "n_expected": 16, "n_assigned": 16 if parsed else 9, "n_conflicting": 0,
        "n_missing": 0 if parsed else 7, "default_positive": 1, "default_negative": 0,
        "stigma_positive": 0, "stigma_negative": 1, "one_group": one_group, "d_score": d}
        for index, (parsed, one_group, d) in enumerate(rows)], schema=SCORE_COLUMNS)


def test_each_scoring_mode_keeps_its_answers_and_says_how_many_it_left_out():
    """Five answers: two complete (D 0.5, 0.7), one complete giving every word to one group
    (D = 8/16.01 - 1, flagged), one partial with a word on each side (D 0.3) and one with
    nothing readable (no D). Strict: the three complete ones; lenient: those and the partial
    one. Before the fix an answer with nothing counted scored 0 and stayed in the mean."""
    scores = five_answers("a")
    config = {"bootstrap_resamples": 500, "permutation_resamples": 500}
    strict = iat_statistics(scores, IATConfig(**config)).row(0, named=True)
    lenient = iat_statistics(scores, IATConfig(scoring="lenient", **config)).row(0, named=True)
    for row in (strict, lenient):
        assert (row["n_left_out_strict"], row["n_left_out_lenient"]) == (2, 1)
        assert row["n_one_group"] == 1 and row["parse_rate"] == pytest.approx(0.6)
    assert strict["n"] == 3
    assert strict["mean_d"] == pytest.approx((0.5 + 0.7 + ONE_GROUP_D) / 3)
    assert lenient["n"] == 4
    assert lenient["mean_d"] == pytest.approx((0.5 + 0.7 + ONE_GROUP_D + 0.3) / 4)


def test_a_groups_result_does_not_depend_on_the_order_of_its_answers():
    """Bug caught: the answers of a group were resampled in the order the scores table gave
    them (sorted by the group's keys alone), so the same answers read in another order got
    another interval; they are put in response_id order first."""
    rng = np.random.default_rng(4)
    scores = scores_table({("m", "a"): rng.normal(0.2, 0.4, 40),
                           ("m", "b"): rng.normal(0.0, 0.4, 40)})
    config = IATConfig(bootstrap_resamples=500, permutation_resamples=500)
    shuffled = scores.sample(fraction=1.0, shuffle=True, seed=11)
    assert not shuffled["response_id"].equals(scores["response_id"])
    assert iat_statistics(shuffled, config).equals(iat_statistics(scores, config))


def test_each_group_draws_its_own_sign_flips():
    """Bug caught: every group's sign-flip test drew from iat.seed itself, not from a stream of
    the group's own, so groups of one size shared their sign patterns and their p-values' Monte
    Carlo errors. Two groups of the same 40 D values (2**40 patterns: random resamples, p about
    0.1) must get p-values that differ by their own Monte Carlo error."""
    values = np.random.default_rng(5).normal(0.1, 0.4, 40)
    table = iat_statistics(scores_table({("m", "a"): values, ("m", "b"): values}),
                           IATConfig(bootstrap_resamples=200, permutation_resamples=500))
    first, second = table["p_value"].to_list()
    assert 0.01 < first < 0.9 and first != second


def test_the_logged_counts_are_each_scoring_modes_left_outs():
    """Bug caught: the run's logged counts (iat/n_left_out_strict, iat/n_one_group) took the
    answers with any D for the complete ones, or counted complete answers as one-group. By
    hand, of five answers (two complete, one complete one-group, one partial with a D, one
    with none): strict leaves out 2, lenient 1, and 1 answer is one-group."""
    scores = five_answers("arab/muslim")
    assert left_out_counts(scores) == {"answers": 5, "left_out_strict": 2,
                                       "left_out_lenient": 1, "one_group": 1}
    stats = iat_statistics(scores, IATConfig(bootstrap_resamples=200, permutation_resamples=200))
    metrics = iat_metrics(scores, stats)
    assert (metrics["iat/n_left_out_strict"], metrics["iat/n_left_out_lenient"],
            metrics["iat/n_one_group"], metrics["iat/n_scored"]) == (2.0, 1.0, 1.0, 5.0)
    assert metrics["iat/parse_rate"] == pytest.approx(0.6)
    assert metrics["iat/m/arab_muslim/n"] == 3.0
    assert metrics["iat/m/arab_muslim/mean_d"] == pytest.approx((0.5 + 0.7 + ONE_GROUP_D) / 3)


def test_by_variation_groups_carry_their_variation():
    table = iat_statistics(scores_table({("m", "a"): np.linspace(-0.2, 0.8, 20)}), FAST,
                           ("model", "category", "dataset", "variation"))
    assert table["variation"].to_list() == ["replication", "synonym"]
    assert table["n"].to_list() == [10, 10]


@pytest.mark.parametrize(("change", "message"), [
    ({"scoring": "keep"}, "scoring=keep"),
    ({"ci_method": "bca"}, "ci_method=bca"),
    ({"confidence_level": 95}, "strictly between 0 and 1"),
])
def test_bad_statistics_settings_name_the_fix(change, message):
    with pytest.raises(IATError, match=message):
        iat_statistics(scores_table({("m", "a"): np.ones(3)}), IATConfig(**change))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=40))
def test_the_interval_brackets_the_mean(values):
    values = np.array(values)
    low, high = bootstrap_interval(values, 500, 0.95, "percentile", 3)
    assert low - 1e-9 <= values.mean() <= high + 1e-9 or np.ptp(values) == 0


def test_the_tested_mean_and_smallest_p_score_one_group_answers_0():
    """Mutation review 2026-12-06: of the three complete answers (D 0.5, 0.7 and one-group),
    the tested mean is (0.5 + 0.7 + 0) / 3 and the smallest p counts the two answers whose
    tested D is not 0 (2 of 4 sign patterns: 0.5), not all three (0.25)."""
    row = iat_statistics(five_answers("a"), IATConfig(bootstrap_resamples=200,
                                                      permutation_resamples=200)).row(0, named=True)
    assert row["mean_d_test"] == pytest.approx(0.4)
    assert row["min_p"] == pytest.approx(0.5)


def test_a_group_with_nothing_parsed_has_no_mean_and_logs_only_its_counts():
    """Mutation review 2026-12-06: a group none of whose answers has a D gets n 0, no mean, no
    interval, no p and a smallest p of 1; its logged metrics are the counts, never a 0 D."""
    scores = five_answers("a").with_columns(d_score=None, parsed=False)
    stats = iat_statistics(scores, IATConfig(bootstrap_resamples=200, permutation_resamples=200))
    row = stats.row(0, named=True)
    assert (row["n"], row["mean_d"], row["ci_low"], row["p_value"], row["min_p"]) == (
        0, None, None, None, 1.0)
    metrics = iat_metrics(scores, stats)
    assert metrics["iat/m/a/n"] == 0.0 and metrics["iat/m/a/min_p"] == 1.0
    assert "iat/m/a/mean_d" not in metrics and "iat/m/a/p_adjusted" not in metrics


def test_a_group_of_one_answer_has_its_mean_but_no_interval_or_p():
    """Mutation review 2026-12-06: one scored answer is a mean of 0.5 with n 1; it has no
    interval and no p-value (one answer cannot reject anything)."""
    stats = iat_statistics(scores_table({("m", "a"): np.array([0.5])}), FAST)
    row = stats.row(0, named=True)
    assert (row["n"], row["mean_d"], row["mean_d_test"]) == (1, 0.5, 0.5)
    assert (row["ci_low"], row["ci_high"], row["p_value"], row["min_p"]) == (None, None, None,
                                                                             1.0)


def test_the_adjusted_p_is_benjamini_hochberg_over_the_groups():
    """Mutation review 2026-12-06: with two groups, BH gives the larger p unchanged and the
    smaller min(2p, larger); Bonferroni would double both."""
    rng = np.random.default_rng(9)
    stats = iat_statistics(scores_table({("m", "a"): rng.normal(0.2, 0.4, 40),
                                         ("m", "b"): rng.normal(0.15, 0.4, 40)}), FAST)
    small, large = sorted(stats["p_value"].to_list())
    assert large < 0.5  # doubled it would differ
    assert sorted(stats["p_adjusted"].to_list()) == pytest.approx([min(2 * small, large), large])


@pytest.mark.parametrize(("change", "message"), [
    ({"alpha": 1.5}, "alpha=1.5 must lie strictly between 0 and 1"),
    ({"alpha": 0.0}, "alpha=0 must lie strictly between 0 and 1"),
    ({"confidence_level": 1.0}, "confidence_level=1 must lie strictly between 0 and 1"),
    ({"bootstrap_resamples": 0}, "bootstrap_resamples=0 must be at least 1"),
    ({"permutation_resamples": 0}, "permutation_resamples=0 must be at least 1"),
])
def test_a_level_or_resample_count_out_of_range_is_refused(change, message):
    """Mutation review 2026-12-06: the bounds themselves are refused, and alpha is checked."""
    with pytest.raises(IATError, match=message):
        iat_statistics(scores_table({("m", "a"): np.ones(3)}), IATConfig(**change))


def test_the_logged_metrics_name_each_models_parse_rate_and_each_groups_smallest_p(caplog):
    """Mutation review 2026-12-06: a parse rate per model, min_p per group, no count of all
    answers under a left-out name; the log line gives strict's and lenient's left-outs in
    their places."""
    scores = pl.concat([five_answers("a"), five_answers("a").with_columns(
        model=pl.lit("n"), parsed=pl.lit(True))])
    stats = iat_statistics(scores, IATConfig(bootstrap_resamples=200, permutation_resamples=200))
    metrics = iat_metrics(scores, stats)
    assert metrics["iat/m/parse_rate"] == pytest.approx(0.6)
    assert metrics["iat/n/parse_rate"] == 1.0
    assert metrics["iat/m/a/min_p"] == pytest.approx(0.5)
    assert "iat/n_answers" not in metrics
    with caplog.at_level("INFO", logger="audit.methods.iat.analyse"):
        log_left_out(five_answers("a"), "strict")
    assert "strict scoring leaves out 2 of 5 answers, lenient 1; 1 complete" in caplog.text


def test_the_logged_parse_rate_of_a_run_without_answers_is_0():
    """Mutation review 2026-12-06: no answer parsed when there is none (not 1.0)."""
    scores = five_answers("a").clear()
    stats = iat_statistics(scores, FAST)
    assert stats.height == 0 and iat_metrics(scores, stats)["iat/parse_rate"] == 0.0
