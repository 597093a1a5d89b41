"""Adaptive audits (methods/rasch/adaptive.py): selection, spending and stopping.

Each test names the bug it catches. The loop test fits with a prior stand-in for the sampler,
so it runs the real fit_rasch, contrasts and selection in seconds; the simulated benchmark
(benchmarks/bench_adaptive.py --quick) is the slow test that samples.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pymc as pm
import pytest
import xarray as xr
from xarray import DataTree

from audit.config import DesignConfig
from audit.errors import AuditError
from audit.methods.rasch import adaptive
from audit.methods.rasch.adaptive import (
    AdaptiveRule,
    answers_from,
    design_rule,
    look_alphas,
    planned_looks,
    prompts_affordable,
    run_adaptive,
    stop_reason,
)
from audit.methods.rasch.config import FitConfig
from prior_samplers import prior_sampler
from audit.methods.rasch.futility import (
    contrast_states,
    nearest_open,
    predictive_decidable,
    text_floors,
)
from audit.methods.rasch.selection import (
    KEY,
    choose_next,
    first_round,
    next_candidates,
    respondent_weights,
    window_start,
)
from audit.methods.rasch.simulation import default_shaped_prompts

ROOT = Path(__file__).resolve().parents[3]


def contrast(mean: float, sd: float, decision: str = "undecided", attribute: str = "race",
             level_a: str = "Black", level_b: str = "White") -> dict[str, object]:
    return {"model_name": "m", "attribute": attribute, "level_a": level_a, "level_b": level_b,
            "mean": mean, "sd": sd, "rope_low": -0.18, "rope_high": 0.18, "decision": decision,
            "decision_prob": 0.99, "decision_low": mean - 2.6 * sd,
            "decision_high": mean + 2.6 * sd}


def test_look_alphas_spend_at_most_the_familywise_alpha():
    # Bug caught: looks each deciding at the full alpha (error grows with the number of looks).
    rule = AdaptiveRule(round_prompts=10, max_prompts=40, familywise_alpha=0.05)
    alphas = look_alphas(rule, planned_looks(rule, pool_size=100))
    assert len(alphas) == 4
    assert math.isclose(sum(alphas), 0.05)
    assert alphas[-1] == pytest.approx(0.0495)  # nearly all of it kept for the look at the budget
    assert look_alphas(rule, 1) == [0.05]


def test_the_budget_caps_the_looks_at_the_pool():
    # Bug caught: planning looks for a budget larger than the design can ask.
    rule = AdaptiveRule(round_prompts=10, max_prompts=1000)
    assert planned_looks(rule, pool_size=35) == 4


def test_round_zero_is_balanced_over_items_and_respondents():
    # Bug caught: round 0 piling onto the first items, or giving both texts of a cell the same
    # items (their difference would then say nothing about half the scenarios).
    pool = default_shaped_prompts(items=12)
    chosen = first_round(pool, 126)
    assert chosen.height == 126
    assert set(chosen["replicate"]) == {0}
    per_respondent = chosen.group_by("respondent_id").len()["len"]
    assert per_respondent.min() == per_respondent.max() == 6
    per_item = chosen.group_by("item_id").len()["len"]
    assert per_item.max() - per_item.min() <= 1
    texts = chosen.filter(pl.col("respondent_id").str.starts_with("m/Black_woman"))
    first, second = (set(texts.filter(pl.col("respondent_id") == name)["item_id"])
                     for name in ("m/Black_woman_0", "m/Black_woman_1"))
    assert not first & second


def test_round_zero_gives_the_texts_of_a_cell_different_items_in_the_default_design():
    """Bugs caught (adaptive review 2026-12-02): round 0 rotated the respondents in the order
    of their ids, and the default design's two texts of a cell do not sort together
    ("asian_woman" and "woman_identifying_asian"): in its round 0 of 63 prompts three cells
    had both texts on the same three items, so their text-to-text difference said nothing
    about the others. The test above passed only because its simulated ids sort by cell. The
    same rotation in cell order put Asian and Black personas on no common item, so the first
    look could not tell that race gap from the items: every two race levels share items."""
    from hydra import compose, initialize_config_dir

    from audit.__main__ import CONF_DIR
    from audit.methods.configs import register_configs, to_audit_config
    from audit.methods.rasch.design import design_stage

    register_configs()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=["paths.output_dir=out"]))
    prompts = design_stage(cfg)
    chosen = first_round(prompts, 63, tuple(cfg.fit.attributes))
    texts = (chosen.filter(pl.col("persona_kind") == "explicit")
             .group_by("gender", "race", "respondent_id").agg(pl.col("item_id").unique()))
    cells = texts.group_by("gender", "race").agg(pl.col("item_id"))
    assert cells.height == 8 and texts.height == 16  # two texts in each gender x race cell
    for row in cells.iter_rows(named=True):
        first, second = (set(items) for items in row["item_id"])
        assert not first & second, row
    levels = dict(texts.explode("item_id").group_by("race").agg(pl.col("item_id").unique())
                  .iter_rows())
    shared = {(a, b): len(set(levels[a]) & set(levels[b]))
              for a, b in itertools.combinations(sorted(levels), 2)}
    assert min(shared.values()) >= 3, shared  # a window of items at least
    per_item = chosen.group_by("item_id").len()["len"]
    assert per_item.max() - per_item.min() <= 1


def test_candidates_are_each_cells_next_unasked_replicate():
    # Bug caught: asking a prompt twice, or a second replicate before the first.
    pool = default_shaped_prompts(items=2, replicates=3, null_count=0, texts_per_cell=1)
    asked = pool.filter((pl.col("replicate") == 0)
                        | ((pl.col("replicate") == 1) & (pl.col("item_id") == "item_00")))
    candidates = next_candidates(pool, asked)
    cells = pool.select("respondent_id", "item_id").unique().height
    assert candidates.height == cells
    assert candidates.join(asked, on=list(KEY), how="semi").is_empty()
    expected = pl.when(pl.col("item_id") == "item_00").then(2).otherwise(1)
    assert candidates.select((pl.col("replicate") == expected).all()).item()


def test_predictive_futility_keeps_decidable_contrasts_alive():
    # Bug caught: a futility rule that gives up on a contrast the budget could still decide
    # (a stop the fixed design would disagree with), or keeps asking about hopeless ones.
    table = pl.DataFrame([contrast(1.5, 0.6), contrast(0.0, 0.3, level_a="Asian"),
                          contrast(0.0, 0.05, level_a="Hispanic")])
    probs = predictive_decidable(table, prompts_now=126, prompts_budget=504).to_list()
    # By hand: a quarter of the variance is left at the budget (126 / 504), so the sd there is
    # sd / 2, the interval's half-width z sd / 2 with z = 2.576 (two-sided, mass 0.99), and the
    # mean moves with sd sqrt(3) / 2. A large gap (1.5, sd 0.6): `different` when the mean ends
    # beyond 0.18 + 0.773, P = Phi((1.5 - 0.953) / 0.520) = 0.854. No gap (0, sd 0.3): beyond
    # 0.18 + 0.386 either way, P = 2 (1 - Phi(0.566 / 0.260)) = 0.029. A narrow interval inside
    # the ROPE (0, sd 0.05): `equivalent` when the mean ends within 0.18 - 0.064, P = 2 Phi(0.116
    # / 0.0433) - 1 = 0.992. A one-sided quantile (2.326) would give 0.884, 0.042 and 0.995.
    assert probs == pytest.approx([0.854, 0.029, 0.992], abs=0.002)
    at_budget = predictive_decidable(table.with_columns(decision=pl.lit("different")), 504,
                                     504)
    assert at_budget.to_list() == [1.0, 1.0, 1.0]


def test_the_text_floor_ends_contrasts_more_answers_cannot_decide():
    # Bug caught: a futility rule that takes every part of a population contrast's variance to
    # shrink with answers, so it keeps asking where only more persona texts could help.
    table = pl.DataFrame([contrast(1.0, 0.6)])
    no_floor = predictive_decidable(table, 126, 504).item()
    assert no_floor > 0.5  # 1/sqrt(prompts) alone: a quarter of the variance left at the budget
    most = predictive_decidable(table, 126, 504, np.full((1, 10), 0.25)).item()
    assert most < 0.05  # sd 0.5 of 0.6 from the texts: the interval cannot clear the ROPE
    assert predictive_decidable(table, 126, 504, np.full((1, 10), 0.36)).item() == 0.0
    # The floor is averaged over the text sd's draws: half of them near zero keep it alive.
    mixed = predictive_decidable(table, 126, 504, np.repeat([[0.0, 0.36]], 5, axis=0).reshape(
        1, 10)).item()
    assert mixed == pytest.approx(no_floor / 2)


def test_futility_reads_the_interval_at_the_last_looks_level():
    # Bug caught: futility that predicts the budget's interval at the current interim look's
    # stricter level (its small alpha share), so it gives up on a contrast the last look, which
    # holds most of the alpha, would decide.
    interim = {**contrast(1.0, 0.6), "decision_prob": 1 - 0.0033 / 7, "family_size": 7}
    table = pl.DataFrame([interim])
    floor = np.full((1, 10), 0.15)
    at_interim_level = predictive_decidable(table, 126, 504, floor).item()
    at_last_level = predictive_decidable(table, 126, 504, floor, final_alpha=0.04).item()
    assert at_interim_level < 0.05 <= at_last_level  # dead at 0.0033 / 7, alive at 0.04 / 7
    # At the last look itself the two levels agree: nothing changes for a one-look design.
    last = table.with_columns(decision_prob=pl.lit(1 - 0.04 / 7))
    assert predictive_decidable(last, 126, 504, floor, final_alpha=0.04).item() == pytest.approx(
        predictive_decidable(last, 126, 504, floor).item())


def test_text_floors_count_each_models_texts_per_level():
    # Bug caught: a floor from the wrong text counts (null or baseline personas counted as texts,
    # one model's counts used for another's) or from the wrong model's text sd.
    levels = dict(genders=("man", "woman"), races=("Black", "White"))
    pool = pl.concat([default_shaped_prompts(items=2, texts_per_cell=2, model_name="a", **levels),
                      default_shaped_prompts(items=2, texts_per_cell=1, model_name="b", **levels)])
    posterior = xr.Dataset({"sigma_residual": (("chain", "draw", "model"),
                                               np.tile([0.5, 1.0], (1, 4, 1)))},
                           coords={"model": ["a", "b"]})
    fit = SimpleNamespace(idata=DataTree.from_dict({"posterior": posterior}))
    contrasts = pl.DataFrame([{**contrast(0.0, 1.0), "model_name": "a"},
                              {**contrast(0.0, 1.0), "model_name": "b"},
                              {**contrast(0.0, 1.0, attribute="gender", level_a="man",
                                          level_b="woman"), "model_name": "a"}])
    floors = text_floors(fit, contrasts, pool)
    # a: 4 texts a race level (2 genders x 2), 4 a gender level; b: 2 and 2.
    assert floors[:, 0].tolist() == pytest.approx([0.25 * (1 / 4 + 1 / 4), 1.0 * (1 / 2 + 1 / 2),
                                                   0.25 * (1 / 4 + 1 / 4)])
    # The pooled "all models" contrast is the mean of a's and b's: (0.125 + 1.0) / 4. Its floor
    # was 0, which kept a two-model run alive on it (defect 4 of the adaptive review).
    pooled = pl.DataFrame([{**contrast(0.0, 1.0), "model_name": "all models"}])
    assert text_floors(fit, pooled, pool)[:, 0].tolist() == pytest.approx(
        [(0.25 * (1 / 4 + 1 / 4) + 1.0 * (1 / 2 + 1 / 2)) / 4])
    without = SimpleNamespace(idata=DataTree.from_dict({"posterior": posterior.drop_vars(
        "sigma_residual")}))
    assert text_floors(without, contrasts, pool) is None


def test_stop_reasons_in_order():
    # Bug caught: stopping for futility while contrasts are still alive, or running past the budget.
    decided = pl.DataFrame({"open": [False, False], "alive": [False, False]})
    hopeless = pl.DataFrame({"open": [True, False], "alive": [False, False]})
    alive = pl.DataFrame({"open": [True, True], "alive": [True, False]})
    assert stop_reason(decided, 100, 504, 404, futility_from=0.0) == "decided"
    assert stop_reason(hopeless, 100, 504, 404, futility_from=0.0) == "futile"
    assert stop_reason(alive, 100, 504, 404, futility_from=0.0) is None
    assert stop_reason(alive, 504, 504, 0, futility_from=0.0) == "budget"


def test_a_looks_log_names_the_open_contrast_nearest_to_a_decision():
    # Bugs caught: naming a decided contrast (its P(decidable) is 1), the least decidable open
    # one, or none while contrasts are open; one model's contrast named without its model when
    # two are audited.
    states = contrast_states(pl.DataFrame([
        contrast(0.0, 1.5, level_a="Asian"), contrast(-2.0, 1.0, level_a="Hispanic"),
        contrast(3.0, 0.2, decision="different", level_a="Black")]), 126, 252, 0.2)
    assert states.filter("open").get_column("p_decidable").max() < 1.0
    line = nearest_open(states, 0.2)
    best = states.filter("open").sort("p_decidable", descending=True).row(0, named=True)
    assert best["level_a"] == "Hispanic"
    assert line == (f"; nearest to a decision: race Hispanic vs White, P(decidable by the "
                    f"budget) {best['p_decidable']:.2f} (alive from 0.2)")
    assert nearest_open(states.with_columns(open=pl.lit(False)), 0.2) == ""
    two_models = states.with_columns(model_name=pl.Series(["m", "m", "other"]))
    assert nearest_open(two_models, 0.2).startswith("; nearest to a decision: m: race Hispanic")
    # A dead contrast just under the threshold: two decimals read "0.20 (alive from 0.2)"
    # beside "0 alive" (the embedded default's first look, 2026-11-29).
    just_dead = states.with_columns(p_decidable=pl.Series([0.1996, 0.05, 1.0]))
    assert "P(decidable by the budget) 0.1996 (alive from 0.2)" in nearest_open(just_dead, 0.2)
    just_alive = states.with_columns(p_decidable=pl.Series([0.2004, 0.05, 1.0]))
    assert "P(decidable by the budget) 0.20 (alive from 0.2)" in nearest_open(just_alive, 0.2)


def test_futility_waits_for_its_share_of_the_budget():
    # Bugs caught: a run given up at its first round although design.futility_from says wait,
    # or one that never gives up once that share is asked, or a budget stop taken for futility.
    hopeless = pl.DataFrame({"open": [True, False], "alive": [False, False]})
    assert stop_reason(hopeless, 126, 504, 378, futility_from=0.5) is None
    assert stop_reason(hopeless, 252, 504, 252, futility_from=0.5) == "futile"
    assert stop_reason(hopeless, 504, 504, 0, futility_from=1.0) == "budget"
    assert design_rule(DesignConfig(adaptive=True, futility_from=0.25), 0.05,
                       pool_size=100).futility_from == 0.25
    with pytest.raises(AuditError, match="design.futility_from"):
        AdaptiveRule(round_prompts=10, max_prompts=40, futility_from=1.5)


def test_weights_follow_the_alive_contrasts():
    # Bug caught: spending prompts on personas whose contrasts are already decided or hopeless.
    respondents = pl.DataFrame({"respondent_id": ["a", "b", "c", "n"],
                                "race": ["Black", "White", "Asian", None],
                                "gender": ["man", "woman", "man", None]})
    states = contrast_states(pl.DataFrame([contrast(1.5, 0.6), contrast(
        0.0, 0.3, level_a="Asian"), contrast(1.0, 0.1, "different", "gender", "man", "woman")]),
        126, 504, 0.05)
    assert states["alive"].to_list() == [True, False, False]
    weights = dict(respondent_weights(respondents, states, 0.25).iter_rows())
    assert weights == {"a": 1.0, "b": 1.0, "c": 0.25, "n": 0.25}


def test_weights_follow_the_alive_contrasts_of_each_model():
    """Bug caught (adaptive review 2026-12-02): weights matched levels alone, so with two
    audited models, model b's Black and White personas kept full weight for model a's open race
    contrast though b's own was decided. The pooled "all models" row counts for every model."""
    respondents = pl.DataFrame({"respondent_id": ["a/B", "a/W", "b/B", "b/W"],
                                "model_name": ["a", "a", "b", "b"],
                                "race": ["Black", "White", "Black", "White"]})
    rows = [{**contrast(1.5, 0.6), "model_name": "a"},
            {**contrast(1.0, 0.05, "equivalent"), "model_name": "b"}]
    states = contrast_states(pl.DataFrame(rows), 126, 504, 0.05)
    assert states["alive"].to_list() == [True, False]
    weights = dict(respondent_weights(respondents, states, 0.25).iter_rows())
    assert weights == {"a/B": 1.0, "a/W": 1.0, "b/B": 0.25, "b/W": 0.25}
    pooled = contrast_states(pl.DataFrame([{**rows[0], "model_name": "all models"}, rows[1]]),
                             126, 504, 0.05)
    assert set(dict(respondent_weights(respondents, pooled, 0.25).iter_rows()).values()) == {1.0}


