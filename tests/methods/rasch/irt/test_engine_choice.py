"""irt/engines.py's choice of sampler path with nutpie's and PyMC's entry points replaced by
recorders: which path each fit.engine takes, what it hands on, and when auto falls back. No
sampling: test_engines.py fits real models with every engine (slow)."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import compiled, engines

PUBLIC, CACHED = "public nutpie compile", "cached compile"
FIT = FitConfig(draws=30, tune=20, chains=3, cores=2, target_accept=0.9, seed=5)


class Finished:
    """nutpie's background sampler, done: `wait` returns its draws, or raises `interrupt`."""

    def __init__(self, draws, interrupt: BaseException | None = None):
        self.draws, self.interrupt, self.cancelled = draws, interrupt, False

    def wait(self):
        if self.interrupt is not None:
            raise self.interrupt
        return self.draws

    def cancel(self):
        self.cancelled = True


def _draws(count: int):
    import arviz as az
    import numpy as np

    return az.from_dict({"posterior": {"x": np.zeros((3, count))}})


@pytest.fixture()
def paths(monkeypatch):
    """The public and the cached compile return labels, the internals check passes, and
    warn_once's memory is cleared."""
    monkeypatch.setattr(engines.nutpie, "compile_pymc_model", lambda model: PUBLIC)
    monkeypatch.setattr(compiled, "compile_model", lambda model: CACHED)
    monkeypatch.setattr(compiled, "internals_problem", lambda: None)
    monkeypatch.setattr(engines, "_warned", set())
    return monkeypatch


def test_auto_and_cached_compile_the_cached_way_when_its_check_passes(paths):
    """Bug caught: fit.engine=cached compiling with the public path (7-11 s a process)."""
    assert [engines.compile_nutpie(None, engine) for engine in ("auto", "cached", "nutpie")] \
        == [CACHED, CACHED, PUBLIC]


def test_a_failed_internals_check_falls_back_under_auto_once_and_stops_cached(paths, caplog):
    """Bugs caught: the check's answer ignored (the cached path tried on internals that moved),
    auto falling back with no warning or with one per fit of a plan loop, and cached falling
    back to a path the user did not ask for instead of saying why it cannot run."""
    paths.setattr(compiled, "internals_problem", lambda: "nutpie 9.9 is not a tested version")
    with caplog.at_level(logging.WARNING, logger=engines.__name__):
        assert [engines.compile_nutpie(None, "auto") for _ in range(2)] == [PUBLIC] * 2
    assert [record.getMessage() for record in caplog.records] == [
        "fit.engine=auto: nutpie 9.9 is not a tested version; fitting with the public nutpie "
        "path instead (same draws, a few seconds more to compile)"]
    with pytest.raises(AuditError, match="fit.engine=cached cannot run here: nutpie 9.9 is not "
                                         "a tested version; use fit.engine=auto"):
        engines.compile_nutpie(None, "cached")


def test_a_cached_compile_whose_internals_moved_falls_back_under_auto_only(paths, caplog):
    """Bugs caught: auto crashing on the TypeError of a private helper whose signature changed,
    and cached hiding that error behind the public path."""
    def moved(model):
        raise TypeError("_make_functions() got an unexpected keyword argument")

    paths.setattr(compiled, "compile_model", moved)
    with caplog.at_level(logging.WARNING, logger=engines.__name__):
        assert engines.compile_nutpie(None, "auto") == PUBLIC
    assert "the cached compile failed (TypeError: _make_functions()" in caplog.text
    with pytest.raises(TypeError, match="_make_functions"):
        engines.compile_nutpie(None, "cached")


def test_pymc_and_unknown_engines_cannot_compile_a_nutpie_model(paths):
    """Bugs caught: a plan with fit.engine=pymc or a misspelt engine compiled with nutpie
    without a word, instead of the one-line error that names the choices."""
    with pytest.raises(AuditError, match="fit.engine=pymc cannot reuse one compiled model"):
        engines.compile_nutpie(None, "pymc")
    with pytest.raises(AuditError, match="fit.engine='numpyro' is not an engine; choose one"):
        engines.compile_nutpie(None, "numpyro")


