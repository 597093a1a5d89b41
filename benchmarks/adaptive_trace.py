"""Traces of adaptive audits to their budget, and stopping rules replayed on them (issue 36).

Usage:
  python benchmarks/adaptive_trace.py run --seed S [--seeds 150] [--gaps 0 0.5 1]
      [--sample-every 4] [--futility 0.2] --out traces_S.parquet
  python benchmarks/adaptive_trace.py replay traces_*.parquet [--futility 0.2 0.1 0.05]
      [--futility-from 0.5 0.75]

Not a benchmark: a tool for choosing design.futility and design.futility_from, whose choice
bench_adaptive.py then measures on seeds the choice never saw.

``run`` simulates the audits bench_adaptive.py simulates (the same design, fit, labels and
sampler seeds for the same --seed and --gaps with --power-gap 0, so the two pair audit by
audit) and fits the fixed design of each. It then runs the adaptive design on a subset of them
with futility never stopping a run (design.futility_from=1): each traced run goes on until it
decides every contrast or spends the budget, and every look's contrasts are kept with their
decision, CI outcome and P(decidable by the budget) (futility.py). --futility still sets which
open contrasts count as alive, and so how the rounds choose their prompts (selection.py), as it
does in a run. The traced subset: every audit where the fixed design decides a contrast (the
only audits where an adaptive run can lose a decision) and every --sample-every-th of the rest
(for the prompts spent, false `different`s and power, which the replay weighs by the inverse of
the sampling rate: a Horvitz-Thompson estimate).

``replay`` stops each traced run where a rule would have stopped it: at the first look with no
open contrast (`decided`), at the budget, or at the first look from ``futility_from`` of the
budget on where no open contrast has P(decidable) >= ``futility`` (`futile`), and reads that
look's decisions. For the --futility the traces were run with, this is exactly the run
bench_adaptive.py makes (the same prompts were chosen at every look before the stop); for a
lower threshold it is approximate, since the rounds of a run with more contrasts alive would
have weighed those contrasts' personas more (so a lower threshold can only do better than its
replay, on the contrasts it keeps alive).
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
from bench_shared import (  # noqa: E402  (a sibling module: the same design and fit)
    PLANTED,
    AdaptiveAudits,
    audit_fit_config,
    effects_of,
    fit_seed,
    right_sign,
    signed_call,
    wilson,
)

from audit.config import DesignConfig  # noqa: E402
from audit.methods.rasch.adaptive import (  # noqa: E402
    answers_from,
    design_rule,
    look_alphas,
    planned_looks,
    run_adaptive,
)
from audit.methods.rasch.futility import contrast_states, text_floors  # noqa: E402
from audit.methods.rasch.power import ci_failures  # noqa: E402
from audit.methods.rasch.selection import first_round  # noqa: E402
from audit.methods.rasch.simulation import (  # noqa: E402
    default_shaped_prompts,
    true_gap,
)

KEYS = ["model_name", "attribute", "level_a", "level_b"]
DECIDED = ("different", "equivalent")
FIXED_LOOK = -1  # the fixed design's fit, kept beside the looks


def look_rows(contrasts: pl.DataFrame, states: pl.DataFrame | None, gap: float, audit: int,
              look: int, prompts: int, weight: float) -> pl.DataFrame:
    """One fit's contrasts as trace rows: decision, mean, CI outcome, the planted truth, and
    P(decidable by the budget) where ``states`` is given (the looks; not the fixed fit)."""
    failed = ci_failures(contrasts)
    effects = effects_of(gap)
    table = contrasts.select(*KEYS, "decision", "mean").with_columns(
        gap=pl.lit(gap), audit=pl.lit(audit), look=pl.lit(look), prompts=pl.lit(prompts),
        weight=pl.lit(weight),
        ci_fail=pl.Series([failed[tuple(row)] for row in contrasts.select(KEYS).iter_rows()]),
        truth=pl.Series([true_gap(effects, *row[1:]) for row in contrasts.select(KEYS)
                         .iter_rows()], dtype=pl.Float64))
    p = (states.get_column("p_decidable") if states is not None
         else pl.Series([None] * contrasts.height, dtype=pl.Float64))
    return table.with_columns(p_decidable=p)


def run(args: argparse.Namespace) -> int:
    pool = default_shaped_prompts(items=12, replicates=1)
    fit = dataclasses.replace(audit_fit_config("population"), draws=args.draws,
                              tune=args.tune, chains=2, cores=2, judge_imputations=2)
    # futility_from=1: futility never stops a traced run; --futility still sets which open
    # contrasts are alive, and so how its rounds choose prompts.
    design = DesignConfig(adaptive=True, futility=args.futility, futility_from=1.0)
    rule = design_rule(design, fit.familywise_alpha or 0.05, pool.height)
    budget = min(rule.max_prompts, pool.height)
    looks = planned_looks(rule, pool.height, first_round(pool, rule.round_prompts).height)
    final_alpha = look_alphas(rule, looks)[-1]  # what run_adaptive's futility reads
    audits = AdaptiveAudits(pool, fit, args.text_sd)
    rng = np.random.default_rng(args.seed)  # bench_adaptive's label stream for this --seed
    parts, started = [], time.perf_counter()
    for audit in range(args.seeds):
        for cell, gap in enumerate(args.gaps):
            labels = audits.labels(gap, rng)
            if audit < args.first:  # drawn all the same: the later audits keep their labels
                continue
            seeded = dataclasses.replace(fit, seed=fit_seed(args.seed, cell, audit))
            fixed = audits.fixed(labels, seeded)
            decided = bool(fixed.contrasts.get_column("decision").is_in(DECIDED).any())
            # The inverse of the audit's chance of a trace; 0: fixed fit kept, not traced.
            weight = (1.0 if decided else float(args.sample_every)
                      if audit % args.sample_every == 0 else 0.0)
            parts.append(look_rows(fixed.contrasts, None, gap, audit, FIXED_LOOK, pool.height,
                                   weight))
            if not weight:
                continue

            def keep(row: dict, look_fit, gap=gap, audit=audit, weight=weight) -> None:
                states = contrast_states(look_fit.contrasts, row["prompts"], budget,
                                         rule.futility, text_floors(look_fit,
                                                                    look_fit.contrasts, pool),
                                         final_alpha=final_alpha)
                parts.append(look_rows(look_fit.contrasts, states, gap, audit, row["round"],
                                       row["prompts"], weight))

            run_adaptive(pool, answers_from(labels), seeded, rule, sample=audits.sampler,
                         confusion=audits.confusion, on_round=keep)
        logging.info("audit %d of %d: %.0f s", audit + 1, args.seeds,
                     time.perf_counter() - started)
        if audit >= args.first and ((audit + 1) % 10 == 0 or audit + 1 == args.seeds):
            # Written as it goes: a trace cut short still replays over the audits it finished.
            traces = pl.concat(parts).with_columns(seed=pl.lit(args.seed),
                                                   budget=pl.lit(budget))
            traces.write_parquet(args.out)
            logging.info("wrote %s (%d audits a gap)", args.out, audit + 1)
    return 0


def stop_look(looks: pl.DataFrame, budget: int, futility: float,
              futility_from: float) -> tuple[int, str]:
    """The look a rule stops a traced run at, and how (adaptive.stop_reason's order)."""
    numbers = sorted(looks.get_column("look").unique().to_list())
    for look in numbers:
        rows = looks.filter(pl.col("look") == look)
        prompts = int(rows["prompts"][0])
        still = rows.filter(pl.col("decision") == "undecided")
        if still.is_empty():
            return look, "decided"
        if prompts >= budget or look == numbers[-1]:
            return look, "budget"
        if prompts >= futility_from * budget and not (still["p_decidable"] >= futility).any():
            return look, "futile"
    raise AssertionError("a trace without looks")


def replay(traces: pl.DataFrame, futility: float, futility_from: float) -> dict[str, object]:
    """One rule over the traced audits: the figures bench_adaptive.py reports."""
    rows, losses = [], []
    traced = traces.filter(pl.col("weight") > 0)
    for (seed, gap, audit), audit_rows in traced.group_by(["seed", "gap", "audit"]):
        fixed = audit_rows.filter(pl.col("look") == FIXED_LOOK).sort(KEYS)
        looks = audit_rows.filter(pl.col("look") != FIXED_LOOK)
        budget = int(audit_rows["budget"][0])
        look, stop = stop_look(looks, budget, futility, futility_from)
        at_stop = looks.filter(pl.col("look") == look).sort(KEYS)
        pairs = list(zip(fixed.iter_rows(named=True), at_stop.iter_rows(named=True),
                         strict=True))
        decided = [(f, a) for f, a in pairs if f["decision"] in DECIDED]
        agreed = sum(signed_call(f["decision"], f["mean"]) == signed_call(a["decision"],
                                                                          a["mean"])
                     for f, a in decided)
        prompts = int(at_stop["prompts"][0])
        if agreed < len(decided):
            losses.append((stop, prompts / budget, len(decided) - agreed))

        def power(row_pairs, arm: int) -> float:
            for f, a in row_pairs:
                row = (f, a)[arm]
                if (f["attribute"], f["level_a"], f["level_b"]) == PLANTED:
                    return float(row["ci_fail"] and right_sign(row["mean"], gap))
            return 0.0

        rows.append({"seed": seed, "gap": gap, "weight": float(fixed["weight"][0]),
                     "ratio": prompts / budget, "stop": stop,
                     "fixed_decided": len(decided), "agreed": agreed,
                     "false_fixed": float(any(f["ci_fail"] for f, _ in pairs
                                              if f["truth"] == 0)),
                     "false_adaptive": float(any(a["ci_fail"] for f, a in pairs
                                                 if f["truth"] == 0)),
                     "power_fixed": power(pairs, 0), "power_adaptive": power(pairs, 1)})
    table = pl.DataFrame(rows)
    return {"table": table, "losses": losses}


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def rule_line(traces: pl.DataFrame, futility: float, futility_from: float) -> str:
    """One rule replayed on ``traces``: the figures bench_adaptive.py prints, in one line."""
    result = replay(traces, futility, futility_from)
    table = result["table"]
    w = table["weight"].to_numpy()
    decided, agreed = int(table["fixed_decided"].sum()), int(table["agreed"].sum())
    means = table.group_by("gap").agg(
        ((pl.col("ratio") * pl.col("weight")).sum() / pl.col("weight").sum())
        .alias("mean")).sort("gap")
    nulls = table.filter(pl.col("gap") == 0)
    ones = table.filter(pl.col("gap") == 1.0)

    def rate(frame: pl.DataFrame, column: str) -> float:
        if frame.is_empty():
            return math.nan
        return float((frame[column] * frame["weight"]).sum() / frame["weight"].sum())

    losses: dict[tuple[str, float], int] = {}
    for stop, share, count in result["losses"]:
        losses[(stop, round(share, 2))] = losses.get((stop, round(share, 2)), 0) + count
    if decided:
        low, high = wilson(agreed, decided)
        agreement = f"{agreed} / {decided} ({agreed / decided:.3f}, Wilson {low:.2f}-{high:.2f})"
    else:
        agreement = "none decided"
    return (f"{futility:g} | {futility_from:g} | {agreement} | "
            f"{weighted_median(table['ratio'].to_numpy(), w):.2f} / "
            f"{float(np.average(table['ratio'].to_numpy(), weights=w)):.2f} ("
            f"{', '.join(f'{m:.2f}' for m in means['mean'])}) | "
            f"{rate(nulls, 'false_fixed'):.3f} / {rate(nulls, 'false_adaptive'):.3f} | "
            f"{rate(ones, 'power_fixed'):.3f} / {rate(ones, 'power_adaptive'):.3f} | "
            + ("; ".join(f"{stop} {share:.2f} ({count})"
                         for (stop, share), count in sorted(losses.items())) or "none"))


def summarise(args: argparse.Namespace) -> int:
    traces = pl.concat([pl.read_parquet(path) for path in args.traces], how="diagonal_relaxed")
    audits = traces.filter(pl.col("look") == FIXED_LOOK).select("seed", "gap", "audit",
                                                                "weight").unique()
    seeds = sorted(audits["seed"].unique().to_list())
    print(f"{audits.height} simulated audits (all gaps) over seeds {seeds}, gaps "
          f"{sorted(audits['gap'].unique().to_list())}; traced "
          f"{int((audits['weight'] > 0).sum())} (every audit the fixed design decides in, and a "
          f"sample of the rest, weighed by the inverse of its rate)")
    print("futility | from | agreed / fixed decided | prompts share median / mean (means by "
          "gap) | false different gap 0: fixed / adaptive | power at 1 logit: fixed / adaptive "
          "| lost: stop at share (contrasts)")
    for futility in args.futility:
        for futility_from in args.futility_from:
            print(rule_line(traces, futility, futility_from))
            if args.by_seed and len(seeds) > 1:
                for seed in seeds:
                    print(f"  seed {seed}: " + rule_line(
                        traces.filter(pl.col("seed") == seed), futility, futility_from))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    trace = commands.add_parser("run", help="simulate audits and trace their adaptive runs")
    trace.add_argument("--seed", type=int, required=True)
    trace.add_argument("--seeds", type=int, default=150, help="simulated audits per gap")
    trace.add_argument("--gaps", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    trace.add_argument("--text-sd", type=float, default=0.6)
    trace.add_argument("--futility", type=float, default=DesignConfig.futility,
                       help="which open contrasts are alive while the rounds choose prompts")
    trace.add_argument("--sample-every", type=int, default=4,
                       help="trace every k-th audit where the fixed design decides nothing")
    trace.add_argument("--first", type=int, default=0,
                       help="skip the audits before this one (their labels are still drawn, so "
                            "a trace cut short can be continued into another file)")
    trace.add_argument("--draws", type=int, default=500)
    trace.add_argument("--tune", type=int, default=500)
    trace.add_argument("--out", type=Path, required=True)
    rules = commands.add_parser("replay", help="replay stopping rules on traces")
    rules.add_argument("traces", type=Path, nargs="+")
    rules.add_argument("--futility", type=float, nargs="+", default=[DesignConfig.futility])
    rules.add_argument("--futility-from", type=float, nargs="+",
                       default=[DesignConfig.futility_from])
    rules.add_argument("--by-seed", action="store_true", help="each seed's line too")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for noisy in ("pymc", "audit.methods.rasch.irt", "audit.methods.rasch.adaptive", "pytensor",
                  "arviz"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return run(args) if args.command == "run" else summarise(args)


if __name__ == "__main__":
    sys.exit(main())
