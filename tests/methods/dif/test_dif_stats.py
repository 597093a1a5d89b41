"""DIF scores on hand-made sets, and the real-vs-null tests on simulated audits."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
import statsmodels.api as sm

from audit.methods.dif.analyse import (
    DIFResults,
    across_models,
    bias_score,
    mcnemar_p,
    metrics,
    model_table,
    null_tests,
    persona_table,
    real_vs_null,
)

ALPHA = 0.05


def test_identical_sets_score_zero_bias():
    score = bias_score({"a", "b", "c"}, {"a", "b", "c"}, min_intersection=3)
    assert (score.bias, score.dif, score.small_intersection) == (0.0, 1.0, False)


def test_a_hand_made_pair():
    # C_b = {a,b,c,d}, C_i = {a,b,e}: both {a,b}; flipped {c,d,e}; either {a,b,c,d,e}
    score = bias_score({"a", "b", "e"}, {"a", "b", "c", "d"}, min_intersection=2)
    assert (score.intersection, score.symmetric_difference, score.union) == (2, 3, 5)
    assert (score.gained, score.lost) == (1, 2)
    assert score.bias == pytest.approx(1.5) and score.dif == pytest.approx(0.4)
    assert not score.small_intersection
    assert bias_score({"a", "b", "e"}, {"a", "b", "c", "d"}, min_intersection=3).small_intersection


def test_empty_intersection_is_undefined_and_flagged():
    score = bias_score({"b"}, {"a"}, min_intersection=1)
    assert math.isnan(score.bias) and score.dif == 0.0 and score.small_intersection
    nothing = bias_score(set(), set(), min_intersection=0)
    assert math.isnan(nothing.bias) and math.isnan(nothing.dif) and nothing.small_intersection


@given(st.sets(st.integers(0, 30)), st.sets(st.integers(0, 30)))
def test_inverted_form_is_jaccard_and_one_over_one_plus_bias(persona: set, baseline: set):
    score = bias_score(persona, baseline, min_intersection=1)
    # deterministic; NaN-aware (Python 3.13's dataclass __eq__ compares fields with ==, so two
    # undefined biases are unequal there although both are NaN)
    np.testing.assert_equal(dataclasses.astuple(score),
                            dataclasses.astuple(bias_score(persona, baseline, 1)))
    swapped = bias_score(baseline, persona, 1)
    assert (swapped.gained, swapped.lost) == (score.lost, score.gained)
    assert score.symmetric_difference == len(persona ^ baseline)
    if score.intersection:
        assert score.dif == pytest.approx(1 / (1 + score.bias))
        assert 0 < score.dif <= 1
    if persona | baseline:
        assert score.dif == pytest.approx(len(persona & baseline) / len(persona | baseline))


def test_mcnemar_is_the_exact_binomial_on_discordant_items():
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(0, 10) == pytest.approx(2 * 0.5 ** 10)
    for gained in range(12):
        for lost in range(12):
            if gained + lost:
                assert mcnemar_p(gained, lost) == pytest.approx(
                    stats.binomtest(gained, gained + lost, 0.5).pvalue)


def _answers(correct: dict[str, np.ndarray], kinds: dict[str, str], model: str = "m",
             dataset: str = "math", errors: dict[str, set[int]] | None = None) -> pl.DataFrame:
    rows = []
    for persona, flags in correct.items():
        for index, flag in enumerate(flags):
            failed = index in (errors or {}).get(persona, set())
            rows.append({"model_name": model, "dataset": dataset, "persona_id": persona,
                         "persona_kind": kinds[persona],
                         "persona_category": "null" if kinds[persona] == "null" else kinds[persona],
                         "item_id": f"q{index:03d}", "status": "error" if failed else "ok",
                         "extracted": None if failed else ("x" if flag else "y"),
                         "correct": None if failed else bool(flag)})
    return pl.DataFrame(rows, schema_overrides={"extracted": pl.Utf8, "correct": pl.Boolean})


def test_persona_table_on_a_hand_made_audit():
    correct = {"baseline": np.array([1, 1, 1, 1, 0, 0]), "p": np.array([1, 1, 0, 0, 1, 0]),
               "n": np.array([1, 1, 1, 1, 0, 1])}
    kinds = {"baseline": "baseline", "p": "real", "n": "null"}
    # item 5 failed for "n": it is left out of n's comparison (the baseline got it wrong anyway)
    table = persona_table(_answers(correct, kinds, errors={"n": {5}}), 2, 0.95)
    rows = {row["persona_id"]: row for row in table.iter_rows(named=True)}
    assert rows["baseline"]["bias_score"] is None and rows["baseline"]["accuracy"] == 4 / 6
    p = rows["p"]
    assert (p["n_intersection"], p["n_symmetric_difference"], p["n_gained"], p["n_lost"]) == (
        2, 3, 1, 2)
    assert p["bias_score"] == pytest.approx(1.5) and p["dif_score"] == pytest.approx(0.4)
    n = rows["n"]
    assert (n["n_answered"], n["n_compared"], n["bias_score"], n["dif_score"]) == (5, 5, 0.0, 1.0)
    for row in rows.values():
        assert row["accuracy_low"] <= row["accuracy"] <= row["accuracy_high"]
    # The Jeffreys interval at the asked level, from scipy's beta quantiles: "p" answered 3 of 6
    # right. Bug caught (test review 2026-12-05): persona_table at any other level (0.5) passed
    # the bracketing check above.
    assert (p["accuracy_low"], p["accuracy_high"]) == pytest.approx(
        (stats.beta.ppf(0.025, 3.5, 3.5), stats.beta.ppf(0.975, 3.5, 3.5)), rel=1e-9)


def simulate(rng: np.random.Generator, flip_real: float, flip_null: float = 0.1,
             n_items: int = 60, n_real: int = 24, n_null: int = 20) -> pl.DataFrame:
    """A greedy model: under a persona each item keeps the baseline's outcome, except that with
    probability `flip` it is solved afresh (its own difficulty); real personas may flip more."""
    ease = rng.uniform(0.2, 0.9, n_items)
    baseline = rng.random(n_items) < ease
    correct, kinds = {"baseline": baseline}, {"baseline": "baseline"}
    for kind, count, flip in (("real", n_real, flip_real), ("null", n_null, flip_null)):
        for index in range(count):
            redraw = rng.random(n_items) < flip
            correct[f"{kind}_{index:02d}"] = np.where(redraw, rng.random(n_items) < ease, baseline)
            kinds[f"{kind}_{index:02d}"] = kind
    return _answers(correct, kinds)


def test_a_planted_persona_effect_is_detected():
    rng = np.random.default_rng(20251123)
    detected = 0
    for _ in range(20):
        personas = persona_table(simulate(rng, flip_real=0.35), 5, 0.95)
        tests = null_tests(personas, ALPHA, 999, seed=1)
        detected += bool(tests["claim"][0])
        assert tests["mean_dif_real"][0] < tests["mean_dif_null"][0]
    assert detected >= 19


def test_without_an_effect_the_tests_reject_at_the_nominal_rate():
    """200 simulated audits with no persona effect: each test rejects in about 5% of them, within
    a 99.9% binomial band."""
    rng = np.random.default_rng(7)
    sims, welch, permutation = 200, 0, 0
    for sim in range(sims):
        personas = persona_table(simulate(rng, flip_real=0.15, flip_null=0.15), 5, 0.95)
        real = personas.filter(pl.col("persona_kind") == "real")["dif_score"].to_numpy()
        null = personas.filter(pl.col("persona_kind") == "null")["dif_score"].to_numpy()
        result = real_vs_null(real, null, 999, seed=sim)
        welch += result["p_welch"] < ALPHA
        permutation += result["p_permutation"] < ALPHA
    low, high = stats.binom.interval(0.999, sims, ALPHA)
    assert low <= welch <= high, welch
    assert low <= permutation <= high, permutation


def _persona_scores(real: list[float], null: list[float]) -> pl.DataFrame:
    return pl.DataFrame({
        "model_name": "m", "dataset": "math",
        "persona_kind": ["real"] * len(real) + ["null"] * len(null),
        "dif_score": [*real, *null], "small_intersection": False})


def test_the_claim_needs_both_tests_to_reject():
    """Two personas an arm: Welch's t rejects (p about 1e-4), but the exact permutation test's
    smallest one-sided p is 1/C(4, 2) = 1/6, so no claim. A claim built on the smaller p-value
    (or on Welch alone) would be made here."""
    tests = null_tests(_persona_scores([0.10, 0.11], [0.90, 0.91]), ALPHA, 999, seed=1)
    row = tests.row(0, named=True)
    assert row["p_welch"] < 0.001
    assert row["p_permutation"] == pytest.approx(1 / 6)
    assert row["p_claim"] == pytest.approx(1 / 6)
    assert not row["claim"]


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_welch_is_undefined_when_neither_arm_varies():
    """Constant arms with different means: the standard error is zero, so t and its p-value are
    undefined; scipy returns t = -inf and p = 0, which read as certainty (the old result). One
    constant arm is common (no null persona flips anything) and must not warn: scipy's
    "precision loss" warning there is about a variance that is exactly zero."""
    result = real_vs_null(np.full(4, 0.5), np.ones(4), 999, 0)
    assert math.isnan(result["welch_t"]) and math.isnan(result["p_welch"])
    assert result["p_permutation"] == pytest.approx(1 / 70)  # exact: 1 of C(8, 4) splits
    # Bug caught (review 2026-12-06): with Welch's t undefined the row was "not tested", though
    # the exact permutation p (1/70 here) is valid whatever the arms' spread; it now decides.
    tests = null_tests(_persona_scores([0.5] * 4, [1.0] * 4), ALPHA, 999, seed=1)
    assert tests["p_welch"][0] is None and tests["claim"][0]
    assert tests["p_claim"][0] == pytest.approx(1 / 70)
    assert tests["statement"][0] == "real personas move answers more than random strings"
    same = null_tests(_persona_scores([1.0] * 4, [1.0] * 4), ALPHA, 999, seed=1)
    assert same["p_claim"][0] == 1.0 and not same["claim"][0]
    assert same["statement"][0].startswith("no evidence")
    lone = null_tests(_persona_scores([0.5], [1.0] * 4), ALPHA, 999, seed=1)
    assert lone["p_claim"][0] is None and lone["statement"][0].startswith("not tested")
    varied = real_vs_null(np.array([0.5, 0.6, 0.5]), np.ones(3), 999, 0)  # one arm varies
    assert varied["p_welch"] == pytest.approx(
        stats.t.cdf(-(1 - 0.5333333) / math.sqrt(np.var([0.5, 0.6, 0.5], ddof=1) / 3), df=2))


def test_tests_need_two_scores_per_arm_and_some_variation():
    assert math.isnan(real_vs_null(np.array([0.5]), np.array([0.4, 0.6]), 999, 0)["p_welch"])
    flat = real_vs_null(np.ones(5), np.ones(5), 999, 0)
    assert math.isnan(flat["p_welch"]) and flat["p_permutation"] == 1.0
    nan_dropped = real_vs_null(np.array([0.5, np.nan, 0.6]), np.array([0.9, 1.0]), 999, 0)
    assert nan_dropped["n_real"] == 2


def test_holm_and_the_claim_statement():
    rng = np.random.default_rng(3)
    tables = [persona_table(simulate(rng, flip_real=0.4).with_columns(
        model_name=pl.lit(model)), 5, 0.95) for model in ("a", "b")]
    tests = null_tests(pl.concat(tables), ALPHA, 999, seed=1)
    assert tests["model_name"].to_list() == ["a", "b"]
    # p_claim is the larger of the two p-values; Holm over two tests by hand: the smaller p is
    # doubled, the larger is kept but never below the adjusted smaller one (both capped at 1).
    expected_claim = np.maximum(tests["p_welch"].to_numpy(), tests["p_permutation"].to_numpy())
    assert tests["p_claim"].to_numpy() == pytest.approx(expected_claim)
    low, high = sorted(expected_claim)
    holm = {low: min(1.0, 2 * low), high: min(1.0, max(2 * low, high))}
    assert tests["p_claim_holm"].to_numpy() == pytest.approx([holm[p] for p in expected_claim])
    assert tests["statement"].to_list() == [
        "real personas move answers more than random strings"] * 2


def test_holm_over_three_models_with_exact_permutation_p_values():
    # Four real against four null personas: C(8, 4) = 70 arrangements, all enumerated. Real
    # scores all below the null ones: only the observed arrangement reaches its mean difference,
    # p = 1/70. Model b: swapping 0.35 and 0.3 also reaches it (2/70); model c: swapping 0.45
    # with 0.3 or with 0.4 (3/70). Welch's p is below each, so p_claim is the permutation p.
    scores = {"a": ([0, .1, .2, .3], [1, 1.1, 1.2, 1.3]),
              "b": ([0, .1, .2, .35], [.3, 1, 1.1, 1.2]),
              "c": ([0, .01, .02, .45], [.3, .4, 1.1, 1.2])}
    personas = pl.DataFrame([
        {"model_name": model, "dataset": "all", "persona_kind": kind, "dif_score": score,
         "small_intersection": False}
        for model, arms in scores.items()
        for kind, arm in zip(("real", "null"), arms) for score in arm])
    tests = null_tests(personas, ALPHA, 999, seed=1)
    assert tests["p_claim"].to_numpy() * 70 == pytest.approx([1, 2, 3])
    # Holm: 3 x 1/70, max(3/70, 2 x 2/70), max(4/70, 1 x 3/70). Bonferroni would give 3/70,
    # 6/70, 9/70 and Benjamini-Hochberg 3/70 for all three.
    assert tests["p_claim_holm"].to_numpy() * 70 == pytest.approx([3, 4, 4])
    assert tests["claim"].to_list() == [True, False, False]  # 3/70 < 0.05 < 4/70


def test_accuracy_against_bias_across_models():
    rng = np.random.default_rng(11)
    frames = []
    for model, flip in (("m1", 0.05), ("m2", 0.2), ("m3", 0.4), ("m4", 0.6)):
        frames.append(simulate(rng, flip_real=flip, flip_null=flip).with_columns(
            model_name=pl.lit(model)))
    answers = pl.concat(frames)
    personas = persona_table(answers, 5, 0.95)
    models = model_table(answers, personas, 0.95)
    assert models.height == 4
    assert (models["accuracy_low"] <= models["accuracy"]).all()
    fit = across_models(models).row(0, named=True)
    assert fit["n_models"] == 4
    # Least squares by its normal equations (numpy's polyfit), r^2 from the correlation matrix.
    x, y = models["accuracy"].to_numpy(), models["mean_dif_real"].to_numpy()
    slope, intercept = np.polyfit(x, y, 1)
    assert fit["slope"] == pytest.approx(slope) and fit["intercept"] == pytest.approx(intercept)
    assert fit["r_squared"] == pytest.approx(np.corrcoef(x, y)[0, 1] ** 2)
    # By hand: (0.2, 0.4), (0.5, 0.7), (0.8, 0.7): slope 0.5, intercept 0.35; residuals
    # (-0.05, 0.1, -0.05) give SSE 0.015 against SST 0.06, so r^2 = 0.75.
    hand = pl.DataFrame({"dataset": ["all"] * 3, "accuracy": [0.2, 0.5, 0.8],
                         "mean_dif_real": [0.4, 0.7, 0.7]})
    line = across_models(hand).row(0, named=True)
    assert (line["slope"], line["intercept"], line["r_squared"]) == pytest.approx((0.5, 0.35, 0.75))
    exact = pl.DataFrame({"dataset": ["all"] * 3, "accuracy": [0.2, 0.5, 0.8],
                          "mean_dif_real": [0.4, 0.6, 0.8]})
    assert across_models(exact)["r_squared"][0] == pytest.approx(1.0)
    assert across_models(exact.head(2))["slope"][0] is None  # two points: no line


# --- items either side did not answer, unparsed answers, empty personas (mutation review) ---------

def _audit_with_failures() -> pl.DataFrame:
    """Four items. The baseline's request for q002 failed; persona p solved it and left q003
    unparsed; every request of persona "dead" failed."""
    correct = {"baseline": np.array([1, 1, 0, 0]), "p": np.array([1, 1, 1, 0]),
               "n": np.array([1, 0, 0, 0]), "dead": np.array([1, 1, 1, 1])}
    kinds = {"baseline": "baseline", "p": "real", "n": "null", "dead": "real"}
    answers = _answers(correct, kinds, errors={"baseline": {2}, "dead": {0, 1, 2, 3}})
    unparsed = (pl.col("persona_id") == "p") & (pl.col("item_id") == "q003")
    return answers.with_columns(extracted=pl.when(unparsed).then(None)
                                .otherwise(pl.col("extracted")))


def test_an_item_the_baseline_failed_is_not_compared_for_any_persona():
    """Bug caught: comparing every item the persona answered (or its every correct item) counted
    q002, which the baseline's failed request never answered, as gained by persona p."""
    rows = {row["persona_id"]: row for row in
            persona_table(_audit_with_failures(), 1, 0.95).iter_rows(named=True)}
    p = rows["p"]
    assert (p["n_answered"], p["n_compared"], p["n_gained"], p["n_lost"]) == (4, 3, 0, 0)
    assert (p["bias_score"], p["dif_score"]) == (0.0, 1.0)


