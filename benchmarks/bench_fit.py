"""Rasch fit speed: the default (nutpie) against the same model on PyMC's NUTS and in NumPyro.

Usage: python benchmarks/bench_fit.py [--respondents 100 --items 50 --replicates 10 --seeds 3]
Needs the optional `bench` extra (numpyro, jax on CPU): pip install -e '.[bench]'.

Like with like: one simulated data set, one model (the project's `rasch`: zero-sum theta with
sd 1, b ~ N(0, 2), Binomial cells of replicates) and four engines, each with 4 chains x
--tune + --draws on 2 cores:
* default: what `fit_rasch` samples (the PyMC model on nutpie, 2 cores, its C callbacks loaded
  from the on-disk cache of irt/compiled.py);
* pymc: the same PyMC model on PyMC's default NUTS (cores=2), whose C backend runs the same
  one-exp likelihood kernel (irt/logit_kernel.py) as the default;
* numpyro: the same model written in NumPyro (ZeroSumNormal theta, Binomial cells), NUTS with
  the 4 chains vectorised on the CPU, as HiBayES runs it (JAX compiles in every process);
* numpyro_cached: the same, with JAX's persistent compilation cache on, so that NumPyro gets
  the caching the default gets. It runs in child processes because that cache is process-wide.
Every engine fits once untimed first, so each timed fit finds the caches that a second audit
of the same design finds. The default's first fit on an empty cache is timed separately in a
child process and printed, not used in the ratios.
Efficiency is the smallest bulk ESS over identified quantities only (theta minus its mean, b
minus the mean of theta, and the gap between the mean theta of the first and the
second half of the respondents), divided by the wall time of the whole fit, compilation included
(users wait for it). Each engine runs --seeds times with different sampler seeds on the same data;
the table gives the median and the range. The previous version of this file compared a
non-identified model's minimum ESS (unreliable at R-hat 1.107) with an identified one and mixed
three changes in one ratio: it was not a speed figure. Ends with one machine-readable line
(medians over the seeds):
RESULT ess_per_s_vs_numpyro=<x> ess_per_s_vs_pymc=<y> default_rhat_max=<r> default_ess_bulk_min=<e>
       ess_per_s_vs_numpyro_cached=<z> default_cold_seconds=<c>   (on the same line)

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
import pymc as pm
import xarray as xr

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import build_rasch_model, index_design
from audit.methods.rasch.irt.indexing import RaschData
from audit.methods.rasch.irt.rasch import sample_with_nutpie

logging.basicConfig(level=logging.WARNING)


@dataclass(frozen=True)
class FitFigures:
    seconds: float
    ess_bulk_min: float
    rhat_max: float

    @property
    def ess_per_second(self) -> float:
        return self.ess_bulk_min / self.seconds


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


def _posterior_arrays(idata: az.InferenceData) -> tuple[np.ndarray, np.ndarray]:
    return idata.posterior["theta"].values, idata.posterior["b"].values


def fit_default(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
    """What fit_rasch samples, timed like the other engines: index, build, compile, sample (the
    summary and diagnostics fit_rasch adds afterwards are not the sampler's cost)."""
    started = time.perf_counter()
    idata = sample_with_nutpie(build_rasch_model(index_design(outcomes), "rasch"), config)
    return figures(*_posterior_arrays(idata), time.perf_counter() - started)


def fit_pymc(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
    started = time.perf_counter()
    with build_rasch_model(index_design(outcomes), "rasch"):
        idata = pm.sample(draws=config.draws, tune=config.tune, chains=config.chains,
                          cores=config.cores, random_seed=config.seed, progressbar=False,
                          target_accept=config.target_accept, compute_convergence_checks=False)
    return figures(*_posterior_arrays(idata), time.perf_counter() - started)


SampleArrays = Callable[[RaschData, FitConfig], tuple[np.ndarray, np.ndarray]]
Engine = Callable[[pl.DataFrame, FitConfig], FitFigures]


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
        fitted = fit_default(outcomes, config)
    print(json.dumps(dataclasses.asdict(fitted)))


def engines(sample_numpyro: SampleArrays, arguments: argparse.Namespace) -> dict[str, Engine]:
    def fit_numpyro_cached(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
        return child_fit(arguments, "numpyro_cached", config)

    return {"default": fit_default, "pymc": fit_pymc,
            "numpyro": numpyro_engine(sample_numpyro), "numpyro_cached": fit_numpyro_cached}


LABELS = {"default": "default (nutpie)", "pymc": "PyMC NUTS, cores=2",
          "numpyro": "NumPyro NUTS (vectorised)", "numpyro_cached": "NumPyro, JAX cache on"}


# (respondents, items, replicates): 10 thousand to 1 million responses. Audits grow in personas
# and replicates more than in items, so respondents carry most of the growth.
SCALE_DESIGNS = ((100, 20, 5), (200, 50, 10), (500, 100, 10), (1000, 100, 10))


def fit_one_size(respondents: int, items: int, replicates: int, seed: int) -> None:
    """Child process of --scale: one default fit, its figures as one JSON line on stdout."""
    outcomes = simulate(respondents, items, replicates, seed)
    fitted = fit_default(outcomes, FitConfig())
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
    parser.add_argument("--child", choices=("numpyro_cached", "default"), help=argparse.SUPPRESS)
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
    except ImportError as error:
        parser.error(f"the comparison needs numpyro and jax ({error}): pip install -e '.[bench]'")
    with tempfile.TemporaryDirectory(prefix="bench_fit_") as cache_dir:
        arguments.cache_dir = cache_dir
        compare(arguments, engines(numpyro_rasch.sample_rasch, arguments))


def compare(arguments: argparse.Namespace,
            engines_by_name: dict[str, Engine]) -> None:
    outcomes = simulate(arguments.respondents, arguments.items, arguments.replicates,
                        arguments.seed)
    base = FitConfig(draws=arguments.draws, tune=arguments.tune)
    print(f"data: {arguments.respondents} respondents x {arguments.items} items x "
          f"{arguments.replicates} replicates = {outcomes.height} responses; "
          f"{base.chains} chains x {base.tune} tune + {base.draws} draws, "
          f"{arguments.seeds} sampler seeds")
    # An empty PyTensor cache: what the first fit of this design on a new machine costs.
    cold = child_fit(arguments, "default", replace(base, seed=999),
                     {"PYTENSOR_FLAGS": f"base_compiledir={arguments.cache_dir}/pytensor"})
    print(f"  default on an empty cache (first fit of this design): {cold.seconds:.1f} s, "
          f"{cold.ess_per_second:.1f} ESS/s", flush=True)
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
    default = runs["default"]
    print(f"RESULT ess_per_s_vs_numpyro={medians['default'] / medians['numpyro']:.2f} "
          f"ess_per_s_vs_pymc={medians['default'] / medians['pymc']:.2f} "
          f"default_rhat_max={statistics.median(fit.rhat_max for fit in default):.4f} "
          f"default_ess_bulk_min={statistics.median(fit.ess_bulk_min for fit in default):.0f} "
          f"ess_per_s_vs_numpyro_cached={medians['default'] / medians['numpyro_cached']:.2f} "
          f"default_cold_seconds={cold.seconds:.1f}")


if __name__ == "__main__":
    main()
