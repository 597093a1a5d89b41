"""fit.response=probability: P(favourable) fitted as logit P (irt/probability.py).

Fast tests of the pure pieces (the clip, the missing-probability errors, the settings it refuses,
the row-grain indexing) and of the fit stage's wiring with prior draws standing in for sampling;
one slow test that the population model's contrast covers a planted gap in simulated
probabilities."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pymc as pm
import pytest
from scipy import stats

import audit.methods.rasch.irt.rasch as rasch
from audit.errors import AuditError
from audit.methods.configs import AuditConfig
from audit.methods.rasch.analyse import fit_stage, read_fit, write_fit
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import build_rasch_model, fit_rasch, index_design
from audit.methods.rasch.irt.probability import (
    PROBABILITY_CLIP,
    RESIDUAL_SD_NAME,
    check_response,
    clipped_logit,
    index_probabilities,
    observe_cells,
    probability_outcomes,
)

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import persona_frame  # noqa: E402
from prior_samplers import prior_sampler  # noqa: E402
from test_fit_stage_models import GOLD  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def simulate_probabilities(race_gap: float, *, items: int = 12, texts_per_cell: int = 2,
                           text_sd: float = 0.3, residual_sd: float = 1.0, rate: float = -1.5,
                           seed: int = 1) -> pl.DataFrame:
    """Outcome rows whose P(favourable) has logit rate + race effect + text deviation - b[item]
    + Normal(0, residual_sd) noise; Black is `race_gap` logits from White, the other races 0; the
    decision y is P > 0.5, as a greedy answer would be."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.5, items)
    rows = []
    for persona in persona_frame(0, texts_per_cell).iter_rows(named=True):
        theta = rate + (race_gap if persona["race"] == "Black" else 0.0) + rng.normal(0, text_sd)
        for item in range(items):
            logit = theta - difficulty[item] + rng.normal(0, residual_sd)
            p = 1 / (1 + np.exp(-logit))
            rows.append({"respondent": persona["persona_id"], "item": f"i{item:02d}",
                         "y": int(p > 0.5), "p_favourable": p, "model_name": "m",
                         "persona_kind": persona["persona_kind"], "gender": persona["gender"],
                         "race": persona["race"]})
    return pl.DataFrame(rows).with_columns(pl.col("gender", "race").cast(pl.String))


# --- the pure pieces ----------------------------------------------------------------------------

def test_probabilities_of_zero_and_one_are_clipped_to_finite_logits():
    # Catches an unclipped logit (an infinite outcome the sampler cannot start from) and a clip
    # applied to one side only.
    logits = clipped_logit(np.array([0.0, 1.0, 0.5, 0.2]))
    edge = np.log(PROBABILITY_CLIP / (1 - PROBABILITY_CLIP))
    assert np.all(np.isfinite(logits))
    np.testing.assert_allclose(logits, [edge, -edge, 0.0, np.log(0.25)])


def test_no_probability_at_all_is_one_line_naming_the_fix():
    # Catches fitting an empty table (a crash deep in PyMC) or a KeyError traceback when the
    # labels have no p_favourable column, as a decision-only judge writes them.
    outcomes = simulate_probabilities(0.0, items=2, texts_per_cell=1)
    for table in (outcomes.drop("p_favourable"),
                  outcomes.with_columns(pl.lit(None, pl.Float64).alias("p_favourable"))):
        with pytest.raises(AuditError, match="judge=logprob.*fit.response=decision"):
            probability_outcomes(table)


def test_answers_without_a_probability_are_dropped_with_a_warning(caplog):
    # Catches a null or NaN probability reaching the likelihood (a NaN log density), and rows
    # vanishing without a word.
    outcomes = simulate_probabilities(0.0, items=2, texts_per_cell=1)
    p = outcomes["p_favourable"].to_list()
    p[0], p[1] = None, float("nan")
    with caplog.at_level(logging.WARNING):
        kept = probability_outcomes(outcomes.with_columns(pl.Series("p_favourable", p)))
    assert kept.height == outcomes.height - 2
    assert "2 of 18 labelled answers carry no P(favourable)" in caplog.text


@pytest.mark.parametrize(("response", "model", "outcome", "message"), [
    ("probabilities", "population", "favourable", "unknown fit.response"),
    ("probability", "rasch_seed", "favourable", "not rasch_seed"),
    ("probability", "hurdle", "favourable", "not hurdle"),
    ("probability", "population", "undetermined", "fit.outcome=favourable only"),
])
def test_settings_a_probability_fit_cannot_honour_are_refused(response, model, outcome, message):
    # Catches a typo in fit.response silently fitting decisions, and P(favourable) fitted as if
    # it were P(needs more information) or through a model whose likelihood reads labels.
    with pytest.raises(AuditError, match=message):
        check_response(response, model, outcome)


@pytest.mark.parametrize("model", ["rasch", "twopl", "explanatory", "population"])
def test_every_model_with_a_normal_likelihood_takes_probabilities(model):
    # Catches a model that can fit logit P (PROBABILITY_MODELS) refused for fit.response.
    check_response("probability", model, "favourable")