def fake_fit(theta: dict[str, float], b: dict[str, float]) -> SimpleNamespace:
    draws = 4
    posterior = xr.Dataset({
        "theta": (("chain", "draw", "respondent"),
                  np.tile(list(theta.values()), (1, draws, 1))),
        "b": (("chain", "draw", "item"), np.tile(list(b.values()), (1, draws, 1)))},
        coords={"respondent": list(theta), "item": list(b)})
    return SimpleNamespace(idata=DataTree.from_dict({"posterior": posterior}))


def test_selection_takes_items_that_split_answers_for_open_cells():
    # Bug caught: choosing by pool order (or by unanimous items) instead of information.
    pool = default_shaped_prompts(items=3, replicates=2, null_count=1, texts_per_cell=1,
                                  genders=("man",), races=("Black", "White"))
    respondents = sorted(pool["respondent_id"].unique())
    fit = fake_fit({name: 0.0 for name in respondents},
                   {"item_00": 4.0, "item_01": 0.0, "item_02": -4.0})
    states = contrast_states(pl.DataFrame([contrast(1.5, 0.6)]), 6, 24, 0.05)
    rule = AdaptiveRule(round_prompts=2, max_prompts=24)
    chosen = choose_next(pool, pool.head(0), fit, states, rule.other_weight, 2)
    assert set(chosen["item_id"]) == {"item_01"}
    assert set(chosen["respondent_id"]) == {"m/Black_man_0", "m/White_man_0"}


