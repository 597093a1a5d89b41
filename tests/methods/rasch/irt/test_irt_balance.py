"""Fits without level effects compare like with like (balance.py): cell-balanced level means, a
missing cell, attributes that move together, and attribute values that are not plain names.

Review model.md finding 1: with no male White persona, fit=rasch read a planted race gap of -3
as a gender gap of +1.24 (`different`), because a level's favourability was the plain mean of its
personas' thetas. Most tests here use hand-built posteriors (exact numbers, no sampling)."""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr
from scipy import stats

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch, index_design
from audit.methods.rasch.irt.balance import aliased_pairs, balanced_contrasts
from audit.methods.rasch.irt.contrasts import level_contrasts
from audit.methods.rasch.irt.explanatory import (
    NO_LEVEL,
    RespondentTable,
    build_explanatory_model,
    respondent_table,
    spread_prior_draws,
    two_level_attributes,
)

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import simulate_audit  # noqa: E402

DRAWS = 200
RACE_THETA = {"Black": -1.5, "White": 1.5}  # a race gap of -3, no gender gap


def design(cells: list[tuple[str, str]], texts: int = 2, nulls: int = 3) -> pl.DataFrame:
    """Respondents of one model: `texts` personas per (gender, race) cell, plus null personas."""
    rows = [{"respondent": f"m/{gender}_{race}_{text}", "model_name": "m",
             "persona_kind": "explicit", "gender": gender, "race": race}
            for gender, race in cells for text in range(texts)]
    rows += [{"respondent": f"m/null_{k}", "model_name": "m", "persona_kind": "null",
              "gender": None, "race": None} for k in range(nulls)]
    return pl.DataFrame(rows, schema={"respondent": pl.String, "model_name": pl.String,
                                      "persona_kind": pl.String, "gender": pl.String,
                                      "race": pl.String})


def race_posterior(frame: pl.DataFrame) -> xr.Dataset:
    """theta of each persona is its race's planted value exactly (nulls spread around 0)."""
    values = np.array([RACE_THETA.get(race, 0.0) for race in frame.get_column("race")])
    nulls = (frame.get_column("persona_kind") == "null").to_numpy()
    values[nulls] = np.linspace(-0.5, 0.5, nulls.sum())
    draws = np.broadcast_to(values, (2, DRAWS, values.size)).copy()
    return xr.Dataset({"theta": (("chain", "draw", "respondent"), draws)},
                      coords={"respondent": frame.get_column("respondent").to_list()})


MISSING_MALE_WHITE = [("female", "Black"), ("female", "White"), ("male", "Black")]


def test_a_missing_cell_does_not_carry_the_race_gap_into_the_gender_contrast():
    """Before the fix: female = mean(-1.5, +1.5) = 0, male = -1.5, a gender gap of +1.5."""
    frame = design(MISSING_MALE_WHITE)
    table = RespondentTable(frame=frame, attributes=("gender", "race"))
    contrasts = level_contrasts(race_posterior(frame), table, rope=0.1)
    gender = contrasts.filter(pl.col("attribute") == "gender").row(0, named=True)
    race = contrasts.filter(pl.col("attribute") == "race").row(0, named=True)
    assert gender["mean"] == pytest.approx(0.0, abs=1e-12)
    assert gender["decision"] == "equivalent"
    # Only the female Black personas share a cell with the male ones.
    assert (gender["n_a"], gender["n_b"]) == (2, 2)
    assert race["mean"] == pytest.approx(-3.0)


def test_cells_weigh_equally_however_many_personas_fill_them():
    """Three female Black texts and one female White text: the plain mean weighed Black 3 to 1,
    which again put race into the gender gap (-0.75 before the fix)."""
    frame = pl.concat([design([("female", "Black")], texts=3, nulls=0),
                       design([("female", "White"), ("male", "Black"), ("male", "White")],
                              texts=1)])
    table = RespondentTable(frame=frame, attributes=("gender", "race"))
    gender = level_contrasts(race_posterior(frame), table).filter(
        pl.col("attribute") == "gender").row(0, named=True)
    assert gender["mean"] == pytest.approx(0.0, abs=1e-12)
    assert (gender["n_a"], gender["n_b"]) == (4, 2)