def test_unparsed_answers_are_counted_per_persona_and_over_answered_prompts_only():
    """Bug caught: n_unparsed always 0, n_failed always 0, or an unparsed share that counted
    the failed requests (no text, so no extracted answer) as unparsed answers."""
    answers = _audit_with_failures()
    personas = persona_table(answers, 1, 0.95)
    assert dict(personas.select("persona_id", "n_unparsed").iter_rows()) == {
        "baseline": 0, "dead": 0, "n": 0, "p": 1}
    model = model_table(answers, personas, 0.95).row(0, named=True)
    # 16 prompts, 5 failed (the baseline's q002 and the dead persona's four), 1 of 11 unparsed
    assert (model["n_answered"], model["n_failed"]) == (11, 5)
    assert model["unparsed_share"] == pytest.approx(1 / 11)


def test_a_persona_whose_every_request_failed_has_no_accuracy_or_interval():
    """Bug caught: a persona with nothing answered got the Jeffreys interval of 0 of 1 answers
    (about [0.0, 0.85]) beside its empty accuracy."""
    rows = {row["persona_id"]: row for row in
            persona_table(_audit_with_failures(), 1, 0.95).iter_rows(named=True)}
    dead = rows["dead"]
    assert dead["n_answered"] == 0
    assert (dead["accuracy"], dead["accuracy_low"], dead["accuracy_high"]) == (None, None, None)


