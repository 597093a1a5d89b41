"""Contrasts between persona levels on hand-built posteriors: exact numbers, no sampling."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from audit.errors import AuditError
from audit.methods.rasch.irt.contrasts import (
    POOLED_MODEL,
    ROPE_HALF_WIDTH_LOGIT,
    decide,
    decision_hdi_prob,
    direction_probability,
    item_gaps,
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


def noisy_theta_posterior(values: np.ndarray, noise: np.ndarray, names: list[str],
                          seed: int = 11) -> xr.Dataset:
    """theta draws N(values, noise) with a noise sd of its own per respondent: contrast formulas
    that differ only in how they treat the spread across draws (a mean of ratios against a ratio
    of means, a plug-in against an average) give different numbers on these, not on constant
    draws."""
    rng = np.random.default_rng(seed)
    draws = values[None, None, :] + noise[None, None, :] * rng.standard_normal(
        (2, DRAWS, values.size))
    return xr.Dataset({"theta": (("chain", "draw", "respondent"), draws)},
                      coords={"respondent": names})


def gap_and_floor_by_hand(posterior: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """The A - B gap and its noise floor per draw, from respondents() by index: level means of
    the two A and two B personas, and the three nulls' sample sd times sqrt(1/2 + 1/2)."""
    theta = posterior["theta"].values.reshape(-1, 8)
    gap = theta[:, 0:2].mean(axis=1) - theta[:, 2:4].mean(axis=1)
    floor = theta[:, 5:8].std(axis=1, ddof=1) * math.sqrt(1 / 2 + 1 / 2)
    return gap, floor


def test_ratio_to_noise_and_p_beyond_noise_follow_their_definitions_on_noisy_draws():
    """review2 tests.md finding 3: with constant draws (the test above) the mean of a ratio equals
    the ratio of means and a gap exactly on the floor cannot tell 2 x floor from 1 x floor, so
    `ratio_to_noise = mean(|gap| / floor)` and `p_beyond_noise = P(|gap| > floor)` passed. Here
    the gap (1.5) is 1.5 floors (nulls at -1, 0, 1: sd 1), with draw noise (the floor's draws
    spread by ~0.1): the mean of ratios is ~0.016 above the ratio of posterior means, and
    P(|gap| > 2 floor) is ~0.02 while P(|gap| > floor) is ~1."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([0.75, 0.75, -0.75, -0.75, 0.0, -1.0, 0.0, 1.0])
    noise = np.array([0.12, 0.12, 0.12, 0.12, 0.12, 0.15, 0.15, 0.15])
    posterior = noisy_theta_posterior(values, noise, names)
    row = level_contrasts(posterior, table, rope=0.2).row(0, named=True)
    gap, floor = gap_and_floor_by_hand(posterior)
    assert row["mean"] == pytest.approx(gap.mean(), rel=1e-9)
    assert row["noise_floor"] == pytest.approx(floor.mean(), rel=1e-9)
    # The documented ratio of posterior means (docs/statistics.md), not the mean of ratios.
    assert row["ratio_to_noise"] == pytest.approx(abs(gap.mean()) / floor.mean(), rel=1e-9)
    assert abs(np.mean(np.abs(gap) / floor) - row["ratio_to_noise"]) > 0.01
    # P(gap exceeds twice the floor), by hand; P(gap exceeds the floor) would be about 1.
    assert row["p_beyond_noise"] == pytest.approx(np.mean(np.abs(gap) > 2 * floor), abs=1e-12)
    assert row["p_beyond_noise"] < 0.05 and np.mean(np.abs(gap) > floor) > 0.9


def test_a_negative_gap_has_the_probability_of_its_own_direction():
    """review2 tests.md finding C5: p_direction is the share with the mean's sign; every fast test
    had a positive gap, so P(gap > 0) alone passed them (0.04 here). The gap here is -0.2
    with draw sd ~0.12, so neither share is 0 or 1: the figure is the share of negative draws."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([-0.1, -0.1, 0.1, 0.1, 0.0, -1.0, 0.0, 1.0])
    posterior = noisy_theta_posterior(values, np.full(8, 0.12), names)
    row = level_contrasts(posterior, table).row(0, named=True)
    gap, _ = gap_and_floor_by_hand(posterior)
    assert row["mean"] < 0
    assert row["p_direction"] == pytest.approx(np.mean(gap < 0), abs=1e-12)
    assert 0.8 < row["p_direction"] < 1.0


