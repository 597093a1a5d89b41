"""The comparison's statistics: pairing, the change table, the gate, and (slow) the joint fit."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pymc as pm
import pytest
import xarray as xr

from audit.cli.verdict import junit_xml
from audit.errors import AuditError
from audit.methods.configs import VerdictConfig
from audit.methods.rasch import comparison
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import index_design
from audit.methods.rasch.simulation import (
    VarianceComponents,
    default_shaped_prompts,
    simulate_pair,
)

ROPE = 0.18
GENDER = {"gender": ("female", "male")}  # the levels compared in posterior() below


def gender_pair(rng: np.random.Generator, change: float, *, items: int = 12, texts: int = 3,
                replicates: int = 2, prompt_sd: float = 0.0) -> pl.DataFrame:
    """A paired comparison on gender alone (baseline and ``texts`` texts per gender): side A has
    no gap, side B a gap of ``change`` logits in the man vs woman contrast."""
    prompts = default_shaped_prompts(texts_per_cell=texts, null_count=0, items=items,
                                     replicates=replicates, races=("White",))
    return simulate_pair(prompts, VarianceComponents(), {"gender": {}},
                         {"gender": {"man": change}}, rng, prompt_sd=prompt_sd)


def prompts(items=("i1", "i2"), personas=("p1", "p2"), seed=7, text="Decide.") -> pl.DataFrame:
    rows = [{"item_id": item, "persona_id": persona, "replicate": 0, "seed": seed,
             "user_prompt": f"{persona}: {text} {item}"} for item in items for persona in personas]
    return pl.DataFrame(rows)


def test_pairing_needs_the_same_prompts_and_seeds_but_not_the_same_system_prompt():
    # Would fail if a pairing ignored seeds or texts, or refused to pair a system-prompt change
    # (the system prompt is not in the key at all).
    assert comparison.pairing(prompts(), prompts()).paired
    seeds = comparison.pairing(prompts(), prompts(seed=8))
    assert not seeds.paired and "seeds" in seeds.reason
    texts = comparison.pairing(prompts(), prompts(text="Choose."))
    assert not texts.paired and "texts" in texts.reason
    items = comparison.pairing(prompts(), prompts(items=("i1", "i3")))
    assert not items.paired and "1 shared of 3" in items.reason
    with pytest.raises(AuditError, match="share no item"):
        comparison.pairing(prompts(), prompts(items=("i9",)))


def posterior(gap_a: np.ndarray, gap_b: np.ndarray, base: float = 0.0) -> xr.Dataset:
    """Draws of effect_gender for sides A and B whose female - male gaps are the given draws."""
    effect = np.stack([np.stack([gap_a / 2, -gap_a / 2], -1),
                       np.stack([gap_b / 2, -gap_b / 2], -1)], 0)  # model, draw, level
    effect = effect.transpose(1, 0, 2)[None]  # chain, draw, model, level
    dims = ("chain", "draw", "model")
    return xr.Dataset({
        "effect_gender": (dims + ("level_gender",), effect),
        "model_effect": (dims, np.full(effect.shape[:3], base)),
    }, coords={"model": ["A", "B"], "level_gender": ["female", "male"]})


def table(gap_a, gap_b, **gate) -> dict:
    changes = comparison.change_table(posterior(np.asarray(gap_a), np.asarray(gap_b)),
                                      GENDER, rope=ROPE, hdi_prob=0.94,
                                      familywise_alpha=0.05, **gate)
    assert changes.height == 1
    return changes.row(0, named=True)


def test_only_levels_labelled_on_both_sides_are_compared():
    """Bug caught: every level either side had was contrasted on both, so a level one side never
    asked about was read from its zero-sum constraint and prior, and an attribute the fit left
    out (one level on both sides) crashed the table after the fit."""
    outcomes = pl.DataFrame({
        "model_name": ["A", "A", "A", "B", "B", "B", "B"],
        "gender": ["man", "woman", None, "man", "woman", "non-binary", None],
        "race": ["White", "Black", None, "White", "White", "White", None]})
    comparable = comparison.comparable_levels(outcomes, ["gender", "race"])
    assert comparable.levels == {"gender": ("man", "woman")}
    assert comparable.left_out == (
        "gender non-binary: labelled on side B only", "race Black: labelled on side A only",
        "race: one level (White) labelled on both sides; a contrast needs two")


def test_change_is_b_minus_a_and_decided_against_the_rope():
    rng = np.random.default_rng(1)
    row = table(rng.normal(0.0, 0.05, 4000), rng.normal(1.0, 0.05, 4000))
    # A reversed sign (A - B) or a decision on the gaps instead of the change fails these.
    assert row["change"] == pytest.approx(1.0, abs=0.02)
    assert row["decision"] == "different" and row["p_worse"] > 0.99
    assert row["hdi_low"] > 0.8 and row["hdi_high"] < 1.2
    same = table(rng.normal(1.0, 0.05, 4000), rng.normal(1.0, 0.05, 4000))
    assert same["decision"] == "equivalent"


def test_gate_reads_the_growth_of_the_absolute_gap_not_the_change():
    rng = np.random.default_rng(2)
    grows = table(rng.normal(0.0, 0.05, 4000), rng.normal(1.0, 0.05, 4000), max_worsening=0.5)
    assert grows["worsens"] and grows["p_worsening"] > 0.99
    assert not table(rng.normal(0.0, 0.05, 4000), rng.normal(1.0, 0.05, 4000),
                     max_worsening=1.5)["worsens"]
    # The gap flips sign at the same size: a change of -2 logits, but no group is treated worse
    # by more than before. A gate on |change| would fail it.
    flips = table(rng.normal(1.0, 0.05, 4000), rng.normal(-1.0, 0.05, 4000), max_worsening=0.5)
    assert abs(flips["change"]) > 1.9 and not flips["worsens"]
    # A gap that shrinks never worsens.
    assert table(rng.normal(1.0, 0.05, 4000), rng.normal(0.2, 0.05, 4000),
                 max_worsening=0.0)["p_worse"] < 0.01


def test_gate_in_percentage_points_uses_the_sides_rate():
    rng = np.random.default_rng(3)
    # 0 -> 1 logit around a 50% rate is 0 -> 24.5 pp of favourable answers.
    row = table(rng.normal(0.0, 0.01, 2000), rng.normal(1.0, 0.01, 2000), max_worsening=20.0,
                unit="pp")
    assert row["worsens"] and row["gate_unit"] == "pp"
    assert not table(rng.normal(0.0, 0.01, 2000), rng.normal(1.0, 0.01, 2000),
                     max_worsening=30.0, unit="pp")["worsens"]
    with pytest.raises(AuditError, match="worsening_unit"):
        table([0.0, 0.1], [0.0, 0.1], unit="percent")


def pp_gated_row(seed: int, spread_b: float, hdi_prob: float) -> dict:
    """A gap that shrank from 1.0 to 0.6 logits while A sits near 5% favourable and B near 50%
    (so its pp gap grew), gated at 5 pp: the change table's one row."""
    rng = np.random.default_rng(seed)
    draws = posterior(rng.normal(1.0, 0.02, 2000), rng.normal(0.6, spread_b, 2000))
    draws["model_effect"] = draws["model_effect"] + xr.DataArray([-3.0, 0.0],
                                                                 coords={"model": ["A", "B"]})
    return comparison.change_table(draws, GENDER, rope=ROPE, hdi_prob=hdi_prob,
                                   familywise_alpha=0.05, max_worsening=5.0,
                                   unit="pp").row(0, named=True)


