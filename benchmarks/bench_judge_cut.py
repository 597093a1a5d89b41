"""Fit time of the judge correction: labels as truth against the per-path cut (irt/judge_cut.py).

Usage: python benchmarks/bench_judge_cut.py [--model rasch|population|...]

Simulated smoke-shaped (11 respondents x 3 items x 1 replicate) and default-shaped (17 x 12 x 2)
designs, labels through a 0.9/0.9 labeller, a fifth of them by the "judge" path and the rest by
the "rule" path, with 20 + 30 gold answers (judge 0.8/0.85, rules 0.98/0.98). Each fit runs the
configured FitConfig (4 chains x 1000 + 1000 draws; the cut: fit.judge_imputations fits of the
one compiled model). The first fit of the process pays the compile and is printed but not the
figure to compare. On a checkout without the cut (8ce5156 and before) the same script times the
joint fit (the rates as Beta parameters, updated by the audit labels) for comparison. Ends with
RESULT truth_seconds_default=<a> corrected_seconds_default=<b> corrected_seconds_smoke=<c>
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import polars as pl

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch
from audit.methods.rasch.irt import judge_error

CUT = hasattr(judge_error, "path_correction")
DESIGNS = {"smoke": (3, 1, 2), "default": (12, 2, 8)}  # items, replicates, null personas


def simulated(items: int, replicates: int, nulls: int, seed: int) -> pl.DataFrame:
    """Judged labels of 8 demographic personas, a baseline and `nulls` null personas."""
    rng = np.random.default_rng(seed)
    personas = ([(f"{race}_{gender}", "explicit", gender, race) for gender in ("man", "woman")
                 for race in ("Asian", "Black", "Hispanic", "White")]
                + [("baseline", "baseline", None, None)]
                + [(f"null_{k}", "null", None, None) for k in range(nulls)])
    difficulty = rng.normal(0, 1, items)
    rows = []
    for persona, kind, gender, race in personas:
        theta = rng.normal(0, 0.3)
        for item in range(items):
            truth = rng.random(replicates) < 1 / (1 + np.exp(-(theta - difficulty[item])))
            flip = rng.random(replicates) < 0.1
            rows += [{"respondent": persona, "item": f"i{item:02d}", "y": int(y != f),
                      "model_name": "m", "persona_kind": kind, "gender": gender, "race": race}
                     for y, f in zip(truth, flip, strict=True)]
    table = pl.DataFrame(rows, infer_schema_length=None).with_row_index("row")
    return table.with_columns(label_source=pl.when(pl.col("row") % 5 == 0).then(
        pl.lit("judge")).otherwise(pl.lit("rule"))).drop("row")


def gold(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for path, n, sensitivity, specificity in (("judge", 10, 0.8, 0.85), ("rule", 15, 0.98, 0.98)):
        for truth, rate in (("favourable", sensitivity), ("unfavourable", specificity)):
            other = "unfavourable" if truth == "favourable" else "favourable"
            rows += [{"true_label": truth, "label": truth if rng.random() < rate else other,
                      "label_source": path} for _ in range(n)]
    return pl.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="rasch")
    args = parser.parse_args()
    counts = (judge_error.path_correction(gold(6), "favourable") if CUT
              else judge_error.judge_confusion(gold(6), "favourable"))
    fit = FitConfig(model=args.model)
    if args.model == "population":  # conf/fit/population.yaml's sampler
        fit = replace(fit, draws=2000, tune=1000, target_accept=0.95)
    fit_rasch(simulated(3, 1, 2, seed=1), fit, confusion=counts)  # compile caches, untimed
    seconds = {}
    for name, (items, replicates, nulls) in DESIGNS.items():
        labels = simulated(items, replicates, nulls, seed=3)
        for corrected in (False, True):
            started = time.perf_counter()
            result = fit_rasch(labels if CUT else labels.drop("label_source"), fit,
                               confusion=counts if corrected else None)
            seconds[(name, corrected)] = time.perf_counter() - started
            print(f"{name:8s} {'corrected' if corrected else 'as truth':9s} "
                  f"{seconds[(name, corrected)]:5.1f} s  R-hat max "
                  f"{result.diagnostics.rhat_max:.3f}  bulk ESS min "
                  f"{result.diagnostics.ess_bulk_min:.0f}", flush=True)
    print(f"RESULT truth_seconds_default={seconds[('default', False)]:.1f} "
          f"corrected_seconds_default={seconds[('default', True)]:.1f} "
          f"corrected_seconds_smoke={seconds[('smoke', True)]:.1f}")


if __name__ == "__main__":
    main()