def test_a_skewed_gap_states_the_probability_of_its_means_sign():
    """A right-skewed posterior: most draws a little below zero, a long tail above, so the mean
    is positive while P(gap > 0) is 0.3. Bug caught: p_direction as the larger of the two shares
    (0.7), which the verdict prints beside "mean +0.9" as if a positive gap were 70% likely."""
    gap = np.concatenate([np.full(700, -0.2), np.full(300, 3.5)])
    assert gap.mean() > 0
    assert direction_probability(gap) == pytest.approx(0.3)
    assert direction_probability(-gap) == pytest.approx(0.3)
    assert direction_probability(np.array([-1.0, 1.0, 1.0, -1.0, 0.0])) == pytest.approx(0.4)


def test_without_familywise_alpha_the_decision_is_taken_on_hdi_prob():
    """review2 tests.md finding 2: with fit.familywise_alpha=null each contrast is decided on its
    fit.hdi_prob HDI (docs/methods/rasch.md); returning a fixed 0.95 instead passed every test,
    which used the default hdi_prob 0.94 or did not read decision_prob. hdi_prob 0.8 sits far
    from both."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([0.15, 0.15, -0.15, -0.15, 0.0, -1.0, 0.0, 1.0])
    posterior = noisy_theta_posterior(values, np.full(8, 0.15), names)
    row = level_contrasts(posterior, table, hdi_prob=0.8, familywise_alpha=None).row(
        0, named=True)
    gap, _ = gap_and_floor_by_hand(posterior)
    assert row["decision_prob"] == 0.8 and row["decision_interval_kind"] == "hdi"
    assert (row["decision_low"], row["decision_high"]) == (row["hdi_low"], row["hdi_high"])
    assert (row["hdi_low"], row["hdi_high"]) == pytest.approx(hdi_bounds(gap, 0.8), rel=1e-9)


def test_the_pooled_floor_is_the_root_mean_square_of_the_models_null_spreads():
    """review2 tests.md finding C9: the "all models" rows average the models' effects, so their
    floor uses the root mean square of the models' sigma_null draws; every test had equal
    spreads in all models, where the plain mean is the same. Spreads about 0.1 and 0.5: RMS
    ~0.36, mean 0.3."""
    frame = pl.concat([respondents().frame,
                       respondents().frame.with_columns(
                           pl.col("respondent").str.replace("m1", "m2"),
                           pl.lit("m2").alias("model_name"))])
    table = RespondentTable(frame=frame, attributes=("race",))
    rng = np.random.default_rng(13)
    sigma = np.abs(np.array([0.1, 0.5]) + 0.02 * rng.standard_normal((2, DRAWS, 2)))
    posterior = explanatory_posterior(frame, sigma)
    pooled = level_contrasts(posterior, table).filter(pl.col("model_name") == POOLED_MODEL)
    rms = np.sqrt((sigma.reshape(-1, 2) ** 2).mean(axis=1))
    assert pooled["noise_floor"].item() == pytest.approx(
        rms.mean() * math.sqrt(1 / 4 + 1 / 4), rel=1e-9)


def test_unequal_levels_report_each_levels_own_count():
    """Every other test has as many personas at each level, so n_a and n_b swapped (or both
    taken from one level) passed them: the floor and the null rank use 1/n_a + 1/n_b, which a
    swap leaves alone, and only the counts a reviewer reads were wrong."""
    frame = pl.DataFrame({
        "respondent": ["m1__a1", "m1__a2", "m1__a3", "m1__b1", "m1__n1", "m1__n2", "m1__n3"],
        "model_name": ["m1"] * 7,
        "persona_kind": ["explicit"] * 4 + ["null"] * 3,
        "race": ["A", "A", "A", "B", None, None, None],
    })
    table = RespondentTable(frame=frame, attributes=("race",))
    names = frame.get_column("respondent").to_list()
    values = np.array([1.0, 1.0, 1.0, 0.0, -1.0, 0.0, 1.0])
    rasch = level_contrasts(theta_posterior(values, names), table, rope=0.2).row(0, named=True)
    assert (rasch["level_a"], rasch["level_b"], rasch["n_a"], rasch["n_b"]) == ("A", "B", 3, 1)
    assert rasch["noise_floor"] == pytest.approx(math.sqrt(1 / 3 + 1))

    posterior = explanatory_posterior(frame, np.full((2, DRAWS, 1), 0.5))
    explanatory = level_contrasts(posterior, table, rope=0.2).filter(
        pl.col("model_name") == "m1").row(0, named=True)
    assert (explanatory["n_a"], explanatory["n_b"]) == (3, 1)
    assert explanatory["mean"] == pytest.approx(0.8)
    # Bug caught: the explanatory floor from one level's count twice (sqrt(1/3 + 1/3)).
    assert explanatory["noise_floor"] == pytest.approx(0.5 * math.sqrt(1 / 3 + 1))


def test_an_hdi_ending_exactly_on_the_rope_bound_touches_the_rope():
    """The ROPE is closed: an HDI that ends on -rope (or starts on +rope) is not outside it, and
    one that starts on -rope (or ends on +rope) is inside it. Bugs caught: `hdi_high <= -rope`
    called `different`, `hdi_low > -rope` left such an HDI `undecided` (hypothesis above never
    draws a bound exactly)."""
    assert decide(-0.5, -0.2, 0.2) == "undecided"
    assert decide(0.2, 0.5, 0.2) == "undecided"
    assert decide(-0.2, 0.1, 0.2) == "equivalent"
    assert decide(-0.1, 0.2, 0.2) == "equivalent"


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_a_familywise_alpha_of_zero_or_one_is_refused(alpha: float):
    """alpha 0 would decide on a 100% interval (never `different`), alpha 1 on an empty one.
    Bugs caught: the open bounds of (0, 1) taken as closed."""
    with pytest.raises(AuditError, match="familywise_alpha"):
        decision_hdi_prob(alpha, 7, 0.94)


def test_a_run_of_no_outcomes_is_refused():
    """Bug caught: outcomes=0 accepted, which made the family empty (K = 0, read as 1)."""
    table = respondents()
    posterior = theta_posterior(np.zeros(8), table.frame.get_column("respondent").to_list())
    with pytest.raises(ValueError, match="at least one outcome"):
        level_contrasts(posterior, table, familywise_alpha=0.05, outcomes=0)


def test_the_reported_hdi_is_94_percent_unless_told_otherwise():
    """fit.hdi_prob's default is 0.94 (docs/methods/rasch.md). Bug caught: another default mass
    (0.95) for hdi_low/hdi_high and the decision of a call that does not pass hdi_prob."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([0.15, 0.15, -0.15, -0.15, 0.0, -1.0, 0.0, 1.0])
    posterior = noisy_theta_posterior(values, np.full(8, 0.15), names)
    row = level_contrasts(posterior, table).row(0, named=True)
    gap, _ = gap_and_floor_by_hand(posterior)
    assert row["decision_prob"] == 0.94
    assert (row["hdi_low"], row["hdi_high"]) == pytest.approx(hdi_bounds(gap, 0.94), rel=1e-9)
    assert hdi_bounds(gap, 0.94) != pytest.approx(hdi_bounds(gap, 0.95), rel=1e-6)


