"""Respondents and items must land on their own parameters, whatever order the rows come in.

A transposed or reshaped response matrix is the classic silent IRT bug: the fit still converges,
on the wrong people. These tests build designs where every respondent and item has a unique
signature and check the signature survives indexing, and that a fast fit with a stand-in sampler
puts each theta under its own name.
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pymc as pm
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig
from prior_samplers import prior_sampler
from audit.methods.rasch.irt import (
    Diagnostics,
    RaschFit,
    build_rasch_model,
    fit_rasch,
    index_design,
    respondent_ranking,
)
from audit.methods.rasch.irt.judge_error import JudgeConfusion
from audit.methods.rasch.irt.rasch import judged_outcomes


def signature_table(n_respondents: int, n_items: int, replicates: int, seed: int) -> pl.DataFrame:
    """y is 1 exactly when the item's number is below the respondent's number: a staircase whose
    shape changes under any transposition (n_respondents != n_items) or shuffle of the labels."""
    rows = [(f"person_{i:02d}", f"item_{j:02d}", int(j < i))
            for i in range(n_respondents) for j in range(n_items) for _ in range(replicates)]
    order = np.random.default_rng(seed).permutation(len(rows))
    return pl.DataFrame([rows[k] for k in order], schema=["respondent", "item", "y"], orient="row")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(2, 6), st.integers(1, 3), st.integers(0, 10_000))
def test_each_answer_lands_on_its_own_respondent_and_item(n_respondents, n_items, replicates,
                                                          seed) -> None:
    table = signature_table(n_respondents, n_items, replicates, seed)
    data = index_design(table)
    for i, j, y in zip(data.row_respondent, data.row_item, data.row_y):
        person = int(data.respondents[i].split("_")[1])
        item = int(data.items[j].split("_")[1])
        assert y == int(item < person)
    cells = data.cells
    assert cells.height == n_respondents * n_items
    assert (cells["trials"] == replicates).all()
    expected = pl.Series([replicates * int(int(item[5:]) < int(person[7:]))
                          for person, item in zip(cells["respondent"], cells["item"])])
    assert (cells["successes"] == expected).all()


def test_indices_do_not_depend_on_row_order() -> None:
    first = index_design(signature_table(4, 3, 2, seed=1))
    second = index_design(signature_table(4, 3, 2, seed=2))
    assert first.respondents == second.respondents and first.items == second.items
    assert first.cells.equals(second.cells)


def test_respondents_and_items_are_indexed_in_sorted_order() -> None:
    """Catches label tuples in reverse or first-seen order: the same labels would get other
    indices (and other coordinate orders in the fit) from one audit to the next."""
    table = signature_table(3, 12, 1, seed=4)  # item_10 and item_11 sort before item_02 as text
    data = index_design(table)
    assert data.respondents == ("person_00", "person_01", "person_02")
    assert data.items == tuple(sorted(f"item_{j:02d}" for j in range(12)))


def test_an_empty_outcome_table_is_one_line() -> None:
    """Catches an empty table reaching the model (a crash deep in PyMC on zero cells)."""
    with pytest.raises(AuditError, match="outcome table is empty"):
        index_design(signature_table(2, 2, 1, seed=0).clear())


def test_by_path_without_a_label_source_column_indexes_the_plain_cells() -> None:
    """Catches by_path=True demanding a label_source column the table does not have (a polars
    ColumnNotFoundError) instead of pooling the answers as one path."""
    table = signature_table(3, 2, 2, seed=0)
    data = index_design(table, by_path=True)
    assert data.cell_path is None and data.cells.equals(index_design(table).cells)


def pool_outcomes(paths: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Three answers in two cells of a 3 x 2 pool, each cell with one of its pool rows twice."""
    answers = pl.DataFrame({"respondent": ["r1", "r1", "r2"], "item": ["i1", "i1", "i2"],
                            "y": [1, 0, 1]})
    if paths:
        answers = answers.with_columns(label_source=pl.Series(["rule", "rule", "judge"]))
    pool = pl.DataFrame({"respondent": ["r3", "r1", "r2", "r2", "r1", "r3", "r1"],
                         "item": ["i2", "i2", "i1", "i2", "i1", "i1", "i2"]})
    return answers, pool


