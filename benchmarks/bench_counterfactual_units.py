"""The counterfactual design tests on simulated data: level and power of the name-level test
with a crossed factor, and the coverage of their intervals over few units.

Usage: python benchmarks/bench_counterfactual_units.py [--runs 300] [--interval-runs 2000]
[--seed 20261202]

Design tests (methods/counterfactual/analyse_units.design_tests, the table CI judges), on data
of the shipped design's shape: nine names a race x gender cell, two templates x three
replicates, each name its own effect (sd 0.3), noise sd 0.5, women shifted by --gender-effect
(1.0). Per race effect (0 and 0.4) it prints how often the race test rejects at 0.05: at 0 the
test's level (names relabelled within gender), at 0.4 its power, beside the power with no gender
effect (what the crossed factor must not take away). Intervals: how often the design tests'
95% intervals (stats/intervals.py: Student's t over the per-template differences, and over the
names' means pooled within group and stratum) cover 0 on normal data with no effect, at 3, 4, 6
and 8 templates and 3 or 9 names a group (two strata for the stratified one), beside the
percentile bootstrap (stats/bootstrap.py) the tests used before 2026-12-02.

Race x template shift: how often the race test rejects when each template shifts White names
by its own amount (sd 0.25 or 0.5, mean 0 over templates, no race effect on average), at the
shipped two templates and at six: a test over names treats the templates as fixed, so this is
a race gap in these templates, not a false positive of the test, and the rate says how far a
name-test flag should be generalised beyond them.

Ends with `RESULT race_level=<x> race_power=<y> race_power_no_gender=<z>
race_level_template_shift=<s> coverage_t_min=<a> coverage_bootstrap_min=<b>`: s at sd 0.5 over
two templates; the last two the smallest coverage over the unit counts.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import polars as pl

from audit.methods.counterfactual.analyse import StatsSettings
from audit.methods.counterfactual.analyse_units import design_tests
from audit.stats.bootstrap import difference_interval, mean_interval
from audit.stats.intervals import mean_t_interval, stratified_difference_t_interval

NAMES_A_CELL, TEMPLATES, REPLICATES = 9, 2, 3
NAME_SD, NOISE_SD = 0.3, 0.5
TEMPLATE_COUNTS = (3, 4, 6, 8)
NAME_COUNTS = (3, 9)
# Race x template shifts (sd, templates): what a test over names cannot tell from a race gap.
SHIFTS = ((0.25, TEMPLATES), (0.5, 6), (0.5, TEMPLATES))


def simulated(race_effect: float, gender_effect: float, rng: np.random.Generator,
              template_shift_sd: float = 0.0, templates: int = TEMPLATES
              ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Metrics and groups of one simulated run: a race row and a gender row per prompt. With
    template_shift_sd, each template shifts White names by its own amount (mean 0 over
    templates): a race x template interaction and no race effect on average."""
    cells = [(f"{race}{gender}{k}", race, gender) for race in ("Black", "White")
             for gender in ("female", "male") for k in range(NAMES_A_CELL)]
    own = {name: rng.normal(0.0, NAME_SD) for name, _, _ in cells}
    metrics, groups = [], []
    for template in range(templates):
        shift = rng.normal(0.0, template_shift_sd) if template_shift_sd else 0.0
        for replicate in range(REPLICATES):
            for name, race, gender in cells:
                prompt = f"t{template}-{replicate}-{name}"
                metrics.append({"prompt_id": prompt, "sentiment": float(
                    gender_effect * (gender == "female")
                    + (race_effect + shift) * (race == "White")
                    + own[name] + rng.normal(0.0, NOISE_SD))})
                groups += [{"prompt_id": prompt, "model_name": "m", "template_id": f"t{template}",
                            "variant_id": f"name={name}", "replicate": replicate,
                            "factor": factor, "group": group}
                           for factor, group in (("race", race), ("gender", gender))]
    return pl.DataFrame(metrics), pl.DataFrame(groups)


