"""Which sampler fits a model: ``fit.engine``.

* ``nutpie``: the public path, ``nutpie.compile_pymc_model`` then ``nutpie.sample``.
* ``cached``: nutpie on callbacks that a second process loads from disk instead of compiling
  (compiled.py; nutpie 0.16.11 cannot cache its own, see FACTS.md). The same sampler and, for a
  seed, the same draws as ``nutpie``; it saves the 7-11 s compile of every new process, which is
  what repeated fits (plan loops, sweeps, DVC stages) pay again and again.
* ``pymc``: PyMC's own NUTS (C backend), for a user who wants the reference sampler.
* ``auto`` (the default): ``cached`` when its check of nutpie's internals passes, else
  ``nutpie`` with one warning. Never a crash: a cached compile that fails with an internals error
  also falls back.

compiled.py is imported only here and only when asked for, so an upstream change to nutpie's or
PyTensor's internals cannot break the import of the fit code.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import nutpie
import pymc as pm
import pytensor

from audit.errors import AuditError
from audit.interrupts import raise_dropped_interrupt
from audit.methods.rasch.config import ENGINES

if TYPE_CHECKING:
    from xarray import DataTree

    from audit.methods.rasch.config import FitConfig

logger = logging.getLogger(__name__)

# Errors that mean "nutpie's or PyTensor's internals are not what compiled.py expects".
_INTERNALS_ERRORS = (ImportError, AttributeError, TypeError, KeyError)
_warned: set[str] = set()


def cached_path_problem() -> str | None:
    """Why ``fit.engine=cached`` cannot run here, or None."""
    try:
        import audit.methods.rasch.irt.compiled as compiled
    except _INTERNALS_ERRORS as error:
        return f"nutpie's or PyTensor's internals moved ({type(error).__name__}: {error})"
    return compiled.internals_problem()


def warn_once(log: logging.Logger, message: str) -> None:
    """A fallback's warning, once a process: not once per fit of a plan loop."""
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def _fall_back(reason: str) -> None:
    warn_once(logger, f"fit.engine=auto: {reason}; fitting with the public nutpie path instead "
                      "(same draws, a few seconds more to compile)")


def _check(engine: str) -> None:
    if engine not in ENGINES:
        raise AuditError(f"fit.engine={engine!r} is not an engine; choose one of "
                         f"{', '.join(ENGINES)} (fit.engine=auto is the default)")


def compile_nutpie(model: pm.Model, engine: str = "auto"):
    """A nutpie compiled model (``with_data`` works on both kinds) for auto, cached or nutpie.

    Compiled with numba's fast-math off. PyTensor turns it on by default, and under it the
    machine code that runs depends on which numba functions this process compiled and which it
    loaded from the on-disk cache: `python -m audit.compare` gave one result on a cold cache and
    another on a warm one (a fresh CI runner and a developer's machine disagreed on the same
    runs). The log density differed in its last bit at about 0.06% of points, and NUTS's step
    size adaptation carried that into every draw after the first few dozen (probe, 2026-12-07:
    bit-identical cold and warm without fast-math, at the same wall time on that comparison)."""
    with pytensor.config.change_flags(numba__fastmath=False):
        return _compile_nutpie(model, engine)


def _compile_nutpie(model: pm.Model, engine: str):
    _check(engine)
    if engine == "pymc":
        raise AuditError("fit.engine=pymc cannot reuse one compiled model across simulations; "
                         "plan with fit.engine=auto, cached or nutpie")
    if engine in ("auto", "cached"):
        problem = cached_path_problem()
        if problem is None:
            import audit.methods.rasch.irt.compiled as compiled
            try:
                return compiled.compile_model(model)
            except _INTERNALS_ERRORS as error:
                if engine == "cached":
                    raise
                problem = f"the cached compile failed ({type(error).__name__}: {error})"
        if engine == "cached":
            raise AuditError(f"fit.engine=cached cannot run here: {problem}; use fit.engine=auto "
                             "or fit.engine=nutpie")
        _fall_back(problem)
    return nutpie.compile_pymc_model(model)


def sample_posterior(model: pm.Model, fit: FitConfig) -> DataTree:
    """Draws of ``model`` with the sampler ``fit.engine`` names, as an ArviZ DataTree."""
    _check(fit.engine)
    if fit.engine == "pymc":
        idata = pm.sample(draws=fit.draws, tune=fit.tune, chains=fit.chains, cores=fit.cores,
                          target_accept=fit.target_accept, random_seed=fit.seed,
                          progressbar=False, compute_convergence_checks=False, model=model)
        # PyMC catches Ctrl-C and returns the draws made so far: a posterior the run would
        # report as if complete. Fewer draws than asked can only mean that.
        if idata.posterior.sizes["draw"] < fit.draws:
            raise KeyboardInterrupt
        raise_dropped_interrupt()
        return idata
    return sample_compiled(compile_nutpie(model, fit.engine), model, draws=fit.draws,
                           tune=fit.tune, chains=fit.chains, cores=fit.cores,
                           target_accept=fit.target_accept, seed=fit.seed)


def sample_compiled(compiled, model: pm.Model, *, draws: int, tune: int, chains: int,
                    cores: int, target_accept: float, seed: int,
                    save_warmup: bool = True) -> DataTree:
    """nutpie's draws of a compiled model, with the groups and attributes PyMC adds.

    What ``pm.sample(nuts_sampler="nutpie", random_seed=seed)`` does: nutpie gets the seed itself,
    and the observed and constant data and the sampling time are added afterwards (nutpie never
    sees the model), through PyMC's own helper. ``save_warmup=False`` leaves out the tuning
    draws, which fits whose posterior is never written need not convert (nutpie turns every draw
    it keeps into ArviZ groups: with as many tuning steps as draws, half of that work).
    """
    started = time.perf_counter()
    idata = nutpie_sample(compiled, draws=draws, tune=tune, chains=chains, cores=cores,
                          target_accept=target_accept, seed=seed, progress_bar=False,
                          save_warmup=save_warmup)
    elapsed = time.perf_counter() - started
    try:
        from pymc.backends.arviz import patch_nutpie_idata
    except ImportError:  # PyMC moved its helper: the draws are complete without the data groups
        idata.posterior.attrs.update({"sampling_time": elapsed, "tuning_steps": tune})
    else:
        patch_nutpie_idata(idata, model, elapsed)
    return idata


def nutpie_sample(compiled, **settings):
    """``nutpie.sample`` that Ctrl-C (and SIGTERM, audit.interrupts) stops.

    nutpie's blocking call catches KeyboardInterrupt and returns the draws made so far (274,031
    of 3,000,000 asked, in a probe interrupted after 4 s; nutpie 0.16.11): a run's analyse
    stage would go on to report that posterior as if complete. Its background sampler, waited on
    here, is what the blocking call runs, so a seed gives the same draws; on an interrupt it is
    cancelled and the interrupt goes on. Retire when nutpie re-raises KeyboardInterrupt.
    """
    sampler = nutpie.sample(compiled, blocking=False, **settings)
    try:
        draws = sampler.wait()
    except BaseException:
        sampler.cancel()
        raise
    # An interrupt dropped while the model compiled (its garbage is collected then): the draws
    # are complete, but the stop asked for must not wait for the end of the run.
    raise_dropped_interrupt()
    return draws