def test_p_worse_reads_logits_beside_a_gate_in_percentage_points():
    """Compare review 2026-12-02: with the gate in pp, P(worse) read the pp gaps, which grow as
    a side's rate nears 50%: a gap that shrank from 1.0 to 0.6 logits (A near 5% favourable, B
    near 50%) was printed "gap +1.00 -> +0.60 logits, ..., P(worse) 1.00"."""
    row = pp_gated_row(seed=5, spread_b=0.02, hdi_prob=0.94)
    assert row["p_worse"] < 0.01  # the logit gap shrank
    assert row["worsens"]  # the pp gap grew by more than 5: the gate reads pp as asked
    assert row["gap_A_pp"] < 5.0 < 10.0 < row["gap_B_pp"]
    line = comparison.change_line(row)
    assert "gap +1.00 -> +0.60 logits (+" in line and "pp), change -0.40" in line
    assert "P(worse) 0.00" in line


def test_a_change_that_rounds_to_zero_prints_no_negative_zero():
    rng = np.random.default_rng(6)
    row = table(rng.normal(0.0, 0.3, 4000), rng.normal(-0.001, 0.3, 4000))
    line = comparison.change_line({**row, "change": -0.001, "hdi_high": -0.004})
    assert "-0.00" not in line and "change +0.00" in line


