"""Calibration of `python -m audit.compare` on simulated pairs of runs with a known change.

Usage: python benchmarks/bench_compare.py [--pairs 200] [--change 0.8] [--max-worsening 0.5]
       [--replicates 2] [--prompt-sd 0.5] [--side-text-sd 0] [--draws 500] [--tune 500]
       [--chains 2] [--check 10] [--seed 1] [--unpaired] [--quick]

Each pair (methods/rasch/simulation.py simulate_pair) is two runs of the default design's shape
(a baseline, --texts-per-cell (2) persona texts per gender x race cell, 4 null personas, 12 items,
--replicates (2, the default design's until e0351c3 made it 1; kept so the figures in RESULTS.md
reproduce); item sd 1, persona-text sd 0.3, null sd 0.5, 50% base rate, labels as truth) that
share their items and persona texts, with a prompt pull of sd --prompt-sd (0.5) shared by both
sides: one model under two system prompts, paired; --side-text-sd (0) gives each persona text a
pull of its own on each side too (the sides react differently to a text; the planted change is
then the population's, which the sample's change strays from). --unpaired draws each side's
prompt pulls apart (sd --prompt-sd each: two runs whose prompts differ, by design seed or
persona wording) and fits the pair unpaired, as the command does when the prompts differ.
Even pairs plant a change of --change logits in the man vs woman gap (side A's gap 0, side B's
--change); odd pairs plant no change (both gaps 0.3). Race has no gap on either side. Every pair
goes through the command's own joint fit
(comparison.fit_joint with fit=population's priors and target_accept, --draws and --tune per
chain, --chains chains, one compiled model reused across pairs) and change table (94% HDIs; the
decision at the family-wise level over the 7 contrasts; the gate at worsening_prob 0.95).

Reported: the 94% HDI coverage of the planted change (over every pair, and per arm: a planted
change of 0 is a planted change too) with its Wilson 95% interval; how often a no-change pair
fails the gate, i.e. any of its 7 contrasts has P(|gap_B| - |gap_A| > --max-worsening) >= 0.95
(with its Wilson interval), and how often any is decided `different`; how often a fit misses
fit=population's convergence limits (R-hat, ESS; the command's gate fails those too, and an audit
samples far longer than this benchmark does).

Fast-fit check: the first --check pairs are also fitted with fit=population's own sampling (its
draws, tune and chains, as the command does); the table gives how often the two fits agree on
covering and on the gate, and the ratio of their HDI widths.

Ends with one line:
RESULT coverage=<c> coverage_low=<l> coverage_high=<h> contains_0.94=<true|false>
       gate_false_fail=<f> gate_false_fail_high=<u> pairs=<n> seconds_per_fit=<s>
--quick runs 6 pairs with short chains and one check: that the benchmark runs, not a measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from audit.methods.rasch import comparison
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.simulation import (
    CompiledSampler,
    VarianceComponents,
    default_shaped_prompts,
    simulate_pair,
)

sys.path.insert(0, str(Path(__file__).parent))
from bench_shared import audit_fit_config  # noqa: E402

log = logging.getLogger("bench_compare")
ATTRIBUTES = ["gender", "race"]
PLANTED = ("gender", "man", "woman")  # level_a sorts first: the change in man - woman
NO_CHANGE_GAP = 0.3
HDI_PROB = 0.94
Z_95 = 1.959964


def wilson(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) \
        / (1 + z * z / trials)
    return centre - half, centre + half


def planted_effects(change: float) -> tuple[dict, dict]:
    """Side A's and side B's planted effects: a change in the man vs woman gap, or none."""
    gap_a = 0.0 if change else NO_CHANGE_GAP
    return ({"gender": {PLANTED[1]: gap_a}, "race": {}},
            {"gender": {PLANTED[1]: gap_a + change}, "race": {}})


def score(outcomes: pl.DataFrame, fit: FitConfig, planted: float, max_worsening: float,
          sample=None, paired: bool = True) -> dict[str, float]:
    """One pair through the command's joint fit: the planted contrast's coverage and width, and
    whether the gate (any contrast worsening) or a `different` decision fired."""
    idata, diagnostics = comparison.fit_joint(outcomes, fit, paired=paired, sample=sample)
    levels = comparison.comparable_levels(outcomes, ATTRIBUTES).levels
    changes = comparison.change_table(
        idata["posterior"].to_dataset(), levels, rope=fit.rope, hdi_prob=HDI_PROB,
        familywise_alpha=fit.familywise_alpha, max_worsening=max_worsening)
    row = changes.filter((pl.col("attribute") == PLANTED[0]) & (pl.col("level_a") == PLANTED[1])
                         & (pl.col("level_b") == PLANTED[2])).row(0, named=True)
    return {"planted": planted, "change": row["change"], "hdi_low": row["hdi_low"],
            "hdi_high": row["hdi_high"], "width": row["hdi_high"] - row["hdi_low"],
            "covered": float(row["hdi_low"] <= planted <= row["hdi_high"]),
            "gate_fails": float(changes["worsens"].any()),
            "any_different": float((changes["decision"] == "different").any()),
            "converged": float(diagnostics.converged), "rhat_max": diagnostics.rhat_max}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--change", type=float, default=0.8)
    parser.add_argument("--max-worsening", type=float, default=0.5)
    parser.add_argument("--texts-per-cell", type=int, default=2)
    parser.add_argument("--replicates", type=int, default=2)
    parser.add_argument("--prompt-sd", type=float, default=0.5)
    parser.add_argument("--side-text-sd", type=float, default=0.0)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--check", type=int, default=10, help="pairs also fitted in full")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unpaired", action="store_true",
                        help="each side its own prompt pulls, fitted unpaired")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for noisy in ("pymc", "audit.methods.rasch", "pytensor", "arviz"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.quick:
        args.pairs, args.check, args.draws, args.tune = 6, 1, 200, 200
    full_fit = dataclasses.replace(audit_fit_config("population"), attributes=ATTRIBUTES)
    fit = dataclasses.replace(full_fit, draws=args.draws, tune=args.tune, chains=args.chains)
    prompts = default_shaped_prompts(texts_per_cell=args.texts_per_cell,
                                     replicates=args.replicates)
    components = VarianceComponents()
    rng = np.random.default_rng(args.seed)
    sampler = CompiledSampler(engine=fit.engine)
    rows, checks = [], []
    started = time.perf_counter()
    fast_seconds = 0.0  # the fast fits' wall time: what a pair costs without its check
    for index in range(args.pairs):
        planted = args.change if index % 2 == 0 else 0.0
        outcomes = simulate_pair(prompts, components, *planted_effects(planted), rng,
                                 prompt_sd=args.prompt_sd, side_text_sd=args.side_text_sd,
                                 paired=not args.unpaired)
        fitting = time.perf_counter()
        fast = score(outcomes, dataclasses.replace(fit, seed=args.seed + index), planted,
                     args.max_worsening, sample=sampler, paired=not args.unpaired)
        fast_seconds += time.perf_counter() - fitting
        rows.append(fast)
        log.info("pair %d: planted %+.2f, change %+.2f [%+.2f, %+.2f], gate fails %d", index,
                 planted, fast["change"], fast["hdi_low"], fast["hdi_high"], fast["gate_fails"])
        if len(checks) < args.check:
            full = score(outcomes, dataclasses.replace(full_fit, seed=args.seed + index),
                         planted, args.max_worsening, paired=not args.unpaired)
            checks.append({"fast": fast, "full": full})
    seconds = time.perf_counter() - started
    table = pl.DataFrame(rows)
    arms = table.group_by("planted").agg(
        pl.len().alias("pairs"), pl.col("covered").mean().alias("coverage"),
        pl.col("width").mean().alias("hdi_width"), pl.col("gate_fails").mean(),
        pl.col("any_different").mean(), (1 - pl.col("converged").mean()).alias("not_converged"),
        pl.col("rhat_max").max()).sort("planted")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=160, tbl_hide_dataframe_shape=True):
        print(arms)
    covered = int(table["covered"].sum())
    low, high = wilson(covered, table.height)
    unchanged = table.filter(pl.col("planted") == 0.0)
    false_fails = int(unchanged["gate_fails"].sum())
    _, fail_high = wilson(false_fails, unchanged.height)
    print(f"coverage of the planted change: {covered} of {table.height} "
          f"({covered / table.height:.3f}, Wilson 95% {low:.3f}-{high:.3f})")
    print(f"no-change pairs failing the gate: {false_fails} of {unchanged.height} "
          f"(Wilson 95% upper {fail_high:.3f})")
    if checks:
        agree_cover = np.mean([c["fast"]["covered"] == c["full"]["covered"] for c in checks])
        agree_gate = np.mean([c["fast"]["gate_fails"] == c["full"]["gate_fails"] for c in checks])
        ratio = np.mean([c["fast"]["width"] / c["full"]["width"] for c in checks])
        full_converged = np.mean([c["full"]["converged"] for c in checks])
        print(f"fast fit ({fit.draws} + {fit.tune} x {fit.chains}) against fit=population's own "
              f"sampling ({full_fit.draws} + {full_fit.tune} x {full_fit.chains}) on "
              f"{len(checks)} pairs: coverage agrees {agree_cover:.2f}, gate agrees "
              f"{agree_gate:.2f}, width ratio {ratio:.3f}, full fits converged "
              f"{full_converged:.2f}")
    sampling = sampler.seconds[1:] or sampler.seconds
    print(f"wall time {seconds:.0f} s; a fast fit {fast_seconds / table.height:.2f} s, of which "
          f"{float(np.mean(sampling)):.2f} s sampling (after the first, which compiles)")
    print(f"RESULT coverage={covered / table.height:.3f} coverage_low={low:.3f} "
          f"coverage_high={high:.3f} contains_0.94={str(low <= 0.94 <= high).lower()} "
          f"gate_false_fail={false_fails / unchanged.height:.3f} "
          f"gate_false_fail_high={fail_high:.3f} pairs={table.height} "
          f"seconds_per_fit={fast_seconds / table.height:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