def test_a_level_without_personas_in_one_model_has_no_noise_floor_there():
    """The level effects cover every level in every model, but m2 has no B persona: its A - B
    row reads n_b 0 and no floor, while the pooled row counts 4 and 2. Bug caught: a floor
    for a row with one group (`n_a or n_b`), which divided by zero."""
    m2 = respondents().frame.filter(pl.col("race").is_null() | (pl.col("race") != "B"))
    frame = pl.concat([respondents().frame, m2.with_columns(
        pl.col("respondent").str.replace("m1", "m2"), pl.lit("m2").alias("model_name"))])
    table = RespondentTable(frame=frame, attributes=("race",))
    contrasts = level_contrasts(explanatory_posterior(frame, np.full((2, DRAWS, 2), 0.5)), table)
    rows = {row["model_name"]: row for row in contrasts.iter_rows(named=True)}
    assert (rows["m2"]["n_a"], rows["m2"]["n_b"], rows["m2"]["noise_floor"]) == (2, 0, None)
    assert rows["m2"]["mean"] == pytest.approx(0.8)
    assert (rows[POOLED_MODEL]["n_a"], rows[POOLED_MODEL]["n_b"]) == (4, 2)
    assert rows[POOLED_MODEL]["noise_floor"] == pytest.approx(0.5 * math.sqrt(1 / 4 + 1 / 2))