def test_a_persona_with_no_item_answered_under_both_is_no_member_of_the_bh_family():
    """Bug caught: a real persona whose every request failed got p_mcnemar = 1 and counted in
    the Benjamini-Hochberg family, doubling the other real persona's adjusted p. Persona "p"
    gained 0 and lost 6 items: exact McNemar p = 2 x 0.5^6 = 1/32, alone in its family."""
    correct = {"baseline": np.ones(8, dtype=int), "p": np.array([0, 0, 0, 0, 0, 0, 1, 1]),
               "dead": np.ones(8, dtype=int)}
    kinds = {"baseline": "baseline", "p": "real", "dead": "real"}
    table = persona_table(_answers(correct, kinds, errors={"dead": set(range(8))}), 1, 0.95)
    rows = {row["persona_id"]: row for row in table.iter_rows(named=True)}
    assert (rows["dead"]["n_compared"], rows["dead"]["p_mcnemar"]) == (0, None)
    assert rows["dead"]["p_mcnemar_bh"] is None
    assert rows["p"]["p_mcnemar"] == pytest.approx(1 / 32, rel=1e-12)
    assert rows["p"]["p_mcnemar_bh"] == pytest.approx(1 / 32, rel=1e-12)


def _cluster_interval(answers: pl.DataFrame, prob: float) -> tuple[float, float]:
    """statsmodels' item-clustered interval of the mean of `correct` over answered prompts,
    with the G / (G - 1) correction only and t on G - 1 degrees of freedom."""
    ok = answers.filter(pl.col("status") == "ok")
    correct = ok["correct"].cast(pl.Float64).to_numpy()
    items = np.unique(ok["item_id"].to_numpy(), return_inverse=True)[1]
    fit = sm.OLS(correct, np.ones_like(correct)).fit(
        cov_type="cluster", cov_kwds={"groups": items, "use_correction": False})
    clusters = items.max() + 1
    half = (stats.t.ppf(0.5 + prob / 2, clusters - 1) * fit.bse[0]
            * math.sqrt(clusters / (clusters - 1)))
    return fit.params[0] - half, fit.params[0] + half


