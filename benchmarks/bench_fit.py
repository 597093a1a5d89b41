"""Rasch fit speed: the project's default against the original audit's model written naively.

Usage: python benchmarks/bench_fit.py [--respondents 100 --items 50 --replicates 10 --seed 1]

One run, the same simulated data for both fits:
* baseline: `rasch_seed` (theta ~ N(0,1), b ~ N(0,1), Bernoulli rows) with PyMC's default NUTS;
* default: the project's `rasch` (zero-sum theta, Binomial cells) with nutpie, via `fit_rasch`.
Both use 4 chains x 1000 tune + 1000 draws on 2 cores. Efficiency is the minimum bulk ESS over
theta and b divided by the wall time of the whole fit (compilation included: users wait for it).
Ends with one machine-readable line:
RESULT ess_per_s_ratio=<x> default_rhat_max=<r> default_ess_bulk_min=<e>

With --scale it instead fits the default model on simulated designs from 10 thousand to 1 million
responses, each in its own process so that its peak memory is its own, and prints time, ESS,
R-hat and peak RSS per size, ending with
RESULT scale_max_responses=<n> scale_max_seconds=<s> scale_max_peak_rss_mb=<m>
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

import arviz as az
import numpy as np
import polars as pl
import pymc as pm

from audit.config import FitConfig
from audit.irt import build_rasch_model, fit_rasch, index_design

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


def figures(idata: az.InferenceData, seconds: float) -> FitFigures:
    summary = az.summary(idata, var_names=["theta", "b"], kind="diagnostics", round_to="none")
    return FitFigures(seconds, float(summary["ess_bulk"].min()), float(summary["r_hat"].max()))


def fit_baseline(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
    started = time.perf_counter()
    with build_rasch_model(index_design(outcomes), "rasch_seed"):
        idata = pm.sample(draws=config.draws, tune=config.tune, chains=config.chains,
                          cores=config.cores, random_seed=config.seed, progressbar=False,
                          compute_convergence_checks=False)
    return figures(idata, time.perf_counter() - started)


def fit_default(outcomes: pl.DataFrame, config: FitConfig) -> FitFigures:
    started = time.perf_counter()
    fit = fit_rasch(outcomes, config)
    return figures(fit.idata, time.perf_counter() - started)


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
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", action="store_true",
                        help="fit 10 thousand to 1 million responses and print the curve")
    parser.add_argument("--one", type=int, nargs=3, metavar=("RESPONDENTS", "ITEMS", "REPLICATES"),
                        help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        fit_one_size(*arguments.one, seed=arguments.seed)
        return
    if arguments.scale:
        scale_curve(arguments.seed)
        return
    outcomes = simulate(arguments.respondents, arguments.items, arguments.replicates,
                        arguments.seed)
    config = FitConfig()
    print(f"data: {arguments.respondents} respondents x {arguments.items} items x "
          f"{arguments.replicates} replicates = {outcomes.height} responses")
    default = fit_default(outcomes, config)
    print(f"default  (rasch, nutpie, Binomial cells): {default.seconds:7.1f} s, ESS bulk min "
          f"{default.ess_bulk_min:7.0f}, R-hat max {default.rhat_max:.3f}, "
          f"{default.ess_per_second:8.2f} ESS/s")
    baseline = fit_baseline(outcomes, config)
    print(f"baseline (rasch_seed, PyMC NUTS, rows):   {baseline.seconds:7.1f} s, ESS bulk min "
          f"{baseline.ess_bulk_min:7.0f}, R-hat max {baseline.rhat_max:.3f}, "
          f"{baseline.ess_per_second:8.2f} ESS/s")
    ratio = default.ess_per_second / baseline.ess_per_second
    print(f"RESULT ess_per_s_ratio={ratio:.2f} default_rhat_max={default.rhat_max:.4f} "
          f"default_ess_bulk_min={default.ess_bulk_min:.0f}")


if __name__ == "__main__":
    main()