def test_each_contrast_is_one_junit_case_failed_when_it_worsens():
    rng = np.random.default_rng(4)
    changes = comparison.change_table(
        posterior(rng.normal(0.0, 0.05, 500), rng.normal(1.0, 0.05, 500)), GENDER,
        rope=ROPE, hdi_prob=0.94, familywise_alpha=0.05, max_worsening=0.3)
    checks = comparison.gate_checks(changes)
    root = junit_xml(checks, Path("."), VerdictConfig()).getroot()
    assert root.get("tests") == "1" and root.get("failures") == "1"
    assert "WORSENS" in checks[0].message and "female vs male" in checks[0].name


def test_the_change_line_names_the_interval_its_decision_was_taken_on():
    """Bug caught: "change +0.52 [+0.05, +1.01], undecided" printed the reported HDI only, so an
    interval clear of zero stood under `undecided` without the family-wise one that decided."""
    rng = np.random.default_rng(6)
    draws = posterior(rng.normal(0.0, 0.05, 2000), rng.normal(0.5, 0.2, 2000))
    family = comparison.change_table(draws, GENDER, rope=ROPE, hdi_prob=0.94,
                                     familywise_alpha=0.01).row(0, named=True)
    line = comparison.change_line(family)
    assert (f"{family['decision']} on the 99% HDI [{family['decision_low']:+.2f}, "
            f"{family['decision_high']:+.2f}]") in line
    assert family["decision_low"] < family["hdi_low"]
    alone = comparison.change_table(draws, GENDER, rope=ROPE, hdi_prob=0.94,
                                    familywise_alpha=None).row(0, named=True)
    assert " on the " not in comparison.change_line(alone)
    # 400 draws leave under 20 outside the 99.9% interval: the decision is on the normal one,
    # and the line said "HDI" for it.
    few = posterior(rng.normal(0.0, 0.05, 400), rng.normal(0.5, 0.2, 400))
    normal = comparison.change_table(few, GENDER, rope=ROPE, hdi_prob=0.94,
                                     familywise_alpha=0.001).row(0, named=True)
    assert normal["decision_interval_kind"] == "normal"
    assert " on the 99.9% normal interval [" in comparison.change_line(normal)


def test_the_same_prompt_on_both_sides_gets_one_shared_index():
    # Would fail if the side stayed in the key (nothing shared) or the item were dropped from it.
    rng = np.random.default_rng(5)
    outcomes = gender_pair(rng, 0.0, items=3, texts=1, replicates=1)
    data = index_design(outcomes.select("respondent", "item", "y"))
    texts, prompts = comparison.shared_indices(data)
    # 2 sides x 3 personas (baseline, man, woman) x 3 items cells: 3 shared texts, 9 prompts.
    assert data.successes.size == 18 and texts.max() + 1 == 3 and prompts.max() + 1 == 9
    cells = data.cells.with_columns(prompt=prompts, text=texts,
                                    persona=pl.col("respondent").str.slice(2))
    assert (cells.group_by("persona", "item").agg(pl.col("prompt").n_unique())["prompt"]
            == 1).all()
    assert (cells.group_by("persona").agg(pl.col("text").n_unique())["text"] == 1).all()
    # ... and one prompt per persona text on each item.
    assert cells.group_by("item").agg(pl.col("prompt").n_unique())["prompt"].min() == 3


def joint_model_variables(outcomes: pl.DataFrame, paired: bool) -> tuple[set[str], dict]:
    data = index_design(outcomes.select("respondent", "item", "y",
                                        *[c for c in ("label_source",) if c in outcomes.columns]),
                        by_path="label_source" in outcomes.columns)
    terms = comparison.shared_terms(data, paired)
    if terms is None:
        return set(), {}
    with pm.Model() as model:
        pm.Deterministic("shift", terms())
    return {var.name for var in model.free_RVs}, {
        name: tuple(model[name].shape.eval()) for name in ("prompt_side_z",)
        if name in model.named_vars}