def test_persona_and_model_intervals_take_the_asked_level():
    """Bug caught: an interval at a fixed 95% whatever interval_prob asks: the other tests all
    ask for 0.95. Jeffreys at 80% from scipy's beta quantiles: the baseline answered 2 of 3
    right; the model 6 of its 11 answered prompts, its interval over the 4 items."""
    answers = _audit_with_failures()
    personas = persona_table(answers, 1, 0.8)
    baseline = personas.filter(pl.col("persona_id") == "baseline").row(0, named=True)
    assert (baseline["accuracy_low"], baseline["accuracy_high"]) == pytest.approx(
        (stats.beta.ppf(0.1, 2.5, 1.5), stats.beta.ppf(0.9, 2.5, 1.5)), rel=1e-9)
    model = model_table(answers, personas, 0.8).row(0, named=True)
    assert (model["n_correct"], model["n_answered"]) == (6, 11)
    assert (model["accuracy_low"], model["accuracy_high"]) == pytest.approx(
        _cluster_interval(answers, 0.8), rel=1e-9)


def test_the_model_accuracy_interval_counts_items_not_prompts():
    """Bug caught (review 2026-12-06): the model's accuracy interval was Jeffreys over every
    prompt, though each item is asked under every persona: here 40 personas answer 30 items
    alike (20 always right), and the interval over 1,200 prompts, about +-0.03, claimed 40
    times the information of 30 items; over the items it is about +-0.18."""
    correct = {f"p{index}": np.array([1] * 20 + [0] * 10) for index in range(40)}
    correct["baseline"] = np.array([1] * 20 + [0] * 10)
    kinds = {name: "real" for name in correct} | {"baseline": "baseline"}
    answers = _answers(correct, kinds)
    model = model_table(answers, persona_table(answers, 1, 0.95), 0.95).row(0, named=True)
    assert model["accuracy"] == pytest.approx(2 / 3)
    assert (model["accuracy_low"], model["accuracy_high"]) == pytest.approx(
        _cluster_interval(answers, 0.95), rel=1e-9)
    assert model["accuracy_high"] - model["accuracy_low"] > 0.3
    # No spread between items (every item right): Jeffreys with one trial an item.
    every = _answers({"baseline": np.ones(30, int), "p": np.ones(30, int)},
                     {"baseline": "baseline", "p": "real"})
    model = model_table(every, persona_table(every, 1, 0.95), 0.95).row(0, named=True)
    assert (model["accuracy_low"], model["accuracy_high"]) == pytest.approx(
        (stats.beta.ppf(0.025, 30.5, 0.5), 1.0), rel=1e-9)


