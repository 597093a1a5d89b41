"""The posterior summary's rows: each label carries its own parameter's statistics.

The summary stacks every variable's draws into one array before ArviZ's array functions run
(irt/summary.py, for speed), so a label list and a value order that disagree would put one
parameter's mean, interval or R-hat on another's row without any error. Release 0.1's summary
(test_posterior_files.py) has one-dimensional variables only; a two-dimensional one is where
an order can go wrong (model x item: DIF, the judge's rates per path)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from audit.methods.rasch.irt import summarise
from audit.methods.rasch.irt.summary import NonFiniteDraws

MODELS, ITEMS = ["m0", "m1"], ["i0", "i1", "i2"]
UNMIXED = ("m1", "i0")  # its two chains sit apart: the only R-hat far from 1


def posterior() -> az.InferenceData:
    generator = np.random.default_rng(7)
    chains, draws = 2, 400
    dif = generator.normal(0.0, 0.1, size=(chains, draws, len(MODELS), len(ITEMS)))
    for m, model in enumerate(MODELS):
        for i, item in enumerate(ITEMS):
            dif[:, :, m, i] += 10 * m + i  # every element its own centre
    stuck = (MODELS.index(UNMIXED[0]), ITEMS.index(UNMIXED[1]))
    dif[1, :, stuck[0], stuck[1]] += 3.0
    theta = generator.normal(0.0, 0.1, size=(chains, draws, 2)) + np.array([-5.0, 5.0])
    b = generator.normal(0.0, 0.1, size=(chains, draws, 1))
    return az.from_dict({"posterior": {"theta": theta, "b": b, "dif_model_item": dif}},
                        dims={"theta": ["respondent"], "b": ["item_only"],
                              "dif_model_item": ["model", "item"]},
                        coords={"respondent": ["p0", "p1"], "item_only": ["q0"],
                                "model": MODELS, "item": ITEMS})


def test_each_row_carries_its_own_parameters_statistics():
    """Fails when the stacked values run in another order than the labels (the 2-D variable
    flattened item-major, or dims transposed): a row's mean would then be another element's
    centre, and the unmixed element's R-hat would sit on another row."""
    rows = {row["parameter"]: row for row in summarise(posterior(), hdi_prob=0.9)
            .iter_rows(named=True)}
    assert abs(rows["theta[p0]"]["mean"] + 5) < 0.05 and abs(rows["theta[p1]"]["mean"] - 5) < 0.05
    for m, model in enumerate(MODELS):
        for i, item in enumerate(ITEMS):
            row = rows[f"dif_model_item[{model}, {item}]"]
            shift = 1.5 if (model, item) == UNMIXED else 0.0  # half the stuck chain's offset
            assert abs(row["mean"] - (10 * m + i + shift)) < 0.05, (model, item, row)
            assert row["hdi_low"] < row["mean"] < row["hdi_high"]
            assert (row["r_hat"] > 1.5) == ((model, item) == UNMIXED), (model, item, row)
    assert all(row["ess_bulk"] > 100 for name, row in rows.items()
               if name != f"dif_model_item[{UNMIXED[0]}, {UNMIXED[1]}]")


def test_draws_that_are_not_numbers_stop_the_summary_naming_their_parameter():
    """Fails when a NaN or infinite draw reaches the summary's schema again, which stopped the
    analysis with "non-nullable column 'mean' contains null values" (naming neither the
    parameter nor the cause), or when the message names the wrong element of a 2-D variable."""
    idata = posterior()
    dif = idata.posterior["dif_model_item"].values.copy()
    dif[0, 3, MODELS.index("m0"), ITEMS.index("i2")] = np.nan
    dif[1, 9, MODELS.index("m0"), ITEMS.index("i2")] = np.inf
    idata.posterior["dif_model_item"] = idata.posterior["dif_model_item"].copy(data=dif)
    with pytest.raises(NonFiniteDraws, match=r"dif_model_item\[m0, i2\] \(2 of 800 draws\)\.") \
            as raised:
        summarise(idata, hdi_prob=0.9)
    assert "theta" not in str(raised.value) and "[m1" not in str(raised.value)


def test_the_summary_interval_has_the_mass_asked_for():
    """Bug caught: the summary's HDI taken at ArviZ's fixed 94% whatever fit.hdi_prob, so a
    run at hdi_prob 0.5 reported (and decided on) intervals of another mass. The draws: 2 x 500
    evenly spaced on [0, 1], whose every 50% interval is 0.5 wide (0.94 wide at 94%)."""
    theta = np.linspace(0.0, 1.0, 1000).reshape(2, 500, 1)
    idata = az.from_dict({"posterior": {"theta": theta, "b": np.zeros((2, 500, 1))}},
                         dims={"theta": ["respondent"], "b": ["item"]})
    row = summarise(idata, 0.5, diagnostics=False).row(0, named=True)
    assert row["parameter"] == "theta[0]"
    assert row["hdi_high"] - row["hdi_low"] == pytest.approx(0.5, abs=0.002)


def test_standardised_and_transformed_helpers_are_not_summarised():
    """Bug caught: a model's non-centred helper (effect_race_z) and transformed variables
    (sigma_null_log__) summarised and checked for convergence beside the parameters they
    only serve, and shown in the report's tables."""
    from audit.methods.rasch.irt.summary import summarised_variables

    names = ("theta", "b", "effect_race", "effect_race_z", "sigma_null_log__", "other")
    idata = az.from_dict({"posterior": {name: np.zeros((1, 2)) for name in names}})
    assert summarised_variables(idata) == ["theta", "b", "effect_race"]
