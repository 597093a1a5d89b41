"""A stand-in for NUTS in fast tests: the model's prior draws read as its posterior (as
pymc-marketing's tests do), so the stages around a fit (contrasts, summaries, tables, the
adaptive loop) run in seconds. What they test is what a fit's draws go through, never the
draws themselves."""

from __future__ import annotations

import pymc as pm

from audit.methods.rasch.config import FitConfig


def prior_sampler(model: pm.Model, fit: FitConfig, draws: int = 200):
    """``fit_rasch``'s ``sample``: one chain of ``draws`` prior draws, seeded by ``fit.seed``."""
    with model:
        idata = pm.sample_prior_predictive(draws=draws, random_seed=fit.seed)
    idata["posterior"] = idata["prior"].copy()
    return idata
