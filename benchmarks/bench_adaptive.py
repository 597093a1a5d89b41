"""Adaptive audits against the fixed design on the same simulated answers (issue 36).

Usage: python benchmarks/bench_adaptive.py [--seeds 60] [--minutes 30] [--text-sd 0.6]
[--gaps 0 0.5 1] [--quick]

Each simulated audit has the default design's shape (one model, a baseline, two persona texts per
gender x race cell, 4 null personas, 12 items, --replicates answers each (1: a pool of 252
prompts, the default audit since e0351c3; 2: 504)), the planning
defaults' item sd (2.0), null sd (1.0) and judge (0.95/0.95 known from 25 gold answers a class),
a persona-text sd of --text-sd, and a planted group gap of 0, 0.5 or 1 logit (--gaps) between
Black and White. Every prompt of the pool gets its label once (simulation.simulate_outcomes); then

* the fixed design fits all of them (fit_rasch, the audit's fit config, the fast sampling below);
* the adaptive design (methods/rasch/adaptive.py, --round-prompts a round (a quarter of the
  pool), the budget the whole pool) asks them round by round, reading the same labels, with the same fit at each look.

Both go through the CI verdict's rule (power.ci_failures). Per gap it prints the prompts the
adaptive design asked against the fixed design's (the median ratio), how it stopped, and:

* decision_agreement: over the contrasts the fixed design decides (`different` or `equivalent`),
  how often the adaptive design reaches the same decision (a futility stop where the fixed design
  decided counts as a disagreement); also split by whether the fixed decision matches the planted
  truth (fixed_right: `different` with the planted sign, `equivalent` inside the ROPE), since at
  gaps up to 1 logit most fixed decisions are false `different`s;
* false_different_rate: audits with any `different` among the contrasts whose truth is zero
  (over the null designs, gap 0, and over all);
* power at the 1-logit gap: how often CI fails on the planted contrast, adaptive minus fixed;
* the lost contrasts (decided by the fixed design, not by the adaptive one) by how the run
  stopped and at what prompts share (a loss at the first look could be won back without
  moving the median share; one at half the budget only by asking more than half);
* undecided_by_both: of the contrasts open at an adaptive futility stop, how many the fixed design
  left undecided too (the savings do not come from giving up on contrasts it would decide).

The fit is the fast one of bench_calibration (--draws and --tune per chain, 2 chains, one compiled
model reused: every look of every audit has the same shape, fit_rasch's pool; --imputations
judge-error imputations instead of 4); --check audits' fixed designs are also fitted with the
audit's own sampling, to compare their decisions. --minutes stops starting new seeds (each seed
runs every gap, so the gaps keep equal counts). A larger gap (--gaps 0 0.5 1 2) adds an arm where
the fixed default design decides contrasts: at gaps up to 1 logit it decides about one contrast in
nine audits, too few to measure decision agreement on. The RESULT line's prompts_ratio and
decision_agreement are over every gap run; false_different_rate over the null designs (gap 0),
power_1logit_vs_fixed over the 1-logit ones.

Ends with one machine-readable line:
RESULT prompts_ratio=<adaptive/fixed, median> decision_agreement=<x> false_different_rate=<y>
power_1logit_vs_fixed=<z>
--quick runs 6 items, two gaps and one seed: a check that the benchmark runs, not a measurement.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_calibration import (  # noqa: E402  (a sibling script: the same design and fit)
    ATTRIBUTES,
    PLANTED,
    audit_fit_config,
    effects_of,
    interval,
)

from audit.config import DesignConfig  # noqa: E402
from audit.methods.rasch.adaptive import (  # noqa: E402
    AdaptiveRule,
    answers_from,
    design_rule,
    run_adaptive,
)
from audit.methods.rasch.config import FitConfig, PlanConfig  # noqa: E402
from audit.methods.rasch.irt import fit_rasch  # noqa: E402
from audit.methods.rasch.power import ci_failures, config_components  # noqa: E402
from audit.methods.rasch.simulation import (  # noqa: E402
    CompiledSampler,
    default_shaped_prompts,
    simulate_outcomes,
    true_gap,
)

GAPS = (0.0, 0.5, 1.0)
DECIDED = ("different", "equivalent")


def fixed_was_right(row: dict, gap: float) -> bool:
    """Whether a decided contrast of the fixed design matches the planted truth: `different`
    where the gap is not zero and the estimate has its sign, `equivalent` where the gap lies
    inside the ROPE. At gaps up to 1 logit most of the fixed design's decisions are its errors
    (a `different` on a zero gap), and an adaptive run that does not repeat one is no loss."""
    if row["fixed"] == "different":
        return gap != 0 and bool(np.sign(row["mean"]) == np.sign(gap))
    return abs(gap) <= row["rope_high"]


def compare(fixed: pl.DataFrame, adaptive: pl.DataFrame, gap: float) -> dict[str, float]:
    """One audit: agreement on the fixed design's decided contrasts, false `different`s, the
    planted contrast's CI outcome, and what the open contrasts of the adaptive design were."""
    effects = effects_of(gap)
    failed_fixed, failed_adaptive = ci_failures(fixed), ci_failures(adaptive)
    joined = fixed.select("model_name", "attribute", "level_a", "level_b", "mean", "rope_high",
                          pl.col("decision").alias("fixed")).join(
        adaptive.select("model_name", "attribute", "level_a", "level_b",
                        pl.col("decision").alias("adaptive")),
        on=["model_name", "attribute", "level_a", "level_b"])
    decided = joined.filter(pl.col("fixed").is_in(DECIDED))
    rows = list(decided.iter_rows(named=True))
    right = [fixed_was_right(row, true_gap(effects, row["attribute"], row["level_a"],
                                           row["level_b"])) for row in rows]
    same = [row["fixed"] == row["adaptive"] for row in rows]
    open_rows = joined.filter(pl.col("adaptive") == "undecided")
    zero = [key for key in failed_adaptive if true_gap(effects, *key[1:]) == 0]
    planted = (next(iter(failed_fixed))[0], *PLANTED)
    return {"fixed_decided": decided.height,
            "agreed": int(sum(same)),
            "fixed_right": int(sum(right)),
            "agreed_right": int(sum(agree and ok for agree, ok in zip(same, right, strict=True))),
            "open": open_rows.height,
            "open_undecided_by_fixed": int((open_rows["fixed"] == "undecided").sum()),
            "false_fixed": float(any(failed_fixed[key] for key in zero)),
            "false_adaptive": float(any(failed_adaptive[key] for key in zero)),
            "power_fixed": float(failed_fixed[planted]),
            "power_adaptive": float(failed_adaptive[planted])}


