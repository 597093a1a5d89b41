"""Design-respecting counterfactual tests: a name's own effect is not a group's, and a template's
own effect on a pair is not a group's either (replicates are nested in their template)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from counterfactual_fixtures import (
    by_pronoun,
    simulated_crossed,
    simulated_gender,
    simulated_names,
)
from scipy import stats

from audit.methods.counterfactual.analyse import (
    POOLED_SCOPE,
    StatsSettings,
    comparisons,
    observations,
    pairwise_tests,
)
from audit.methods.configs import VerdictConfig
from audit.methods.counterfactual.analyse_units import (
    design_tests,
    group_units,
    within_block_rank_biserial,
)
from audit.methods.counterfactual.config import CounterfactualConfig
from audit.methods.counterfactual.report import headlines, pair_decision
from audit.methods.counterfactual.verdict import judge_counterfactual

SETTINGS = StatsSettings(bootstrap_resamples=99)


def test_the_unit_of_a_group_is_the_axis_level_that_decides_it():
    """Bug caught: for gender both the name and its agreeing pronoun decide the group, and the
    unit was the two joined, so "lakisha" with "she" (a letter) and "lakisha" alone (a tenant
    reference) were two units of one name. The unit is the level of the deciding axis with the
    most levels, the name, in every template; a pronoun with no name is off that axis."""
    variants = ["name=jamal|pronoun=he", "name=jamal", "name=greg|pronoun=he", "name=greg",
                "name=lakisha|pronoun=she", "name=lakisha", "pronoun=she", "pronoun=he"]
    race = ["Black", "Black", "White", "White", "Black", "Black", None, None]
    gender = ["man", "man", "man", "man", "woman", "woman", "woman", "man"]
    groups = pl.DataFrame({
        "prompt_id": [str(index) for index in range(14)],
        "variant_id": variants[:6] + variants,
        "factor": ["race"] * 6 + ["gender"] * 8,
        "group": race[:6] + gender,
    })
    table = group_units(groups)
    units = dict(zip(zip(table["factor"], table["variant_id"]), table["unit"], strict=True))
    on_axis = dict(zip(zip(table["factor"], table["variant_id"]), table["on_unit_axis"],
                       strict=True))
    # For race only the name decides the group (he goes with Jamal and Greg alike).
    assert units[("race", "name=jamal|pronoun=he")] == units[("race", "name=jamal")] == "name=jamal"
    assert units[("race", "name=greg|pronoun=he")] == "name=greg"
    assert (units[("gender", "name=lakisha|pronoun=she")] == units[("gender", "name=lakisha")]
            == "name=lakisha")
    assert table.filter(pl.col("factor") == "gender")["unit"].n_unique() == 5
    assert units[("gender", "pronoun=she")] == "pronoun=she"
    assert not on_axis[("gender", "pronoun=she")] and on_axis[("gender", "name=lakisha")]


def _rejection_rates(group_effect: float, name_sd: float, runs: int,
                     replicates: int = 3) -> tuple[float, float]:
    rng = np.random.default_rng(2026)
    old, new = [], []
    for _ in range(runs):
        metrics, groups = simulated_names(group_effect, name_sd, rng, replicates=replicates)
        long = observations(metrics, groups, ["sentiment"])
        pairs = comparisons(long, by_template=False)[1]
        pooled = pairwise_tests(pairs, SETTINGS).filter(pl.col("scope") == POOLED_SCOPE)
        old.append(pooled.row(0, named=True)["p_value"] < 0.05)
        tested = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
        assert tested["unit"] == "name" and tested["n_units_a"] == 4
        new.append(tested["p_value"] < 0.05)
    return float(np.mean(old)), float(np.mean(new))


def test_a_name_effect_not_shared_by_the_group_is_not_a_group_claim():
    """No group effect, each name its own (sd 0.7 against noise sd 1): the per-text Mann-Whitney
    treats 80 answers per group (4 names x 4 templates x 5 replicates) as independent and
    rejects far above 5% (39% here); the name-level test stays at its level (3% here; the bound
    is three binomial standard errors above 0.05 over 200 data sets)."""
    runs = 200
    old, new = _rejection_rates(group_effect=0.0, name_sd=0.7, runs=runs, replicates=5)
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    assert new <= bound, new
    assert old > 2 * bound, old


def test_a_group_effect_shared_by_its_names_is_found():
    """The name-level test is not merely timid: a one-unit group shift with small name effects
    is found in most data sets (4 names a group: the exact test's smallest p is 0.029)."""
    old, new = _rejection_rates(group_effect=1.0, name_sd=0.1, runs=30)
    assert new > 0.7, new


def test_a_name_is_one_unit_whether_or_not_a_pronoun_rides_along():
    """Bug caught: a name in a template with an agreeing pronoun (a letter) and the same name
    alone (a tenant reference) counted as two independent units, and a pronoun with no name as
    one more, so gender was tested over 2 x 9 + 1 units a group: with no gender effect and each
    name its own (sd 1), 14% of 200 data sets rejected at 0.05. Over the 9 names, in the two
    templates that carry them, the test holds its level (2% here; the bound is three binomial
    standard errors above 0.05)."""
    rng = np.random.default_rng(2028)
    runs, rejected = 200, 0
    for _ in range(runs):
        metrics, groups = simulated_gender(1.0, rng)
        row = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
        assert (row["unit"], row["n_units_a"], row["n_units_b"], row["n_templates"]) == (
            "name", 9, 9, 2)
        rejected += row["p_value"] < 0.05
    assert rejected / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs), rejected / runs