@pytest.mark.parametrize("paths", [False, True])
def test_unanswered_pool_cells_join_the_design_with_zero_trials(paths: bool) -> None:
    """Catches an adaptive pool's unanswered cells left out (the model's shape would change from
    round to round), given a trial, or answered cells counted again as empty ones."""
    answers, pool = pool_outcomes(paths)
    data = index_design(answers, by_path=paths, cells=pool)
    assert data.respondents == ("r1", "r2", "r3") and data.items == ("i1", "i2")
    assert data.cells.rows() == [("r1", "i1", 1, 2), ("r1", "i2", 0, 0), ("r2", "i1", 0, 0),
                                 ("r2", "i2", 1, 1), ("r3", "i1", 0, 0), ("r3", "i2", 0, 0)]
    assert data.row_y.tolist() == [1, 0, 1]
    if paths:  # an unanswered cell reads through any of the answers' paths: its density is 0
        assert data.cell_path[[0, 3]].tolist() == ["rule", "judge"]
        assert set(data.cell_path) == {"rule", "judge"}


def test_answers_outside_the_pool_keep_their_own_cells() -> None:
    """Catches the labels taken from the pool alone: an answer to a cell the pool lacks would get
    no index (a null respondent or item) instead of its own cell."""
    answers = pl.DataFrame({"respondent": ["r1", "r9"], "item": ["i1", "i1"], "y": [1, 1]})
    data = index_design(answers, cells=pl.DataFrame({"respondent": ["r1"], "item": ["i2"]}))
    assert data.cells.rows() == [("r1", "i1", 1, 1), ("r1", "i2", 0, 0), ("r9", "i1", 1, 1)]


def test_pool_ids_are_matched_to_the_answers_as_text() -> None:
    """Catches a pool with integer ids (the outcome table's are coerced to text) failing to stack
    with the answers' labels, or adding its cells under other labels."""
    answers = pl.DataFrame({"respondent": [1, 2], "item": [10, 10], "y": [1, 0]})
    pool = pl.DataFrame({"respondent": [1, 1, 2, 2], "item": [10, 11, 10, 11]})
    data = index_design(answers, cells=pool)
    assert data.respondents == ("1", "2") and data.items == ("10", "11")
    assert data.trials.tolist() == [1, 0, 1, 0]


@pytest.mark.parametrize("model", ["rasch", "rasch_seed"])
def test_model_coords_name_respondents_and_items(model: str) -> None:
    data = index_design(signature_table(5, 3, 1, seed=0))
    built = build_rasch_model(data, model)
    assert built.coords["respondent"] == data.respondents
    assert built.coords["item"] == data.items
    assert built.named_vars_to_dims["theta"] == ("respondent",)
    assert built.named_vars_to_dims["b"] == ("item",)


def test_unknown_model_is_named() -> None:
    with pytest.raises(AuditError, match="valid models: rasch, rasch_seed"):
        build_rasch_model(index_design(signature_table(2, 2, 1, seed=0)), "rasch2")


def point_mass_sampler(true_theta: dict[str, float]):
    """Stand-in for NUTS: a posterior that puts each theta exactly at a known value, by name."""

    def sample(model: pm.Model, fit: FitConfig):
        idata = prior_sampler(model, fit, draws=50)
        posterior = idata["posterior"].to_dataset()
        names = posterior["theta"].coords["respondent"].values
        values = np.array([true_theta[str(name)] for name in names])
        posterior["theta"] = posterior["theta"] * 0 + values
        idata["posterior"] = xr.DataTree(posterior)
        return idata

    return sample


