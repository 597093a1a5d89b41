"""The posterior summary: mean, sd and HDI per parameter with its convergence diagnostics, the
table the fit writes (fit/summary.csv) and its diagnostics read."""

from __future__ import annotations

import arviz as az
import numpy as np
import polars as pl
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


def stacked_draws(idata: DataTree) -> tuple[list[str], np.ndarray]:
    """The summarised parameters' labels, as az.summary names them ("theta[p01]", "x[a, b]"),
    and their draws as one (chain, draw, parameter) array in the same order.

    The summaries below run ArviZ's array functions on this one array instead of its Dataset
    functions on each variable: the planner's simulated audits summarise five small posteriors
    each, and there the xarray bookkeeping (one ufunc a variable and statistic, then stacking the
    results into a table) cost more than the statistics: R-hat and ESS of a 2 x 300-draw
    posterior took 0.23 s through the Dataset functions and 0.08 s here (2026-11-30).
    """
    draws = idata["posterior"].to_dataset()[summarised_variables(idata)]
    chains, length = draws.sizes["chain"], draws.sizes["draw"]
    labeller = az.labels.BaseLabeller()
    # xarray_sel_iter walks each variable's other dims in their order, the last fastest: the
    # C order of the reshape below.
    labels = [labeller.make_label_flat(name, selection, index) for name, selection, index
              in az.xarray_sel_iter(draws, skip_dims={"chain", "draw"})]
    values = np.concatenate([draws[name].transpose("chain", "draw", ...).to_numpy()
                             .reshape(chains, length, -1) for name in draws.data_vars], axis=-1)
    return labels, values.astype(float, copy=False)


def convergence(idata: DataTree) -> pl.DataFrame:
    """R-hat, bulk and tail ESS per summarised parameter: az.summary's diagnostics without its
    Monte Carlo standard errors, which no table here keeps. ArviZ 1 takes the tail ESS's
    quantiles from the interval mass it is given (by default stats.ci_prob, 0.89: the 11% and 89%
    quantiles); TAIL_ESS_PROB keeps the meaning of Vehtari et al. (2021) and of earlier releases,
    the 5% and 95% quantiles (tests/methods/rasch/test_posterior_files.py)."""
    labels, draws = stacked_draws(idata)
    return pl.DataFrame({"parameter": labels, **_diagnostic_columns(draws)})


def _diagnostic_columns(draws: np.ndarray) -> dict[str, np.ndarray]:
    """R-hat and ESS of each parameter of a (chain, draw, parameter) array, in its order."""
    axes = dict(chain_axis=0, draw_axis=1)
    return {"r_hat": np.asarray(az.rhat(draws, **axes), dtype=float),
            "ess_bulk": np.asarray(az.ess(draws, method="bulk", **axes), dtype=float),
            "ess_tail": np.asarray(az.ess(draws, method="tail", prob=TAIL_ESS_PROB, **axes),
                                   dtype=float)}


class NonFiniteDraws(RuntimeError):
    """The sampler returned draws that are not finite numbers: a numerical failure of the fit
    (or a bug in a model), never a result. A RuntimeError, not an AuditError: it keeps its
    traceback."""


def _refuse_non_finite(labels: list[str], pooled: np.ndarray) -> None:
    """Stop, naming the parameters, when any draw of a (draw, parameter) array is NaN or
    infinite. Without this the summary's schema stopped the analysis with "non-nullable column
    'mean' contains null values", which names neither the parameter nor the cause."""
    bad = ~np.isfinite(pooled)
    counts = bad.sum(axis=0)
    if not counts.any():
        return
    named = [f"{labels[index]} ({counts[index]} of {bad.shape[0]} draws)"
             for index in np.flatnonzero(counts)]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    raise NonFiniteDraws(
        f"the posterior has draws that are not finite numbers: {shown}. The sampler failed "
        "numerically and this fit is not a result; please report it with the run's "
        ".hydra/config.yaml")


def summarise(idata: DataTree, hdi_prob: float, diagnostics: bool = True) -> pl.DataFrame:
    """The posterior's mean, sd and HDI per parameter, with its convergence diagnostics, as a
    validated polars table with the column names of the CLI contract. ``diagnostics=False``
    leaves R-hat and ESS null: the judge cut's pooled posterior, whose R-hat across imputations
    would read the rates' spread as non-convergence, takes them from its imputations."""
    labels, draws = stacked_draws(idata)
    pooled = draws.reshape(-1, draws.shape[-1])  # az.summary's "stats": over chains and draws
    _refuse_non_finite(labels, pooled)
    interval = np.asarray(az.hdi(pooled, prob=hdi_prob, axis=0), dtype=float)
    # The diagnostics come from the same array, parameter by parameter: no join by label.
    summary = pl.DataFrame({"parameter": labels, "mean": pooled.mean(axis=0),
                            "sd": pooled.std(axis=0, ddof=1),
                            "hdi_low": interval[:, 0], "hdi_high": interval[:, 1],
                            **(_diagnostic_columns(draws) if diagnostics else {})})
    if not diagnostics:
        summary = summary.with_columns(pl.lit(None, pl.Float64).alias(column)
                                       for column in DIAGNOSTIC_COLUMNS)
    return validate(summary, SummarySchema, "posterior summary").select(SUMMARY_COLUMNS)