def race_rejections(race_effect: float, gender_effect: float, runs: int,
                    rng: np.random.Generator, settings: StatsSettings,
                    template_shift_sd: float = 0.0, templates: int = TEMPLATES) -> float:
    rejected = 0
    for _ in range(runs):
        metrics, groups = simulated(race_effect, gender_effect, rng, template_shift_sd,
                                    templates)
        row = design_tests(metrics, groups, ["sentiment"], settings).filter(
            pl.col("factor") == "race").row(0, named=True)
        rejected += row["p_value"] < 0.05
    return rejected / runs


def coverages(runs: int, rng: np.random.Generator) -> pl.DataFrame:
    """Share of 95% intervals covering 0, t against the percentile bootstrap, per unit count."""
    rows = []

    def covered(interval) -> bool:
        return interval is not None and interval[0] <= 0.0 <= interval[1]

    for n in TEMPLATE_COUNTS:
        samples = [rng.normal(0.0, 1.0, n) for _ in range(runs)]
        rows.append({"units": f"{n} templates",
                     "t": np.mean([covered(mean_t_interval(x, 0.95)) for x in samples]),
                     "bootstrap": np.mean([covered(mean_interval(x, 999, 0.95, i))
                                           for i, x in enumerate(samples)])})
    for n in NAME_COUNTS:
        pairs = [(rng.normal(0.0, 1.0, n), rng.normal(0.0, 1.0, n)) for _ in range(runs)]
        rows.append({"units": f"{n} names against {n}",
                     "t": np.mean([covered(stratified_difference_t_interval((a,), (b,), 0.95))
                                   for a, b in pairs]),
                     "bootstrap": np.mean([covered(difference_interval(a, b, 999, 0.95, i))
                                           for i, (a, b) in enumerate(pairs)])})
    # Two strata (women shifted by 1), nine names a group in each: t only (the bootstrap the
    # tests used had no strata).
    strata = [tuple(rng.normal(shift, 1.0, NAMES_A_CELL) for shift in (1.0, 1.0, 0.0, 0.0))
              for _ in range(runs)]
    rows.append({"units": "9 names a group in each of 2 strata",
                 "t": np.mean([covered(stratified_difference_t_interval((a1, a2), (b1, b2), 0.95))
                               for a1, b1, a2, b2 in strata]),
                 "bootstrap": None})
    return pl.DataFrame(rows, schema={"units": pl.String, "t": pl.Float64,
                                      "bootstrap": pl.Float64})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="simulated runs per race effect")
    parser.add_argument("--interval-runs", type=int, default=2000,
                        help="normal data sets per unit count")
    parser.add_argument("--gender-effect", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    settings = StatsSettings(bootstrap_resamples=199)  # 1,990 permutations a test
    level = race_rejections(0.0, args.gender_effect, args.runs, rng, settings)
    power = race_rejections(0.4, args.gender_effect, args.runs, rng, settings)
    alone = race_rejections(0.4, 0.0, args.runs, rng, settings)
    print(f"race test at 0.05 over {args.runs} runs each: no race effect {level:.3f}; race "
          f"effect 0.4 {power:.3f} with the gender effect {args.gender_effect:g}, {alone:.3f} "
          f"without it")
    # Its own stream, so the rows above keep the figures they had before these were added.
    shifted_rng = np.random.default_rng([args.seed, 1])
    shifted = {(sd, templates): race_rejections(0.0, args.gender_effect, args.runs, shifted_rng,
                                                settings, sd, templates)
               for sd, templates in SHIFTS}
    for (sd, templates), rate in shifted.items():
        print(f"race test at 0.05, no race effect on average, each of {templates} templates "
              f"shifting White names by its own amount (sd {sd:g}): {rate:.3f}")
    table = coverages(args.interval_runs, rng)
    with pl.Config(tbl_rows=-1, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
        print(f"95% intervals covering 0 over {args.interval_runs} normal data sets each:")
        print(table)
    print(f"wall time {time.perf_counter() - started:.0f} s")
    print(f"RESULT race_level={level:.3f} race_power={power:.3f} race_power_no_gender={alone:.3f} "
          f"race_level_template_shift={shifted[SHIFTS[-1]]:.3f} "
          f"coverage_t_min={table['t'].min():.3f} "
          f"coverage_bootstrap_min={table['bootstrap'].min():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