# A point-mass posterior has zero variance, so ArviZ's R-hat divides by zero: expected here.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("model", ["rasch", "rasch_seed"])
def test_a_fit_reports_each_theta_under_its_own_name(model: str) -> None:
    table = signature_table(6, 4, 1, seed=3)
    truth = {f"person_{i:02d}": float(i) for i in range(6)}
    fit = fit_rasch(table, FitConfig(model=model, chains=1), sample=point_mass_sampler(truth))
    ranking = respondent_ranking(fit.summary)
    assert ranking["respondent"].to_list() == [f"person_{i:02d}" for i in reversed(range(6))]
    assert ranking["mean"].to_list() == pytest.approx([float(i) for i in reversed(range(6))])
    assert set(fit.summary.columns) >= {"parameter", "mean", "sd", "hdi_low", "hdi_high", "r_hat",
                                        "ess_bulk", "ess_tail"}


@pytest.mark.parametrize("model", ["rasch", "twopl"])
def test_only_the_twopl_model_has_discriminations(model: str) -> None:
    """Catches the 2PL built without its discrimination ``a`` or the Rasch model built with one."""
    built = build_rasch_model(index_design(signature_table(3, 2, 1, seed=0)), model)
    assert ("a" in built.named_vars) == (model == "twopl")


@pytest.mark.parametrize(("model", "needs"), [("hurdle", "label column"),
                                              ("explanatory", "persona attributes"),
                                              ("population", "persona attributes")])
def test_models_that_need_more_than_responses_are_refused_by_name(model: str, needs: str) -> None:
    """Catches build_rasch_model losing the hurdle or attribute models' own message and falling
    through to 'unknown model' for a model that is in MODELS."""
    with pytest.raises(ValueError, match=needs):
        build_rasch_model(index_design(signature_table(2, 2, 1, seed=0)), model)


def test_the_seed_model_refuses_a_judge_correction() -> None:
    """Catches rasch_seed silently ignoring the judge's confusion rates it cannot read."""
    with pytest.raises(AuditError, match="fit.judge_error=false"):
        build_rasch_model(index_design(signature_table(2, 2, 1, seed=0)), "rasch_seed",
                          confusion=object())


def test_tied_respondents_are_ranked_by_name() -> None:
    """Catches respondent_ranking breaking ties in mean theta by reversed (or no) name order."""
    summary = pl.DataFrame({"parameter": ["theta[c]", "theta[a]", "b[i]", "theta[b]"],
                            "mean": [1.0, 1.0, 9.0, 2.0]})
    ranking = respondent_ranking(summary)
    assert ranking["respondent"].to_list() == ["b", "a", "c"]
    assert ranking.columns == ["respondent", "mean"]


def test_judged_outcomes_counts_the_second_coding_and_the_hurdles_abstention() -> None:
    """Catches judged_outcomes forgetting the hurdle's abstention step or a second_outcome."""
    assert judged_outcomes(FitConfig()) == 1
    assert judged_outcomes(FitConfig(model="hurdle")) == 2
    assert judged_outcomes(FitConfig(second_outcome="undetermined")) == 2


def test_a_fit_without_diagnostics_names_itself_when_asked_for_convergence() -> None:
    """Catches RaschFit.converged and problems() reading a companion fit made with
    diagnostics=False (an AttributeError on None) or refusing a fully diagnosed one."""
    healthy = Diagnostics(rhat_max=1.0, ess_bulk_min=900, ess_tail_min=900, divergences=0,
                          rhat_limit=1.01, ess_limit=400)
    unchecked = RaschFit(idata=None, summary=pl.DataFrame(), diagnostics=None,
                         outcome="undetermined")
    fit = RaschFit(idata=None, summary=pl.DataFrame(), diagnostics=healthy,
                   companions=(unchecked,))
    with pytest.raises(ValueError, match="the undetermined fit was made with diagnostics=False"):
        _ = fit.converged
    with pytest.raises(ValueError, match="undetermined fit"):
        fit.problems()
    checked = RaschFit(idata=None, summary=pl.DataFrame(), diagnostics=healthy)
    assert checked.converged and checked.problems() == []