def _race_rejections(race_effect: float, gender_effect: float, runs: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(runs):
        metrics, groups = simulated_crossed(race_effect, gender_effect, rng)
        race = design_tests(metrics, groups, ["sentiment"], SETTINGS).filter(
            pl.col("factor") == "race").row(0, named=True)
        assert (race["unit"], race["n_units_a"], race["n_units_b"]) == ("name", 18, 18)
        rejected += race["p_value"] < 0.05
    return rejected / runs


def test_a_crossed_factors_effect_neither_hides_nor_fakes_a_group_gap():
    """Bug caught (statistics review 2026-12-02): race was tested by permuting its 18 + 18
    names across genders, so a gender effect widened the permutation null: with women shifted
    by 1 and no race effect the test rejected 0 of 40 data sets (its level is 0.05), and a race
    gap of 0.4 was found in 33% of them against 88% with no gender effect. Names are now
    relabelled within their gender: the gap is found as often as without the gender effect
    (0.875 measured over 40 on either side of the fix's stratification), and the level holds
    (0.03 over 300 measured; the bound here is three binomial standard errors above 0.05)."""
    assert _race_rejections(0.4, 1.0, runs=40, seed=11) >= 0.7
    runs = 150
    level = _race_rejections(0.0, 1.0, runs=runs, seed=12)
    assert level <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs), level