def test_the_floor_factor_follows_the_cell_weights():
    frame = pl.concat([design([("female", "Black")], texts=3, nulls=0),
                       design([("female", "White"), ("male", "Black"), ("male", "White")])])
    pairs, _ = balanced_contrasts(frame, ("gender", "race"), "m")
    gender = next(pair for pair in pairs if pair.attribute == "gender")
    # Var of a mean of two cell means: (1/3 + 1/2) / 4 for female, (1/2 + 1/2) / 4 for male.
    assert gender.floor_factor == pytest.approx(math.sqrt((1 / 3 + 1 / 2 + 1 / 2 + 1 / 2) / 4))
    balanced, _ = balanced_contrasts(design(MISSING_MALE_WHITE + [("male", "White")]),
                                     ("gender", "race"), "m")
    for pair in balanced:  # equally filled cells: the plain means' sqrt(1/n_a + 1/n_b)
        assert pair.floor_factor == pytest.approx(math.sqrt(1 / pair.n_a + 1 / pair.n_b))


def test_the_null_percentile_reads_the_same_noise_as_the_floor_in_an_unbalanced_design():
    """The null percentile ranked a cell-balanced gap among null gaps of sd s*sqrt(1/n_a + 1/n_b),
    narrower than the gap's own noise where a few personas carry a cell (the floor's factor),
    so it came out too high and disagreed with the noise floor of the same row (review of the
    merged change, finding 3)."""
    from audit.methods.rasch.irt.null_rank import percentile_among_null_estimates

    frame = pl.concat([design([("female", "Black")], texts=10, nulls=0),
                       design([("female", "White"), ("male", "Black"), ("male", "White")])])
    posterior = race_posterior(frame)
    posterior["theta"] = posterior["theta"] + xr.DataArray(  # a gender gap to rank
        np.where(frame.get_column("gender").to_numpy() == "female", 0.6, 0.0),
        dims="respondent")
    table = RespondentTable(frame=frame, attributes=("gender", "race"))
    gender = level_contrasts(posterior, table).filter(
        pl.col("attribute") == "gender").row(0, named=True)
    (pair,) = [pair for pair in balanced_contrasts(frame, ("gender", "race"), "m")[0]
               if pair.attribute == "gender"]
    null_means = posterior["theta"].sel(respondent=[f"m/null_{k}" for k in range(3)]).mean(
        ("chain", "draw")).values
    weighted = percentile_among_null_estimates(gender["mean"], null_means, gender["n_a"],
                                               gender["n_b"], k=pair.floor_factor ** 2)
    by_counts = percentile_among_null_estimates(gender["mean"], null_means, gender["n_a"],
                                                gender["n_b"])
    assert pair.floor_factor ** 2 > 1 / gender["n_a"] + 1 / gender["n_b"]
    assert gender["null_percentile"] == pytest.approx(weighted)
    assert weighted < by_counts - 2  # a case where the two differ


CONFOUNDED = [("female", "Black"), ("male", "White")]


def test_contrasts_whose_levels_share_no_cell_are_left_out_with_one_warning(caplog):
    """Every Black persona a woman, every White one a man: before the fix fit=rasch gave both
    contrasts the same number, each `different`, though the planted gap was all race."""
    frame = design(CONFOUNDED)
    table = RespondentTable(frame=frame, attributes=("gender", "race"))
    with caplog.at_level(logging.WARNING, logger="audit"):
        contrasts = level_contrasts(race_posterior(frame), table)
        level_contrasts(race_posterior(frame), table)  # hurdle reads two posteriors
    assert contrasts.height == 0
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert "m gender female vs male (female: race Black; male: race White)" in warnings[0]
    assert "left out" in warnings[0]