def test_levels_are_contrasted_in_sorted_order_whatever_the_fits_level_order():
    """level_a is the first level in sorted order, as in the plain fits (balance.py). Bug
    caught: pairs taken in the posterior's coordinate order (B - A here: every sign flipped)."""
    frame = respondents().frame
    posterior = explanatory_posterior(frame, np.full((2, DRAWS, 1), 0.5)).isel(level_race=[1, 0])
    assert posterior["level_race"].values.tolist() == ["B", "A"]
    row = level_contrasts(posterior, RespondentTable(frame, ("race",))).row(0, named=True)
    assert (row["level_a"], row["level_b"]) == ("A", "B")
    assert row["mean"] == pytest.approx(0.8)


def test_a_plain_fits_floor_and_null_rank_read_its_own_models_null_personas():
    """Two audited models, plain fit: m1's nulls at -1, 0, 1 (sd 1), m2's at -3, 0, 3 (sd 3).
    m1's gap of 1.5 has the floor 1 x sqrt(1/2 + 1/2) and ranks at 2 F_t2(1.5) - 1. Bugs
    caught: the floor or the null rank read every model's null personas together (sd 2)."""
    m1 = respondents().frame
    frame = pl.concat([m1, m1.with_columns(pl.col("respondent").str.replace("m1", "m2"),
                                           pl.lit("m2").alias("model_name"))])
    table = RespondentTable(frame=frame, attributes=("race",))
    values = np.array([0.75, 0.75, -0.75, -0.75, 0.0, -1.0, 0.0, 1.0,
                       0.0, 0.0, 0.0, 0.0, 0.0, -3.0, 0.0, 3.0])
    posterior = theta_posterior(values, frame.get_column("respondent").to_list())
    rows = {row["model_name"]: row for row in level_contrasts(posterior, table).iter_rows(
        named=True)}
    assert rows["m1"]["noise_floor"] == pytest.approx(1.0)
    assert rows["m2"]["noise_floor"] == pytest.approx(3.0)
    assert rows["m1"]["null_percentile"] == pytest.approx(
        100 * (2 * stats.t.cdf(1.5, 2) - 1), abs=1e-9)


