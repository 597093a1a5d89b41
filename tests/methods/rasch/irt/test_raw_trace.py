"""Simulated fits' draws read from nutpie's raw trace (irt/raw_trace.py): nutpie's own posterior
and divergence flags, and nutpie's conversion when the raw trace cannot be read. Real nutpie
sampling (slow)."""

from __future__ import annotations

import logging

import numpy as np
import nutpie
import pymc as pm
import pytest
import xarray as xr

from audit.methods.rasch.irt import engines, raw_trace

pytestmark = pytest.mark.slow

SAMPLING = {"draws": 80, "tune": 50, "chains": 2, "cores": 1, "seed": 11, "target_accept": 0.6}


@pytest.fixture(scope="module")
def funnel():
    """A vector with named levels, a matrix whose dims have no coordinates (so a transposed or
    Fortran-order reshape reads other numbers), a positive scale nutpie samples on the log scale
    (its unconstrained form must not reach the posterior), a deterministic, and Neal's funnel,
    which diverges within a few dozen draws at a low target acceptance (so flags read from
    the wrong rows differ)."""
    rng = np.random.default_rng(0)
    with pm.Model(coords={"level": ["a", "b", "c"]}) as model:
        effect = pm.Normal("effect", 0.0, 1.0, dims="level")
        matrix = pm.Normal("matrix", 0.0, 1.0, shape=(2, 3))
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Deterministic("total", effect.sum() + matrix.sum())
        log_scale = pm.Normal("log_scale", 0.0, 3.0)
        pm.Normal("funnel", 0.0, pm.math.exp(log_scale / 2), shape=9)
        pm.Normal("y", effect[0] + matrix[1, 2], sigma, observed=rng.normal(size=20))
    return model, nutpie.compile_pymc_model(model)


def _nutpies_own(compiled):
    return nutpie.sample(compiled, progress_bar=False, save_warmup=False, **SAMPLING)


def test_raw_draws_are_nutpies_posterior_and_divergence_flags(funnel) -> None:
    """Fails if the tuning draws are kept (another draw count), a matrix is reshaped in another
    order, an unconstrained variable (``sigma_log__``) or a chain's draws end up elsewhere, a
    coordinate is lost, or the divergence flags come from other rows."""
    model, compiled = funnel
    ours = raw_trace.sample_draws(compiled, model, **SAMPLING)
    theirs = _nutpies_own(compiled)
    xr.testing.assert_identical(ours["posterior"].to_dataset(),
                                theirs["posterior"].to_dataset().drop_attrs())
    flags = theirs["sample_stats"]["diverging"]
    assert 0 < int(flags.sum()) < flags.size  # the check has divergences to place
    xr.testing.assert_identical(ours["sample_stats"]["diverging"], flags.drop_attrs())
    assert set(ours["sample_stats"].data_vars) == {"diverging"}


def test_an_untested_nutpie_converts_with_nutpie_and_warns_once(funnel, monkeypatch,
                                                                caplog) -> None:
    """Another nutpie version may lay its raw trace out otherwise: the fit must still return
    nutpie's draws, through nutpie's own conversion, with one warning in a loop of fits."""
    model, compiled = funnel
    monkeypatch.setattr(raw_trace, "TESTED_NUTPIE_VERSIONS", ("0.0.0",))
    monkeypatch.setattr(engines, "_warned", set())
    with caplog.at_level(logging.WARNING, logger=raw_trace.__name__):
        fits = [raw_trace.sample_draws(compiled, model, **SAMPLING) for _ in range(2)]
    assert len(caplog.records) == 1 and "0.0.0" in caplog.records[0].getMessage()
    expected = _nutpies_own(compiled)["posterior"]["effect"].values
    for idata in fits:
        np.testing.assert_array_equal(idata["posterior"]["effect"].values, expected)
        assert "observed_data" in idata.children  # nutpie's conversion, PyMC's groups added


def test_a_trace_laid_out_otherwise_converts_with_nutpie(funnel, monkeypatch, caplog) -> None:
    """A tested version whose trace still is not what the reader expects (a column renamed):
    nutpie's conversion instead of a crash in the middle of a plan."""
    model, compiled = funnel
    monkeypatch.setattr(engines, "_warned", set())

    def renamed(*args, **kwargs):
        raise KeyError("tuning")

    monkeypatch.setattr(raw_trace, "trace_to_datatree", renamed)
    with caplog.at_level(logging.WARNING, logger=raw_trace.__name__):
        idata = raw_trace.sample_draws(compiled, model, **SAMPLING)
    assert "not laid out as expected" in caplog.text
    np.testing.assert_array_equal(idata["posterior"]["effect"].values,
                                  _nutpies_own(compiled)["posterior"]["effect"].values)
