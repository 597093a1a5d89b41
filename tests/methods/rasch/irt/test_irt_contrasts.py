"""Contrasts between persona levels on hand-built posteriors: exact numbers, no sampling."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from audit.methods.rasch.irt.contrasts import (
    POOLED_MODEL,
    ROPE_HALF_WIDTH_LOGIT,
    decide,
    level_contrasts,
    null_spread_draws,
)
from audit.methods.rasch.irt.explanatory import RespondentTable
from audit.methods.rasch.schemas import ContrastSchema
from audit.schemas import validate
from audit.stats.intervals import hdi_bounds

DRAWS = 400


def respondents() -> RespondentTable:
    frame = pl.DataFrame({
        "respondent": ["m1__a1", "m1__a2", "m1__b1", "m1__b2", "m1__base", "m1__n1", "m1__n2",
                       "m1__n3"],
        "model_name": ["m1"] * 8,
        "persona_kind": ["explicit"] * 4 + ["baseline", "null", "null", "null"],
        "race": ["A", "A", "B", "B", None, None, None, None],
    })
    return RespondentTable(frame=frame, attributes=("race",))


def theta_posterior(values: np.ndarray, names: list[str], noise: float = 0.0) -> xr.Dataset:
    """theta with the given per-respondent means, plus optional N(0, noise) draw noise."""
    rng = np.random.default_rng(3)
    draws = values[None, None, :] + noise * rng.standard_normal((2, DRAWS, values.size))
    return xr.Dataset({"theta": (("chain", "draw", "respondent"), draws)},
                      coords={"respondent": names})


def test_rasch_contrast_is_the_gap_between_level_means_with_its_noise_floor():
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    # Level A personas at +0.5 and +0.7, B at -0.5 and -0.3: gap 1.0. Nulls at -1, 0, +1: sd 1.
    values = np.array([0.5, 0.7, -0.5, -0.3, 0.0, -1.0, 0.0, 1.0])
    contrasts = level_contrasts(theta_posterior(values, names), table, rope=0.2)
    row = contrasts.row(0, named=True)
    assert (row["model_name"], row["attribute"], row["level_a"], row["level_b"]) == \
        ("m1", "race", "A", "B")
    assert (row["n_a"], row["n_b"]) == (2, 2)
    assert row["mean"] == pytest.approx(1.0)
    assert row["decision"] == "different" and row["p_direction"] == 1.0
    assert row["noise_floor"] == pytest.approx(1.0 * math.sqrt(1 / 2 + 1 / 2))
    assert row["ratio_to_noise"] == pytest.approx(1.0)
    assert row["p_beyond_noise"] == 0.0  # a gap of 1 is not beyond twice a floor of 1
    assert contrasts.height == 1


def test_the_noise_floor_comes_with_its_hdi():
    """noise_floor_low/high are the fit.hdi_prob HDI of the floor's draws (sigma_null times the
    group-size factor); before, contrasts.csv gave the floor's posterior mean alone."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    sigma = np.random.default_rng(5).gamma(4.0, 0.1, (2, DRAWS))
    posterior = theta_posterior(np.array([0.5, 0.7, -0.5, -0.3, 0.0, -1.0, 0.0, 1.0]), names)
    posterior["sigma_null"] = (("chain", "draw"), sigma)
    row = level_contrasts(posterior, table, hdi_prob=0.9).row(0, named=True)
    floor = sigma.ravel() * math.sqrt(1 / 2 + 1 / 2)
    assert (row["noise_floor_low"], row["noise_floor_high"]) == pytest.approx(
        tuple(hdi_bounds(floor, 0.9)))
    assert row["noise_floor_low"] < row["noise_floor"] < row["noise_floor_high"]


def test_contrast_tables_without_the_floor_interval_still_read():
    """A run written before noise_floor_low/high existed validates (the report, the verdict)."""
    contrasts = level_contrasts(theta_posterior(np.zeros(8), respondents().frame.get_column(
        "respondent").to_list(), noise=0.1), respondents())
    older = contrasts.drop("noise_floor_low", "noise_floor_high")
    assert validate(older, ContrastSchema, "contrasts").height == 1
    # The schema filters unknown columns: without them the report would never see the interval.
    assert "noise_floor_high" in validate(contrasts, ContrastSchema, "contrasts").columns


def test_a_gap_inside_the_rope_is_equivalent_and_a_wide_one_undecided():
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([0.01, 0.01, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0])
    tight = level_contrasts(theta_posterior(values, names, noise=0.01), table, rope=0.2)
    assert tight["decision"].to_list() == ["equivalent"]
    wide = level_contrasts(theta_posterior(values, names, noise=1.0), table, rope=0.2)
    assert wide["decision"].to_list() == ["undecided"]