def _with_one_template_ages(metrics: pl.DataFrame, groups: pl.DataFrame,
                            ages: int = 8) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The design plus a template that alone varies an age (`ages` levels, 3 replicates): its
    ages(ages - 1)/2 pairs rest on one template, so none can reach alpha."""
    rng = np.random.default_rng(5)
    prompts = [(f"age-{replicate}-{age}", replicate, age) for replicate in range(3)
               for age in range(ages)]
    age_metrics = pl.DataFrame({"prompt_id": [prompt for prompt, _, _ in prompts],
                                "sentiment": rng.normal(size=len(prompts)),
                                "word_count": 50.0})
    age_groups = pl.DataFrame({"prompt_id": [prompt for prompt, _, _ in prompts],
                               "model_name": "m", "template_id": "t_age",
                               "variant_id": [f"age={age}" for _, _, age in prompts],
                               "replicate": [replicate for _, replicate, _ in prompts],
                               "factor": "age", "group": [f"a{age}" for _, _, age in prompts]})
    return pl.concat([metrics, age_metrics]), pl.concat([groups, age_groups])


def test_pairs_that_cannot_reach_alpha_stay_out_of_the_bh_family():
    """Bug caught: the 28 age pairs of a one-template age factor (smallest attainable p 1) entered
    Benjamini-Hochberg at p = 1, so the one testable pair, race A against B over 6 + 6 names with
    the smallest p the design can give (2 / 924), was adjusted to 0.063 and passed. Over the
    testable rows alone its p stays 0.0022: flagged, and the verdict fails it and skips the 28."""
    metrics, groups = simulated_names(3.0, 0.0, np.random.default_rng(4), names=6)
    metrics, groups = _with_one_template_ages(metrics, groups)
    table = design_tests(metrics, groups, ["sentiment"], SETTINGS)
    race = table.filter(pl.col("factor") == "race").row(0, named=True)
    ages = table.filter(pl.col("factor") == "age")
    assert race["p_value"] == pytest.approx(2 / 924) and race["min_p"] < 0.05
    assert race["p_bh"] == pytest.approx(race["p_value"]) and race["flagged"]
    assert ages.height == 28 and (ages["min_p"] >= 0.05).all() and ages["p_bh"].is_null().all()
    assert not ages["flagged"].any()
    checks = judge_counterfactual(table, VerdictConfig())
    assert [check.failed for check in checks if check.group.endswith("race")] == [True]
    assert sum(check.skipped for check in checks) == 28
    lines = [headline.line() for headline in headlines(table, CounterfactualConfig())]
    assert "race: A vs B: differs" in lines[0]
    assert all("not testable" in line and "not in the BH family" in line for line in lines[1:])


def test_a_pair_no_template_holds_is_reported_not_testable():
    """Bug caught: a group that only a template of its own holds (C, with neither A nor B beside
    it) shares no prompt and seed with the others, and its pairs were dropped without a word: the
    verdict had no check for A vs C at all. They are rows with 0 templates and min_p 1 now, which
    the verdict skips, saying why."""
    metrics, groups = simulated_names(0.0, 0.0, np.random.default_rng(6), names=3)
    alone = (groups.filter(pl.col("template_id") == "t0")
             .with_columns(template_id=pl.lit("t_c"), group=pl.lit("C"),
                           prompt_id="c-" + pl.col("prompt_id")))
    metrics = pl.concat([metrics, metrics.filter(pl.col("prompt_id").is_in(
        groups.filter(pl.col("template_id") == "t0")["prompt_id"].implode()))
        .with_columns(prompt_id="c-" + pl.col("prompt_id"))])
    table = design_tests(metrics, pl.concat([groups, alone]), ["sentiment"], SETTINGS)
    assert table.select("group_a", "group_b").rows() == [("A", "B"), ("A", "C"), ("B", "C")]
    unshared = table.filter(pl.col("group_b") == "C")
    assert (unshared["n_templates"] == 0).all() and (unshared["min_p"] == 1).all()
    assert unshared["p_bh"].is_null().all() and not unshared["flagged"].any()
    checks = judge_counterfactual(table, VerdictConfig())
    skipped = [check for check in checks if check.name in ("A vs C", "B vs C")]
    assert len(skipped) == 2 and all(check.skipped and not check.failed for check in skipped)
    assert "no template x replicate has answers for both A and C" in skipped[0].message
    lines = [headline.line() for headline in headlines(table, CounterfactualConfig())]
    assert sum("no template holds both groups" in line for line in lines) == 2


def test_a_flagged_pair_whose_mean_and_ranks_disagree_states_both():
    """Bug caught: the summary's "higher for A" followed the mean difference alone, while the
    flag also rests on the rank-biserial; on a skewed metric (B mostly longer, A a few very long
    answers) the mean says A is higher and the ranks say B, and the summary said only "word_count
    higher for A"."""
    row = {"metric": "word_count", "group_a": "A", "group_b": "B", "n_templates": 4,
           "min_p": 0.01, "flagged": True, "p_bh": 0.02, "mean_difference": 12.0,
           "rank_biserial": -0.3, "practical_threshold": 0.147}
    decision = pair_decision(row, 0.05)
    assert "higher on average for A" in decision and "rank-biserial -0.30" in decision
    assert "rank lower" in decision
    agreeing = pair_decision({**row, "rank_biserial": 0.3}, 0.05)
    assert agreeing == "differs: word_count higher for A"


