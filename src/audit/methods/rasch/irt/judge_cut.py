"""The judge correction as a cut: the gold counts alone set the labelling paths' error rates.

Why a cut. With the rates as free parameters of one joint fit (what this project did before),
the audit's own labels update them: the audit data cannot tell a noisy judge from a model that
decides near 50%, so they pull the rates wherever that fits the personas best (gold 16 of 20
gives a Beta mean of 0.77; the joint posterior went to 0.69), and the gaps stretch or shrink to
match. A cut (Plummer 2015, "Cuts in Bayesian graphical models") lets information flow one way:

    rates ~ p(rates | gold)                 (the gold Betas, judge_error.py)
    persona parameters ~ p(. | audit labels, rates)

Why multiple imputation rather than a two-stage plug-in. Fixing the rates at their gold means
would drop their uncertainty, and a few gold answers leave a lot of it: the intervals would be as
narrow as if the judge's rates were known. Drawing M rate vectors from the gold Betas, fitting
the model once per draw with the rates held FIXED, and pooling the draws samples the cut
posterior exactly as M grows, and the draws of different imputations are independent. An
approximate cut inside one HMC run (stopping the gradient into the rates) is not a valid
sampler, which is why this takes M fits. They share one compiled model (the rates are data), so
the cost is M samplings of a small model; the rates are Latin-hypercube draws (judge_error.py),
which spans each Beta with a handful of imputations.

Diagnostics. Chains of different imputations target different posteriors, so an R-hat across
all chains would flag the rate uncertainty itself as non-convergence. R-hat is computed within
each imputation and the worst is reported; ESS adds up over imputations, whose draws are
independent; divergences add up too.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import replace

import numpy as np
import polars as pl
import pymc as pm
import xarray as xr
from xarray import DataTree

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt.engines import compile_nutpie, sample_compiled, sample_posterior
from audit.methods.rasch.irt.judge_error import (
    FIXED_SENSITIVITY,
    FIXED_SPECIFICITY,
    PATH_DIM,
    SENSITIVITY,
    SPECIFICITY,
    CellRates,
)
from audit.methods.rasch.irt.summary import DIAGNOSTIC_COLUMNS, convergence, summarise

logger = logging.getLogger(__name__)

POOLED_GROUPS = ("posterior", "sample_stats")
# The pooled posterior's attribute that says how many imputations its chains come from.
IMPUTATIONS_ATTR = "judge_imputations"


# Each imputation draws its share of fit.draws, but never fewer than this per chain (nor more than
# fit.draws): R-hat is checked within each imputation, and shorter chains make it noisy enough
# to fail a well-mixed fit. So the pooled posterior has at least fit.draws per chain position.
# 2000, not 1000: the embedded default audit (population fit, 4 chains) missed R-hat 1.01 at 1000
# draws an imputation (sigma_residual 1.011, its bulk ESS 800 an imputation) and reached 1.004 at
# 2000 on the same answers; the whole cut took 7 s there, so the default's four imputations
# drawing fit.draws each costs seconds.
MIN_IMPUTATION_DRAWS = 2000


def _imputation_fit(fit: FitConfig, imputation: int) -> FitConfig:
    share = math.ceil(fit.draws / fit.judge_imputations)
    return replace(fit, seed=fit.seed + imputation,
                   draws=min(fit.draws, max(share, MIN_IMPUTATION_DRAWS)))


def sample_cut(model: pm.Model, fit: FitConfig, rates: CellRates, sample=None
               ) -> list[DataTree]:
    """One posterior per imputation, each with the rates fixed at one draw from the gold Betas.

    ``sample`` (model, fit) -> DataTree replaces the sampler (tests); None samples with
    ``fit.engine``, compiling the model once and swapping the rates in as data.
    """
    sensitivities, specificities = rates.rate_draws(fit.judge_imputations, fit.seed)
    compiled = None
    if sample is None and fit.engine != "pymc":
        compiled = compile_nutpie(model, fit.engine)
    fits = []
    for imputation in range(fit.judge_imputations):
        values = {FIXED_SENSITIVITY: sensitivities[imputation],
                  FIXED_SPECIFICITY: specificities[imputation]}
        settings = _imputation_fit(fit, imputation)
        if compiled is not None:
            idata = sample_compiled(compiled.with_data(**values), model, draws=settings.draws,
                                    tune=settings.tune, chains=settings.chains,
                                    cores=settings.cores, target_accept=settings.target_accept,
                                    seed=settings.seed, save_warmup=False)
        else:
            with model:
                pm.set_data(values)
            idata = (sample or sample_posterior)(model, settings)
        fits.append(_with_rates(idata, rates.paths, values))
    logger.info("judge correction: %d fits, each with the labelling paths' rates (%s) fixed at "
                "a draw from their gold posteriors", fit.judge_imputations, ", ".join(rates.paths))
    return fits


def _with_rates(idata: DataTree, paths: tuple[str, ...], values: dict) -> DataTree:
    """The imputation's fixed rates as posterior variables (constant over its draws), so the
    pooled posterior carries the rate uncertainty the contrasts were integrated over."""
    posterior = idata["posterior"].to_dataset()
    shape = (posterior.sizes["chain"], posterior.sizes["draw"], len(paths))
    for name, slot in ((SENSITIVITY, FIXED_SENSITIVITY), (SPECIFICITY, FIXED_SPECIFICITY)):
        posterior[name] = xr.DataArray(
            np.broadcast_to(np.asarray(values[slot], dtype=float), shape).copy(),
            dims=("chain", "draw", PATH_DIM),
            coords={"chain": posterior["chain"], "draw": posterior["draw"], PATH_DIM: list(paths)})
    idata["posterior"] = DataTree(posterior)
    return idata


def pool_imputations(fits: list[DataTree]) -> DataTree:
    """The imputations' posteriors as one, their chains numbered on (imputation m's chain c is
    chain m * chains + c; posterior attribute ``judge_imputations`` says how many there were)."""
    groups = {}
    for group in POOLED_GROUPS:
        parts = []
        offset = 0
        for idata in fits:
            if group not in idata.children:
                break
            part = idata[group].to_dataset()
            chains = part.sizes["chain"]
            parts.append(part.assign_coords(chain=np.arange(offset, offset + chains)))
            offset += chains
        else:
            groups[group] = xr.concat(parts, dim="chain", combine_attrs="drop_conflicts")
    first = fits[0]
    for group in first.children:
        if group not in groups and not group.startswith("warmup"):
            groups[group] = first[group].to_dataset()
    groups["posterior"].attrs[IMPUTATIONS_ATTR] = len(fits)
    return DataTree.from_dict(groups)


def imputation_chains(posterior: xr.Dataset) -> list[np.ndarray]:
    """The chain labels of each imputation in a pooled posterior (pool_imputations), in order;
    one group of every chain for a posterior sampled in one run. A count that does not divide
    the chains (a file written otherwise) is one group too: never a wrong split."""
    chains = posterior["chain"].to_numpy()
    count = int(posterior.attrs.get(IMPUTATIONS_ATTR, 1))
    if count <= 1 or len(chains) % count:
        return [chains]
    return list(chains.reshape(count, -1))


def fit_cut(model: pm.Model, fit: FitConfig, rates: CellRates, sample,
            diagnostics: bool = True) -> tuple[DataTree, pl.DataFrame]:
    """The pooled posterior of the imputations and its summary: mean, sd and HDI of the pooled
    draws, R-hat and ESS from the imputations (null with ``diagnostics=False``)."""
    imputations = sample_cut(model, fit, rates, sample)
    pooled = pool_imputations(imputations)
    summary = summarise(pooled, fit.hdi_prob, diagnostics=False)
    if diagnostics:
        with warnings.catch_warnings():
            # The fixed rates are constant within a chain: their R-hat is 0/0 (numpy warns),
            # and cut_diagnostics sets it null anyway.
            warnings.simplefilter("ignore", RuntimeWarning)
            summary = cut_diagnostics(summary, [convergence(part) for part in imputations])
    return pooled, with_gold_rates(summary, rates.rate_summary(fit.hdi_prob))


def with_gold_rates(summary: pl.DataFrame,
                    gold: dict[str, tuple[float, float, float, float]]) -> pl.DataFrame:
    """The rates' rows as the distribution the imputations were drawn from (their mean, sd and
    HDI), not as the few draws themselves: four draws span about 75% of it, not hdi_prob."""
    columns = ("mean", "sd", "hdi_low", "hdi_high")
    parameter = pl.col("parameter")
    return summary.with_columns(
        [pl.when(parameter.is_in(list(gold)))
         .then(parameter.replace_strict({name: values[position]
                                         for name, values in gold.items()},
                                        default=None, return_dtype=pl.Float64))
         .otherwise(pl.col(column)).alias(column)
         for position, column in enumerate(columns)])


def cut_diagnostics(summary: pl.DataFrame, imputation_summaries: list[pl.DataFrame]
                    ) -> pl.DataFrame:
    """The pooled summary with R-hat the worst within any imputation and ESS summed over them.

    The fixed rates have no R-hat or ESS (they do not move within an imputation): null there.
    """
    stacked = pl.concat([part.select("parameter", *DIAGNOSTIC_COLUMNS)
                         for part in imputation_summaries])
    within = stacked.group_by("parameter").agg(
        pl.col("r_hat").max(), pl.col("ess_bulk").sum(), pl.col("ess_tail").sum())
    fixed = pl.col("parameter").str.starts_with(SENSITIVITY) | pl.col("parameter").str.starts_with(
        SPECIFICITY)
    joined = summary.drop(DIAGNOSTIC_COLUMNS).join(within, on="parameter", how="left")
    return joined.with_columns(
        [pl.when(fixed).then(None).otherwise(pl.col(column)).cast(pl.Float64).alias(column)
         for column in DIAGNOSTIC_COLUMNS]).select(summary.columns)
