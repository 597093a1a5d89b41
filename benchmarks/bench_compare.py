"""Calibration of `python -m audit.compare` on simulated pairs with a known change.

Usage: python benchmarks/bench_compare.py [--pairs 200] [--change 0.8] [--max-worsening 0.5]
       [--draws 500] [--tune 500] [--chains 2] [--seed 1]

Each pair (methods/rasch/comparison_simulation.py) is the default design's shape on one attribute:
two sides answering the same 12 items with the same 3 persona texts per level and 2 replicates,
persona texts pulling with sd 0.3 and each prompt with sd 0.5, shared by both sides (paired).
Half the pairs plant a change of --change logits in the gap (side A's gap 0); the other half plant
no change (both gaps 0.3). Every pair goes through the command's own joint fit
(comparison.fit_joint, nutpie) and change table. Reports the 94% HDI coverage of the planted change over the changed
pairs with its Wilson 95% interval, and the share of no-change pairs that fail the gate
(P(|gap_B| - |gap_A| > --max-worsening) >= 0.95), ending with one line:
RESULT coverage=<c> coverage_low=<l> coverage_high=<h> contains_0.94=<true|false>
       gate_false_fail=<f> pairs=<n> seconds_per_fit=<s>
"""

from __future__ import annotations

import argparse
import logging
import math
import time

import numpy as np

from audit.methods.rasch import comparison
from audit.methods.rasch.comparison_simulation import simulate_pair
from audit.methods.rasch.config import FitConfig

log = logging.getLogger("bench_compare")
HDI_PROB = 0.94


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) \
        / (1 + z * z / trials)
    return centre - half, centre + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--change", type=float, default=0.8)
    parser.add_argument("--max-worsening", type=float, default=0.5)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    fit = FitConfig(model="population", attributes=["gender"], draws=arguments.draws,
                    tune=arguments.tune, chains=arguments.chains, seed=arguments.seed)
    rng = np.random.default_rng(arguments.seed)
    covered = changed = false_fail = unchanged = 0
    started = time.perf_counter()
    for index in range(arguments.pairs):
        planted = arguments.change if index % 2 == 0 else 0.0
        outcomes = simulate_pair(rng, change=planted, gap_a=0.0 if planted else 0.3,
                                 text_sd=0.3, prompt_sd=0.5)
        idata, _ = comparison.fit_joint(outcomes, fit, paired=True)
        row = comparison.change_table(
            idata["posterior"].to_dataset(), ["gender"], rope=fit.rope, hdi_prob=HDI_PROB,
            familywise_alpha=fit.familywise_alpha, max_worsening=arguments.max_worsening
        ).row(0, named=True)
        if planted:
            changed += 1
            covered += row["hdi_low"] <= planted <= row["hdi_high"]
        else:
            unchanged += 1
            false_fail += bool(row["worsens"])
        print(f"pair {index}: planted {planted:+.2f}, change {row['change']:+.2f} "
              f"[{row['hdi_low']:+.2f}, {row['hdi_high']:+.2f}], worsens {row['worsens']}",
              flush=True)
    seconds = (time.perf_counter() - started) / arguments.pairs
    low, high = wilson(covered, changed)
    coverage = covered / changed
    print(f"RESULT coverage={coverage:.3f} coverage_low={low:.3f} coverage_high={high:.3f} "
          f"contains_0.94={str(low <= 0.94 <= high).lower()} "
          f"gate_false_fail={false_fail / unchanged:.3f} pairs={arguments.pairs} "
          f"seconds_per_fit={seconds:.1f}")


if __name__ == "__main__":
    main()