def test_the_clip_keeps_logits_within_the_documented_bound():
    # Catches another clip than P = 0.001 (logit -6.9): a shallower or steeper floor moves every
    # fit of a model that rounds its probabilities to 0 or 1.
    np.testing.assert_allclose(clipped_logit(np.array([0.0, 1.0])),
                               [-6.906754778648554, 6.906754778648554], rtol=1e-12)


def test_an_adaptive_pool_is_refused_for_probabilities():
    # Catches zero-trial pool cells (adaptive rounds) fitted as observed logits of 0 (P = 0.5).
    outcomes = simulate_probabilities(0.0, items=2, texts_per_cell=1)
    with pytest.raises(AuditError, match="design.adaptive=false"):
        fit_rasch(outcomes, FitConfig(response="probability"), pool=outcomes)


def test_decision_is_the_default_response():
    # Catches a default that would change every existing audit's fit.
    assert FitConfig().response == "decision"
    check_response("decision", "hurdle", "undetermined")  # any model and coding


def test_each_logit_stays_with_its_own_respondent_and_item():
    # Catches logits taken in the table's order while the indices come from a join that may
    # reorder rows: every P would land on another persona.
    outcomes = simulate_probabilities(0.0, items=3, texts_per_cell=1).sample(fraction=1.0,
                                                                             shuffle=True, seed=3)
    data = index_probabilities(outcomes)
    assert data.cell_logit.size == outcomes.height and np.all(data.trials == 1)
    rebuilt = pl.DataFrame({"respondent": [data.respondents[i] for i in data.cell_respondent],
                            "item": [data.items[j] for j in data.cell_item],
                            "logit": data.cell_logit})
    expected = outcomes.select("respondent", "item",
                               logit=pl.Series(clipped_logit(outcomes["p_favourable"].to_numpy())))
    assert rebuilt.sort("respondent", "item").equals(expected.sort("respondent", "item"))


def test_observed_logits_are_normal_around_the_predictor_with_a_half_normal_two_sd():
    # Catches the residual sd's prior (HalfNormal(2)) lost or rescaled, sigma used as a variance,
    # and unclipped or label-read outcomes reaching the likelihood.
    outcomes = simulate_probabilities(0.0, items=2, texts_per_cell=1)
    data = index_probabilities(outcomes.with_columns(p_favourable=pl.Series(
        [0.0, 1.0] + outcomes["p_favourable"].to_list()[2:])))
    model = build_rasch_model(data, "rasch")
    point = {**model.initial_point(), "b": np.array([0.5, -1.0]),
             f"{RESIDUAL_SD_NAME}_log__": np.log(1.5)}  # theta is 0 at the initial point
    observed, sigma = model.compile_logp(vars=[model["y"], model[RESIDUAL_SD_NAME]], sum=False,
                                         jacobian=False, mode="FAST_COMPILE")(point)
    np.testing.assert_allclose(observed, stats.norm.logpdf(data.cell_logit,
                                                           -point["b"][data.cell_item], 1.5))
    assert np.isclose(sigma, stats.halfnorm.logpdf(1.5, scale=2.0))
    assert np.all(np.isfinite(data.cell_logit))


def test_a_probability_outcome_read_through_judge_rates_is_refused():
    # Catches observe_cells quietly dropping judge rates handed to a probability fit (a caller's
    # bug that would otherwise fit without the correction it asked for).
    data = index_probabilities(simulate_probabilities(0.0, items=2, texts_per_cell=1))
    with pm.Model(), pytest.raises(ValueError, match="no labels to read through judge rates"):
        observe_cells("y", data, data.trials, data.successes, np.zeros(data.trials.size),
                      dims=None, confusion=object())


def test_each_decision_stays_with_its_own_logit():
    # Catches the decisions (successes) taken from the cell-grain design, sorted by label, while
    # the indices and logits follow the rows: each y would sit on another persona's cell.
    outcomes = simulate_probabilities(0.0, items=3, texts_per_cell=1, rate=0.0).sample(
        fraction=1.0, shuffle=True, seed=3)
    data = index_probabilities(outcomes)
    assert 0 < outcomes["y"].sum() < outcomes.height
    assert data.successes.tolist() == outcomes["y"].to_list()


# --- the fit stage's wiring (prior draws, no sampling) ------------------------------------------