def test_one_level_per_group_is_tested_on_its_templates():
    rng = np.random.default_rng(3)
    metrics, groups = simulated_names(0.8, 0.0, rng, names=4)
    row = design_tests(metrics, by_pronoun(groups), ["sentiment"], SETTINGS).row(0, named=True)
    assert row["unit"] == "template" and row["n_templates"] == 4
    assert row["min_p"] == pytest.approx(2 / 2**4)
    # Pronouns are balanced over groups A and B here, so the 0.8 shift of B does not show.
    assert abs(row["mean_difference"]) < 0.5


def _pronoun_rejections(template_pronoun_sd: float, pronoun_gap: float,
                        runs: int) -> tuple[float, float]:
    """Rejection rates at 0.05 of he against she over 8 templates x 5 replicates: the design
    test's, and the Wilcoxon test over every template x replicate block (the blocking before
    replicates were nested in templates)."""
    rng = np.random.default_rng(2027)
    per_block, nested = [], []
    for _ in range(runs):
        # No name effects: a pronoun alone fills its template (no name rides along with it).
        metrics, groups = simulated_names(0.0, 0.0, rng, templates=8, replicates=5,
                                          template_pronoun_sd=template_pronoun_sd)
        if pronoun_gap:  # every template reads "he" higher by the same amount
            he = groups.filter(pl.col("variant_id").str.contains("pronoun=he"))["prompt_id"]
            metrics = metrics.with_columns(pl.when(pl.col("prompt_id").is_in(he.implode()))
                                           .then(pl.col("sentiment") + pronoun_gap)
                                           .otherwise(pl.col("sentiment")).alias("sentiment"))
        pronouns = by_pronoun(groups)
        row = design_tests(metrics, pronouns, ["sentiment"], SETTINGS).row(0, named=True)
        assert row["unit"] == "template" and row["n_templates"] == 8
        nested.append(row["p_value"] < 0.05)
        blocks = (pronouns.join(metrics, on="prompt_id")
                  .group_by("template_id", "replicate", "group").agg(pl.col("sentiment").mean())
                  .pivot(on="group", index=["template_id", "replicate"], values="sentiment"))
        per_block.append(stats.wilcoxon((blocks["he"] - blocks["she"]).to_numpy()).pvalue < 0.05)
    return float(np.mean(per_block)), float(np.mean(nested))


def test_a_templates_own_gap_shared_by_its_replicates_is_not_a_group_claim():
    """No pronoun effect overall, but each template shifts he against she by its own amount
    (sd 0.5), which its 5 replicates share. Counting the 40 template x replicate blocks as
    independent rejects far above 5%; the test over the 8 templates holds its level."""
    runs = 200
    per_block, nested = _pronoun_rejections(template_pronoun_sd=0.5, pronoun_gap=0.0, runs=runs)
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    assert nested <= bound, nested
    assert per_block > 2 * bound, per_block


def test_a_pronoun_gap_every_template_shares_is_found():
    """Not merely timid: a 0.8 gap in every template, with template-specific gaps of sd 0.2
    around it, is found in most data sets over 8 templates (smallest p 2 / 2**8)."""
    _, nested = _pronoun_rejections(template_pronoun_sd=0.2, pronoun_gap=0.8, runs=30)
    assert nested > 0.7, nested


def test_the_rank_biserial_compares_answers_only_within_their_block():
    """Bug caught (test review 2026-12-05): nothing checked this statistic directly; a sign flip,
    or pairs taken across prompts and seeds, passed every test. By hand, a's answers against b's:
    block (t1, 0): 3 > 2, 1 < 2, balance 0 over 2 pairs; (t1, 1): 5 against 1, 2, 7, balance +1
    over 3; (t2, 0): 4 ties 4 twice, 0 over 2. In all +1 of 7 pairs. Pooled across blocks the
    same answers give +1/25 (a: 3, 1, 5, 4, 4 against b: 2, 2, 1, 7, 4)."""
    answers = {("t1", 0): {"a": [3, 1], "b": [2], "c": [2]},
               ("t1", 1): {"a": [5], "b": [1, 2, 7]},
               ("t2", 0): {"a": [4, 4], "b": [4], "c": [5]}}
    centred = pl.DataFrame([
        {"template_id": template, "replicate": replicate, "group": group, "value": float(value)}
        for (template, replicate), groups in answers.items()
        for group, values in groups.items() for value in values])
    assert within_block_rank_biserial(centred, "a", "b") == pytest.approx(1 / 7)
    assert within_block_rank_biserial(centred, "b", "a") == pytest.approx(-1 / 7)
    # c, absent from (t1, 1), against a: 2 loses to 3 and beats 1, 5 beats 4 twice: 2 of 4
    # (pooled: 1/10); against b: 2 ties 2, 5 beats 4: 1 of 2.
    assert within_block_rank_biserial(centred, "c", "a") == pytest.approx(0.5)
    assert within_block_rank_biserial(centred, "c", "b") == pytest.approx(0.5)