def test_an_explanatory_rows_floor_and_null_rank_read_its_own_models_spreads():
    """sigma_null 0.2 in m1 and 0.6 in m2, sigma_residual 0.1 and 0.3. m2's gap (0.8, draws
    +-0.3: sd^2 0.09 x 800/799) has the floor 0.6 and, k = 1, its own error variance
    0.09 x 800/799 - 0.09, so it ranks at 2 Phi(0.8 / sqrt(0.09/799 + 0.36)) - 1. Bugs caught:
    the first model's sigma_null (floor 0.2) or sigma_residual (rank 2 Phi(0.8 / 0.66) - 1)
    read for every model."""
    m1 = respondents().frame
    frame = pl.concat([m1, m1.with_columns(pl.col("respondent").str.replace("m1", "m2"),
                                           pl.lit("m2").alias("model_name"))])
    table = RespondentTable(frame=frame, attributes=("race",))
    posterior = explanatory_posterior(frame, np.broadcast_to([0.2, 0.6], (2, DRAWS, 2)).copy())
    posterior["effect_race"][:, :, 1, 0] += np.tile([0.3, -0.3], DRAWS // 2)
    posterior["sigma_residual"] = (("chain", "draw", "model"),
                                   np.broadcast_to([0.1, 0.3], (2, DRAWS, 2)).copy())
    row = level_contrasts(posterior, table).filter(pl.col("model_name") == "m2").row(
        0, named=True)
    assert row["noise_floor"] == pytest.approx(0.6)
    assert row["sd"] ** 2 == pytest.approx(0.09 * 800 / 799, rel=1e-9)
    reference = math.sqrt(0.09 * 800 / 799 - 0.09 + 0.36)
    assert row["null_percentile"] == pytest.approx(
        100 * (2 * stats.norm.cdf(0.8 / reference) - 1), abs=1e-6)


def test_a_gap_whose_mean_is_zero_states_its_larger_share_and_zero_draws_take_no_side():
    """Bugs caught: the smaller of the two shares where the mean is exactly 0 (1/3 here), and
    draws of exactly 0 counted as having the mean's sign (1.0 in place of 0.6)."""
    assert direction_probability(np.array([-2.0, 1.0, 1.0])) == pytest.approx(2 / 3)
    assert direction_probability(np.array([0.0, 0.0, 1.0, 1.0, 1.0])) == pytest.approx(0.6)


def test_a_negative_gap_has_a_positive_ratio_to_noise_and_a_symmetric_rope():
    """A - B = -1.5 against a floor of 1: ratio_to_noise 1.5 (a size, like the floor). Bugs
    caught: the signed ratio (-1.5), and the ROPE written as [+rope, +rope]."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([-0.75, -0.75, 0.75, 0.75, 0.0, -1.0, 0.0, 1.0])
    row = level_contrasts(theta_posterior(values, names), table, rope=0.2).row(0, named=True)
    assert row["mean"] == pytest.approx(-1.5)
    assert row["ratio_to_noise"] == pytest.approx(1.5)
    assert (row["rope_low"], row["rope_high"]) == (-0.2, 0.2)


def test_the_contrasts_sd_is_the_sample_sd_of_its_draws():
    """A gap of 0.8 whose 800 draws alternate +-0.1: sd 0.1 x sqrt(800/799). Bug caught: the
    population sd (ddof 0, 0.1), which the null rank and the reader take for the posterior sd."""
    frame = respondents().frame
    posterior = explanatory_posterior(frame, np.full((2, DRAWS, 1), 0.5))
    posterior["effect_race"][:, :, 0, 0] += np.tile([0.1, -0.1], DRAWS // 2)
    row = level_contrasts(posterior, RespondentTable(frame, ("race",))).row(0, named=True)
    assert row["sd"] == pytest.approx(0.1 * math.sqrt(800 / 799), rel=1e-9)


def test_a_gap_of_exactly_twice_the_floor_is_not_beyond_the_noise():
    """A gap of 2 against a floor of 1 (nulls at -1, 0, 1; two personas a side): P(|gap| > 2
    floor) is 0, exactly on the bound. Bug caught: `>=`, which counts it beyond (1.0)."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([1.0, 1.0, -1.0, -1.0, 0.0, -1.0, 0.0, 1.0])
    row = level_contrasts(theta_posterior(values, names), table).row(0, named=True)
    assert (row["mean"], row["noise_floor"]) == (2.0, 1.0)
    assert row["p_beyond_noise"] == 0.0


def test_a_twopl_contrast_ranks_among_null_means_on_the_log_odds_scale():
    """2PL, mean discrimination 2.5: the theta gap 0.1 is 0.25 in log-odds, and the null
    personas' means (theta -0.2, 0, 0.2) are -0.5, 0, 0.5 (sd 0.5), so it ranks at
    2 F_t2(0.5) - 1. Bug caught: null means left in theta units (sd 0.2: 2 F_t2(1.25) - 1)."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    values = np.array([0.1, 0.1, 0.0, 0.0, 0.0, -0.2, 0.0, 0.2])
    posterior = theta_posterior(values, names)
    posterior["a"] = (("chain", "draw", "item"), np.broadcast_to([1.0, 4.0], (2, DRAWS, 2)))
    row = level_contrasts(posterior, table).row(0, named=True)
    assert row["null_percentile"] == pytest.approx(100 * (2 * stats.t.cdf(0.5, 2) - 1), abs=1e-9)


def test_a_twopl_contrast_with_estimated_spreads_ranks_on_the_log_odds_scale():
    """2PL with sigma_null 0.4 and sigma_residual 0.2 (theta units): times the mean
    discrimination 2.5 they are 1.0 and 0.5 in log-odds. The gap (0.25, draws +-0.5: sd^2
    200/799) keeps 200/799 - 0.25 of own error, so it ranks at 2 Phi(0.25 / sqrt(0.25/799 + 1))
    - 1. Bug caught: sigma_residual left in theta units (own error 200/799 - 0.04)."""
    table = respondents()
    names = table.frame.get_column("respondent").to_list()
    draws = np.zeros((2, DRAWS, 8))
    draws[..., 5:8] = [-0.2, 0.0, 0.2]
    draws[..., 0:2] = (0.1 + np.tile([0.2, -0.2], DRAWS // 2))[None, :, None]
    posterior = xr.Dataset({"theta": (("chain", "draw", "respondent"), draws),
                            "a": (("chain", "draw", "item"),
                                  np.broadcast_to([1.0, 4.0], (2, DRAWS, 2))),
                            "sigma_null": (("chain", "draw"), np.full((2, DRAWS), 0.4)),
                            "sigma_residual": (("chain", "draw"), np.full((2, DRAWS), 0.2))},
                           coords={"respondent": names})
    row = level_contrasts(posterior, table).row(0, named=True)
    assert row["mean"] == pytest.approx(0.25) and row["sd"] ** 2 == pytest.approx(200 / 799)
    reference = math.sqrt(200 / 799 - 0.25 + 1.0)
    assert row["null_percentile"] == pytest.approx(
        100 * (2 * stats.norm.cdf(0.25 / reference) - 1), abs=1e-6)


def test_item_gaps_add_each_items_interaction_to_the_pooled_gap():
    """Pooled A - B = 0.8; item i1's interactions (A +0.3, B -0.1) make its gap 1.2, item i2's
    (A 0, B +0.2) 0.6, with draw noise on A's. Bugs caught: the pooled gap or the interactions
    taken B - A, and an interval at another mass than hdi_prob's default 0.94."""
    rng = np.random.default_rng(17)
    pooled = np.broadcast_to([0.4, -0.4], (2, DRAWS, 2)).copy()
    dif = np.zeros((2, DRAWS, 2, 2))  # chain, draw, level, item
    dif[..., 0, :] = [0.3, 0.0] + 0.1 * rng.standard_normal((2, DRAWS, 2))
    dif[..., 1, :] = [-0.1, 0.2]
    posterior = xr.Dataset({"effect_race_pooled": (("chain", "draw", "level_race"), pooled),
                            "dif_race": (("chain", "draw", "level_race", "item"), dif)},
                           coords={"level_race": ["A", "B"], "item": ["i1", "i2"]})
    gaps = item_gaps(posterior, "race")
    assert gaps["item"].to_list() == ["i1", "i2"]
    for row, item in zip(gaps.iter_rows(named=True), (0, 1), strict=True):
        gap = (0.8 + dif[..., 0, item] - dif[..., 1, item]).ravel()
        assert (row["level_a"], row["level_b"]) == ("A", "B")
        assert row["overall_mean"] == pytest.approx(0.8)
        assert row["mean"] == pytest.approx(gap.mean(), rel=1e-9)
        assert (row["hdi_low"], row["hdi_high"]) == pytest.approx(hdi_bounds(gap, 0.94),
                                                                  rel=1e-9)
    assert gaps["mean"].to_list() == pytest.approx([1.2, 0.6], abs=0.02)
    with pytest.raises(AuditError, match="no item interaction"):
        item_gaps(posterior.drop_vars("dif_race"), "race")