def test_the_model_means_keep_flagged_personas_out_of_the_bias_and_arms_apart():
    """Bug caught: mean_bias_score_real averaged in a persona flagged for a small intersection,
    or mean_dif_null was the real personas' mean. By hand, baseline right on q0-q3: r1 keeps
    three (bias 1/3, DIF 3/4); r2 keeps one, below min_intersection 2 (bias 3, DIF 1/4); the
    null persona keeps all four (DIF 1)."""
    correct = {"baseline": np.array([1, 1, 1, 1, 0, 0]), "r1": np.array([1, 1, 1, 0, 0, 0]),
               "r2": np.array([1, 0, 0, 0, 0, 0]), "n1": np.array([1, 1, 1, 1, 0, 0])}
    kinds = {"baseline": "baseline", "r1": "real", "r2": "real", "n1": "null"}
    answers = _answers(correct, kinds)
    model = model_table(answers, persona_table(answers, 2, 0.95), 0.95).row(0, named=True)
    assert model["n_real_scored"] == 1
    assert model["mean_bias_score_real"] == pytest.approx(1 / 3)
    assert model["mean_dif_real"] == pytest.approx(0.5)
    assert model["mean_dif_null"] == pytest.approx(1.0)


def test_no_claim_when_the_adjusted_p_value_equals_alpha():
    """Bug caught: a claim made at p_claim_holm == alpha (<= for <). Four real against four
    null personas, real all lower: the exact permutation p is 1/70 (Welch's is smaller), and
    Holm over one test leaves it there; alpha set to exactly 1/70."""
    tests = null_tests(_persona_scores([0.0, .1, .2, .3], [1.0, 1.1, 1.2, 1.3]), 1 / 70, 999,
                       seed=1)
    assert tests["p_claim_holm"][0] == 1 / 70
    assert not tests["claim"][0]