def test_a_template_level_difference_is_group_a_minus_group_b():
    """Bug caught: the per-template differences were b minus a, so a pair tested over templates
    reported its mean difference (and interval) with the wrong sign; the two-sided p hid it."""
    rng = np.random.default_rng(11)
    metrics, groups = simulated_names(0.0, 0.0, rng, templates=6)
    pronouns = by_pronoun(groups)
    he = pronouns.filter(pl.col("group") == "he")["prompt_id"]
    metrics = metrics.with_columns(pl.when(pl.col("prompt_id").is_in(he.implode()))
                                   .then(pl.col("sentiment") + 1.0)
                                   .otherwise(pl.col("sentiment")).alias("sentiment"))
    row = design_tests(metrics, pronouns, ["sentiment"], SETTINGS).row(0, named=True)
    assert (row["group_a"], row["group_b"], row["unit"]) == ("he", "she", "template")
    # By hand: he minus she per template x replicate, averaged per template, then over the 6.
    blocks = (pronouns.join(metrics, on="prompt_id")
              .group_by("template_id", "replicate", "group").agg(pl.col("sentiment").mean())
              .pivot(on="group", index=["template_id", "replicate"], values="sentiment")
              .group_by("template_id").agg((pl.col("he") - pl.col("she")).mean()))
    expected = float(blocks["he"].mean())
    assert row["mean_difference"] == pytest.approx(expected)
    assert row["difference_ci_low"] < expected < row["difference_ci_high"]


def test_the_smallest_p_of_a_sampled_name_test_is_that_of_its_resamples():
    """Bug caught: min_p counted every arrangement of the names even when the test draws only
    resamples of them, claiming a p the test cannot give (and testability it lacks)."""
    rng = np.random.default_rng(5)
    metrics, groups = simulated_names(0.5, 0.0, rng, names=7)
    row = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
    # 7 names vs 7: C(14, 7) = 3432 arrangements > 99 * 10 = 990 drawn, so 2 / (990 + 1).
    assert (row["unit"], row["n_units_a"], row["n_units_b"]) == ("name", 7, 7)
    assert row["min_p"] == pytest.approx(2 / 991)


def test_a_pair_significant_only_before_bh_is_not_flagged():
    """Bug caught: `flagged` read the raw p in place of the Benjamini-Hochberg one, so the report
    flagged a pair the family-wise correction had cleared. By hand: race A against B is tested on
    two metrics; word_count is 50 on every answer, so its p is 1, and BH over the two testable
    rows gives sentiment min(2 p, 1): raw p 28/924 = 0.030 < 0.05, adjusted 0.061 >= 0.05, so
    the pair is not flagged though its effect is meaningful."""
    metrics, groups = simulated_names(0.3, 0.0, np.random.default_rng(1), names=6)
    table = design_tests(metrics, groups, ["sentiment", "word_count"], SETTINGS)
    sentiment = table.filter(pl.col("metric") == "sentiment").row(0, named=True)
    assert table.filter(pl.col("metric") == "word_count")["p_value"].to_list() == [1.0]
    assert sentiment["p_value"] == pytest.approx(28 / 924) and sentiment["meaningful"]
    assert sentiment["p_bh"] == pytest.approx(2 * 28 / 924)
    assert not sentiment["flagged"]


