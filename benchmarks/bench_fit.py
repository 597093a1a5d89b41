"""Rasch fit speed: every fit.engine, and the same model in NumPyro, in one run.

Usage: python benchmarks/bench_fit.py [--respondents 100 --items 50 --replicates 10 --seeds 3]
NumPyro comes with the optional `bench` extra (numpyro, jax on CPU: pip install -e '.[bench]');
without it the NumPyro rows are left out and said so.

Like with like: one simulated data set, one model (the project's `rasch`: zero-sum theta with
sd 1, b ~ N(0, 2), Binomial cells of replicates) and each engine with 4 chains x
--tune + --draws on 2 cores:
* cached (fit.engine=cached, what fit.engine=auto picks when its check passes): the PyMC model on
  nutpie, its C callbacks loaded from the on-disk cache of irt/compiled.py;
* nutpie (fit.engine=nutpie): the public nutpie.compile_pymc_model, compiled in every process;
* pymc (fit.engine=pymc): PyMC's default NUTS (cores=2), whose C backend runs the same
  one-exp likelihood kernel (irt/logit_kernel.py);
* numpyro: the same model written in NumPyro (ZeroSumNormal theta, Binomial cells), NUTS with
  the 4 chains vectorised on the CPU, as HiBayES runs it (JAX compiles in every process);
* numpyro_cached: the same, with JAX's persistent compilation cache on, so that NumPyro gets
  the caching the default gets. It runs in child processes because that cache is process-wide.
Every engine fits once untimed first, so each timed fit finds the caches that a second audit
of the same design finds: in this one process that includes nutpie's in-memory numba functions,
so the public nutpie row is what a loop of fits in one process (a plan) pays. What a new process
pays is timed in child processes and printed apart: the cached engine on an empty cache (the
first fit of a design on a machine), the cached engine with its disk cache warm, and the public
nutpie path (which nutpie 0.16.11 cannot cache on disk).
Efficiency is the smallest bulk ESS over identified quantities only (theta minus its mean, b
minus the mean of theta, and the gap between the mean theta of the first and the
second half of the respondents), divided by the wall time of the whole fit, compilation included
(users wait for it). Each engine runs --seeds times with different sampler seeds on the same data;
the table gives the median and the range. The previous version of this file compared a
non-identified model's minimum ESS (unreliable at R-hat 1.107) with an identified one and mixed
three changes in one ratio: it was not a speed figure. Ends with one machine-readable line
(medians over the seeds):
RESULT ess_per_s_vs_numpyro=<x> ess_per_s_vs_pymc=<y> ess_per_s_cached_vs_nutpie=<n>
       default_rhat_max=<r> default_ess_bulk_min=<e> ess_per_s_vs_numpyro_cached=<z>
       default_cold_seconds=<c> new_process_seconds_cached=<a> new_process_seconds_nutpie=<b>
       (on one line; "default" is the cached engine; NumPyro ratios are nan without numpyro)

With --scale it instead fits the default model on simulated designs from 10 thousand to 1 million
responses, each in its own process so that its peak memory is its own, and prints time, ESS,
R-hat and peak RSS per size, ending with
RESULT scale_max_responses=<n> scale_max_seconds=<s> scale_max_peak_rss_mb=<m>
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import arviz as az
import numpy as np
import polars as pl
import xarray as xr

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import build_rasch_model, index_design
from audit.methods.rasch.irt.engines import sample_posterior
from audit.methods.rasch.irt.indexing import RaschData

logging.basicConfig(level=logging.WARNING)


@dataclass(frozen=True)
class FitFigures:
    seconds: float
    ess_bulk_min: float
    rhat_max: float

    @property
    def ess_per_second(self) -> float:
        return self.ess_bulk_min / self.seconds


SampleArrays = Callable[[RaschData, FitConfig], tuple[np.ndarray, np.ndarray]]
Engine = Callable[[pl.DataFrame, "FitConfig"], "FitFigures"]


def simulate(respondents: int, items: int, replicates: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, respondents)
    b = rng.normal(0.0, 1.0, items)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    y = rng.random((replicates, respondents, items)) < p[None]
    replicate, person, item = np.indices(y.shape).reshape(3, -1)
    return pl.DataFrame({
        "respondent": [f"r{i:04d}" for i in person],
        "item": [f"i{j:03d}" for j in item],
        "y": y.reshape(-1).astype(np.int64),
    })


def identified(theta: np.ndarray, b: np.ndarray) -> xr.Dataset:
    """Quantities every parameterisation identifies, from (chain, draw, k) draws."""
    centre = theta.mean(axis=-1, keepdims=True)
    half = theta.shape[-1] // 2
    gap = theta[..., :half].mean(axis=-1) - theta[..., half:].mean(axis=-1)
    return xr.Dataset({
        "theta_centred": (("chain", "draw", "respondent"), theta - centre),
        "b_relative": (("chain", "draw", "item"), b - centre),
        "half_gap": (("chain", "draw"), gap),
    })


def figures(theta: np.ndarray, b: np.ndarray, seconds: float) -> FitFigures:
    quantities = identified(np.asarray(theta), np.asarray(b))
    ess = az.ess(quantities, method="bulk")
    rhat = az.rhat(quantities)
    return FitFigures(seconds, float(min(ess[name].min() for name in ess.data_vars)),
                      float(max(rhat[name].max() for name in rhat.data_vars)))


def _posterior_arrays(idata) -> tuple[np.ndarray, np.ndarray]:
    return idata.posterior["theta"].values, idata.posterior["b"].values


def fit_engine(engine: str) -> Engine:
    """What fit_rasch samples under fit.engine=ENGINE, timed like the other engines: index, build,
    compile, sample (the summary and diagnostics fit_rasch adds afterwards are not the sampler's
    cost)."""
    def fit(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
        started = time.perf_counter()
        idata = sample_posterior(build_rasch_model(index_design(outcomes), "rasch"),
                                 replace(config, engine=engine))
        return figures(*_posterior_arrays(idata), time.perf_counter() - started)

    return fit




def numpyro_engine(sample_numpyro: SampleArrays) -> Engine:
    def fit_numpyro(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
        started = time.perf_counter()
        theta, b = sample_numpyro(index_design(outcomes), config)
        return figures(theta, b, time.perf_counter() - started)

    return fit_numpyro


def child_fit(arguments: argparse.Namespace, engine: str, config: FitConfig,
              environment: dict[str, str] | None = None) -> FitFigures:
    """One fit in a fresh process (``--child``), which re-simulates the same data."""
    command = [sys.executable, __file__, "--child", engine, "--cache-dir", arguments.cache_dir,
               "--sampler-seed", str(config.seed)]
    for name in ("respondents", "items", "replicates", "seed", "draws", "tune"):
        command += [f"--{name}", str(getattr(arguments, name))]
    child = subprocess.run(command, capture_output=True, text=True, check=True,
                           env={**os.environ, **(environment or {})})
    return FitFigures(**json.loads(child.stdout.strip().splitlines()[-1]))


def run_child(arguments: argparse.Namespace) -> None:
    """Child side of child_fit: the figures of one fit as one JSON line on stdout."""
    outcomes = simulate(arguments.respondents, arguments.items, arguments.replicates,
                        arguments.seed)
    config = FitConfig(draws=arguments.draws, tune=arguments.tune, seed=arguments.sampler_seed)
    if arguments.child == "numpyro_cached":
        import numpyro_rasch

        numpyro_rasch.use_compilation_cache(arguments.cache_dir)
        fitted = numpyro_engine(numpyro_rasch.sample_rasch)(outcomes, config)
    else:
        fitted = fit_engine(arguments.child)(outcomes, config)
    print(json.dumps(dataclasses.asdict(fitted)))


def engines(sample_numpyro: SampleArrays | None,
            arguments: argparse.Namespace) -> dict[str, Engine]:
    def fit_numpyro_cached(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
        return child_fit(arguments, "numpyro_cached", config)

    found = {name: fit_engine(name) for name in ("cached", "nutpie", "pymc")}
    if sample_numpyro is not None:
        found.update(numpyro=numpyro_engine(sample_numpyro), numpyro_cached=fit_numpyro_cached)
    return found


LABELS = {"cached": "fit.engine=cached (auto)", "nutpie": "fit.engine=nutpie",
          "pymc": "fit.engine=pymc, cores=2", "numpyro": "NumPyro NUTS (vectorised)",
          "numpyro_cached": "NumPyro, JAX cache on"}


# (respondents, items, replicates): 10 thousand to 1 million responses. Audits grow in personas
# and replicates more than in items, so respondents carry most of the growth.
SCALE_DESIGNS = ((100, 20, 5), (200, 50, 10), (500, 100, 10), (1000, 100, 10))


def fit_one_size(respondents: int, items: int, replicates: int, seed: int) -> None:
    """Child process of --scale: one default fit, its figures as one JSON line on stdout."""
    outcomes = simulate(respondents, items, replicates, seed)
    fitted = fit_engine("auto")(outcomes, FitConfig())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"responses": outcomes.height, "seconds": fitted.seconds,
                      "ess_bulk_min": fitted.ess_bulk_min, "rhat_max": fitted.rhat_max,
                      "peak_rss_mb": peak_kib / 1024}))


def scale_curve(seed: int) -> None:
    print(f"{'responses':>10} {'cells':>8} {'seconds':>8} {'ESS bulk min':>12} {'R-hat max':>9} "
          f"{'ESS/s':>7} {'peak RSS MB':>11}")
    row: dict = {}
    for respondents, items, replicates in SCALE_DESIGNS:
        child = subprocess.run(
            [sys.executable, __file__, "--one", str(respondents), str(items), str(replicates),
             "--seed", str(seed)], capture_output=True, text=True, check=True)
        row = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{row['responses']:>10} {respondents * items:>8} {row['seconds']:>8.1f} "
              f"{row['ess_bulk_min']:>12.0f} {row['rhat_max']:>9.4f} "
              f"{row['ess_bulk_min'] / row['seconds']:>7.1f} {row['peak_rss_mb']:>11.0f}",
              flush=True)
    print(f"RESULT scale_max_responses={row['responses']} scale_max_seconds={row['seconds']:.1f} "
          f"scale_max_peak_rss_mb={row['peak_rss_mb']:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--respondents", type=int, default=100)
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulated data")
    parser.add_argument("--seeds", type=int, default=3, help="sampler seeds per engine")
    parser.add_argument("--draws", type=int, default=FitConfig.draws)
    parser.add_argument("--tune", type=int, default=FitConfig.tune)
    parser.add_argument("--scale", action="store_true",
                        help="fit 10 thousand to 1 million responses and print the curve")
    parser.add_argument("--one", type=int, nargs=3, metavar=("RESPONDENTS", "ITEMS", "REPLICATES"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=("numpyro_cached", "cached", "nutpie"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    parser.add_argument("--sampler-seed", type=int, default=1000, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        run_child(arguments)
        return
    if arguments.one:
        fit_one_size(*arguments.one, seed=arguments.seed)
        return
    if arguments.scale:
        scale_curve(arguments.seed)
        return
    try:
        # Imported here, not at the top: JAX's import alone would raise the peak memory that the
        # --scale children report. The module sits next to this file.
        import numpyro_rasch
        sample_numpyro = numpyro_rasch.sample_rasch
    except ImportError as error:
        print(f"NumPyro rows left out ({error}): pip install -e '.[bench]' to add them")
        sample_numpyro = None
    with tempfile.TemporaryDirectory(prefix="bench_fit_") as cache_dir:
        arguments.cache_dir = cache_dir
        compare(arguments, engines(sample_numpyro, arguments))


def compare(arguments: argparse.Namespace,
            engines_by_name: dict[str, Engine]) -> None:
    outcomes = simulate(arguments.respondents, arguments.items, arguments.replicates,
                        arguments.seed)
    base = FitConfig(draws=arguments.draws, tune=arguments.tune)
    print(f"data: {arguments.respondents} respondents x {arguments.items} items x "
          f"{arguments.replicates} replicates = {outcomes.height} responses; "
          f"{base.chains} chains x {base.tune} tune + {base.draws} draws, "
          f"{arguments.seeds} sampler seeds")
    # New processes: the cached engine on an empty PyTensor cache (the first fit of this design
    # on a machine), then with that cache warm, and the public nutpie path, which compiles anew.
    empty = {"PYTENSOR_FLAGS": f"base_compiledir={arguments.cache_dir}/pytensor"}
    cold = child_fit(arguments, "cached", replace(base, seed=999), empty)
    warm = child_fit(arguments, "cached", replace(base, seed=999), empty)
    public = child_fit(arguments, "nutpie", replace(base, seed=999), empty)
    for label, fitted in (("cached, empty cache", cold), ("cached, warm cache", warm),
                          ("nutpie (public)", public)):
        print(f"  new process, {label}: {fitted.seconds:.1f} s, {fitted.ess_per_second:.1f} ESS/s",
              flush=True)
    for engine in engines_by_name.values():  # untimed: fills each engine's compile cache
        engine(outcomes, replace(base, seed=999))
    runs: dict[str, list[FitFigures]] = {name: [] for name in engines_by_name}
    for seed in range(arguments.seeds):
        for name, engine in engines_by_name.items():  # interleaved, so load drifts hit every engine
            fitted = engine(outcomes, replace(base, seed=1000 + seed))
            runs[name].append(fitted)
            print(f"  seed {seed} {LABELS[name]:<27} {fitted.seconds:7.1f} s, ESS bulk min "
                  f"{fitted.ess_bulk_min:7.0f}, R-hat max {fitted.rhat_max:.4f}, "
                  f"{fitted.ess_per_second:8.1f} ESS/s", flush=True)
    print(f"{'engine':<28} {'ESS/s median':>12} {'range':>17} {'seconds median':>14} "
          f"{'ESS min median':>14} {'R-hat max':>9}")
    medians = {}
    for name, found in runs.items():
        rates = [fit.ess_per_second for fit in found]
        medians[name] = statistics.median(rates)
        print(f"{LABELS[name]:<28} {medians[name]:>12.1f} {min(rates):>8.1f}-{max(rates):<8.1f} "
              f"{statistics.median(fit.seconds for fit in found):>14.1f} "
              f"{statistics.median(fit.ess_bulk_min for fit in found):>14.0f} "
              f"{max(fit.rhat_max for fit in found):>9.4f}")
    default = runs["cached"]

    def ratio(name: str) -> float:
        return medians["cached"] / medians[name] if name in medians else float("nan")

    print(f"RESULT ess_per_s_vs_numpyro={ratio('numpyro'):.2f} "
          f"ess_per_s_vs_pymc={ratio('pymc'):.2f} "
          f"ess_per_s_cached_vs_nutpie={ratio('nutpie'):.2f} "
          f"default_rhat_max={statistics.median(fit.rhat_max for fit in default):.4f} "
          f"default_ess_bulk_min={statistics.median(fit.ess_bulk_min for fit in default):.0f} "
          f"ess_per_s_vs_numpyro_cached={ratio('numpyro_cached'):.2f} "
          f"default_cold_seconds={cold.seconds:.1f} new_process_seconds_cached={warm.seconds:.1f} "
          f"new_process_seconds_nutpie={public.seconds:.1f}")

if __name__ == "__main__":
    main()
