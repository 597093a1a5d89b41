"""The posterior summary: mean, sd and HDI per parameter with its convergence diagnostics, the
table the fit writes (fit/summary.csv) and its diagnostics read."""

from __future__ import annotations

import arviz as az
import polars as pl
import xarray as xr
from xarray import DataTree

from audit.methods.rasch.schemas import SummarySchema
from audit.schemas import validate

# Tail ESS is the smaller ESS of the indicators at the 5% and 95% quantiles (Vehtari, Gelman,
# Simpson, Carpenter and Bürkner 2021, whose thresholds are FitConfig's rhat_max and ess_min).
TAIL_ESS_PROB = 0.95

# Variables summarised, in order; every model in MODELS defines both. Model-specific parameters
# (effects, spreads, discriminations) follow them in the summary and count in the diagnostics.
SUMMARY_VARIABLES: tuple[str, ...] = ("theta", "b")
EXTRA_SUMMARY_PREFIXES: tuple[str, ...] = ("a", "model_effect", "real_effect", "effect_", "sigma_",
                                           "dif_", "judge_", "theta_abstain", "b_abstain")
# The convergence diagnostics' columns: the judge cut takes them from its imputations.
DIAGNOSTIC_COLUMNS: tuple[str, ...] = ("r_hat", "ess_bulk", "ess_tail")
SUMMARY_COLUMNS: tuple[str, ...] = ("parameter", "mean", "sd", "hdi_low", "hdi_high",
                                    *DIAGNOSTIC_COLUMNS)


def summarised_variables(idata: DataTree) -> list[str]:
    """theta and b, then the model's own parameters, without standardised or transformed
    helpers."""
    extras = [name for name in idata.posterior.data_vars
              if name not in SUMMARY_VARIABLES and name.startswith(EXTRA_SUMMARY_PREFIXES)
              and not name.endswith(("_z", "__"))]
    return [*SUMMARY_VARIABLES, *sorted(extras)]


def convergence(idata: DataTree) -> pl.DataFrame:
    """R-hat, bulk and tail ESS per summarised parameter: az.summary's diagnostics without its
    Monte Carlo standard errors, which no table here keeps (a sixth of the summaries' time in
    the planner's simulated audits, profiled; the summaries took half of it). ArviZ 1 takes the
    tail ESS's quantiles from the interval mass it is given (by default stats.ci_prob, 0.89:
    the 11% and 89% quantiles); TAIL_ESS_PROB keeps the meaning of Vehtari et al. (2021) and of
    earlier releases, the 5% and 95% quantiles (tests/methods/rasch/test_posterior_files.py)."""
    draws = idata["posterior"].to_dataset()[summarised_variables(idata)]
    parts = [az.ess(draws, method="bulk").expand_dims(summary=["ess_bulk"]),
             az.ess(draws, method="tail", prob=TAIL_ESS_PROB).expand_dims(summary=["ess_tail"]),
             az.rhat(draws).expand_dims(summary=["r_hat"])]
    table = az.dataset_to_dataframe(xr.concat(parts, dim="summary"), sample_dims=["summary"]).T
    return pl.DataFrame({"parameter": [str(name) for name in table.index],
                         **{column: table[column].to_numpy(dtype=float)
                            for column in DIAGNOSTIC_COLUMNS}})


def summarise(idata: DataTree, hdi_prob: float, diagnostics: bool = True) -> pl.DataFrame:
    """The posterior's mean, sd and HDI per parameter, with its convergence diagnostics, as a
    validated polars table with the column names of the CLI contract. ``diagnostics=False``
    leaves R-hat and ESS null: the judge cut's pooled posterior, whose R-hat across imputations
    would read the rates' spread as non-convergence, takes them from its imputations."""
    table = az.summary(idata, var_names=summarised_variables(idata), ci_prob=hdi_prob,
                       ci_kind="hdi", kind="stats", round_to="none")
    low, high = (column for column in table.columns if column.startswith("hdi"))
    summary = pl.DataFrame({"parameter": [str(name) for name in table.index],
                            "mean": table["mean"].to_numpy(dtype=float),
                            "sd": table["sd"].to_numpy(dtype=float),
                            "hdi_low": table[low].to_numpy(dtype=float),
                            "hdi_high": table[high].to_numpy(dtype=float)})
    if diagnostics:
        summary = summary.join(convergence(idata), on="parameter", how="left",
                               maintain_order="left")
    else:
        summary = summary.with_columns(pl.lit(None, pl.Float64).alias(column)
                                       for column in DIAGNOSTIC_COLUMNS)
    return validate(summary, SummarySchema, "posterior summary").select(SUMMARY_COLUMNS)
