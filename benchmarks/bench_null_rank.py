"""Calibration of null_percentile (irt/null_rank.py) on simulated designs with no group gap.

Usage: python benchmarks/bench_null_rank.py [--models population rasch] [--seeds 200]
[--text-sd 0.6] [--drop-texts 0] [--drop-patterns 8] [--draws 300] [--tune 300] [--seed 20261129]

Each simulated audit has the default design's shape (methods/rasch/simulation.py: one model, a
baseline, 2 persona texts per gender x race cell (2 x 4), 4 null personas, 12 items, one answer
each), the planning defaults' item sd (2.0, as bench_calibration and bench_adaptive), labels as
truth, no planted gap, and persona texts that spread exactly as much as the null personas (text
sd = null sd, --text-sd). So every contrast is a placebo: when persona texts move
the model as much as random strings do and no group differs, a calibrated percentile ranks a
contrast above 97% of null-vs-null gaps about 3% of the time and has median 50.

``--drop-texts N`` leaves out N of the 16 explicit texts, so levels differ in size and a cell may
lose both texts: the rank's group sizes (n_a, n_b) and the plain fits' cell-weighted factor are
then not those of the balanced design, which is what this setting checks. Which texts go is one
of ``--drop-patterns`` draws (seeded by --seed), the audits taking them in turn: each pattern
compiles a model of its own (the personas' levels are constants of the compiled graph), so a new
pattern for every audit would spend most of the run compiling. The script prints how many
audits lost a whole cell.

The audit's own ``fit_rasch`` fits each with the audit's fit config (conf/fit/<model>.yaml:
its priors and target_accept, 0.95 for population) but --draws and --tune per chain and 2
chains, one compiled model a design reused across data sets; each fit's seed is a hash of
(--seed, model, audit), not the audit's index. Per model the script prints the contrasts'
median percentile, the shares at or above 90 and 97, and their Monte Carlo standard errors
clustered by simulated audit (an audit's seven contrasts share its null personas, so they are not
independent). Ends with one machine-readable line:
RESULT <model>_median=<x> <model>_share_97=<y> ... for each model.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_shared import audit_fit_config, fit_seed  # noqa: E402  (a sibling module)

from audit.methods.rasch.config import PlanConfig  # noqa: E402
from audit.methods.rasch.irt import fit_rasch  # noqa: E402
from audit.methods.rasch.power import config_components  # noqa: E402
from audit.methods.rasch.simulation import (  # noqa: E402
    DEFAULT_GENDERS,
    DEFAULT_RACES,
    CompiledSampler,
    default_shaped_prompts,
    simulate_outcomes,
)

NO_GAP = {"gender": {}, "race": {}}


def clustered_se(values: np.ndarray, audits: np.ndarray) -> float:
    """Standard error of a mean over contrasts, clustered by simulated audit (ratio estimator)."""
    ids = np.unique(audits)
    totals = np.array([values[audits == audit].sum() for audit in ids])
    counts = np.array([(audits == audit).sum() for audit in ids])
    mean = totals.sum() / counts.sum()
    return float(np.sqrt(((totals - mean * counts) ** 2).sum()) / counts.sum())


def drop_texts(prompts: pl.DataFrame, count: int, rng: np.random.Generator) -> pl.DataFrame:
    """``prompts`` without ``count`` of its explicit persona texts, drawn by ``rng``; the
    baseline and the null personas stay."""
    explicit = sorted(prompts.filter(pl.col("persona_kind") == "explicit")
                      .get_column("persona_id").unique().to_list())
    if not 0 <= count < len(explicit):
        raise ValueError(f"--drop-texts {count}: the design has {len(explicit)} explicit texts; "
                         f"leave at least one")
    dropped = rng.choice(explicit, size=count, replace=False).tolist() if count else []
    return prompts.filter(~pl.col("persona_id").is_in(dropped))


def empty_cells(prompts: pl.DataFrame) -> int:
    """Gender x race cells of the default design with no explicit text left."""
    filled = prompts.filter(pl.col("persona_kind") == "explicit").select("gender", "race").unique()
    return len(DEFAULT_GENDERS) * len(DEFAULT_RACES) - filled.height


def percentiles(model: str, seeds: int, text_sd: float, draws: int, tune: int,
                seed: int, drop: int = 0, patterns: int = 1) -> tuple[pl.DataFrame, int]:
    """Every contrast's null_percentile over ``seeds`` simulated no-gap audits, and how many
    of those audits lost a whole cell to ``drop`` (one of ``patterns`` sets of texts left out)."""
    design = default_shaped_prompts(texts_per_cell=2, null_count=4, items=12, replicates=1)
    # Generators of their own: the patterns depend on --seed alone, not on the outcomes' stream.
    designs = [drop_texts(design, drop, np.random.default_rng([seed, pattern]))
               for pattern in range(patterns)]
    # The planning defaults (item sd 2.0, base rate) with labels as truth: no judge error.
    components = config_components(PlanConfig(text_sd=text_sd, null_sd=text_sd, sensitivity=1.0,
                                              specificity=1.0, gold_per_class=0))
    fit = dataclasses.replace(audit_fit_config(model), draws=draws, tune=tune, chains=2,
                              cores=2)
    sampler = CompiledSampler(engine=fit.engine)
    rng = np.random.default_rng(seed)
    frames, lost_a_cell = [], 0
    for audit in range(seeds):
        prompts = designs[audit % patterns]
        lost_a_cell += empty_cells(prompts) > 0
        outcomes = simulate_outcomes(prompts, components, NO_GAP, rng)
        run_seed = fit_seed(seed, zlib.crc32(model.encode()), audit)
        contrasts = fit_rasch(outcomes, dataclasses.replace(fit, seed=run_seed),
                              sample=sampler).contrasts
        frames.append(contrasts.select("attribute", "level_a", "level_b", "null_percentile")
                      .with_columns(audit=pl.lit(audit)))
    return pl.concat(frames), lost_a_cell


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["population", "rasch"])
    parser.add_argument("--seeds", type=int, default=200, help="simulated audits per model")
    parser.add_argument("--text-sd", type=float, default=0.6, help="text sd = null sd")
    parser.add_argument("--drop-texts", type=int, default=0,
                        help="explicit texts left out of each audit (unequal group sizes)")
    parser.add_argument("--drop-patterns", type=int, default=8,
                        help="different sets of texts left out, taken in turn by the audits")
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args(argv)
    if args.drop_patterns < 1:
        parser.error(f"--drop-patterns {args.drop_patterns}: at least one pattern")
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("pymc", "audit", "pytensor", "arviz"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    result = []
    for model in args.models:
        started = time.perf_counter()
        table, lost_a_cell = percentiles(model, args.seeds, args.text_sd, args.draws, args.tune,
                                         args.seed, args.drop_texts,
                                         args.drop_patterns if args.drop_texts else 1)
        # Every design keeps its four null personas, so every contrast has a rank; a missing one
        # would turn the median into NaN without saying why.
        unranked = table.get_column("null_percentile").null_count()
        if unranked:
            raise RuntimeError(f"{model}: {unranked} contrasts have no null_percentile")
        ranks = table.get_column("null_percentile").to_numpy().astype(float)
        audits = table.get_column("audit").to_numpy()
        at_90, at_97 = (ranks >= 90).astype(float), (ranks >= 97).astype(float)
        unbalanced = (f", {args.drop_texts} of 16 texts left out in {args.drop_patterns} "
                      f"patterns, a whole cell in {lost_a_cell} audits" if args.drop_texts else "")
        print(f"{model}: {ranks.size} contrasts of {args.seeds} no-gap audits (text sd = null sd "
              f"= {args.text_sd}{unbalanced}): median percentile {np.median(ranks):.1f}, "
              f"share >= 90 {at_90.mean():.3f} +- {clustered_se(at_90, audits):.3f}, share >= 97 "
              f"{at_97.mean():.3f} +- {clustered_se(at_97, audits):.3f} (calibrated: 50, 0.10, "
              f"0.03; +- one clustered standard error); {time.perf_counter() - started:.0f} s")
        result += [f"{model}_median={np.median(ranks):.1f}", f"{model}_share_90={at_90.mean():.3f}",
                   f"{model}_share_97={at_97.mean():.3f}"]
    print("RESULT " + " ".join(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