def test_all_contrasts_skips_fits_without_contrasts() -> None:
    """Catches all_contrasts stacking an empty companion's table (a schema error) or losing
    the outcome column."""
    contrasts = pl.DataFrame({"attribute": ["race"], "mean": [0.5]})
    companion = RaschFit(idata=None, summary=pl.DataFrame(), diagnostics=None,
                         outcome="undetermined")
    fit = RaschFit(idata=None, summary=pl.DataFrame(), diagnostics=None, contrasts=contrasts,
                   companions=(companion,))
    assert fit.all_contrasts().to_dicts() == [{"outcome": "favourable", "attribute": "race",
                                               "mean": 0.5}]
    assert companion.all_contrasts().is_empty()


# Prior draws have no converged chains to compare: R-hat's division by zero is expected here.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_table_without_persona_kinds_is_fitted_without_contrasts() -> None:
    """Catches fit_rasch reading persona attributes (and demanding persona_kind) from a table
    that has model_name and the attribute columns but no persona_kind."""
    table = signature_table(4, 3, 1, seed=0).with_columns(
        model_name=pl.lit("m"), gender=pl.lit("f"), race=pl.lit("A"))
    fit = fit_rasch(table, FitConfig(chains=1, item_dif=["race"]), sample=prior_sampler)
    assert fit.contrasts.is_empty() and fit.item_gaps.is_empty()


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_diagnostics_false_leaves_the_fit_undiagnosed() -> None:
    """Catches fit_rasch computing (and attaching) diagnostics the caller turned off."""
    fit = fit_rasch(signature_table(3, 2, 1, seed=0), FitConfig(chains=1), sample=prior_sampler,
                    diagnostics=False)
    assert fit.diagnostics is None and fit.summary["r_hat"].null_count() == fit.summary.height


def test_a_probability_fit_refuses_an_adaptive_pool() -> None:
    """Catches fit.response=probability fitting an adaptive pool's unanswered cells."""
    table = signature_table(2, 2, 1, seed=0).with_columns(p_favourable=pl.lit(0.5))
    with pytest.raises(AuditError, match="design.adaptive=false"):
        fit_rasch(table, FitConfig(response="probability"), sample=prior_sampler, pool=table)


@pytest.mark.parametrize("model", ["explanatory", "population"])
def test_an_attribute_model_without_persona_columns_is_one_line(model: str) -> None:
    """Catches fit_rasch handing an attribute model no respondent table (an AttributeError on
    None) instead of naming the persona columns the outcome table lacks."""
    with pytest.raises(AuditError, match=f"fit.model={model} needs model_name, persona_kind"):
        fit_rasch(signature_table(2, 2, 1, seed=0), FitConfig(model=model), sample=prior_sampler)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_probability_fit_drops_the_judge_correction(caplog) -> None:
    """Catches fit.response=probability reading P(favourable) through the judge's label error
    rates, which describe labels, not probabilities."""
    table = signature_table(3, 2, 1, seed=0).with_columns(p_favourable=pl.lit(0.6))
    with caplog.at_level(logging.WARNING, logger="audit"):
        fit = fit_rasch(table, FitConfig(response="probability", chains=1), sample=prior_sampler,
                        confusion=JudgeConfusion("favourable", 98, 0, 98, 0))
    assert fit.judge_confusion is None
    assert any("fitted without it" in record.getMessage() for record in caplog.records)


def test_the_hurdle_refuses_a_judge_correction() -> None:
    """Catches fit.model=hurdle silently reading labels as truth when given judge error rates."""
    with pytest.raises(AuditError, match="fit.model=hurdle reads labels as truth"):
        fit_rasch(signature_table(2, 2, 1, seed=0), FitConfig(model="hurdle"),
                  sample=prior_sampler, confusion=JudgeConfusion("favourable", 98, 0, 98, 0))