def test_one_answer_a_prompt_gets_no_per_side_prompt_effect():
    # Would fail if the joint fit kept a per-answer pull that one 0/1 label cannot identify (the
    # ridge that left 5 of 6 one-answer joint fits unconverged), or dropped the shared terms with it.
    one = gender_pair(np.random.default_rng(12), 0.0, items=3, texts=1, replicates=1)
    free, _ = joint_model_variables(one, paired=True)
    assert "sigma_prompt_side" not in free
    assert {"sigma_prompt_shared", "sigma_text_shared"} <= free
    assert joint_model_variables(one, paired=False) == (set(), {})
    two = gender_pair(np.random.default_rng(12), 0.0, items=3, texts=1, replicates=2)
    assert "sigma_prompt_side" in joint_model_variables(two, paired=False)[0]


def test_a_prompts_answers_split_by_labelling_path_share_its_side_pull():
    # Would fail if the per-side pull were drawn per Binomial cell: a prompt whose two answers
    # were labelled by the rules and by the LLM judge would get two unrelated pulls.
    two = gender_pair(np.random.default_rng(13), 0.0, items=3, texts=1, replicates=2)
    paths = two.with_columns(label_source=pl.when(pl.int_range(pl.len()) % 2 == 0)
                             .then(pl.lit("rule")).otherwise(pl.lit("llm")))
    data = index_design(paths.select("respondent", "item", "y", "label_source"), by_path=True)
    assert data.successes.size > 18  # some prompts' answers went to two cells
    _, shapes = joint_model_variables(paths, paired=False)
    # 2 sides x 3 personas x 3 items = 18 prompts, however their answers were split.
    assert shapes == {"prompt_side_z": (18,)}


def test_a_paired_pair_shares_each_prompts_pull_and_only_side_b_carries_the_change():
    # Would fail if a paired pair drew its prompt pulls per side (the sides would agree on a
    # prompt no more often than an unpaired pair's), or if side B were given side A's effects.
    def agreement(outcomes: pl.DataFrame) -> float:
        side_a, side_b = outcomes.filter(model_name="A"), outcomes.filter(model_name="B")
        return float((side_a["y"] == side_b["y"]).mean())

    prompts = default_shaped_prompts(texts_per_cell=3, null_count=0, races=("White",))
    common = dict(components=VarianceComponents(), effects_a={"gender": {}},
                  effects_b={"gender": {}}, prompt_sd=4.0)
    paired = simulate_pair(prompts, rng=np.random.default_rng(8), **common)
    unpaired = simulate_pair(prompts, rng=np.random.default_rng(8), paired=False, **common)
    assert agreement(paired) > 0.75 and agreement(unpaired) < 0.6
    # Texts that each side reacts to in its own way (side_text_sd) loosen the pairing too.
    own_texts = simulate_pair(prompts, rng=np.random.default_rng(8), side_text_sd=4.0, **common)
    assert agreement(own_texts) < agreement(paired) - 0.1
    changed = simulate_pair(prompts, VarianceComponents(), {"gender": {}},
                            {"gender": {"man": 3.0}}, np.random.default_rng(9))
    rates = changed.filter(pl.col("gender") == "man").group_by("model_name").agg(
        pl.col("y").mean()).sort("model_name")["y"].to_list()
    assert rates[1] - rates[0] > 0.3
    assert changed.filter(model_name="B")["respondent"].str.starts_with("B|").all()


# --- the joint fit (nutpie) -------------------------------------------------------------------

FAST_FIT = FitConfig(model="population", attributes=["gender"], draws=400, tune=400, chains=2,
                     seed=11)


def fitted_change(outcomes: pl.DataFrame, paired: bool, **gate) -> dict:
    idata, diagnostics = comparison.fit_joint(outcomes, FAST_FIT, paired)
    assert diagnostics.divergences < 20
    levels = comparison.comparable_levels(outcomes, ["gender"]).levels
    return comparison.change_table(idata["posterior"].to_dataset(), levels, rope=ROPE,
                                   hdi_prob=0.94, familywise_alpha=0.05, **gate
                                   ).row(0, named=True)