def test_twopl_contrasts_are_in_logits_like_the_rope():
    """2PL: log-odds = a * (theta - b), so a theta gap of 0.1 with discriminations 1 and 4 (mean
    2.5) is a log-odds gap of 0.25 on the average item: outside the default ROPE of 0.18 logits.
    Judged in theta units (the old code) it was 0.1, inside the ROPE: "equivalent"."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([0.1, 0.1, 0.0, 0.0, 0.0, -0.2, 0.0, 0.2])
    posterior = theta_posterior(values, names, noise=0.001)
    posterior["a"] = (("chain", "draw", "item"), np.broadcast_to([1.0, 4.0], (2, DRAWS, 2)))
    row = level_contrasts(posterior, table).row(0, named=True)
    assert row["mean"] == pytest.approx(0.25, abs=1e-3)
    assert row["decision"] == "different"
    # The floor is scaled alike: null theta sd 0.2 -> 0.5 log-odds, times sqrt(1/2 + 1/2).
    assert row["noise_floor"] == pytest.approx(0.5, abs=2e-3)
    rasch = level_contrasts(theta_posterior(values, names, noise=0.001), table).row(0, named=True)
    assert rasch["mean"] == pytest.approx(0.1, abs=1e-3) and rasch["decision"] == "equivalent"


def test_explanatory_effects_and_pooled_rows():
    frame = pl.concat([respondents().frame,
                       respondents().frame.with_columns(
                           pl.col("respondent").str.replace("m1", "m2"),
                           pl.lit("m2").alias("model_name"))])
    table = RespondentTable(frame=frame, attributes=("race",))
    effect = np.zeros((2, DRAWS, 2, 2))  # chain, draw, model, level
    effect[..., 0, :] = [0.4, -0.4]  # m1: A - B = 0.8
    effect[..., 1, :] = [0.1, -0.1]  # m2: A - B = 0.2
    posterior = xr.Dataset(
        {"effect_race": (("chain", "draw", "model", "level_race"), effect),
         "effect_race_pooled": (("chain", "draw", "level_race"), effect.mean(axis=2)),
         "sigma_null": (("chain", "draw"), np.full((2, DRAWS), 0.5)),
         "theta": (("chain", "draw", "respondent"), np.zeros((2, DRAWS, 16)))},
        coords={"model": ["m1", "m2"], "level_race": ["A", "B"],
                "respondent": frame.get_column("respondent").to_list()})
    contrasts = level_contrasts(posterior, table, rope=ROPE_HALF_WIDTH_LOGIT)
    means = dict(zip(contrasts["model_name"], contrasts["mean"]))
    assert means == pytest.approx({"m1": 0.8, "m2": 0.2, POOLED_MODEL: 0.5})
    pooled = contrasts.filter(pl.col("model_name") == POOLED_MODEL).row(0, named=True)
    assert (pooled["n_a"], pooled["n_b"]) == (4, 4)
    assert pooled["noise_floor"] == pytest.approx(0.5 * math.sqrt(1 / 4 + 1 / 4))
    assert null_spread_draws(posterior, table, "m1").mean() == pytest.approx(0.5)


def test_no_noise_floor_without_two_null_personas():
    table = RespondentTable(frame=respondents().frame.filter(pl.col("persona_kind") != "null"),
                            attributes=("race",))
    names = table.frame.get_column("respondent").to_list()
    contrasts = level_contrasts(theta_posterior(np.array([1.0, 1.0, 0.0, 0.0, 0.0]), names), table)
    assert contrasts["noise_floor"].to_list() == [None]


def explanatory_posterior(frame: pl.DataFrame, sigma_null: np.ndarray) -> xr.Dataset:
    """An explanatory fit's effects (A - B = 0.8 in every model) and the given sigma_null draws
    (chain, draw, model)."""
    models = frame.get_column("model_name").unique().sort().to_list()
    effect = np.zeros((2, DRAWS, len(models), 2))
    effect[..., :] = [0.4, -0.4]
    return xr.Dataset(
        {"effect_race": (("chain", "draw", "model", "level_race"), effect),
         "effect_race_pooled": (("chain", "draw", "level_race"), effect.mean(axis=2)),
         "sigma_null": (("chain", "draw", "model"), sigma_null),
         "theta": (("chain", "draw", "respondent"), np.zeros((2, DRAWS, frame.height)))},
        coords={"model": models, "level_race": ["A", "B"],
                "respondent": frame.get_column("respondent").to_list()})


@pytest.mark.parametrize("nulls", [0, 1])
def test_a_sigma_null_without_two_null_personas_is_no_noise_floor(nulls: int):
    """The population and explanatory models define sigma_null with no null persona at all: it
    is then its prior, and the report printed it as the "noise floor of random-string personas"
    (review model.md finding 3: 0.22 with no null persona in the table)."""
    frame = respondents().frame.filter(
        (pl.col("persona_kind") != "null")
        | pl.col("respondent").is_in(["m1__n1", "m1__n2"][:nulls]))
    table = RespondentTable(frame=frame, attributes=("race",))
    posterior = explanatory_posterior(frame, np.full((2, DRAWS, 1), 0.5))
    assert null_spread_draws(posterior, table, "m1") is None
    row = level_contrasts(posterior, table).row(0, named=True)
    assert row["mean"] == pytest.approx(0.8)
    assert (row["noise_floor"], row["ratio_to_noise"], row["p_beyond_noise"]) == \
        (None, None, None)


def test_the_pooled_floor_needs_two_null_personas_in_every_model():
    two_models = pl.concat([
        respondents().frame,
        respondents().frame.filter(pl.col("persona_kind") != "null").with_columns(
            pl.col("respondent").str.replace("m1", "m2"), pl.lit("m2").alias("model_name"))])
    table = RespondentTable(frame=two_models, attributes=("race",))
    posterior = explanatory_posterior(two_models, np.full((2, DRAWS, 2), 0.5))
    floors = dict(level_contrasts(posterior, table).select("model_name", "noise_floor").rows())
    assert floors == {"m1": pytest.approx(0.5), "m2": None, POOLED_MODEL: None}


@given(low=st.floats(-5, 5), width=st.floats(0, 5), rope=st.floats(0.01, 1))
def test_decision_follows_the_hdi_and_rope(low: float, width: float, rope: float):
    high = low + width
    decision = decide(low, high, rope)
    if decision == "different":
        assert high < -rope or low > rope
    elif decision == "equivalent":
        assert -rope <= low and high <= rope
    else:
        assert low <= rope and high >= -rope and (low < -rope or high > rope)
