"""Fit time of the judge correction: labels as truth against the per-path cut (irt/judge_cut.py).

Usage: python benchmarks/bench_judge_cut.py [--model rasch|population|...]

Simulated smoke-shaped (11 respondents x 3 items x 1 replicate) and default-shaped designs (the
default audit's shape, simulation.default_shaped_prompts(): 21 personas (a baseline, 16 texts,
two per gender x race cell, 4 null) x 12 items x 1 answer; RESULTS.md's row is still from an
older 17 x 12 x 2 design), labels through a 0.9/0.9 labeller, a fifth of them by
the "judge" path and the rest by the "rule" path, with 20 + 30 gold answers (judge 0.8/0.85,
rules 0.98/0.98). Each fit runs the configured FitConfig (rasch: 4 chains x 1000 tune + 1000
draws; population, as conf/fit/population.yaml: 1000 + 2000, target_accept 0.95). The cut runs
fit.judge_imputations (4) fits of the one compiled model, each drawing at least
judge_cut.MIN_IMPUTATION_DRAWS (2000) a chain, or all of fit.draws when fewer: 4 x (1000 + 2000)
steps a chain against 1000 + 2000 with labels as truth (rasch: 4 x 2000 against 2000), so expect
about 4 times the time. The first fit of the process pays the compile and is printed but not the
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
from audit.methods.rasch.simulation import default_shaped_prompts

CUT = hasattr(judge_error, "path_correction")


def smoke_personas() -> list[tuple[str, str, str | None, str | None]]:
    """8 demographic personas (one text a gender x race cell), a baseline and 2 null ones."""
    return ([(f"{race}_{gender}", "explicit", gender, race) for gender in ("man", "woman")
             for race in ("Asian", "Black", "Hispanic", "White")]
            + [("baseline", "baseline", None, None)]
            + [(f"null_{k}", "null", None, None) for k in range(2)])


def default_personas() -> list[tuple[str, str, str | None, str | None]]:
    """The default audit's personas, from the simulation's default-shaped prompts table."""
    table = default_shaped_prompts().unique("persona_id", maintain_order=True)
    return list(table.select("persona_id", "persona_kind", "gender", "race").iter_rows())


# name: (personas, items, replicates)
DESIGNS = {"smoke": (smoke_personas(), 3, 1), "default": (default_personas(), 12, 1)}


def simulated(personas: list[tuple[str, str, str | None, str | None]], items: int,
              replicates: int, seed: int) -> pl.DataFrame:
    """Judged labels of ``personas`` (id, kind, gender, race) on ``items`` items."""
    rng = np.random.default_rng(seed)
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
    fit_rasch(simulated(*DESIGNS["smoke"], seed=1), fit, confusion=counts)  # compile, untimed
    seconds = {}
    for name, (personas, items, replicates) in DESIGNS.items():
        labels = simulated(personas, items, replicates, seed=3)
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