def test_sample_posterior_hands_the_fit_settings_to_the_engine_it_names(paths):
    """Bugs caught: PyMC's sampler run without the seed (draws that differ run to run) or on
    another number of cores, and the nutpie path given draws for tune or compiled with auto
    whatever fit.engine said."""
    recorded, draws = [], _draws(30)
    paths.setattr(engines.pm, "sample", lambda **kwargs: recorded.append(kwargs) or draws)
    assert engines.sample_posterior("model", replace(FIT, engine="pymc")) is draws
    assert recorded == [dict(draws=30, tune=20, chains=3, cores=2, target_accept=0.9,
                             random_seed=5, progressbar=False, compute_convergence_checks=False,
                             model="model")]
    paths.setattr(engines, "sample_compiled",
                  lambda compiled_model, model, **kwargs: (compiled_model, model, kwargs))
    assert engines.sample_posterior("model", replace(FIT, engine="nutpie")) == (
        PUBLIC, "model", dict(draws=30, tune=20, chains=3, cores=2, target_accept=0.9, seed=5))


def test_sample_compiled_keeps_out_the_warm_up_and_adds_pymcs_groups(monkeypatch):
    """Bugs caught: save_warmup=False not passed to nutpie (simulated fits converting the
    warm-up draws they never read), and the observed and constant data groups, which PyMC's
    helper adds, missing from the posterior file."""
    import pymc.backends.arviz as pymc_arviz

    sampled, patched = [], []
    monkeypatch.setattr(engines.nutpie, "sample",
                        lambda compiled_model, **kwargs: sampled.append(kwargs)
                        or Finished("idata"))
    monkeypatch.setattr(pymc_arviz, "patch_nutpie_idata",
                        lambda idata, model, elapsed: patched.append((idata, model)))
    assert engines.sample_compiled("compiled", "model", draws=3, tune=2, chains=1, cores=1,
                                   target_accept=0.8, seed=4, save_warmup=False) == "idata"
    assert sampled == [dict(blocking=False, draws=3, tune=2, chains=1, cores=1,
                            target_accept=0.8, seed=4, progress_bar=False, save_warmup=False)]
    assert patched == [("idata", "model")]


def test_sample_compiled_without_pymcs_helper_records_the_sampling_on_the_posterior(
        monkeypatch):
    """A PyMC that moved patch_nutpie_idata: the draws still return, with the sampling time and
    tuning steps PyMC's helper would have added. Bug caught: the draws recorded as tuning steps."""
    import sys

    import arviz as az
    import numpy as np

    idata = az.from_dict({"posterior": {"x": np.zeros((1, 3))}})
    monkeypatch.setattr(engines.nutpie, "sample",
                        lambda compiled_model, **kwargs: Finished(idata))
    monkeypatch.setitem(sys.modules, "pymc.backends.arviz", None)  # its import fails
    engines.sample_compiled("compiled", "model", draws=3, tune=2, chains=1, cores=1,
                            target_accept=0.8, seed=4)
    assert idata.posterior.attrs["tuning_steps"] == 2
    assert "sampling_time" in idata.posterior.attrs


def test_an_interrupt_stops_nutpie_instead_of_returning_the_draws_so_far(monkeypatch):
    """Bugs caught: nutpie's blocking call, which catches Ctrl-C and returns a partial posterior
    the run then reports as its fit, and a sampler left running after the interrupt. The real
    sampler under SIGTERM: tests/cli/test_fit_cli.py."""
    sampler = Finished("draws", interrupt=KeyboardInterrupt())
    monkeypatch.setattr(engines.nutpie, "sample", lambda compiled_model, **kwargs: sampler)
    with pytest.raises(KeyboardInterrupt):
        engines.nutpie_sample("compiled", draws=3)
    assert sampler.cancelled


def test_pymc_returning_fewer_draws_than_asked_is_an_interrupt(paths):
    """PyMC's sampler also catches Ctrl-C and returns the draws so far. Bug caught: those 12 of
    30 draws fitted and reported as the run's posterior."""
    paths.setattr(engines.pm, "sample", lambda **kwargs: _draws(12))
    with pytest.raises(KeyboardInterrupt):
        engines.sample_posterior("model", replace(FIT, engine="pymc"))


def test_an_interrupt_dropped_while_compiling_stops_the_fit_once_it_is_sampled(monkeypatch):
    """An interrupt Python dropped in a garbage-collection callback (the compile makes plenty
    of garbage). Bug caught: the fit, and after it the whole run, went on to exit 0 (probe
    2026-12-07: 1 of 5 signals 0.5 s into a fit)."""
    from dropped_interrupt import DroppingOnCollect

    from audit.interrupts import termination_as_interrupt

    monkeypatch.setattr(engines.nutpie, "sample",
                        lambda compiled_model, **kwargs: Finished("draws"))
    with termination_as_interrupt():
        assert engines.nutpie_sample("compiled", draws=3) == "draws"
        DroppingOnCollect()
        with pytest.raises(KeyboardInterrupt):
            engines.nutpie_sample("compiled", draws=3)