@pytest.mark.slow
def test_pairing_narrows_the_change_when_both_sides_share_a_prompt_effect():
    # Would fail if the paired fit gave each side only its own prompt effects (nothing cancels).
    # The prompt pull (sd 1.5) dominates the text pull (sd 0.3), so sharing it must show; the
    # side-specific text spread, which pairing cannot remove, stays in both widths.
    outcomes = gender_pair(np.random.default_rng(6), 0.0, prompt_sd=1.5, items=16, texts=4,
                           replicates=3)
    paired = fitted_change(outcomes, paired=True)
    unpaired = fitted_change(outcomes, paired=False)
    assert paired["hdi_high"] - paired["hdi_low"] < 0.9 * (unpaired["hdi_high"]
                                                           - unpaired["hdi_low"])


@pytest.mark.slow
def test_planted_change_is_covered_and_no_change_passes_the_gate():
    # The fast version of benchmarks/bench_compare.py: a handful of pairs, loose bounds.
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(3):
        row = fitted_change(gender_pair(rng, 1.0, prompt_sd=0.5), paired=True)
        covered += row["hdi_low"] <= 1.0 <= row["hdi_high"]
    gate_failures = sum(fitted_change(gender_pair(rng, 0.0, prompt_sd=0.5),
                                      paired=True, max_worsening=0.5)["worsens"]
                        for _ in range(3))
    assert covered >= 2 and gate_failures == 0


def test_a_gate_in_percentage_points_reads_the_rate_of_the_real_personas():
    """In a fit with null personas model_effect is the null arm's level and real_effect lifts the
    real personas from it: the pp gaps must sit at the real personas' rate. Bug it catches: the
    real_effect term dropped (no other test's posterior has one), which reads the gaps at the
    random strings' rate. Here the real personas sit at logit 0 (model -1, real +1): 0 -> 1 logit
    there is 100 (1/(1+e^-0.5) - 1/(1+e^0.5)) = 24.49 pp; at the null arm's logit -1 it would be
    100 (1/(1+e^0.5) - 1/(1+e^1.5)) = 19.51 pp, under a 20 pp gate."""
    data = posterior(np.zeros(400), np.ones(400), base=-1.0)
    data["real_effect"] = (("chain", "draw", "model"), np.ones(data["model_effect"].shape))
    row = comparison.change_table(data, GENDER, rope=ROPE, hdi_prob=0.94, familywise_alpha=0.05,
                                  max_worsening=20.0, unit="pp").row(0, named=True)
    expected = 100 * (1 / (1 + math.exp(-0.5)) - 1 / (1 + math.exp(0.5)))
    assert row["gap_A_pp"] == pytest.approx(0.0, abs=1e-9)
    assert expected == pytest.approx(24.49, abs=0.01)
    assert row["gap_B_pp"] == pytest.approx(expected, abs=1e-6)
    assert row["worsens"]


def test_every_contrast_of_an_attribute_counts_in_the_familywise_level():
    """Four race levels give six contrasts, decided on 1 - 0.05/6 HDIs. Bug it catches: the
    family counted attributes (or levels) instead of contrasts; every other table here has one
    contrast, where those agree."""
    levels = ["A", "B", "C", "D"]
    effect = np.zeros((1, 200, 2, 4))
    effect[..., :] = [0.3, 0.1, -0.1, -0.3]
    data = xr.Dataset({"effect_race": (("chain", "draw", "model", "level_race"), effect)},
                      coords={"model": ["A", "B"], "level_race": levels})
    changes = comparison.change_table(data, {"race": tuple(levels)}, rope=ROPE, hdi_prob=0.94,
                                      familywise_alpha=0.05)
    assert changes.height == 6
    assert changes["decision_prob"].to_list() == pytest.approx([1 - 0.05 / 6] * 6)


def test_pairing_names_personas_that_differ_whatever_their_counts():
    """Catches: the join made `left` or `inner`, the height check's `or` made `and`, or its
    check of side B dropped: personas missing from one side were paired by null texts."""
    for other, counts in ((("p1", "p3"), "A has 2, B 2, 1 shared"),
                          (("p1", "p2", "p3"), "A has 2, B 3, 2 shared"),
                          (("p1",), "A has 2, B 1, 1 shared")):
        found = comparison.pairing(prompts(), prompts(personas=other))
        # Bug caught (review probe 2026-12-07): the reason did not say which side differed.
        assert not found.paired and found.reason == f"unpaired: the personas differ ({counts})"


def test_more_items_than_respondents_still_give_each_prompt_its_own_side_pull():
    """Catches: a prompt's key respondent * len(respondents) + item: with 7 items and 6
    respondents (2 sides x 3 personas) respondent 0's item 6 was respondent 1's item 0."""
    two = gender_pair(np.random.default_rng(14), 0.0, items=7, texts=1, replicates=2)
    assert joint_model_variables(two, paired=False)[1] == {"prompt_side_z": (42,)}


