"""Is the noise floor estimated, or read from its prior? sigma_null's posterior against its prior.

The population model (explanatory.py, ``population=True``) puts other priors on the two spreads
(sigma_null a ratio of the text spread); each table row and plot compares with the prior its fit
had, drawn by ``spread_prior_draws``.

The explanatory model's ``sigma_null`` (per audited model) is the spread of favourability across
null personas: the diagnostic a demographic contrast is ranked against (it does not change a
decision). With few null personas or few answers per persona the data barely inform it and its
posterior is its HalfNormal prior over again: a contrast "beyond the noise floor" then means
beyond an assumption. This table puts the two side by side per model, with the ratio of the
posterior's HDI width to the prior's central interval of the same mass; ``estimated`` says the
data at least halved it.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from audit.methods.rasch.irt.explanatory import spread_prior_draws
from audit.stats.intervals import hdi_bounds

# Posterior HDI width / prior central-interval width below which the floor counts as estimated.
ESTIMATED_WIDTH_RATIO = 0.5
SPREADS = ("sigma_null", "sigma_residual")
NOISE_FLOOR_COLUMNS = ("model_name", "parameter", "prior_low", "prior_high", "mean", "hdi_low",
                       "hdi_high", "width_ratio", "estimated")


# Prior draws per table row or plot: central-interval ends to about 0.001 logits.
PRIOR_DRAWS = 1_000_000


def _is_population(posterior) -> bool:
    """The population model leaves its ratio of spreads in the posterior."""
    return "sigma_null_log_ratio" in posterior


def _prior_draws(posterior, parameter: str) -> np.ndarray:
    return spread_prior_draws(parameter, _is_population(posterior), PRIOR_DRAWS,
                              np.random.default_rng(0))


def _prior_interval(draws: np.ndarray, hdi_prob: float) -> tuple[float, float]:
    tail = (1.0 - hdi_prob) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def floor_from_prior(table: pl.DataFrame) -> frozenset[str]:
    """The audited models whose sigma_null is mostly its prior (not ``estimated``)."""
    if not table.height:
        return frozenset()
    rows = table.filter((pl.col("parameter") == "sigma_null") & ~pl.col("estimated"))
    return frozenset(rows["model_name"].to_list())


def noise_floor_table(posterior, hdi_prob: float) -> pl.DataFrame:
    """One row per audited model and spread; empty for fits without an estimated floor."""
    rows = []
    for parameter in SPREADS:
        if parameter not in posterior or "model" not in posterior[parameter].dims:
            continue
        prior_low, prior_high = _prior_interval(_prior_draws(posterior, parameter), hdi_prob)
        for model_name in posterior[parameter]["model"].values:
            draws = posterior[parameter].sel(model=model_name).values.ravel()
            low, high = hdi_bounds(draws, hdi_prob)
            ratio = (high - low) / (prior_high - prior_low)
            rows.append({"model_name": str(model_name), "parameter": parameter,
                         "prior_low": prior_low, "prior_high": prior_high,
                         "mean": float(draws.mean()), "hdi_low": low, "hdi_high": high,
                         "width_ratio": ratio, "estimated": ratio < ESTIMATED_WIDTH_RATIO})
    schema = {column: pl.Float64 for column in NOISE_FLOOR_COLUMNS}
    schema.update({"model_name": pl.String, "parameter": pl.String, "estimated": pl.Boolean})
    return pl.DataFrame(rows, schema=schema, orient="row").select(NOISE_FLOOR_COLUMNS)


def noise_floor_plot(posterior) -> Figure:
    """sigma_null per audited model: posterior histogram over the HalfNormal prior density."""
    models = [str(name) for name in posterior["sigma_null"]["model"].values]
    # A bare Figure, not pyplot: no backend is chosen here, so model code stays headless-safe.
    figure = Figure(figsize=(4.2 * len(models), 3.0))
    axes = figure.subplots(1, len(models), squeeze=False)
    prior = _prior_draws(posterior, "sigma_null")
    upper = float(np.quantile(prior, 0.99))
    for axis, model_name in zip(axes[0], models):
        draws = posterior["sigma_null"].sel(model=model_name).values.ravel()
        axis.hist(draws, bins=40, range=(0.0, upper), density=True, color="#1f77b4",
                  alpha=0.6, label="posterior")
        axis.hist(prior, bins=40, range=(0.0, upper), density=True, histtype="step",
                  color="black", lw=1.2, ls="--", label="prior")
        axis.set_title(f"sigma_null, {model_name}", fontsize=9)
        axis.set_xlabel("spread of null personas (logits)")
        axis.legend(fontsize=8)
    figure.tight_layout()
    return figure