def _stage_tables(outcomes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = outcomes.with_row_index("row")
    prompts = rows.select(
        pl.format("p{}", "row").alias("prompt_id"), pl.col("respondent").alias("respondent_id"),
        pl.col("item").alias("item_id"), "model_name", "persona_kind", "gender", "race")
    label = (pl.when(pl.col("row") % 5 == 0).then(pl.lit("needs_more_information"))
             .when(pl.col("y") == 1).then(pl.lit("favourable")).otherwise(pl.lit("unfavourable")))
    labels = rows.select(pl.format("p{}", "row").alias("prompt_id"), label.alias("label"),
                         pl.lit("logprob").alias("label_source"), "p_favourable")
    return prompts, labels


def test_the_fit_stage_fits_probabilities_without_the_judge_correction(monkeypatch, tmp_path):
    # Catches the judge-error cut applied to probabilities (it would read P through label rates
    # and sample judge_sensitivity), the second outcome fitted from probabilities it does not
    # have, and a run dir that forgets which response its fit read.
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = _stage_tables(simulate_probabilities(-1.0, items=3, texts_per_cell=1))
    fit_config = FitConfig(model="population", chains=1, response="probability",
                           second_outcome="undetermined")
    fit = fit_stage(AuditConfig(fit=fit_config), prompts, labels, GOLD)
    assert fit.response == "probability" and fit.judge_confusion is None
    assert RESIDUAL_SD_NAME in fit.idata.posterior.data_vars
    assert "judge_sensitivity" not in fit.idata.posterior.data_vars
    assert fit.idata.observed_data["y"].size == labels.height  # one logit an answer
    second = fit.companions[0]
    assert (second.outcome, second.response) == ("undetermined", "decision")
    assert second.judge_confusion is not None  # its labels still go through the judge's rates
    assert fit.contrasts.height == 7
    write_fit(fit, tmp_path)
    diagnostics = json.loads((tmp_path / "diagnostics.json").read_text())
    assert diagnostics["response"] == {"favourable": "probability", "undetermined": "decision"}
    again = read_fit(tmp_path, fit_config)
    assert again.response == "probability" and again.companions[0].response == "decision"


def test_a_decision_fit_ignores_the_probabilities(monkeypatch):
    # Catches fit.response leaking: the default must stay the Binomial fit of the labels.
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    outcomes = simulate_probabilities(0.0, items=3, texts_per_cell=1)
    fit = fit_rasch(outcomes, FitConfig(model="rasch", chains=1))
    assert RESIDUAL_SD_NAME not in fit.idata.posterior.data_vars
    assert fit.response == "decision"


# --- the posterior (real sampling) --------------------------------------------------------------

@pytest.mark.slow
def test_the_population_contrast_covers_a_planted_gap_in_probabilities():
    # Catches a likelihood on the wrong scale (P instead of logit P), a residual sd that is not
    # estimated (fixed too small: overconfident intervals that miss the gap), and contrasts read
    # from the wrong effect. About four in five of the same answers' decisions are "no"
    # (P < 0.5): the probabilities carry what the decisions round away.
    fit_config = replace(FitConfig(model="population", response="probability"), chains=2,
                         draws=500, tune=500, target_accept=0.95, familywise_alpha=None)
    covered, means, widths, sigmas = 0, [], [], []
    for seed in range(3):
        outcomes = simulate_probabilities(-1.0, seed=seed)
        fit = fit_rasch(outcomes, fit_config)
        gap = fit.contrasts.filter((pl.col("attribute") == "race")
                                   & (pl.col("level_a") == "Black")
                                   & (pl.col("level_b") == "White")).row(0, named=True)
        covered += gap["hdi_low"] <= -1.0 <= gap["hdi_high"]
        means.append(gap["mean"])
        widths.append(gap["hdi_high"] - gap["hdi_low"])
        sigmas.append(fit.summary.filter(pl.col("parameter") == RESIDUAL_SD_NAME)["mean"][0])
    # Calibrated 94% HDIs cover in at least 2 of 3 data sets with probability 0.99.
    assert covered >= 2, (means, widths)
    assert abs(np.mean(means) + 1.0) < 0.5, means
    assert abs(np.mean(sigmas) - 1.0) < 0.15, sigmas
    assert max(widths) < 2.0, widths  # the probabilities inform the gap: not the prior's width


def test_a_probability_fit_asks_no_gold_set_of_a_judge_error_request(monkeypatch, caplog):
    """Bug caught: the judge's error rates were resolved for a probability fit too, so
    fit.judge_error=true without gold results stopped it, though the correction does not apply
    to probabilities (JUDGE_ERROR_NOTE, said once at info)."""
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = _stage_tables(simulate_probabilities(-1.0, items=3, texts_per_cell=1))
    fit_config = FitConfig(model="population", chains=1, response="probability",
                           judge_error=True)
    with caplog.at_level(logging.WARNING):
        fit = fit_stage(AuditConfig(fit=fit_config), prompts, labels, None)
    assert fit.response == "probability" and fit.judge_confusion is None
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING
                and "judge" in record.getMessage()]


def test_integer_ids_are_indexed_for_probabilities_as_for_decisions():
    """Bug (mutation review 2026-12-06): index_design coerces ids to text (OutcomeSchema), but
    index_probabilities looked the raw column's values up in its text-keyed tables, so integer
    respondent or item ids, which a decision fit of the same table takes, stopped a probability
    fit through the Python API with a bare KeyError."""
    table = pl.DataFrame({"respondent": [2, 1, 2, 1], "item": [10, 10, 11, 11],
                          "y": [1, 0, 1, 1], "p_favourable": [0.7, 0.2, 0.9, 0.6]})
    assert index_design(table).respondents == ("1", "2")
    data = index_probabilities(table)
    assert data.respondents == ("1", "2") and data.items == ("10", "11")
    assert data.cell_respondent.tolist() == [1, 0, 1, 0]
    assert data.cell_item.tolist() == [0, 0, 1, 1]