def test_selection_reads_information_at_theta_minus_difficulty():
    """Every respondent at theta 2: item_00 (b 2) splits answers evenly, p(1 - p) = 0.25, where
    item_01 (b 0) gives 0.105 and item_02 (b -2) 0.018. Bug it catches: theta + b in place of
    theta - b, which the test above (theta 0, difficulties symmetric about it) cannot see: it
    would pick item_02, whose answers are all but settled."""
    pool = default_shaped_prompts(items=3, replicates=2, null_count=1, texts_per_cell=1,
                                  genders=("man",), races=("Black", "White"))
    fit = fake_fit({name: 2.0 for name in sorted(pool["respondent_id"].unique())},
                   {"item_00": 2.0, "item_01": 0.0, "item_02": -2.0})
    states = contrast_states(pl.DataFrame([contrast(1.5, 0.6)]), 6, 24, 0.05)
    chosen = choose_next(pool, pool.head(0), fit, states, 0.25, 2)
    assert set(chosen["item_id"]) == {"item_00"}
    assert set(chosen["respondent_id"]) == {"m/Black_man_0", "m/White_man_0"}


@pytest.mark.parametrize(("budget", "trajectory"), [(100, [38, 78, 100]),
                                                     (120, [38, 78, 120]),
                                                     (152, [38, 78, 118, 152])])