def simulate(pool: pl.DataFrame, fit: FitConfig, rule: AdaptiveRule, text_sd: float, gaps,
             seeds: int, check: int, full_fit: FitConfig, minutes: float,
             rng: np.random.Generator) -> tuple[pl.DataFrame, list[tuple[str, str]]]:
    sampler = CompiledSampler(engine=fit.engine)
    components = config_components(PlanConfig(text_sd=text_sd))
    confusion = components.gold_counts(fit.outcome)
    cells = (pool.select(pl.col("respondent_id").alias("respondent"),
                         pl.col("item_id").alias("item"), "model_name", "persona_kind",
                         *ATTRIBUTES).unique(["respondent", "item"]))
    rows, checks = [], []
    started = time.perf_counter()
    # Seeds outside, gaps inside: stopped by --minutes, every gap has the same number of audits.
    for seed in range(seeds):
        if time.perf_counter() - started > minutes * 60:
            logging.info("--minutes %.0f reached after %d seeds", minutes, seed)
            break
        for gap in gaps:
            labels = simulate_outcomes(pool, components, effects_of(gap), rng).with_columns(
                pool.get_column("replicate"))
            seeded = dataclasses.replace(fit, seed=seed)
            fixed = fit_rasch(labels.drop("replicate"), seeded, sample=sampler,
                              confusion=confusion, pool=cells)

            adaptive = run_adaptive(pool, answers_from(labels), seeded, rule, sample=sampler,
                                    confusion=confusion)
            rows.append({"gap": gap, "seed": seed, "prompts": adaptive.prompts,
                         "ratio": adaptive.prompts / pool.height, "stop": adaptive.stop,
                         "looks": adaptive.rounds.height,
                         "rhat_max": fixed.diagnostics.rhat_max,
                         **compare(fixed.contrasts, adaptive.fit.contrasts, gap)})
            if len(checks) < check * 7:
                full = fit_rasch(labels.drop("replicate"),
                                 dataclasses.replace(full_fit, seed=seed), confusion=confusion)
                checks.extend(zip(fixed.contrasts.sort("attribute", "level_a", "level_b")
                                  ["decision"].to_list(),
                                  full.contrasts.sort("attribute", "level_a", "level_b")
                                  ["decision"].to_list(), strict=True))
        logging.info("seed %d: %d audits so far, %.0f s", seed, len(rows),
                     time.perf_counter() - started)
    seconds = sampler.seconds[1:]
    logging.info("%.2f s a fit's sampling after the first (%d fits, %d compiled shapes)",
                 float(np.mean(seconds)), len(seconds), len(sampler.compiled))
    return pl.DataFrame(rows), checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="population")
    parser.add_argument("--seeds", type=int, default=60, help="simulated audits per gap")
    parser.add_argument("--text-sd", type=float, default=0.6)
    parser.add_argument("--gaps", type=float, nargs="+", default=list(GAPS),
                        help="planted Black - White gaps (logits); each seed runs every gap")
    parser.add_argument("--replicates", type=int, default=1, help="answers per persona and item")
    parser.add_argument("--round-prompts", type=int, default=None,
                        help="prompts a round (default: a quarter of the pool)")
    parser.add_argument("--futility", type=float, default=AdaptiveRule.futility)
    parser.add_argument("--futility-from", type=float, default=AdaptiveRule.futility_from,
                        help="share of the budget asked before futility may stop a run")
    parser.add_argument("--final-share", type=float, default=None,
                        help="share of the family-wise alpha kept for the last look "
                             "(default: AdaptiveRule's)")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--check", type=int, default=3, help="audits also fitted in full")
    parser.add_argument("--imputations", type=int, default=2,
                        help="fit.judge_imputations of the fast fit (the audit's: 4)")
    parser.add_argument("--minutes", type=float, default=math.inf,
                        help="stop starting new seeds after this long")
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for noisy in ("pymc", "audit.methods.rasch.irt", "audit.methods.rasch.adaptive", "pytensor",
                  "arviz"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    started = time.perf_counter()
    gaps, items = tuple(args.gaps), 12
    if args.quick:
        gaps, items, args.seeds, args.check = (0.0, 1.0), 6, 1, 0
        args.draws = args.tune = 150
        args.replicates = 2
    pool = default_shaped_prompts(items=items, replicates=args.replicates)
    full_fit = audit_fit_config(args.model)
    fit = dataclasses.replace(full_fit, draws=args.draws, tune=args.tune, chains=2, cores=2,
                              judge_imputations=args.imputations)
    # The audit's own mapping from design.* to the rule, so a new design key reaches the
    # benchmark as it reaches a run (the budget: the whole pool).
    design = DesignConfig(adaptive=True, round_prompts=args.round_prompts,
                          futility=args.futility, futility_from=args.futility_from)
    rule = design_rule(design, fit.familywise_alpha or 0.05, pool.height)
    if args.final_share is not None:
        rule = dataclasses.replace(rule, final_share=args.final_share)
    rng = np.random.default_rng(args.seed)
    table, checks = simulate(pool, fit, rule, args.text_sd, gaps, args.seeds, args.check,
                             full_fit, args.minutes, rng)
    per_gap = table.group_by("gap").agg(
        pl.len().alias("n"), pl.col("ratio").median().alias("prompts_ratio"),
        pl.col("ratio").mean().alias("mean_ratio"),
        (pl.col("stop") == "futile").mean().alias("futile"),
        (pl.col("stop") == "decided").mean().alias("decided"),
        (pl.col("stop") == "budget").mean().alias("budget"),
        pl.col("fixed_decided").sum(), pl.col("agreed").sum(),
        pl.col("fixed_right").sum(), pl.col("agreed_right").sum(),
        pl.col("false_fixed").mean(), pl.col("false_adaptive").mean(),
        pl.col("power_fixed").mean(), pl.col("power_adaptive").mean(),
        pl.col("open").sum(), pl.col("open_undecided_by_fixed").sum(),
    ).sort("gap")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, tbl_hide_dataframe_shape=True):
        print(per_gap)
    decided, agreed = int(table["fixed_decided"].sum()), int(table["agreed"].sum())
    agreement = agreed / decided if decided else math.nan
    print(f"decision agreement on the fixed design's decided contrasts: "
          f"{interval(agreed, decided) if decided else 'none decided'}")
    right, agreed_right = int(table["fixed_right"].sum()), int(table["agreed_right"].sum())
    wrong, agreed_wrong = decided - right, agreed - agreed_right
    print(f"  on the fixed design's right decisions (the planted truth): "
          f"{interval(agreed_right, right) if right else 'none'}; on its wrong ones: "
          f"{agreed_wrong} of {wrong}")
    lost = (table.with_columns(lost=pl.col("fixed_decided") - pl.col("agreed"))
            .group_by("stop", "ratio").agg(pl.col("lost").sum())
            .filter(pl.col("lost") > 0).sort("stop", "ratio"))
    print("contrasts lost (decided by the fixed design, not by the adaptive one), by how the "
          "run stopped and its prompts share: " + ("; ".join(
              f"{row['stop']} at {row['ratio']:.2f}: {row['lost']}"
              for row in lost.iter_rows(named=True)) or "none"))
    futile = table.filter(pl.col("stop") == "futile")
    print(f"open contrasts at futility stops the fixed design left undecided too: "
          f"{int(futile['open_undecided_by_fixed'].sum())} of {int(futile['open'].sum())}")
    nulls = table.filter(pl.col("gap") == 0)
    print(f"false different (null designs): adaptive {interval(nulls['false_adaptive'].sum(), nulls.height)}, "
          f"fixed {interval(nulls['false_fixed'].sum(), nulls.height)}; all designs: adaptive "
          f"{table['false_adaptive'].mean():.3f}, fixed {table['false_fixed'].mean():.3f}")
    ones = table.filter(pl.col("gap") == 1.0)
    power_diff = math.nan  # --gaps without 1
    if ones.height:
        power_diff = float((ones["power_adaptive"] - ones["power_fixed"]).mean())
        print(f"power at 1 logit: adaptive {ones['power_adaptive'].mean():.3f}, fixed "
              f"{ones['power_fixed'].mean():.3f} (n={ones.height})")
    if checks:
        same = sum(fast == full for fast, full in checks)
        print(f"fast fit ({args.draws} draws x 2 chains) against the audit's own sampling "
              f"({full_fit.draws} x {full_fit.chains}) on {len(checks) // 7} fixed designs: the "
              f"same "
              f"decision on {same} of {len(checks)} contrasts")
    print(f"R-hat above 1.05 in {int((table['rhat_max'] > 1.05).sum())} of {table.height} "
          f"fixed fits; wall time {time.perf_counter() - started:.0f} s")
    print(f"RESULT prompts_ratio={table['ratio'].median():.3f} "
          f"decision_agreement={agreement:.3f} "
          f"false_different_rate={nulls['false_adaptive'].mean():.3f} "
          f"power_1logit_vs_fixed={power_diff:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