class Built(Exception):
    """Raised in place of building the joint model, with the arguments it was given."""


def joint_model_arguments(monkeypatch, outcomes: pl.DataFrame, paired: bool,
                          confusion=None) -> dict:
    def stop(data, respondents, items, rates, **kwargs):
        raise Built({"rates": rates, **kwargs})

    monkeypatch.setattr(comparison, "build_explanatory_model", stop)
    with pytest.raises(Built) as built:
        comparison.fit_joint(outcomes, FAST_FIT, paired, confusion)
    return built.value.args[0]


def test_the_joint_fit_adds_the_shared_terms_of_a_paired_comparison(monkeypatch):
    """Catches: fit_joint building its prompt terms as unpaired whatever `paired` says."""
    one = gender_pair(np.random.default_rng(15), 0.0, items=3, texts=1, replicates=1)
    assert joint_model_arguments(monkeypatch, one, paired=False)["cell_shift"] is None
    terms = joint_model_arguments(monkeypatch, one, paired=True)["cell_shift"]
    with pm.Model() as model:
        pm.Deterministic("shift", terms())
    assert {"sigma_prompt_shared", "sigma_text_shared"} <= {var.name for var in model.free_RVs}


def test_the_joint_fit_reads_each_labelling_paths_own_rates(monkeypatch):
    """Catches: the test for per-path judge counts inverted (`!= {ANY_PATH}` made `==`): the
    cells were not split by path and the run was refused for lacking label_source."""
    from audit.methods.rasch.irt.judge_error import JudgeConfusion, JudgeCorrection

    one = gender_pair(np.random.default_rng(15), 0.0, items=3, texts=1, replicates=1)
    paths = one.with_columns(label_source=pl.when(pl.col("item") == pl.col("item").min())
                             .then(pl.lit("rule")).otherwise(pl.lit("llm")))
    counts = JudgeConfusion("favourable", 40, 2, 40, 2)
    correction = JudgeCorrection("favourable", {"rule": counts, "llm": counts})
    rates = joint_model_arguments(monkeypatch, paths, True, correction)["rates"]
    assert rates.paths == ("llm", "rule")


@pytest.mark.parametrize("probability", [0.0, 1.0])
def test_a_worsening_probability_of_zero_or_one_is_refused(probability):
    """Catches: the bounds on worsening_prob read `<=`: 0 failed every gated contrast, and 1
    only one whose every draw worsened."""
    with pytest.raises(AuditError, match="must lie between 0 and 1"):
        table([0.0, 0.1], [0.0, 0.1], max_worsening=0.5, worsening_prob=probability)


def test_a_contrast_worsens_at_exactly_the_worsening_probability():
    """Catches: `>= worsening_prob` made `>`: 19 of 20 draws growing by 1 logit is P 0.95."""
    gap_b = np.ones(20)
    gap_b[0] = 0.0
    row = table(np.zeros(20), gap_b, max_worsening=0.5, worsening_prob=0.95)
    assert row["p_worsening"] == 0.95 and row["worsens"]


def test_a_gap_that_did_not_change_does_not_worsen_under_a_gate_of_zero():
    """Catches: `worsening > max_worsening` made `>=` in P(worsening) or in the gate: the same
    gap on both sides read as growing by 0."""
    gap = np.random.default_rng(16).normal(0.5, 0.1, 400)
    row = table(gap, gap, max_worsening=0.0)
    assert row["p_worsening"] == 0.0 and not row["worsens"]


def test_the_change_line_shows_each_number_where_it_belongs():
    """Catches: the gate phrase showing P(worse) for P(|gap| grows), or logits for a pp gate;
    A's and B's pp gaps swapped; the reported HDI replaced by the family-wise one."""
    row = pp_gated_row(seed=17, spread_b=0.1, hdi_prob=0.5)
    line = comparison.change_line(row)
    assert row["p_worse"] < 0.01 and row["p_worsening"] > 0.95
    assert f"P(|gap| grows > 5 pp) {row['p_worsening']:.2f}: WORSENS" in line
    assert f"({row['gap_A_pp']:+.2f} -> {row['gap_B_pp']:+.2f} pp)" in line
    assert f"[{row['hdi_low']:+.2f}, {row['hdi_high']:+.2f}], P(worse)" in line
    assert f"{row['hdi_low']:+.2f}" != f"{row['decision_low']:+.2f}"