def test_the_loop_never_repeats_a_prompt_and_spends_the_budget_in_planned_rounds(budget,
                                                                                trajectory):
    """By hand: 19 personas, so round 0 asks 40 // 19 = 2 items each (38); round 1 asks a round
    (40, to 78); the round before the last look takes what is left, 22 of a budget of 100 and 42
    of 120 (not a round of 40 and then 2 more). Three looks split alpha 0.05 as 1% over the two
    interim looks (0.00025 each) and 99% for the last (0.0495). The whole pool of 152 (two
    replicates) takes four looks, and the last round asks the 34 prompts left although only 25
    cells have one: it takes a cell's second replicate too. Bugs caught: a prompt asked twice
    across rounds, a budget overrun or one left unspent (118 of 120; 143 of 152 when the last
    round took one replicate a cell), round sizes or look alphas other than planned, a
    trajectory that does not match what was asked, or a model shape that changes between rounds
    (recompiles)."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    assert pool.get_column("respondent_id").n_unique() == 19
    rng = np.random.default_rng(3)
    labels = pool.select(pl.col("respondent_id").alias("respondent"),
                         pl.col("item_id").alias("item"), "replicate", "model_name",
                         "persona_kind", "gender", "race",
                         pl.Series("y", rng.integers(0, 2, pool.height)))
    asked_rounds: list[int] = []
    shapes = set()

    def answer(chosen: pl.DataFrame, round_index: int) -> pl.DataFrame:
        asked_rounds.append(round_index)
        keys = chosen.select(pl.col("respondent_id").alias("respondent"),
                             pl.col("item_id").alias("item"), "replicate")
        return labels.join(keys, on=["respondent", "item", "replicate"], how="semi")

    def sampler(model: pm.Model, fit: FitConfig):
        shapes.add(tuple(var.get_value().shape for var in model.data_vars))
        return prior_sampler(model, fit)

    rule = AdaptiveRule(round_prompts=40, max_prompts=budget, futility=0.0)
    fit = FitConfig(model="population", seed=1)
    run = run_adaptive(pool, answer, fit, rule, sample=sampler)
    assert not run.asked.select(KEY).is_duplicated().any()
    assert run.rounds["prompts"].to_list() == trajectory
    interim = [0.05 * 0.01 / (len(trajectory) - 1)] * (len(trajectory) - 1)
    assert run.rounds["look_alpha"].to_list() == pytest.approx([*interim, 0.0495])
    per_round = run.asked.group_by("round").len().sort("round").get_column("len").to_list()
    assert np.cumsum(per_round).tolist() == trajectory
    assert run.outcomes.height == run.prompts == budget
    assert asked_rounds == list(range(len(trajectory)))
    assert len(shapes) == 1  # every look the same cells: one compiled model
    # Prior draws decide nothing and futility 0 never gives up: the budget ends it.
    assert run.rounds["stop"].to_list() == [None] * (len(trajectory) - 1) + ["budget"]
    assert run.stop == "budget"


def test_a_time_budget_ends_the_run_at_its_last_look_with_the_last_looks_alpha():
    """design.max_answer_minutes, spent at 2 s a prompt: 150 s buy 75 prompts of 152. Round 0
    asks 38 (76 s), the 74 s left buy 37 more, fewer than a round, so round 1 takes them and is
    the last look. Bugs caught: the time budget ignored (the run goes on to 152), overspent,
    the time-shortened last look deciding at an interim look's sliver of alpha (it decides at
    the alpha left, familywise_alpha less round 0's share), or the answering time missing from
    the trajectory. A time budget that round 0 alone spends (60 s of its 76 s) made that one
    look an interim one, at 0.05 * 1% / 3 (defect 1 of the adaptive review); it is the last,
    at all of the alpha."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    labels = simulated_labels(pool)
    rule = AdaptiveRule(round_prompts=40, max_prompts=pool.height, futility=0.0,
                        max_answer_seconds=150.0)
    answer = answers_from(labels)
    run = run_adaptive(pool, answer, FitConfig(model="population", seed=1), rule,
                       sample=prior_sampler, answer_seconds=lambda asked: 2.0 * asked.height)
    alphas = look_alphas(rule, planned_looks(rule, pool.height))
    assert len(alphas) == 4 and run.stop == "budget"
    assert run.rounds["prompts"].to_list() == [38, 75]
    assert run.rounds["answer_seconds"].to_list() == [76.0, 150.0]
    assert run.rounds["look_alpha"].to_list() == pytest.approx([alphas[0], 0.05 - alphas[0]])
    assert sum(run.rounds["look_alpha"]) == pytest.approx(0.05)  # the union bound holds
    spent_in_round_0 = run_adaptive(pool, answer, FitConfig(model="population", seed=1),
                                    dataclasses.replace(rule, max_answer_seconds=60.0),
                                    sample=prior_sampler,
                                    answer_seconds=lambda asked: 2.0 * asked.height)
    assert spent_in_round_0.rounds.select("prompts", "look_alpha", "stop").rows() == [
        (38, pytest.approx(0.05), "budget")]
    with pytest.raises(ValueError, match="answer_seconds"):
        run_adaptive(pool, answer, FitConfig(model="population", seed=1), rule,
                     sample=prior_sampler)
    # Later answers faster than the first (1.5 s against 2 s): after the round meant to be the
    # last, the re-estimated time buys 10 more prompts, and with nothing alive (futility 0.99)
    # and futility due (from 0.6 of the budget) the last look stopped `futile`, at the last
    # look's alpha, while the summary says a futile stop is an interim look's.
    quick = dataclasses.replace(rule, futility=0.99, futility_from=0.6)
    faster = run_adaptive(pool, answer, FitConfig(model="population", seed=1), quick,
                          sample=prior_sampler,
                          answer_seconds=lambda asked: 2.0 * min(asked.height, 38)
                          + 1.5 * max(asked.height - 38, 0))
    assert faster.rounds["prompts"].to_list() == [38, 75]
    assert faster.stop == "budget"
    assert faster.rounds["look_alpha"][-1] == pytest.approx(0.05 - alphas[0])
    assert design_rule(DesignConfig(adaptive=True, max_answer_minutes=2.5), 0.05,
                       pool_size=100).max_answer_seconds == 150.0
    with pytest.raises(AuditError, match="design.max_answer_minutes"):
        design_rule(DesignConfig(adaptive=True, max_answer_minutes=0.0), 0.05, pool_size=100)