def outcome_table(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.join(pl.DataFrame({"item": ["i1", "i2"]}), how="cross").with_columns(y=1)


def test_aliased_attributes_are_named_once_before_fitting(caplog):
    outcomes = outcome_table(design(CONFOUNDED))
    with caplog.at_level(logging.WARNING, logger="audit"):
        respondent_table(outcomes, index_design(outcomes), ("gender", "race"))
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert "every gender level goes with one race level (female: Black, male: White)" \
        in warnings[0]
    assert "cannot be told apart" in warnings[0]


def test_nested_attributes_are_aliased_one_way_and_crossed_ones_not_at_all(caplog):
    nested = outcome_table(design([("female", "Black"), ("female", "White"), ("male", "Asian")]))
    crossed = outcome_table(design(MISSING_MALE_WHITE))
    with caplog.at_level(logging.WARNING, logger="audit"):
        respondent_table(crossed, index_design(crossed), ("gender", "race"))
        assert caplog.records == []
        respondent_table(nested, index_design(nested), ("gender", "race"))
    (warning,) = [record.getMessage() for record in caplog.records]
    assert "every race level goes with one gender level" in warning
    assert "the gender contrasts cannot be told apart from race contrasts" in warning



def test_an_attribute_with_one_level_is_aliased_with_nothing():
    """review2 tests.md finding 11 (B2): a column with a single level among the real personas
    (every one race A) varies with nothing, so no pair is aliased; a check that read it as a
    second attribute warned "every gender level goes with one race level (f: A, m: A)"."""
    real = pl.DataFrame({"gender": ["f", "f", "m", "m"], "race": ["A", "A", "A", "A"]})
    assert aliased_pairs(real, ("gender", "race")) == []
    # The same check still names a real aliasing in the same shape.
    aliased = real.with_columns(race=pl.Series(["A", "A", "B", "B"]))
    assert aliased_pairs(aliased, ("gender", "race")) == [
        "every gender level goes with one race level (f: A, m: B), so the race contrasts cannot "
        "be told apart from gender contrasts"]

CROSSED = [("female", "Black"), ("female", "White"), ("male", "Black"), ("male", "White")]


def test_a_numeric_attribute_is_contrasted_by_its_names():
    """An integer age crashed fit=rasch after sampling (ComputeError: cannot compare string with
    numeric type)."""
    frame = design(CROSSED)
    outcomes = outcome_table(frame).with_columns(
        age=pl.when(pl.col("gender") == "female").then(30).when(pl.col("gender") == "male")
        .then(50).otherwise(None))
    table = respondent_table(outcomes, index_design(outcomes), ("age", "race"))
    assert table.levels("age") == ("30", "50")
    contrasts = level_contrasts(race_posterior(frame), table)
    assert contrasts.select("attribute", "level_a", "level_b").rows() == [
        ("age", "30", "50"), ("race", "Black", "White")]


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_attribute_value_is_missing_not_a_level(blank):
    """An empty race became a level "" of its own and was contrasted ("" vs Black); catches a
    whitespace-only value treated as a level too (mutation review 2026-12-06)."""
    frame = design(CROSSED)
    outcomes = outcome_table(frame).with_columns(
        race=pl.when(pl.col("respondent") == "m/male_Black_0").then(pl.lit(blank))
        .otherwise(pl.col("race")))
    table = respondent_table(outcomes, index_design(outcomes), ("gender", "race"))
    assert table.levels("race") == ("Black", "White")
    assert table.frame.filter(pl.col("respondent") == "m/male_Black_0")["race"].item() is None
    contrasts = level_contrasts(race_posterior(frame), table)
    assert contrasts.filter(pl.col("attribute") == "race")["level_a"].to_list() == ["Black"]
    assert two_level_attributes(pl.DataFrame({"race": ["A", blank, None]}), ["race"]) == []


@pytest.mark.slow
def test_fit_rasch_reads_no_gender_gap_from_a_missing_cell():
    """Sampled end to end (the reviewer's design): race gap -3, no gender gap, no male White
    persona. The plain mean read man (all Black) against woman (half White): a gap near -1.4."""
    outcomes = simulate_audit({"Black": -1.5, "White": 1.5}, items=16, replicates=4,
                              texts_per_cell=3, residual_sd=0.3, seed=11).filter(
        pl.col("race").is_in(["Black", "White"]).fill_null(True)
        & ~((pl.col("gender") == "man") & (pl.col("race") == "White")).fill_null(False))
    fit = fit_rasch(outcomes, FitConfig(model="rasch", draws=300, tune=300, chains=2, cores=1,
                                        seed=3))
    gender = fit.contrasts.filter(pl.col("attribute") == "gender").row(0, named=True)
    assert gender["decision"] != "different"
    assert abs(gender["mean"]) < 0.5  # the plain mean put it near -1.4


def test_a_models_contrasts_read_only_its_own_personas():
    """Bug caught: without the filter on model_name, one model's cells took in the other
    audited models' personas, so its level means mixed models and its counts grew. By hand:
    model m has 2 texts in each of the 4 crossed cells, so female vs male has 2 cells of 2 on
    each side (n_a = n_b = 4), every one an m/ respondent; model k has no male White persona,
    so its gender contrast has only the Black cell (2 against 2)."""
    other = design(MISSING_MALE_WHITE).with_columns(
        respondent=pl.col("respondent").str.replace("^m/", "k/"), model_name=pl.lit("k"))
    frame = pl.concat([design(CROSSED), other])
    pairs, left_out = balanced_contrasts(frame, ("gender", "race"), "m")
    assert left_out == []
    gender = next(pair for pair in pairs if pair.attribute == "gender")
    assert (gender.n_a, gender.n_b) == (4, 4)
    names = [name for cell in (*gender.cells_a, *gender.cells_b) for name in cell]
    assert all(name.startswith("m/") for name in names)
    k_pairs, _ = balanced_contrasts(frame, ("gender", "race"), "k")
    k_gender = next(pair for pair in k_pairs if pair.attribute == "gender")
    assert (k_gender.n_a, k_gender.n_b) == (2, 2)


def test_a_persona_missing_a_level_neither_hides_nor_makes_an_aliasing():
    """Bug caught: rows with a missing level counted as a level of their own in aliased_pairs,
    so a persona without a gender hid a real aliasing (missed warning) or made one (false
    warning). By hand: among the rows with both levels, f goes only with A and m only with B,
    an aliasing the two partial personas (race A, no gender; gender m, no race) do not change;
    and when every row with both levels is race A, race does not vary with gender at all."""
    aliased = pl.DataFrame({"gender": ["f", "f", "m", "m", None, "m"],
                            "race": ["A", "A", "B", "B", "A", None]})
    assert aliased_pairs(aliased, ("gender", "race")) == [
        "every gender level goes with one race level (f: A, m: B), so the race contrasts cannot "
        "be told apart from gender contrasts"]
    one_race = pl.DataFrame({"gender": ["f", "m", None], "race": ["A", "A", "B"]})
    assert aliased_pairs(one_race, ("gender", "race")) == []


def test_a_cell_is_every_other_attribute_not_only_the_first():
    """Bug caught: with three attributes, a cell keyed by the first other attribute alone let
    age into the gender contrast. By hand: female personas are Black young and Black old, male
    ones only Black young, so the only common cell of (race, age) is (Black, young): 2 against
    2; keyed by race alone it would be 4 female against 2 male."""
    rows = [{"respondent": f"m/{gender}_{age}_{text}", "model_name": "m", "gender": gender,
             "race": "Black", "age": age}
            for gender, age in [("female", "young"), ("female", "old"), ("male", "young")]
            for text in range(2)]
    pairs, _ = balanced_contrasts(pl.DataFrame(rows), ("gender", "race", "age"), "m")
    gender = next(pair for pair in pairs if pair.attribute == "gender")
    assert gender.cells_a == (("m/female_young_0", "m/female_young_1"),)
    assert (gender.n_a, gender.n_b) == (2, 2)


def test_respondent_table_names_the_missing_persona_columns():
    """Catches respondent_table failing with a polars ColumnNotFoundError instead of naming the
    attribute the outcome table lacks."""
    outcomes = outcome_table(design(CROSSED))
    with pytest.raises(AuditError, match="needs column\\(s\\) age in the outcome table"):
        respondent_table(outcomes, index_design(outcomes), ("gender", "age"))


def test_a_respondent_with_two_levels_is_refused():
    """Catches respondent_table accepting a respondent id shared by two personas, whose rows
    would then be read with the wrong levels."""
    outcomes = outcome_table(design(CROSSED)).with_columns(
        race=pl.when((pl.col("respondent") == "m/male_Black_0") & (pl.col("item") == "i2"))
        .then(pl.lit("White")).otherwise(pl.col("race")))
    with pytest.raises(AuditError, match="more than one model, persona kind or attribute level"):
        respondent_table(outcomes, index_design(outcomes), ("gender", "race"))


def test_levels_are_sorted_and_respondents_without_one_get_none():
    """Catches levels coming out in the table's order (level indices then follow row order) and
    a respondent without a level indexed as the first level."""
    outcomes = outcome_table(design([("male", "White"), ("female", "Black")], texts=1, nulls=1))
    table = respondent_table(outcomes, index_design(outcomes), ("gender", "race"))
    assert table.levels("race") == ("Black", "White")
    by_respondent = dict(zip(table.frame["respondent"], table.level_index("race")))
    assert by_respondent == {"m/female_Black_0": 0, "m/male_White_0": 1, "m/null_0": NO_LEVEL}


def test_null_count_is_per_audited_model():
    """Catches null_count counting the null personas of every audited model."""
    other = design(CROSSED, nulls=1).with_columns(model_name=pl.lit("n"),
                                                  respondent="n" + pl.col("respondent"))
    frame = pl.concat([design(CROSSED, nulls=3), other])
    table = RespondentTable(frame=frame, attributes=("gender", "race"))
    assert (table.null_count("m"), table.null_count("n")) == (3, 1)


def test_two_level_attributes_counts_named_levels_only():
    """Catches two_level_attributes counting a missing value as a second level."""
    prompts = pl.DataFrame({"gender": ["f", None, "f"], "race": ["A", "B", None]})
    assert two_level_attributes(prompts, ["gender", "race", "age"]) == ["race"]


def test_spread_prior_draws_use_each_models_prior():
    """Catches spread_prior_draws using the wrong half-normal scale or giving the population
    model's text spread the null ratio that only sigma_null carries."""
    rng = np.random.default_rng(0)
    size = 4000
    median = stats.halfnorm.ppf(0.5)
    residual = spread_prior_draws("sigma_residual", False, size, rng)
    text = spread_prior_draws("sigma_residual", True, size, rng)
    null = spread_prior_draws("sigma_null", True, size, rng)
    assert np.median(residual) == pytest.approx(0.5 * median, rel=1e-3)
    assert np.median(text) == pytest.approx(median, rel=1e-3)
    assert np.sort(text) == pytest.approx(stats.halfnorm.ppf((np.arange(size) + 0.5) / size))
    assert not np.allclose(np.sort(null), np.sort(text))
    assert np.array_equal(np.sort(spread_prior_draws("sigma_null", False, size, rng)),
                          np.sort(residual))


def test_item_dif_must_name_a_fitted_attribute():
    """Catches build_explanatory_model accepting fit.item_dif names that are no attribute."""
    outcomes = outcome_table(design(CROSSED))
    data = index_design(outcomes)
    with pytest.raises(AuditError, match="fit.item_dif names \\['age'\\]"):
        build_explanatory_model(data, respondent_table(outcomes, data, ("gender", "race")),
                                item_dif=("age",))


def test_null_personas_take_the_null_spread_and_real_ones_the_real_effect():
    """Catches theta scaling null personas by sigma_residual (and real ones by sigma_null), and
    a real_effect term added to a design without null personas, where it is not identified."""
    outcomes = outcome_table(design(CROSSED, texts=1, nulls=1))
    data = index_design(outcomes)
    table = respondent_table(outcomes, data, ("gender", "race"))
    model = build_explanatory_model(data, table)
    point = model.initial_point()
    point.update(respondent_z=np.ones(len(data.respondents)), sigma_residual_log__=np.log([2.0]),
                 sigma_null_log__=np.log([5.0]))
    (theta,) = model.replace_rvs_by_values([model["theta"]])
    theta = model.compile_fn(theta, inputs=model.value_vars, on_unused_input="ignore",
                             mode="FAST_COMPILE")(point)
    nulls = table.is_null
    assert theta[nulls] == pytest.approx([5.0]) and theta[~nulls] == pytest.approx([2.0] * 4)
    real_only = outcome_table(design(CROSSED, nulls=0))
    data = index_design(real_only)
    model = build_explanatory_model(data, respondent_table(real_only, data, ("gender", "race")))
    assert "real_effect" not in model.named_vars and model["model_effect"] in model.free_RVs


def test_every_pair_of_three_levels_is_contrasted():
    """Catches: combinations of levels made neighbouring pairs (Asian vs White dropped)."""
    frame = design([(gender, race) for gender in ("female", "male")
                    for race in ("Asian", "Black", "White")], texts=1)
    pairs, _ = balanced_contrasts(frame, ("gender", "race"), "m")
    assert [(pair.level_a, pair.level_b) for pair in pairs if pair.attribute == "race"] == [
        ("Asian", "Black"), ("Asian", "White"), ("Black", "White")]


def test_a_left_out_contrast_lists_its_cells_sorted_and_a_missing_value_as_none():
    """Catches: a missing value shown as "None" in place of "none", and the cells listed in the
    frame's order rather than sorted. By hand: female personas are White young then Black
    without an age, the male one Asian young; no cell is shared."""
    rows = [("female", "White", "young"), ("female", "Black", None), ("male", "Asian", "young")]
    frame = pl.DataFrame([{"respondent": f"m/p{index}", "model_name": "m", "gender": gender,
                           "race": race, "age": age}
                          for index, (gender, race, age) in enumerate(rows)])
    _, left_out = balanced_contrasts(frame, ("gender", "race", "age"), "m")
    assert left_out[0] == ("m gender female vs male (female: race Black, age none; race White, "
                           "age young; male: race Asian, age young)")


def test_left_out_contrasts_are_warned_together_and_a_crossed_design_warns_nothing(caplog):
    """Catches: the warning logged with nothing left out, and the left-out pairs joined by
    "; " (which the cell lists use too) rather than " | "."""
    from audit.methods.rasch.irt.balance import warn_left_out

    with caplog.at_level(logging.WARNING, logger="audit"):
        warn_left_out([])
        assert caplog.records == []
        warn_left_out(balanced_contrasts(design(CONFOUNDED), ("gender", "race"), "m")[1])
    (warning,) = [record.getMessage() for record in caplog.records]
    assert ("m gender female vs male (female: race Black; male: race White) | m race Black vs "
            "White (Black: gender female; White: gender male)") in warning