def test_the_convergence_case_says_the_fits_numbers():
    """Catches: the convergence testcase's message losing its R-hat, ESS or divergences."""
    from audit.methods.rasch.irt import Diagnostics

    diagnostics = Diagnostics(rhat_max=1.234, ess_bulk_min=12.4, ess_tail_min=50.0,
                              divergences=3, rhat_limit=1.01, ess_limit=400.0)
    check = comparison.gate_checks(pl.DataFrame(), diagnostics)[-1]
    assert check.failed and check.name == "convergence"
    assert check.message.startswith("R-hat max 1.234, ESS bulk min 12, 3 divergences. R-hat")


def labelled_side(label: str, labels: list[str]) -> comparison.Side:
    """One side of two prompts (a man and a woman on item i1), labelled by the rules and the
    LLM judge in turn."""
    prompts = pl.DataFrame({"prompt_id": ["q1", "q2"], "respondent_id": ["p1", "p2"],
                            "persona_id": ["p1", "p2"], "item_id": ["i1", "i1"],
                            "model_name": ["qwen"] * 2, "persona_kind": ["explicit"] * 2,
                            "gender": ["man", "woman"]})
    return comparison.Side(label, f"runs/{label}", "qwen", prompts, pl.DataFrame({
        "prompt_id": ["q1", "q2"], "label": labels, "label_source": ["rule", "llm"]}))


def test_joint_outcomes_keep_each_answers_labelling_path():
    """Catches: label_source left out of the joint table, so the judge correction could not
    read each labelling path's error rates."""
    sides = (labelled_side("A", ["favourable", "unfavourable"]),
             labelled_side("B", ["unfavourable", "favourable"]))
    joint = comparison.joint_outcomes(sides, ["gender"], "favourable", [])
    assert joint.select("respondent", "y", "label_source").rows() == [
        ("A|p1", 1, "rule"), ("A|p2", 0, "llm"), ("B|p1", 0, "rule"), ("B|p2", 1, "llm")]


def test_a_side_with_no_answer_left_to_fit_is_named():
    """Catches: the check for a side whose labels were all dropped removed, so the comparison
    went on to fit one side against nothing."""
    sides = (labelled_side("A", ["favourable", "unfavourable"]),
             labelled_side("B", ["refusal", "refusal"]))
    with pytest.raises(AuditError, match=r"side B \(runs/B, model qwen\) has no labelled"):
        comparison.joint_outcomes(sides, ["gender"], "favourable", ["refusal"])


def test_an_attribute_named_twice_is_read_once():
    """Catches: the attributes read as given, not once each, so fit.attributes=[gender,gender]
    named each level left out twice."""
    outcomes = pl.DataFrame({"model_name": ["A", "A", "B"], "gender": ["man", "woman", "man"]})
    assert comparison.comparable_levels(outcomes, ["gender", "gender"]).left_out == (
        "gender woman: labelled on side A only",
        "gender: one level (man) labelled on both sides; a contrast needs two")


def test_levels_labelled_on_one_side_only_are_named_in_order():
    """Catches: the levels one side alone labelled named in set order, not sorted."""
    levels = ["a", "b", "c", "d", "e", "f"]
    outcomes = pl.DataFrame({"model_name": ["A"] * 2 + ["B"] * 8,
                             "gender": ["man", "woman", "man", "woman", *levels[::-1]]})
    assert comparison.comparable_levels(outcomes, ["gender"]).left_out == (
        "gender a, b, c, d, e, f: labelled on side B only",)


def test_a_paired_prompts_shared_pull_is_the_same_on_both_sides_and_its_own():
    """Catches: the shared text pull indexed by prompt, or the shared prompt pull by text: each
    prompt's two cells (one a side) share one prompt pull, each text's 6 cells one text pull."""
    one = gender_pair(np.random.default_rng(18), 0.0, items=3, texts=1, replicates=1)
    data = index_design(one.select("respondent", "item", "y"))
    with pm.Model() as model:
        pm.Deterministic("shift", comparison.shared_terms(data, paired=True)())
    cells = data.cells.with_columns(persona=pl.col("respondent").str.slice(2))
    for fixed, per, count in (("sigma_text_shared", ["persona", "item"], 9),
                              ("sigma_prompt_shared", ["persona"], 3)):
        shift = pm.draw(pm.do(model, {fixed: 0.0})["shift"], random_seed=1, mode="FAST_COMPILE")
        shifts = cells.with_columns(shift=shift)
        assert (shifts.group_by(per).agg(pl.col("shift").n_unique())["shift"] == 1).all()
        assert shifts["shift"].n_unique() == count