def test_futility_under_a_time_budget_predicts_at_what_the_time_can_still_buy(monkeypatch):
    """At 2 s a prompt and 150 s, round 0 asks 38 and the 74 s left buy 37 more: both looks
    judge whether a contrast can still be decided with 75 prompts, not the 152 the prompt budget
    would allow. Bug it catches: contrast_states given the prompt budget, which the test above
    (futility 0, nothing ever dies) cannot see. It matters: a contrast of mean 0.8, sd 0.6 after
    38 prompts is decidable with P 0.13 at 75 (dead under the 0.2 default) and 0.38 at 152."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    labels = simulated_labels(pool)
    reachable: list[int] = []
    real_states = adaptive.contrast_states

    def recording_states(*args, **kwargs):
        reachable.append(args[2])
        return real_states(*args, **kwargs)

    monkeypatch.setattr(adaptive, "contrast_states", recording_states)
    rule = AdaptiveRule(round_prompts=40, max_prompts=pool.height, futility=0.0,
                        max_answer_seconds=150.0)
    run_adaptive(pool, answers_from(labels), FitConfig(model="population", seed=1), rule,
                 sample=prior_sampler, answer_seconds=lambda asked: 2.0 * asked.height)
    assert reachable == [75, 75]



def test_the_prompts_a_time_budget_affords_are_rounded_down():
    """review2 tests.md finding 9: 30 s for 4 prompts is 7.5 s a prompt, so the 70 s left of a
    100 s budget buy 9.33 prompts: 9 (97.5 s in all). Rounding up bought 10 and ran to 105 s;
    every other test had a whole quotient, where floor and ceil agree."""
    rule = AdaptiveRule(round_prompts=10, max_prompts=40, max_answer_seconds=100.0)
    assert prompts_affordable(rule, 30.0, 4) == 9
    assert prompts_affordable(rule, 120.0, 4) == 0  # overspent: nothing more, never negative
    assert prompts_affordable(rule, None, 4) is None


def test_a_budget_below_one_prompt_a_persona_is_refused():
    # Bug caught: round 0 asks every persona once whatever the budget, so max_prompts=10 with
    # 19 personas asked 19 prompts.
    pool = default_shaped_prompts(items=4, replicates=1, null_count=2)
    labels = simulated_labels(pool)
    rule = AdaptiveRule(round_prompts=10, max_prompts=10)
    with pytest.raises(AuditError, match="cannot ask each of the design's 19 personas once"):
        run_adaptive(pool, answers_from(labels), FitConfig(model="population"), rule,
                     sample=prior_sampler)


def simulated_labels(pool: pl.DataFrame) -> pl.DataFrame:
    return pool.select(pl.col("respondent_id").alias("respondent"),
                       pl.col("item_id").alias("item"), "replicate", "model_name",
                       "persona_kind", "gender", "race", pl.lit(1).alias("y"))


def test_a_round_0_larger_than_a_round_still_leaves_the_budget_to_the_last_look():
    """19 personas and rounds of 10: round 0 asks one prompt a persona (19), more than a round.
    Looks planned as budget / round (8) ran out of budget at look 7 (19, 29, ..., 69, 76), which
    stopped `budget` at an interim look's 0.05 * 1% / 7 (defect 1 of the adaptive review). From
    round 0's real size, 1 + round(57 / 10) = 7 looks: the round before the last takes the 7
    left, and the last look decides at the last look's share."""
    pool = default_shaped_prompts(items=2, replicates=2, null_count=2)
    rule = AdaptiveRule(round_prompts=10, max_prompts=pool.height, futility=0.0)
    assert planned_looks(rule, pool.height, first_round_size=19) == 7
    run = run_adaptive(pool, answers_from(simulated_labels(pool)),
                       FitConfig(model="population", seed=1), rule, sample=prior_sampler)
    assert run.rounds["prompts"].to_list() == [19, 29, 39, 49, 59, 69, 76]
    assert run.rounds["look_alpha"][-1] == pytest.approx(0.0495)
    assert sum(run.rounds["look_alpha"]) == pytest.approx(0.05)
    assert run.stop == "budget"


@pytest.mark.parametrize(("max_prompts", "round_prompts", "trajectory"),
                         [(120, 120, [114, 120]), (None, 152, [152])])