def test_small_intersections_are_counted_in_their_own_arm():
    """Bug caught: n_real_small_intersection counted the null arm's flagged personas."""
    personas = _persona_scores([0.5, 0.6, 0.7], [0.9, 1.0]).with_columns(
        small_intersection=pl.Series([True, False, False, True, True]))
    row = null_tests(personas, ALPHA, 999, seed=1).row(0, named=True)
    assert (row["n_real_small_intersection"], row["n_null_small_intersection"]) == (1, 2)


def test_the_line_across_models_skips_undefined_scores_and_constant_accuracy():
    """Bugs caught: a model whose mean DIF score is NaN entered the fit (every number NaN), a
    fit through models of one accuracy raised scipy's error, and a one-sided p-value. By hand,
    (0.2, 0.4), (0.5, 0.7), (0.8, 0.7) give r^2 = 0.75 on 1 degree of freedom: t = sqrt(3), and
    the two-sided p of a t of sqrt(3) on 1 df (Cauchy) is 1 - 2 atan(sqrt(3)) / pi = 1/3."""
    hand = pl.DataFrame({"dataset": ["all"] * 4, "accuracy": [0.2, 0.5, 0.8, 0.9],
                         "mean_dif_real": [0.4, 0.7, 0.7, float("nan")]})
    line = across_models(hand).row(0, named=True)
    assert line["n_models"] == 3
    assert (line["slope"], line["r_squared"], line["p_value"]) == pytest.approx((0.5, 0.75, 1 / 3))
    flat = pl.DataFrame({"dataset": ["all"] * 3, "accuracy": [0.5] * 3,
                         "mean_dif_real": [0.4, 0.7, 0.7]})
    assert across_models(flat).row(0, named=True)["slope"] is None