def test_the_change_table_reads_levels_and_attributes_in_order_whatever_order_they_come():
    """Catches: the table's sort dropped (rows in fit.attributes' order, race before gender),
    or the levels read in the order given (male vs female, its gap's sign flipped)."""
    rng = np.random.default_rng(19)
    data = posterior(rng.normal(0.4, 0.05, 200), rng.normal(0.4, 0.05, 200))
    data["effect_race"] = data["effect_gender"].rename(level_gender="level_race") \
        .assign_coords(level_race=["Black", "White"])
    changes = comparison.change_table(data, {"race": ("White", "Black"),
                                             "gender": ("male", "female")},
                                      rope=ROPE, hdi_prob=0.94, familywise_alpha=0.05)
    assert changes.select("attribute", "level_a", "level_b").rows() == [
        ("gender", "female", "male"), ("race", "Black", "White")]
    assert changes["gap_A"].to_list() == pytest.approx([0.4, 0.4], abs=0.02)


def test_a_gap_that_grows_the_other_way_worsens():
    """Catches: the gate reading the signed change B - A instead of the growth of |gap|: a gap
    that went from 0 to -1 logit (the other level now favoured) passed a 0.5 gate."""
    rng = np.random.default_rng(20)
    row = table(rng.normal(0.0, 0.05, 400), rng.normal(-1.0, 0.05, 400), max_worsening=0.5)
    assert row["p_worsening"] > 0.99 and row["worsens"]


def test_the_decision_is_taken_on_the_familywise_interval_not_the_reported_hdi():
    """Catches: the decision read off the reported 94% HDI, clear of the ROPE here, where the
    99.9% family-wise interval that decides still reaches into it."""
    draws = posterior(np.zeros(4000), np.random.default_rng(21).normal(0.5, 0.15, 4000))
    row = comparison.change_table(draws, GENDER, rope=ROPE, hdi_prob=0.94,
                                  familywise_alpha=0.001).row(0, named=True)
    assert row["hdi_low"] > ROPE > row["decision_low"]
    assert row["decision"] == "undecided"


def test_the_reported_interval_has_the_mass_asked_for():
    """Catches: the change's HDI, or the mass recorded beside it, taken at 94% whatever
    hdi_prob says."""
    draws = posterior(np.zeros(4000), np.random.default_rng(22).normal(0.5, 0.1, 4000))
    row = comparison.change_table(draws, GENDER, rope=ROPE, hdi_prob=0.5,
                                  familywise_alpha=None).row(0, named=True)
    assert row["hdi_prob"] == 0.5
    assert row["hdi_high"] - row["hdi_low"] == pytest.approx(2 * 0.6745 * 0.1, abs=0.02)


def test_each_contrasts_junit_case_is_grouped_by_its_attribute():
    """Catches: every contrast's testcase put in one group, "compare", not compare.ATTRIBUTE."""
    rng = np.random.default_rng(23)
    changes = comparison.change_table(
        posterior(rng.normal(0.0, 0.05, 200), rng.normal(0.0, 0.05, 200)), GENDER, rope=ROPE,
        hdi_prob=0.94, familywise_alpha=0.05)
    assert [check.group for check in comparison.gate_checks(changes)] == ["compare.gender"]


def test_the_joint_fit_is_the_population_contrast_model(monkeypatch):
    """Catches: the joint model built without population=True, so each side's null and
    demographic texts got separate spreads instead of one text scale and a ratio."""
    def stop(model, fit):
        raise Built(model)

    monkeypatch.setattr(comparison, "sample_posterior", stop)
    one = gender_pair(np.random.default_rng(15), 0.0, items=3, texts=1, replicates=1)
    with pytest.raises(Built) as built:
        comparison.fit_joint(one, FAST_FIT, paired=False)
    assert "sigma_null_log_ratio" in built.value.args[0].named_vars
