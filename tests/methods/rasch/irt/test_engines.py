"""fit.engine: every engine fits the same default-shaped audit to the same posterior, the cached
and public nutpie paths draw the same numbers for a seed, and auto falls back instead of crashing.
Real nutpie and PyMC sampling (slow)."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import build_rasch_model, fit_rasch, index_design
from audit.methods.rasch.irt import compiled, engines

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import simulate_audit  # noqa: E402

pytestmark = pytest.mark.slow

# The default audit's shape: 17 respondents (8 gender x race personas, a baseline, 8 nulls),
# 12 items, 2 replicates; a planted race gap so the contrasts are not all at zero.
RACE_EFFECT = {"Asian": 0.0, "Black": -0.8, "Hispanic": 0.3, "White": 0.5}
FIT = FitConfig(draws=1000, tune=1000, chains=4, cores=2, seed=11)


@pytest.fixture(scope="module")
def outcomes() -> pl.DataFrame:
    return simulate_audit(RACE_EFFECT, items=12, replicates=2, null_count=8, seed=5)


@pytest.fixture(scope="module")
def fits(outcomes: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Summary and contrasts per engine, joined on what they estimate."""
    tables = {}
    for engine in ("cached", "nutpie", "pymc"):
        fit = fit_rasch(outcomes, replace(FIT, engine=engine))
        assert fit.converged, (engine, fit.problems())
        contrasts = fit.contrasts.select(
            (pl.col("attribute") + ":" + pl.col("level_a") + "-" + pl.col("level_b"))
            .alias("parameter"), "mean", "hdi_low", "hdi_high")
        tables[engine] = pl.concat([
            fit.summary.select("parameter", "mean", "hdi_low", "hdi_high"), contrasts])
    return tables


@pytest.mark.parametrize("engine", ["nutpie", "pymc"])
def test_every_engine_gives_the_same_posterior(fits, engine: str) -> None:
    """Fails if an engine samples another model (a lost zero-sum constraint, dropped cells, a
    wrong seed path that never mixes) or the summary reads its draws differently (HDI columns
    swapped, a different ArviZ interval): Monte Carlo error alone is about 0.02 logit here."""
    joined = fits["cached"].join(fits[engine], on="parameter", suffix="_other")
    assert joined.height == fits["cached"].height >= 17 + 12 + 6
    mean_gap = (joined["mean"] - joined["mean_other"]).abs().max()
    bound_gap = max((joined["hdi_low"] - joined["hdi_low_other"]).abs().max(),
                    (joined["hdi_high"] - joined["hdi_high_other"]).abs().max())
    assert mean_gap < 0.1, mean_gap
    assert bound_gap < 0.15, bound_gap


def test_cached_and_public_nutpie_draw_the_same_numbers(outcomes: pl.DataFrame) -> None:
    """Fails if the cached callbacks compute another log density or gradient, or if the seed,
    initial points or data layout differ from nutpie's own path."""
    model = build_rasch_model(index_design(outcomes), "rasch")
    short = replace(FIT, draws=200, tune=200, chains=2)
    cached = engines.sample_posterior(model, replace(short, engine="cached"))
    public = engines.sample_posterior(model, replace(short, engine="nutpie"))
    for name in ("theta", "b"):
        np.testing.assert_array_equal(cached.posterior[name].values, public.posterior[name].values)
    # Both carry the data groups PyMC adds to nutpie's draws.
    assert {"observed_data", "constant_data"} <= set(cached.children) & set(public.children)


def test_auto_falls_back_to_public_nutpie_with_one_warning(outcomes, monkeypatch, caplog) -> None:
    """Fails if a failed internals check crashes the fit or warns once per fit."""
    monkeypatch.setattr(compiled, "TESTED_NUTPIE_VERSIONS", ("0.0.0",))
    monkeypatch.setattr(engines, "_warned", set())
    model = build_rasch_model(index_design(outcomes), "rasch")
    short = replace(FIT, draws=50, tune=50, chains=1, engine="auto")
    with caplog.at_level(logging.WARNING, logger=engines.__name__):
        for _ in range(2):
            assert engines.sample_posterior(model, short).posterior["theta"].sizes["draw"] == 50
    warnings = [record for record in caplog.records if record.name == engines.__name__]
    assert len(warnings) == 1 and "public nutpie" in warnings[0].getMessage()
    with pytest.raises(AuditError, match="fit.engine=cached cannot run here: nutpie"):
        engines.sample_posterior(model, replace(short, engine="cached"))


def test_auto_survives_internals_that_moved_after_the_check(outcomes, monkeypatch) -> None:
    """The check passes but the private helper changed shape: auto still fits."""
    def moved(*args, **kwargs):
        raise TypeError("_make_functions() got an unexpected keyword argument")

    monkeypatch.setattr(compiled, "compile_model", moved)
    model = build_rasch_model(index_design(outcomes), "rasch")
    short = replace(FIT, draws=50, tune=50, chains=1, engine="auto")
    assert engines.sample_posterior(model, short).posterior["b"].sizes["item"] == 12
    with pytest.raises(TypeError):
        engines.sample_posterior(model, replace(short, engine="cached"))


def test_an_unknown_engine_is_one_line() -> None:
    with pytest.raises(AuditError, match="fit.engine='numpyro' is not an engine; choose one of "
                                         "auto, cached, nutpie, pymc"):
        engines.sample_posterior(None, replace(FIT, engine="numpyro"))
