"""Respondents and items must land on their own parameters, whatever order the rows come in.

A transposed or reshaped response matrix is the classic silent IRT bug: the fit still converges,
on the wrong people. These tests build designs where every respondent and item has a unique
signature and check the signature survives indexing, and that a fast fit with a stand-in sampler
puts each theta under its own name.
"""

from __future__ import annotations

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
from audit.methods.rasch.irt import build_rasch_model, fit_rasch, index_design, respondent_ranking


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
