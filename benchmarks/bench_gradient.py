"""One log-density-and-gradient evaluation of the Rasch model: the one-exp kernels against PyTensor.

Usage: python benchmarks/bench_gradient.py [--respondents 100 --items 50 --replicates 10]

What a NUTS step costs, isolated from the sampler: the project's `rasch` model, with labels as
truth and with the judge's errors (its likelihoods through irt/logit_kernel.py), against the same
models with the likelihoods written with PyTensor's own functions, as the project wrote them
before: ``k * eta - n * softplus(eta)`` and the logaddexp mixture of the judge's two rates. The
judge's rates are what the fit holds them at (irt/judge_cut.py: data slots, fixed within one
imputation, here at the gold means), so a gradient has no rate terms. Each
pair is compiled for the numba backend (what nutpie calls) and for PyTensor's C backend (what
PyMC's own NUTS calls), checked to agree at a random point, then called alternately in --repeats
rounds of --calls evaluations; the figure per round is the mean time of one call, and the table
gives the median round and the range. Calls go through a PyTensor Function with trust_input,
which adds the same few microseconds to both. Ends with (median baseline / median kernel)
RESULT gradient_speedup_numba=<x> gradient_speedup_c=<y> judge_error_speedup_numba=<z>
       judge_error_speedup_c=<w>   (on the same line)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from audit.methods.rasch.irt import build_rasch_model, index_design
from audit.methods.rasch.irt.indexing import RaschData
from audit.methods.rasch.irt.judge_error import (
    FIXED_SENSITIVITY,
    FIXED_SPECIFICITY,
    CellRates,
    JudgeConfusion,
    as_correction,
)
from audit.methods.rasch.irt.rasch import ITEM_PRIOR_SD, THETA_PRIOR_SD

sys.path.insert(0, str(Path(__file__).parent))
from bench_fit import simulate  # noqa: E402

MODES = {"numba": "NUMBA", "c": "FAST_RUN"}
# A judge measured on 240 gold answers, about as good as the default judge.
CONFUSION = JudgeConfusion("favourable", true_1_judged_1=100, true_1_judged_0=8,
                           true_0_judged_0=120, true_0_judged_1=12)


def softplus_logp(successes, trials, logit_p):
    return successes * logit_p - trials * pt.softplus(logit_p)


def logaddexp_logp(successes, trials, logit_p, sensitivity, specificity):
    log_p, log_q = -pt.softplus(-logit_p), -pt.softplus(logit_p)
    log_one = pt.logaddexp(pt.log(sensitivity) + log_p, pt.log1p(-specificity) + log_q)
    log_zero = pt.logaddexp(pt.log1p(-sensitivity) + log_p, pt.log(specificity) + log_q)
    return successes * log_one + (trials - successes) * log_zero


def baseline_model(data: RaschData, rates: CellRates | None) -> pm.Model:
    """The `rasch` model with its likelihood in PyTensor's own functions: the baseline, with the
    judge's rates in the same fixed data slots as the kernel model's."""
    coords = {"respondent": list(data.respondents), "item": list(data.items),
              "cell": np.arange(data.successes.size)}
    with pm.Model(coords=coords) as model:
        respondent_idx = pm.Data("respondent_idx", data.cell_respondent, dims="cell")
        item_idx = pm.Data("item_idx", data.cell_item, dims="cell")
        trials = pm.Data("trials", data.trials, dims="cell")
        successes = pm.Data("successes", data.successes, dims="cell")
        theta = pm.ZeroSumNormal("theta", sigma=THETA_PRIOR_SD, dims="respondent")
        b = pm.Normal("b", mu=0.0, sigma=ITEM_PRIOR_SD, dims="item")
        logit_p = theta[respondent_idx] - b[item_idx]
        if rates is None:
            pm.CustomDist("y", trials, logit_p, logp=softplus_logp, observed=successes,
                          dims="cell")
        else:
            sensitivity, specificity = rates.rate_means()
            pm.CustomDist("y", trials, logit_p, pm.Data(FIXED_SENSITIVITY, sensitivity[0]),
                          pm.Data(FIXED_SPECIFICITY, specificity[0]), logp=logaddexp_logp,
                          observed=successes, dims="cell")
    return model


def evaluator(model: pm.Model, mode: str) -> Callable[[np.ndarray], list[np.ndarray]]:
    function = model.logp_dlogp_function(ravel_inputs=True, mode=mode)._pytensor_function
    function.trust_input = True
    return function


def time_rounds(function: Callable, point: np.ndarray, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        function(point)
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--respondents", type=int, default=100)
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args()
    data = index_design(simulate(arguments.respondents, arguments.items, arguments.replicates, 1))
    print(f"{data.successes.size} cells; {arguments.repeats} rounds of {arguments.calls} calls; "
          "microseconds per call, median (range)")
    speedups = {}
    # One labelling path for every cell: the rates the cut's fit holds, bound to these cells.
    judge_rates = as_correction(CONFUSION).for_cells(None)
    for likelihood, rates in (("gradient", None), ("judge_error", judge_rates)):
        models = {"kernel": build_rasch_model(data, "rasch", confusion=rates),
                  "baseline": baseline_model(data, rates)}
        for label, mode in MODES.items():
            rounds = time_pair(models, mode, arguments)
            medians = {name: statistics.median(found) for name, found in rounds.items()}
            for name, found in rounds.items():
                print(f"  {likelihood:<11} {label:<6} {name:<9} {medians[name]:7.1f} "
                      f"({min(found):.1f}-{max(found):.1f})")
            speedups[f"{likelihood}_speedup_{label}"] = medians["baseline"] / medians["kernel"]
    print("RESULT " + " ".join(f"{name}={value:.2f}" for name, value in speedups.items()))


def time_pair(models: dict[str, pm.Model], mode: str,
              arguments: argparse.Namespace) -> dict[str, list[float]]:
    """Microseconds per call of each model's function, per round, after checking they agree."""
    size = sum(value.size for value in models["kernel"].initial_point().values())
    point = np.random.default_rng(2).normal(0.0, 0.5, size)
    functions = {name: evaluator(model, mode) for name, model in models.items()}
    values = {name: function(point) for name, function in functions.items()}
    for got, expected in zip(values["kernel"], values["baseline"], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    rounds: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(arguments.repeats):  # alternated, so drifting load hits both
        for name, function in functions.items():
            rounds[name].append(time_rounds(function, point, arguments.calls) * 1e6)
    return rounds


if __name__ == "__main__":
    main()