def test_a_round_as_large_as_the_budget_asks_the_whole_budget(max_prompts, round_prompts,
                                                              trajectory):
    """19 personas x 4 items x 2 replicates: round 0 took replicate 0 alone, at most 76 prompts,
    so a round of 120 or 152 asked 76 and the run stopped `budget`, saying the budget was spent
    (defect 2 of the adaptive review). Round 0 now goes on to replicate 1: 6 prompts a persona
    (114) and a last round of the 6 left, or the whole pool in one look."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    rule = design_rule(DesignConfig(adaptive=True, max_prompts=max_prompts,
                                    round_prompts=round_prompts, futility=0.0), 0.05, pool.height)
    run = run_adaptive(pool, answers_from(simulated_labels(pool)),
                       FitConfig(model="population", seed=1), rule, sample=prior_sampler)
    assert run.rounds["prompts"].to_list() == trajectory
    assert not run.asked.select(KEY).is_duplicated().any()
    assert run.rounds["look_alpha"][-1] == pytest.approx(0.0495 if len(trajectory) > 1 else 0.05)
    first = first_round(pool, 152)
    assert first.height == 152 and set(first["replicate"]) == {0, 1}


def test_settings_an_adaptive_run_cannot_use_are_refused_before_round_0():
    """fit.attributes=[] was refused only after round 0 was asked and fitted, and
    design.round_prompts=0 silently meant a quarter of the budget (defect 7 of the adaptive
    review): both are refused before any prompt is asked."""
    pool = default_shaped_prompts(items=2, replicates=1, null_count=2)
    asked: list[int] = []

    def answer(chosen: pl.DataFrame, round_index: int) -> pl.DataFrame:
        asked.append(round_index)
        return answers_from(simulated_labels(pool))(chosen, round_index)

    rule = AdaptiveRule(round_prompts=20, max_prompts=pool.height)
    for attributes in ([], ["age"]):
        with pytest.raises(AuditError, match="fit.attributes"):
            run_adaptive(pool, answer, FitConfig(model="population", attributes=attributes),
                         rule, sample=prior_sampler)
    assert asked == []
    with pytest.raises(AuditError, match="design.round_prompts"):
        design_rule(DesignConfig(adaptive=True, round_prompts=0), 0.05, pool_size=100)


def test_levels_a_plain_fit_cannot_compare_are_refused_before_round_0():
    """Under fit=rasch an aliased design (every woman Black, every man White) leaves every
    contrast out (no common cell, irt/balance.py): the run bought round 0, then said "set
    fit.attributes to persona columns with at least two levels", which they had. A blank level
    passed the check too, though the fit reads it as missing (review of the merged change)."""
    from audit.methods.rasch.adaptive import check_contrastable

    pool = default_shaped_prompts(items=2, replicates=1, null_count=2)
    aliased = pool.filter(pl.col("gender").is_null()
                          | ((pl.col("gender") == "woman") & (pl.col("race") == "Black"))
                          | ((pl.col("gender") == "man") & (pl.col("race") == "White")))
    with pytest.raises(AuditError, match="share one"):
        check_contrastable(aliased, ["gender", "race"], "rasch")
    check_contrastable(aliased, ["gender", "race"], "population")  # additive effects: fitted
    check_contrastable(pool, ["gender", "race"], "rasch")  # crossed: fine
    blank = pool.with_columns(race=pl.when(pl.col("race") == "White").then(pl.lit(" "))
                              .when(pl.col("race") == "Black").then(pl.col("race"))
                              .otherwise(pl.lit(None, pl.String)))  # one level and a blank
    with pytest.raises(AuditError, match="fit.attributes"):
        check_contrastable(blank, ["race"], "population")


def test_a_model_without_cells_is_refused():
    # Bug caught: the hurdle model's three labels silently read as one binary outcome.
    pool = default_shaped_prompts(items=2, replicates=1, null_count=0)
    with pytest.raises(AuditError, match="fit.model"):
        run_adaptive(pool, lambda chosen, index: chosen, FitConfig(model="hurdle"),
                     AdaptiveRule(round_prompts=5, max_prompts=10))


@pytest.mark.slow
def test_the_quick_benchmark_runs_and_ends_with_its_result_line():
    # Bug caught: the benchmark (its simulation, fits and comparison) broken without anyone
    # noticing until the next measurement.
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_adaptive.py"),
                           "--quick"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = done.stdout.strip().splitlines()[-1]
    assert result.startswith("RESULT prompts_ratio=")
    fields = dict(part.split("=") for part in result.split()[1:])
    assert set(fields) == {"prompts_ratio", "prompts_mean", "decision_agreement",
                           "false_different_rate", "power_1logit_vs_fixed",
                           "power_large_vs_fixed"}
    assert 0.0 < float(fields["prompts_ratio"]) <= 1.0
    # A PASS/FAIL line per target, and a figure no run measured (nan) fails.
    verdicts = [line for line in done.stdout.splitlines() if line.startswith("target ")]
    assert len(verdicts) == 5 and all(line.endswith(("PASS", "FAIL")) for line in verdicts)
    assert all(line.endswith("FAIL") for line in verdicts if "=nan " in line)


def test_a_token_budget_caps_the_prompts_at_the_designs_estimate():
    """design.max_tokens_budget buys prompts at the preflight's estimate (4 characters a prompt
    token plus the answer's max_tokens), averaged over the design. Bugs caught: the budget
    ignored, the answer's tokens left out (a budget that buys 60% more prompts than it pays for),
    or a budget too small for one prompt run as the whole design."""
    from audit.methods.rasch.adaptive import tokens_per_prompt

    prompts = pl.DataFrame({"model_name": ["a", "a", "b"],
                            "system_prompt": ["abcd", "abcd", ""],
                            "user_prompt": ["abcdefgh", "abcdefghijkl", "abcdefgh"]})
    # characters (12 + 16 + 8) / 4 = 9 tokens, answers 10 + 10 + 20: 49 tokens over 3 prompts
    assert tokens_per_prompt(prompts, {"a": 10, "b": 20}) == pytest.approx(49 / 3)
    design = DesignConfig(adaptive=True, max_tokens_budget=2000)
    rule = design_rule(design, 0.05, pool_size=100, tokens_per_prompt=50.0)
    assert rule.max_prompts == 40 and rule.round_prompts == 10
    assert design_rule(DesignConfig(adaptive=True, max_prompts=30, max_tokens_budget=2000), 0.05,
                       pool_size=100, tokens_per_prompt=50.0).max_prompts == 30
    with pytest.raises(AuditError, match="buys no prompt"):
        design_rule(DesignConfig(adaptive=True, max_tokens_budget=10), 0.05, 100, 50.0)
    # A budget below one prompt a persona names the setting that binds, in its own unit
    # (adaptive review 2026-12-02: a binding token budget was told to raise design.max_prompts,
    # which changes nothing, and not how many tokens round 0 needs).
    with pytest.raises(AuditError, match=r"design.max_tokens_budget=1000 buys 20 prompts \(about "
                                         r"50 tokens each\).* 21 personas .* at least 1050 "
                                         r"tokens"):
        design_rule(DesignConfig(adaptive=True, max_prompts=30, max_tokens_budget=1000), 0.05,
                    100, 50.0, respondents=21)
    with pytest.raises(AuditError, match=r"design.max_prompts=15 is below the design's 21 "
                                         r"personas, .* at least 21$"):
        design_rule(DesignConfig(adaptive=True, max_prompts=15, max_tokens_budget=1000), 0.05,
                    100, 50.0, respondents=21)
    assert design_rule(DesignConfig(adaptive=True, max_prompts=21), 0.05, 100,
                       respondents=21).max_prompts == 21


def test_the_trajectory_plots_decided_and_alive_contrasts_on_whole_number_ticks():
    """The report's trajectory shows why a run stopped: decided contrasts and the open ones still
    decidable (alive, what futility reads), per look. Bugs caught: a count series plotted from
    the wrong column (the open count, which never showed why a futile run stopped), and a count
    axis scaled to the data (a constant count drew ticks at 6.7 to 7.3 and hid zero)."""
    from audit.methods.rasch.adaptive_run import trajectory_figure

    # Two contrasts: on an axis of -0.3 to 2.3 matplotlib's own ticks fall at halves.
    rounds = pl.DataFrame({"round": [0, 1, 2], "prompts": [63, 126, 189],
                           "contrasts": [2] * 3, "decided": [0, 0, 1], "open": [2, 2, 1],
                           "alive": [1, 1, 0], "mean_open_width": [13.5, 10.9, 10.2],
                           "stop": [None, None, "futile"]})
    figure = trajectory_figure(rounds, 252)
    count_axis = figure.axes[1]
    plotted = {line.get_label(): list(line.get_ydata()) for line in count_axis.get_lines()}
    assert plotted == {"decided contrasts": [0, 0, 1], "open, still decidable": [1, 1, 0]}
    low, high = count_axis.get_ylim()
    assert low < 0 and high >= 2
    ticks = [tick for tick in count_axis.get_yticks() if low <= tick <= high]
    assert ticks == [0, 1, 2]


def test_a_final_share_outside_its_range_is_named_not_blamed_on_the_alpha():
    """Bug caught: a final_share of 0 or above 1 (bench_adaptive's --final-share) was refused
    as "fit.familywise_alpha must lie in (0, 1)", naming a setting that was fine."""
    for share in (0.0, 1.5):
        with pytest.raises(AuditError, match=rf"final_share={share} must lie in \(0, 1\]"):
            AdaptiveRule(round_prompts=10, max_prompts=40, final_share=share)


def test_a_final_share_of_one_keeps_the_whole_alpha_for_the_last_look():
    """Bug caught: final_share=1.0 (the bench's --final-share 1: interim looks decide nothing)
    refused, though its documented range is (0, 1]."""
    rule = AdaptiveRule(round_prompts=10, max_prompts=40, final_share=1.0)
    assert look_alphas(rule, 3) == pytest.approx([0.0, 0.0, 0.05])


def test_the_design_rule_caps_the_budget_at_the_pool():
    """Bug caught: design.max_prompts above the design's size kept as the rule's budget, so
    audit.plan and the rounds were sized for prompts the design does not have (a quarter of 500,
    not of the 100 there are)."""
    rule = design_rule(DesignConfig(adaptive=True, max_prompts=500), 0.05, pool_size=100)
    assert (rule.max_prompts, rule.round_prompts) == (100, 25)


def test_a_default_round_is_a_quarter_of_the_budget_rounded_up():
    """Bug caught: the default round (a quarter of the budget) rounded down, so a budget of 30
    made rounds of 7 (ceil(30 / 4) = 8) and a fifth look for a few prompts."""
    rule = design_rule(DesignConfig(adaptive=True, max_prompts=30), 0.05, pool_size=100)
    assert rule.round_prompts == 8


def test_a_round_0_that_spends_the_budget_is_the_only_planned_look():
    """Bug caught: a budget no larger than round 0 planned a second look that is never made,
    so the planned last look's alpha (what futility and the trace read) was 0.0495, not 0.05."""
    rule = AdaptiveRule(round_prompts=40, max_prompts=40)
    assert planned_looks(rule, pool_size=100) == 1
    assert planned_looks(rule, pool_size=100, first_round_size=40) == 1
    assert planned_looks(rule, pool_size=100, first_round_size=39) == 2


def test_a_pool_that_repeats_a_prompt_is_refused():
    """Bug caught: a prompts table holding one respondent x item x replicate twice accepted, so
    one prompt could be asked and counted twice."""
    pool = default_shaped_prompts(items=2, replicates=1, null_count=0)
    with pytest.raises(AuditError, match="repeats a respondent x item x replicate"):
        adaptive.check_pool(pl.concat([pool, pool.head(1)]))


def test_a_look_at_the_budget_stops_whatever_the_pool_has_left():
    """Bug caught: a look that has asked exactly the budget (of a larger pool) not stopped as
    `budget`, so a run with contrasts alive asked past design.max_prompts."""
    alive = pl.DataFrame({"open": [True, True], "alive": [True, False]})
    assert stop_reason(alive, 504, 504, 100, futility_from=0.0) == "budget"
    assert stop_reason(alive, 503, 504, 101, futility_from=0.0) is None


def test_a_run_that_decides_every_contrast_at_its_budget_stops_decided():
    """Bug caught: the budget checked before the decisions, so a run whose last look decided
    every contrast said `budget` (its budget spent) instead of `decided`."""
    decided = pl.DataFrame({"open": [False, False], "alive": [False, False]})
    assert stop_reason(decided, 504, 504, 0, futility_from=0.0) == "decided"


def test_no_answering_time_recorded_yet_buys_no_estimate():
    """Bug caught: answers recorded at 0 s (none timed yet) divided by zero in place of
    leaving the time budget unestimated."""
    rule = AdaptiveRule(round_prompts=10, max_prompts=40, max_answer_seconds=100.0)
    assert prompts_affordable(rule, 0.0, 4) is None


def test_a_time_budget_larger_than_the_prompt_budget_leaves_the_prompts_in_charge():
    """Bug caught: the prompts the time left buys not capped at design.max_prompts, so a time
    budget that is not binding (1000 s buys 500 prompts at 2 s each) ran past a budget of 100.
    By hand, as in the loop test: 38, a round of 40 to 78, then the 22 left."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    rule = AdaptiveRule(round_prompts=40, max_prompts=100, futility=0.0,
                        max_answer_seconds=1000.0)
    run = run_adaptive(pool, answers_from(simulated_labels(pool)),
                       FitConfig(model="population", seed=1), rule, sample=prior_sampler,
                       answer_seconds=lambda asked: 2.0 * asked.height)
    assert run.rounds["prompts"].to_list() == [38, 78, 100]
    assert run.stop == "budget"
    # Only the look at the budget decided at the alpha left (what the report's caveat reads).
    assert run.rounds["final_look"].to_list() == [False, False, True]


def test_the_loop_weighs_other_respondents_by_the_rules_other_weight(monkeypatch):
    """Bug caught: run_adaptive choosing later rounds with a weight other than
    rule.other_weight for the respondents of no open contrast (null personas, baseline)."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    weights: list[float] = []
    real_choose = adaptive.choose_next

    def recording_choose(pool, asked, fit, states, other_weight, size):
        weights.append(other_weight)
        return real_choose(pool, asked, fit, states, other_weight, size)

    monkeypatch.setattr(adaptive, "choose_next", recording_choose)
    rule = AdaptiveRule(round_prompts=40, max_prompts=100, futility=0.0, other_weight=0.6)
    run_adaptive(pool, answers_from(simulated_labels(pool)), FitConfig(model="population", seed=1),
                 rule, sample=prior_sampler)
    assert weights == [0.6, 0.6]  # three looks: two later rounds chosen


def test_a_budget_of_one_prompt_a_persona_is_one_look():
    """Bug caught: a budget exactly one prompt a persona (19 here) refused as too small,
    though round 0 asks each persona once and spends it."""
    pool = default_shaped_prompts(items=4, replicates=1, null_count=2)
    run = run_adaptive(pool, answers_from(simulated_labels(pool)),
                       FitConfig(model="population", seed=1),
                       AdaptiveRule(round_prompts=10, max_prompts=19), sample=prior_sampler)
    assert run.rounds.select("prompts", "look_alpha", "stop").rows() == [
        (19, pytest.approx(0.05), "budget")]


def test_a_round_larger_than_the_budget_makes_round_0_no_larger_than_the_budget():
    """Bug caught: round 0 sized by design.round_prompts alone, so rounds of 200 with a budget
    of 100 asked the whole pool of 152 at once. By hand: 100 // 19 = 5 prompts a persona (95),
    then the 5 left."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    rule = AdaptiveRule(round_prompts=200, max_prompts=100, futility=0.0)
    run = run_adaptive(pool, answers_from(simulated_labels(pool)),
                       FitConfig(model="population", seed=1), rule, sample=prior_sampler)
    assert run.rounds["prompts"].to_list() == [95, 100]


def test_futility_from_is_a_share_of_what_the_time_budget_can_still_buy():
    """Bug caught: futility_from read against the prompt budget (152) and not against what the
    time budget buys (75 at 2 s a prompt of 150 s), so a time-limited run with nothing alive
    went on to its last look. By hand: 38 asked >= 0.4 x 75 = 30, but < 0.4 x 152 = 60.8."""
    pool = default_shaped_prompts(items=4, replicates=2, null_count=2)
    rule = AdaptiveRule(round_prompts=40, max_prompts=pool.height, futility=0.99,
                        futility_from=0.4, max_answer_seconds=150.0)
    run = run_adaptive(pool, answers_from(simulated_labels(pool)),
                       FitConfig(model="population", seed=1), rule, sample=prior_sampler,
                       answer_seconds=lambda asked: 2.0 * asked.height)
    assert run.rounds.select("prompts", "alive", "stop").rows() == [(38, 0, "futile")]


def test_round_0_starts_on_the_least_asked_items_before_the_levels_least_asked():
    """Bug caught: window_start ranking a start by this respondent's levels before by how often
    its items were asked, so round 0 piled onto item 0 (asked once) to spare the level's items.
    By hand: items asked [1, 0, 0], the level's [0, 1, 1]; items 1 and 2 tie on the first key,
    the level ties them too, and the lowest start, 1, wins."""
    assert window_start(np.array([1.0, 0.0, 0.0]), [np.array([0.0, 1.0, 1.0])], 1) == 1


def test_selection_prefers_the_personas_of_alive_contrasts_at_equal_information():
    """Bug caught: the information score not multiplied by the respondent's weight, so on equal
    information the pool order chose Asian personas, who are in no alive contrast, over the
    Black and White ones of the alive Black-White contrast."""
    pool = default_shaped_prompts(items=3, replicates=2, null_count=1, texts_per_cell=1,
                                  genders=("man",), races=("Asian", "Black", "White"))
    fit = fake_fit({name: 0.0 for name in sorted(pool["respondent_id"].unique())},
                   {"item_00": 4.0, "item_01": 0.0, "item_02": -4.0})
    states = contrast_states(pl.DataFrame([contrast(1.5, 0.6)]), 6, 24, 0.05)
    assert states["alive"].to_list() == [True]
    chosen = choose_next(pool, pool.head(0), fit, states, 0.25, 2)
    assert set(chosen["respondent_id"]) == {"m/Black_man_0", "m/White_man_0"}
    assert set(chosen["item_id"]) == {"item_01"}


def text_sd_fit(sigma: float) -> SimpleNamespace:
    """A fit whose one model "m" has text sd ``sigma`` in every draw."""
    posterior = xr.Dataset({"sigma_residual": (("chain", "draw", "model"),
                                               np.full((1, 4, 1), sigma))},
                           coords={"model": ["m"]})
    return SimpleNamespace(idata=DataTree.from_dict({"posterior": posterior}))


def test_text_floors_use_each_levels_own_text_count():
    """Bug caught: the floor sigma^2 (1/n_a + 1/n_b) read with one level's count twice, which
    the equal counts of the test above cannot see. By hand: 2 Black texts and 1 White, text sd
    0.5: 0.25 x (1/2 + 1/1) = 0.375 (0.25 with 1/n_a twice)."""
    pool = pl.concat([
        default_shaped_prompts(items=2, texts_per_cell=2, null_count=0, genders=("man",),
                               races=("Black",)),
        default_shaped_prompts(items=2, texts_per_cell=1, null_count=0, genders=("man",),
                               races=("White",))])
    floors = text_floors(text_sd_fit(0.5), pl.DataFrame([contrast(0.0, 1.0)]), pool)
    assert floors[0].tolist() == pytest.approx([0.375] * 4)


def test_a_level_without_texts_has_no_floor():
    """Bug caught: a contrast one of whose levels has no persona text for its model (only the
    other's texts counted) divided by zero in place of taking no floor."""
    pool = default_shaped_prompts(items=2, texts_per_cell=2, null_count=0, genders=("man",),
                                  races=("Black",))
    floors = text_floors(text_sd_fit(0.5), pl.DataFrame([contrast(0.0, 1.0)]), pool)
    assert floors[0].tolist() == [0.0] * 4


def test_null_personas_are_not_counted_as_texts_of_a_level():
    """Bug caught: a null or baseline persona that carries a level's value counted as one of
    that level's texts, which shrinks the floor. By hand: 2 Black and 2 White texts, the
    baseline and a null persona marked Black too: 0.25 x (1/2 + 1/2) = 0.25, not 0.25 x
    (1/4 + 1/2)."""
    pool = default_shaped_prompts(items=2, texts_per_cell=2, null_count=1, genders=("man",),
                                  races=("Black", "White"))
    marked = pool.with_columns(race=pl.col("race").fill_null("Black"))
    floors = text_floors(text_sd_fit(0.5), pl.DataFrame([contrast(0.0, 1.0)]), marked)
    assert floors[0].tolist() == pytest.approx([0.25] * 4)


def test_a_futility_of_zero_never_gives_up_on_an_open_contrast():
    """Bug caught: alive read as P(decidable) > futility, not >=, so design.futility=0 (never
    stop for futility) still killed a contrast whose interval the texts alone keep from the
    ROPE (P = 0: a floor of the whole variance, 0.36 of sd 0.6)."""
    table = pl.DataFrame([contrast(1.0, 0.6)])
    states = contrast_states(table, 126, 504, 0.0, np.full((1, 10), 0.36))
    assert states.select("p_decidable", "open", "alive").rows() == [(0.0, True, True)]