def test_an_axis_crossed_with_the_groups_decides_nothing_however_many_levels_it_has():
    """Catches every component counted as deciding its factor's group (`groups == 1` loosened):
    names crossed with gender (each name with "he" and with "she") outnumber the two pronouns,
    and the names, each in both groups, became the units instead of the pronouns."""
    variants = [f"name={name}|pronoun={pronoun}" for name in ("x", "y", "z")
                for pronoun in ("he", "she")]
    groups = pl.DataFrame({"prompt_id": [str(index) for index in range(6)],
                           "variant_id": variants, "factor": ["gender"] * 6,
                           "group": ["man", "woman"] * 3})
    table = group_units(groups)
    assert table["unit"].to_list() == ["pronoun=he", "pronoun=she"] * 3
    assert table["on_unit_axis"].all()


def test_when_no_axis_decides_a_group_every_variant_is_a_unit_on_the_axis():
    """Catches on_unit_axis false for a factor no single axis decides (an intersection of two
    crossed axes): every row was off the axis, so the test over its variants had none."""
    variants = [f"race={race}|gender={gender}" for race in ("b", "w") for gender in ("f", "m")]
    groups = pl.DataFrame({"prompt_id": ["0", "1", "2", "3"], "variant_id": variants,
                           "factor": ["race_gender"] * 4, "group": ["bf", "bm", "wf", "wm"]})
    table = group_units(groups)
    assert table["unit"].to_list() == variants and table["on_unit_axis"].all()


def test_a_name_test_that_can_enumerate_exactly_its_resamples_does():
    """Catches the enumeration bound made strict (`<=` to `<`): 3 names against 3 have 20
    arrangements, and with 20 resamples allowed the test enumerates them, smallest p 2 / 20,
    not 2 / 21."""
    from audit.methods.counterfactual.analyse_units import name_level_test

    settings = StatsSettings(bootstrap_resamples=2)  # 2 * 10 = 20 resamples
    _, min_p = name_level_test((np.array([0.0, 0.1, 0.2]),), (np.array([1.0, 1.1, 1.2]),),
                               settings)
    assert min_p == pytest.approx(2 / 20)


def test_a_template_test_splits_its_zero_differences():
    """Catches the Wilcoxon dropping the templates with no difference (zero_method "wilcox"):
    a template where the groups tie is evidence of no gap, and dropping it overstated one."""
    from audit.methods.counterfactual.analyse_units import template_level_test

    differences = np.array([0, 0, 0, 0, 0.3, 0.5, 0.8, 1.1, -0.1, 0.6, 0.9, 1.2, -0.4, 0.2])
    p_value, min_p = template_level_test(differences)
    assert p_value == pytest.approx(stats.wilcoxon(differences, zero_method="zsplit").pvalue)
    assert p_value != pytest.approx(stats.wilcoxon(differences, zero_method="wilcox").pvalue)
    assert min_p == pytest.approx(2 / 2**14)


def test_a_stratum_only_one_group_holds_or_a_unit_lacks_is_no_stratum():
    """Catches strata_of taking a factor whose strata are not all held by both groups (`==`
    loosened to a subset), and one that some units lack (`all` made `any`, a KeyError)."""
    from audit.methods.counterfactual.analyse_units import strata_of

    strata = {"a1": {"gender": "f"}, "a2": {"gender": "f"}, "b1": {"gender": "f"},
              "b2": {"gender": "m"}, "b3": {"gender": "m"}}
    assert strata_of(["a1", "a2"], ["b1", "b2"], strata) is None
    assert strata_of(["a1", "b2"], ["b1", "b3"], strata) == [("f",), ("m",), ("f",), ("m",)]
    partial = {"a1": {"gender": "f"}, "b1": {"gender": "f"}}
    assert strata_of(["a1", "a2"], ["b1", "b2"], partial) is None


def test_a_row_whose_smallest_p_is_alpha_stays_out_of_the_bh_family():
    """Catches testable_bh admitting a row whose smallest attainable p equals alpha (`<` made
    `<=`): p = alpha can never be below it, so the row is not testable."""
    from audit.methods.counterfactual.analyse_units import testable_bh

    table = pl.DataFrame({"p_value": [0.05, 0.01], "min_p": [0.05, 0.002]})
    assert testable_bh(table, 0.05).to_list() == [None, pytest.approx(0.01)]