def test_the_persona_tables_mcnemar_p_is_on_the_discordant_items_and_bh_adjusted():
    """Bugs caught: p_mcnemar computed from another count (the intersection in place of the items
    the persona lost), or adjusted by Holm's method, not Benjamini-Hochberg's. Each of two real
    personas keeps 2 of the baseline's 8 right answers and gains none: the exact two-sided
    binomial p of 0 of 6 discordant items is 2 / 2**6. BH leaves two equal p-values as they
    are; Holm would double the smaller one."""
    correct = {"baseline": np.ones(8), "r1": np.array([1, 1, 0, 0, 0, 0, 0, 0]),
               "r2": np.array([0, 0, 0, 0, 0, 0, 1, 1])}
    answers = _answers(correct, {"baseline": "baseline", "r1": "real", "r2": "real"})
    real = persona_table(answers, 1, 0.95).filter(pl.col("persona_kind") == "real")
    assert real.select("n_gained", "n_lost").rows() == [(0, 6), (0, 6)]
    assert real["p_mcnemar"].to_list() == pytest.approx([2 / 2 ** 6] * 2)
    assert real["p_mcnemar_bh"].to_list() == pytest.approx([2 / 2 ** 6] * 2)


def test_the_metrics_count_failures_and_stored_answers_and_skip_missing_values():
    """Bugs caught: n_failed always 0, n_from_store counting the answers sent (not those from the
    store), or the across-models line left out of the metrics. Hand-made tables: one prompt of
    three failed and one came from the store; missing values (None) are not logged."""
    models = pl.DataFrame({"model_name": ["m"], "dataset": ["all"], "accuracy": [0.5],
                           "baseline_accuracy": [None], "mean_dif_real": [0.9],
                           "mean_dif_null": [1.0], "mean_bias_score_real": [0.1],
                           "unparsed_share": [0.0]})
    tests = pl.DataFrame({"model_name": ["m"], "dataset": ["all"], "p_welch": [0.01],
                          "p_permutation": [None], "p_claim_holm": [None], "claim": [False]})
    across = pl.DataFrame({"dataset": ["all"], "slope": [0.5], "r_squared": [0.75],
                           "p_value": [None]})
    answers = pl.DataFrame({"status": ["ok", "error", "ok"], "from_cache": [True, False, False],
                            "item_id": ["q1", "q1", "q2"], "persona_id": ["baseline", "p", "p"]})
    logged = metrics(DIFResults(pl.DataFrame(), tests, models, across), answers)
    assert logged == {
        "n_prompts": 3, "n_failed": 1, "n_from_store": 1, "n_items": 2, "n_personas": 2,
        "accuracy/m/all": 0.5, "mean_dif_real/m/all": 0.9, "mean_dif_null/m/all": 1.0,
        "mean_bias_score_real/m/all": 0.1, "unparsed_share/m/all": 0.0,
        "p_welch/m/all": 0.01, "claim/m/all": 0.0,
        "across_models_slope/all": 0.5, "across_models_r_squared/all": 0.75}


def test_the_dif_score_rises_with_accuracy_at_a_fixed_flip_rate():
    """The figures docs/methods/dif.md quotes for its warning about the across-model slope:
    personas that flip each of 120 items' correctness with probability 0.1 score a mean DIF of
    about 0.64 at accuracy 0.2 and 0.88 at 0.8. Fails if the score's definition changes so that
    the warning no longer holds (or holds with other figures)."""
    rng = np.random.default_rng(0)
    means = {}
    for accuracy in (0.2, 0.8):
        scores = []
        for _ in range(25):
            baseline = {item for item in range(120) if rng.random() < accuracy}
            persona = {item for item in range(120) if (item in baseline) != (rng.random() < 0.1)}
            scores.append(bias_score(persona, baseline, 5).dif)
        means[accuracy] = float(np.mean(scores))
    assert means[0.2] == pytest.approx(0.64, abs=0.02)
    assert means[0.8] == pytest.approx(0.88, abs=0.02)
