"""Interval coverage over repeated simulations, for every model (simulation-based calibration).

Truth and data are drawn together from each model's own prior predictive, then the model is fitted
to each simulated data set. When the truth comes from the prior, a correctly implemented Bayesian
model's 90% central intervals cover it 90% of the time on average over simulations: exactly, not
asymptotically (Cook, Gelman and Rubin 2006; Talts et al. 2018, "Validating Bayesian inference
algorithms with simulation-based calibration"). A mislabelled index, a wrong likelihood or a bad
sampler shows up as coverage far from 90%.

Each model is compiled once by nutpie and refitted on new data with ``with_data``, so 20 fits
cost seconds each instead of a compile each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import nutpie
import polars as pl
import pymc as pm
import pytest

from audit.methods.rasch.irt import build_rasch_model, index_design
from audit.methods.rasch.irt.explanatory import build_explanatory_model, respondent_table
from audit.methods.rasch.irt.judge_error import JudgeConfusion, JudgeCorrection

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import simulate_audit  # noqa: E402

pytestmark = pytest.mark.slow

SIMULATIONS = 20
INTERVAL = 0.9
# Parameters within one simulation are correlated, so the pooled count is less informative than
# its size suggests; a band of about +-0.08 around 0.9 still fails a model that is off by a sign,
# a transposition or a factor in the likelihood (those give coverage near 0.5 or below).
COVERAGE_BAND = (0.82, 0.97)


def coverage(model: pm.Model, parameters: list[str], seed: int,
             observed_name: str = "successes") -> float:
    with model:
        prior = pm.sample_prior_predictive(draws=SIMULATIONS, random_seed=seed)
    compiled = nutpie.compile_pymc_model(model, freeze_model=False)
    hits = []
    for simulation in range(SIMULATIONS):
        observed = prior.prior_predictive["y"].isel(chain=0, draw=simulation).values
        data = {observed_name: observed.astype(np.int64)}
        idata = nutpie.sample(compiled.with_data(**data),
                              draws=400, tune=400, chains=2, cores=2, seed=seed + simulation,
                              progress_bar=False)
        for name in parameters:
            truth = prior.prior[name].isel(chain=0, draw=simulation).values
            draws = idata.posterior[name].stack(sample=("chain", "draw")).values
            low, high = np.quantile(draws, [(1 - INTERVAL) / 2, (1 + INTERVAL) / 2], axis=-1)
            hits.append(((low <= truth) & (truth <= high)).ravel())
    return float(np.concatenate(hits).mean())


@pytest.mark.parametrize("model_name", ["rasch", "twopl", "rasch_seed"])
def test_rasch_family_intervals_are_calibrated(model_name: str):
    outcomes = simulate_audit({}, items=8, replicates=3, null_count=2, seed=5)
    model = build_rasch_model(index_design(outcomes.select("respondent", "item", "y")),
                              model_name)
    parameters = ["theta", "b"] + (["a"] if model_name == "twopl" else [])
    # The seed model observes one Bernoulli row per response instead of Binomial cells.
    observed_name = "responses" if model_name == "rasch_seed" else "successes"
    observed = coverage(model, parameters, seed=11, observed_name=observed_name)
    assert COVERAGE_BAND[0] <= observed <= COVERAGE_BAND[1], observed


def test_explanatory_intervals_are_calibrated():
    outcomes = simulate_audit({}, models=("m1", "m2"), items=5, replicates=3, null_count=3,
                              seed=6)
    data = index_design(outcomes.select("respondent", "item", "y"))
    model = build_explanatory_model(data, respondent_table(outcomes, data, ("gender", "race")))
    observed = coverage(model, ["theta", "effect_race", "effect_gender", "sigma_null",
                                "real_effect"], seed=12)
    assert COVERAGE_BAND[0] <= observed <= COVERAGE_BAND[1], observed


def test_judge_error_likelihood_is_calibrated():
    # Labels drawn through two labelling paths with their own fixed rates (the cut holds them at
    # a gold draw in each imputation): a wrong mixture (sensitivity and specificity swapped,
    # 1 - p for p, or one path's cells read through the other's rates) breaks coverage of theta
    # and b.
    outcomes = simulate_audit({}, items=8, replicates=6, null_count=2, seed=7)
    outcomes = outcomes.with_row_index("row").with_columns(label_source=pl.when(
        pl.col("row") % 3 == 0).then(pl.lit("judge")).otherwise(pl.lit("rule"))).drop("row")
    correction = JudgeCorrection("favourable", {
        "judge": JudgeConfusion("favourable", true_1_judged_1=30, true_1_judged_0=20,
                                true_0_judged_0=40, true_0_judged_1=10),
        "rule": JudgeConfusion("favourable", true_1_judged_1=48, true_1_judged_0=2,
                               true_0_judged_0=49, true_0_judged_1=1)})
    data = index_design(outcomes.select("respondent", "item", "y", "label_source"), by_path=True)
    model = build_rasch_model(data, "rasch", correction.for_cells(data.cell_path))
    observed = coverage(model, ["theta", "b"], seed=13)
    assert COVERAGE_BAND[0] <= observed <= COVERAGE_BAND[1], observed