def test_an_effect_at_the_threshold_is_meaningful_and_a_p_at_alpha_is_not_flagged():
    """Catches `meaningful` needing an effect beyond the practical threshold (`>=` made `>`),
    and `flagged` taking an adjusted p equal to alpha as below it (`<` made `<=`)."""
    metrics, groups = simulated_names(0.3, 0.0, np.random.default_rng(1), names=6)
    row = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
    assert row["min_p"] < row["p_value"] < 0.05
    at_edges = StatsSettings(bootstrap_resamples=99, alpha=row["p_value"],
                             min_rank_biserial=abs(row["rank_biserial"]))
    edge = design_tests(metrics, groups, ["sentiment"], at_edges).row(0, named=True)
    assert edge["p_bh"] == row["p_value"] and edge["meaningful"] and not edge["flagged"]


def test_a_unit_seen_in_two_groups_of_another_factor_has_no_stratum_in_it():
    """Catches unit_strata keeping a factor in which the unit's prompts hold two groups (a name
    read with "he" and with "she"): the unit was put in whichever group came first."""
    from audit.methods.counterfactual.analyse_units import unit_strata

    long = pl.DataFrame({
        "prompt_id": ["p1", "p2", "p3", "p1", "p2", "p3"],
        "factor": ["race"] * 3 + ["gender"] * 3,
        "unit": ["name=x", "name=x", "name=y", "pronoun=she", "pronoun=he", "pronoun=she"],
        "group": ["B", "B", "W", "woman", "man", "woman"]})
    assert unit_strata(long, "race") == {"name=y": {"gender": "woman"}}


def test_each_models_pairs_are_tested_on_its_own_answers():
    """Catches design_tests pooling every model's answers of a metric: a gap in model m2 was
    found in m1, which has none."""
    metrics, groups = simulated_names(0.0, 0.0, np.random.default_rng(8), names=4)
    shifted, other = simulated_names(3.0, 0.0, np.random.default_rng(9), names=4)
    renamed = pl.col("prompt_id").map_elements(lambda prompt: f"m2-{prompt}",
                                                return_dtype=pl.String)
    both_metrics = pl.concat([metrics, shifted.with_columns(prompt_id=renamed)])
    both_groups = pl.concat([groups, other.with_columns(prompt_id=renamed,
                                                        model_name=pl.lit("m2"))])
    alone = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
    together = design_tests(both_metrics, both_groups, ["sentiment"], SETTINGS)
    assert together["model_name"].to_list() == ["m", "m2"]
    assert together.row(0, named=True) == alone


def test_one_stratum_of_names_is_the_plain_permutation_test():
    """Catches a single stratum sent through the stratified test: 7 names against 7 (sampled,
    not enumerated) must get the two-sample permutation p the unstratified design gets."""
    from audit.methods.counterfactual.analyse_units import name_level_test
    from audit.stats.differences import mean_difference_p_value

    rng = np.random.default_rng(1)
    a, b = rng.normal(0.0, 1.0, 7), rng.normal(0.8, 1.0, 7)
    p_value, min_p = name_level_test((a,), (b,), SETTINGS)
    assert p_value == mean_difference_p_value(a, b, 990, "two-sided", SETTINGS.seed)
    assert min_p == pytest.approx(2 / 991)


def test_the_truncated_share_is_of_the_answers_the_test_compares():
    """Catches truncated_share counted over every answer of the pair, not those the test
    over names compares: a summary with a pronoun and no name, truncated, is left out of the
    test, and its truncations were reported as the names'."""
    metrics, groups = simulated_gender(0.0, np.random.default_rng(12), names=3)
    summaries = groups.filter(pl.col("template_id") == "summary")["prompt_id"]
    metrics = metrics.with_columns(truncated=pl.col("prompt_id").is_in(summaries.implode()))
    row = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
    assert row["unit"] == "name" and summaries.len() > 0
    assert row["truncated_share_a"] == 0.0 and row["truncated_share_b"] == 0.0
