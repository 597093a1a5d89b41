"""`rasch_seed` sampled with nutpie agrees with its posterior computed by quadrature.

On a 2 x 2 design the posterior has four dimensions, small enough to integrate on a grid with no
sampling at all. Agreement within Monte Carlo error shows the model, the index mapping and the
sampler together compute the posterior the original audit defined, not merely something that
converges.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.special import log_expit
from scipy.stats import norm

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch, parameter_table

pytestmark = pytest.mark.slow

# (respondent, item) -> (favourable answers, answers); unequal on purpose, so that a transposed
# mapping or a swapped label would move the means far outside Monte Carlo error.
CELLS = {("anna", "hiring"): (5, 6), ("anna", "lending"): (3, 6),
         ("bo", "hiring"): (2, 6), ("bo", "lending"): (0, 6)}
GRID = np.linspace(-6.0, 6.0, 49)
# Tolerance in Monte Carlo standard errors (plus a small allowance for the grid).
MCSE_TOLERANCE = 4.0


def long_table() -> pl.DataFrame:
    rows = [(respondent, item, int(k < successes)) for (respondent, item), (successes, trials)
            in CELLS.items() for k in range(trials)]
    return pl.DataFrame(rows, schema=["respondent", "item", "y"], orient="row")


def quadrature_means() -> dict[str, float]:
    """Posterior means of theta[anna], theta[bo], b[hiring], b[lending] on a 4-D grid."""
    theta_a, theta_b, b_h, b_l = np.meshgrid(GRID, GRID, GRID, GRID, indexing="ij", sparse=True)
    values = {"theta[anna]": theta_a, "theta[bo]": theta_b, "b[hiring]": b_h, "b[lending]": b_l}
    log_density = sum(norm.logpdf(value) for value in values.values())
    for (respondent, item), (successes, trials) in CELLS.items():
        eta = values[f"theta[{respondent}]"] - values[f"b[{item}]"]
        log_density = log_density + successes * log_expit(eta) + (trials - successes) * log_expit(-eta)
    weights = np.exp(log_density - log_density.max())
    total = weights.sum()
    return {name: float((weights * value).sum() / total) for name, value in values.items()}


def test_nutpie_matches_the_exact_posterior_of_the_seed_model() -> None:
    fit = fit_rasch(long_table(), FitConfig(model="rasch_seed", draws=2000, tune=1000, chains=4,
                                            seed=5))
    exact = quadrature_means()
    sampled = {row["parameter"]: row for row in fit.summary.iter_rows(named=True)}
    for name, expected in exact.items():
        draws = fit.idata.posterior[name.split("[")[0]].sel(
            {"respondent" if name.startswith("theta") else "item": name[:-1].split("[")[1]})
        mcse = float(draws.std()) / np.sqrt(sampled[name]["ess_bulk"])
        assert abs(sampled[name]["mean"] - expected) < MCSE_TOLERANCE * mcse + 0.01, (
            name, sampled[name]["mean"], expected, mcse)
    # The data order the respondents and items; the exact means must agree with that order too.
    assert exact["theta[anna]"] > exact["theta[bo]"] and exact["b[lending]"] > exact["b[hiring]"]
    theta = parameter_table(fit.summary, "theta", "respondent").sort("mean", descending=True)
    assert theta["respondent"].to_list() == ["anna", "bo"]
