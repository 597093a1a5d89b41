"""Calibration of the audit's group claims on simulated default-shaped designs (issue 34).

Usage: python benchmarks/bench_calibration.py [--model population] [--seeds 150] [--pilots 5]
[--text-sds 0.3 0.6 1.0] [--gaps 0 0.5 1 | --prior-gaps] [--exact-judge]
[--gold-per-class 25] [--replicates 1] [--attribute-prior-sd 1.0] [--null-ratio-sd 0.5] [--quick]

--prior-gaps draws every level's effect from the fit's own prior instead of planting fixed gaps:
there a calibrated model covers at its nominal rate whatever the data's strength, while at fixed
gaps inside the prior's bulk a prior-shrunk posterior covers more. --exact-judge takes labels as
truth (no judge error, no correction); --gold-per-class sets how many gold answers a class the
judge's rates are known from (many: the judge cut's imputations all but agree). Per cell the
table also gives the planted contrast's posterior sd against the sd of its posterior mean's
error (sd_ratio: above 1, intervals wider than the estimate's own error), the bias and the
text spread's posterior mean (text_spread, against the simulated text sd); per text sd, the
slope of the posterior mean on the planted gap (1: no shrinkage). --replicates 2 asks every
prompt twice (the design before e0351c3): more data against the same priors.
--attribute-prior-sd replaces the fit's level-effect prior sd (explanatory.ATTRIBUTE_PRIOR_SD)
for this run, to measure how much of the coverage the gap's prior sets; --null-ratio-sd likewise
replaces the sd of log(null spread / text spread) (explanatory.NULL_RATIO_LOG_SD), to measure how
far the null arm (simulated at null sd 1.0) pulls the text spread.

Each simulated audit (methods/rasch/simulation.py) has the default design's shape (one model,
a baseline, --texts-per-cell (2) persona texts per gender x race cell, 4 null personas, 12 items,
--replicates (1, as the default audit asks) answers each), the planning defaults' item sd (2.0), null sd (1.0)
and judge (0.95/0.95 known from 25 gold answers a class), a persona-text sd of 0.3, 0.6 or 1.0 within each cell, and a
planted group gap of 0, 0.5 or 1 logit between Black and White. It is fitted with the audit's own
``fit_rasch`` (``--model``, the fit config's priors and target_accept; --draws and --tune per
chain, 2 chains, one compiled model reused across data sets) and its contrasts go through the CI
verdict's rule (power.ci_failures). Per text sd and gap it prints:

* coverage: how often the planted contrast's HDI covers the planted group gap (not the sampled
  personas' own mean gap: the claim is about the group);
* p_different, p_ci_fails: how often that contrast is decided `different` and fails CI;
* any_false_fail: how often any contrast with no planted gap fails CI (null designs: the
  family-wise false-different rate);
* width: the planted contrast's mean HDI width.

Fast-fit check: the first --check data sets are also fitted with the fit config's full sampling
(its draws, tune and chains); the table gives how often the two fits agree on covering and on
failing CI, and the ratio of their HDI widths.

Plan check: for each text sd, --pilots pilots (more simulated audits, fitted) each give the
planner (power.simulate_power) their variance components the way `python -m audit.plan
plan.from_run=...` takes them: one posterior draw's components per simulated audit
(pilot.posterior_component_draws), so the plan carries what one pilot cannot pin down about the
spreads. Each pilot's predicted width is compared with the realised mean width of that text sd's
audits at gap 0.5 (the planned gap). The error of a plan is the error of one pilot's plan: per
text sd the script prints the mean relative error (signed: the planner's bias), its sd over the
pilots and the mean absolute relative error; plan_width_error is the largest mean absolute error
over the text sds. Why several pilots: the check used to make one plan per text sd, so its error
was mostly that one pilot's luck (at text sd 1.0 the one pilot put the text sd at 0.39), a figure
that moved with the seed more than with the planner.

Ends with one machine-readable line:
RESULT coverage_group_gap=<x> false_different_rate=<y> power_1logit=<z> plan_width_error=<w>
(coverage over every simulated audit; false_different_rate over the null designs; power_1logit
at text sd 0.6.) --quick runs one text sd, two gaps and a few seeds: a check that the benchmark
runs, not a measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
import time

import numpy as np
import polars as pl

from audit.methods.rasch.config import FitConfig, PlanConfig
from audit.methods.rasch.irt import explanatory, fit_rasch
from audit.methods.rasch.irt.rasch import posterior_draws
from audit.methods.rasch.pilot import posterior_component_draws, posterior_components
from audit.methods.rasch.power import ci_failures, config_components, simulate_power
from audit.methods.rasch.simulation import (
    DEFAULT_GENDERS,
    DEFAULT_RACES,
    CompiledSampler,
    VarianceComponents,
    default_shaped_prompts,
    simulate_outcomes,
    true_gap,
)

ATTRIBUTES = ["gender", "race"]
PLANTED = ("race", "Black", "White")  # level_a sorts first: contrast mean = planted gap
TEXT_SDS = (0.3, 0.6, 1.0)
GAPS = (0.0, 0.5, 1.0)
PLANNED_GAP = 0.5
Z_95 = 1.959964


def audit_fit_config(model: str) -> FitConfig:
    """The fit config an audit with fit=<model> runs (conf/fit/<model>.yaml over FitConfig)."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from audit.config import CONF_DIR

    path = Path(CONF_DIR) / "fit" / f"{model}.yaml"
    if not path.is_file():
        sys.exit(f"--model {model}: there is no {path}; name a file of conf/fit/")
    values = OmegaConf.to_container(OmegaConf.load(path))
    known = {field.name for field in dataclasses.fields(FitConfig)}
    settings = {key: value for key, value in values.items() if key in known}
    return dataclasses.replace(FitConfig(**settings), attributes=ATTRIBUTES)


def effects_of(gap: float) -> dict[str, dict[str, float]]:
    return {"gender": {}, "race": {PLANTED[1]: gap}}


def prior_effects(rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """Level effects drawn from the fit's own prior (ZeroSumNormal(ATTRIBUTE_PRIOR_SD): iid
    normals less their mean), for --prior-gaps: where the truth comes from the prior, a
    calibrated model's 94% HDIs cover it 94% of the time, whatever the data's strength."""
    def zero_sum(levels: tuple[str, ...]) -> dict[str, float]:
        draws = rng.normal(0.0, explanatory.ATTRIBUTE_PRIOR_SD, len(levels))
        return dict(zip(levels, (draws - draws.mean()).tolist()))
    return {"gender": zero_sum(DEFAULT_GENDERS), "race": zero_sum(DEFAULT_RACES)}


def score(contrasts: pl.DataFrame, gap: float,
          effects: dict[str, dict[str, float]] | None = None) -> dict[str, float]:
    """The planted contrast's coverage, decision, CI outcome, width, posterior mean and sd;
    whether any contrast with no planted gap fails CI; the mean width of the race contrasts (what
    a plan predicts). ``effects``: every level's planted effect (--prior-gaps), else effects_of."""
    failed = ci_failures(contrasts)
    effects = effects or effects_of(gap)
    false_fail = any(value for (_, attribute, level_a, level_b), value in failed.items()
                     if true_gap(effects, attribute, level_a, level_b) == 0)
    planted = contrasts.filter((pl.col("attribute") == PLANTED[0])
                               & (pl.col("level_a") == PLANTED[1])
                               & (pl.col("level_b") == PLANTED[2])).row(0, named=True)
    race = contrasts.filter(pl.col("attribute") == "race")
    return {"covered": float(planted["hdi_low"] <= gap <= planted["hdi_high"]),
            "different": float(planted["decision"] == "different"),
            "ci_fails": float(failed[(planted["model_name"], *PLANTED)]),
            "false_fail": float(false_fail),
            "width": planted["hdi_high"] - planted["hdi_low"],
            "mean": planted["mean"], "sd": planted["sd"],
            "race_width": float((race["hdi_high"] - race["hdi_low"]).mean())}


def simulate_cells(prompts: pl.DataFrame, fit: FitConfig, full_fit: FitConfig, text_sds,
                   gaps, seeds: int, check: int, rng: np.random.Generator,
                   exact_judge: bool = False, gold_per_class: int | None = None
                   ) -> tuple[pl.DataFrame, list[dict]]:
    sampler = CompiledSampler(engine=fit.engine)
    rows, checks = [], []
    # --exact-judge: labels as truth and no judge correction, to tell the judge cut's share of
    # the intervals' width from the rest.
    judge = dict(sensitivity=1.0, specificity=1.0, gold_per_class=0) if exact_judge else {}
    if gold_per_class is not None and not exact_judge:  # the judge's rates known this well
        judge["gold_per_class"] = gold_per_class
    for text_sd in text_sds:
        components = config_components(PlanConfig(text_sd=text_sd, **judge))
        for gap in gaps:
            for seed in range(seeds):
                # A gap of nan (--prior-gaps): every level's effect drawn from the fit's prior.
                effects = prior_effects(rng) if math.isnan(gap) else effects_of(gap)
                planted = true_gap(effects, *PLANTED)
                outcomes = simulate_outcomes(prompts, components, effects, rng)
                confusion = components.gold_counts(fit.outcome)
                fast = fit_rasch(outcomes, dataclasses.replace(fit, seed=seed), sample=sampler,
                                 confusion=confusion)
                scored = score(fast.contrasts, planted, effects)
                rows.append({"text_sd": text_sd, "gap": gap, "planted": planted, "seed": seed,
                             "rhat_max": fast.diagnostics.rhat_max,
                             # What the planner reads as the run's text sd (plan_widths too).
                             "text_spread": posterior_components(
                                 posterior_draws(fast.idata), prompts, tuple(ATTRIBUTES),
                                 components).text_sd, **scored})
                if len(checks) < check:
                    full = score(fit_rasch(outcomes, dataclasses.replace(full_fit, seed=seed),
                                           confusion=confusion).contrasts, planted, effects)
                    checks.append({"fast": scored, "full": full})
            logging.info("text sd %.1f, gap %.1f: %d audits", text_sd, gap, seeds)
    seconds = sampler.seconds[1:]
    logging.info("%.2f s a fit's sampling after the first (%d fits)", float(np.mean(seconds)),
                 len(seconds))
    return pl.DataFrame(rows), checks


def plan_widths(prompts: pl.DataFrame, fit: FitConfig, text_sds, pilots: int, simulations: int,
                realised: pl.DataFrame, rng: np.random.Generator) -> list[dict[str, float]]:
    """Per text sd and pilot: the width a plan from that pilot predicts against the realised
    mean width of the text sd's audits at the planned gap."""
    results = []
    sampler = CompiledSampler(engine=fit.engine)  # one compile for every pilot and plan
    for text_sd in text_sds:
        truth = config_components(PlanConfig(text_sd=text_sd))
        real = realised.filter((pl.col("text_sd") == text_sd) & (pl.col("gap") == PLANNED_GAP))
        for pilot_index in range(pilots):
            pilot = fit_rasch(simulate_outcomes(prompts, truth, effects_of(PLANNED_GAP), rng),
                              dataclasses.replace(fit, seed=int(rng.integers(2**31))),
                              sample=sampler, confusion=truth.gold_counts(fit.outcome))
            posterior = posterior_draws(pilot.idata)
            means = posterior_components(posterior, prompts, tuple(ATTRIBUTES), truth)
            draws = posterior_component_draws(posterior, prompts, tuple(ATTRIBUTES), truth,
                                              simulations, int(rng.integers(2**31)))
            plan = PlanConfig(attribute="race", levels=[PLANTED[1], PLANTED[2]],
                              gap=PLANNED_GAP,
                              replicates=[int(prompts.get_column("replicate").max()) + 1],
                              min_simulations=simulations, simulations=simulations,
                              draws=fit.draws, tune=fit.tune, chains=fit.chains,
                              seed=int(rng.integers(2**31)))
            table = simulate_power(prompts, plan, fit, draws, sampler)
            predicted = table.filter(pl.col("attribute") == "race").row(0, named=True)
            # The plan's race row averages the six race contrasts' widths, as race_width does.
            results.append({"text_sd": text_sd, "pilot": pilot_index,
                            "pilot_text_sd": means.text_sd, "pilot_item_sd": means.item_sd,
                            "pilot_null_sd": means.null_sd, "predicted": predicted["hdi_width"],
                            "realised": float(real.get_column("race_width").mean())})
            logging.info("plan at text sd %.1f, pilot %d done", text_sd, pilot_index)
    return results


def plan_errors(plans: list[dict[str, float]]) -> pl.DataFrame:
    """Per text sd: the pilots' mean relative error (signed), its sd, the mean absolute error."""
    table = pl.DataFrame(plans).with_columns(
        error=(pl.col("predicted") - pl.col("realised")) / pl.col("realised"))
    for row in table.iter_rows(named=True):
        print(f"plan at text sd {row['text_sd']}, pilot {row['pilot']}: pilot measured text sd "
              f"{row['pilot_text_sd']:.2f}, item sd {row['pilot_item_sd']:.2f}, null sd "
              f"{row['pilot_null_sd']:.2f} (posterior means); predicted race width "
              f"{row['predicted']:.3f}, realised {row['realised']:.3f}, error {row['error']:+.3f}")
    return table.group_by("text_sd").agg(
        pl.len().alias("pilots"), pl.col("error").mean().alias("mean_error"),
        pl.col("error").std().alias("sd_error"),
        pl.col("error").abs().mean().alias("mean_abs_error"),
        pl.col("error").abs().max().alias("max_abs_error")).sort("text_sd")


def print_checks(checks: list[dict], draws: int, full_fit: FitConfig) -> None:
    agree_cover = np.mean([c["fast"]["covered"] == c["full"]["covered"] for c in checks])
    agree_fail = np.mean([c["fast"]["ci_fails"] == c["full"]["ci_fails"] for c in checks])
    ratio = np.mean([c["fast"]["width"] / c["full"]["width"] for c in checks])
    print(f"fast fit ({draws} draws x 2 chains) against the audit's own sampling "
          f"({full_fit.draws} x {full_fit.chains}) on {len(checks)} audits: coverage agrees "
          f"{agree_cover:.2f}, CI outcome agrees {agree_fail:.2f}, width ratio {ratio:.3f}")


def interval(successes: float, n: int) -> str:
    p = successes / n
    half = Z_95 * math.sqrt(max(p * (1 - p), 1 / n) / n)
    return f"{p:.3f} +- {half:.3f} (n={n})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="population")
    parser.add_argument("--seeds", type=int, default=150, help="simulated audits per cell")
    parser.add_argument("--texts-per-cell", type=int, default=2)
    parser.add_argument("--replicates", type=int, default=1, help="answers per persona and item")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--check", type=int, default=10, help="audits also fitted in full")
    parser.add_argument("--pilots", type=int, default=5, help="pilots per text sd")
    parser.add_argument("--plan-simulations", type=int, default=20, help="per pilot's plan")
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--text-sds", type=float, nargs="+", default=list(TEXT_SDS))
    parser.add_argument("--gaps", type=float, nargs="+", default=list(GAPS),
                        help="planted gaps to simulate (--gaps 0.5: the plan check's cells only)")
    parser.add_argument("--prior-gaps", action="store_true",
                        help="instead of --gaps, draw every level's effect from the fit's prior")
    parser.add_argument("--exact-judge", action="store_true",
                        help="labels as truth, no judge correction (the judge cut's share)")
    parser.add_argument("--gold-per-class", type=int, default=None,
                        help="gold answers a class behind the judge's rates (plan default: 25)")
    parser.add_argument("--attribute-prior-sd", type=float, default=None,
                        help="the fit's level-effect prior sd (default: the model's own)")
    parser.add_argument("--null-ratio-sd", type=float, default=None,
                        help="the fit's sd of log(null spread / text spread) (default: the "
                             "model's own), to measure how far the null arm pulls the text spread")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.attribute_prior_sd is not None:
        # A benchmark-only override of the model's constant, to measure the prior's weight: the
        # model builder reads it when it builds, so every fit below (and --prior-gaps) uses it.
        explanatory.ATTRIBUTE_PRIOR_SD = args.attribute_prior_sd
    if args.null_ratio_sd is not None:  # the same kind of benchmark-only override
        explanatory.NULL_RATIO_LOG_SD = args.null_ratio_sd
    print(f"level-effect prior: ZeroSumNormal({explanatory.ATTRIBUTE_PRIOR_SD}); "
          f"log(null / text spread) ~ N(0, {explanatory.NULL_RATIO_LOG_SD})")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for noisy in ("pymc", "audit.methods.rasch.irt", "pytensor", "arviz"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    started = time.perf_counter()
    text_sds, gaps, items = tuple(args.text_sds), tuple(args.gaps), 12
    if args.quick:
        text_sds, gaps, items = (0.6,), (0.0, PLANNED_GAP), 6
        args.seeds, args.check, args.pilots, args.plan_simulations = 4, 1, 2, 4
        args.draws = args.tune = 150
    if args.prior_gaps:
        gaps, args.pilots = (math.nan,), 0  # no fixed gap for the plan check to read
    elif args.pilots and PLANNED_GAP not in gaps:
        sys.exit(f"--gaps must include the planned gap {PLANNED_GAP}: the plan check reads it")
    prompts = default_shaped_prompts(texts_per_cell=args.texts_per_cell, items=items,
                                     replicates=args.replicates)
    full_fit = audit_fit_config(args.model)
    fit = dataclasses.replace(full_fit, draws=args.draws, tune=args.tune, chains=2, cores=2)
    rng = np.random.default_rng(args.seed)
    table, checks = simulate_cells(prompts, fit, full_fit, text_sds, gaps, args.seeds,
                                   args.check, rng, args.exact_judge, args.gold_per_class)
    cells = table.group_by("text_sd", "gap").agg(
        pl.len().alias("n"), pl.col("covered").mean().alias("coverage"),
        pl.col("different").mean().alias("p_different"),
        pl.col("ci_fails").mean().alias("p_ci_fails"),
        pl.col("false_fail").mean().alias("any_false_fail"),
        pl.col("width").mean(), (pl.col("rhat_max") > 1.05).mean().alias("rhat_over_1_05"),
        # Posterior sd against the spread of the posterior mean's error: near 1 when the HDIs
        # are as wide as the estimate's own error; above 1 when the prior's pull narrows the
        # error more than the interval (shrinkage at truths inside the prior's bulk).
        pl.col("sd").mean().alias("posterior_sd"),
        (pl.col("mean") - pl.col("planted")).std().alias("error_sd"),
        (pl.col("mean") - pl.col("planted")).mean().alias("bias"),
        # The text spread's posterior mean against the simulated text sd: a design whose texts
        # get few answers cannot tell a small spread from a moderate one, and the contrasts'
        # intervals then carry the larger (sd_ratio above 1 at small text sds).
        pl.col("text_spread").mean(),
    ).with_columns(sd_ratio=pl.col("posterior_sd") / pl.col("error_sd")).sort("text_sd", "gap")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=160, tbl_hide_dataframe_shape=True):
        print(cells)
    for text_sd in text_sds:
        part = table.filter(pl.col("text_sd") == text_sd)
        print(f"text sd {text_sd}: coverage {interval(part['covered'].sum(), part.height)}")
        fixed = part.filter(pl.col("gap").is_not_nan())
        if fixed.get_column("gap").n_unique() > 1:  # E[posterior mean] = shrinkage x truth
            slope = np.polyfit(fixed["planted"].to_numpy(), fixed["mean"].to_numpy(), 1)[0]
            print(f"text sd {text_sd}: posterior mean against the planted gap, slope "
                  f"{slope:.2f} (1: no shrinkage)")
    print(f"all: coverage {interval(table['covered'].sum(), table.height)}")
    if checks:
        print_checks(checks, args.draws, full_fit)
    plan_error = math.nan  # --pilots 0: the coverage table alone
    if args.pilots:
        plans = plan_widths(prompts, fit, text_sds, args.pilots, args.plan_simulations, table,
                            rng)
        errors = plan_errors(plans)
        plan_error = float(errors["mean_abs_error"].max())
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=160,
                       tbl_hide_dataframe_shape=True):
            print(errors)
    if args.prior_gaps:
        print(f"gaps drawn from the prior: coverage "
              f"{interval(table['covered'].sum(), table.height)}")
    nulls = table.filter(pl.col("gap") == 0)
    power = table.filter((pl.col("gap") == 1.0) & (pl.col("text_sd") == 0.6))
    power_1 = float(power["ci_fails"].mean()) if power.height else math.nan
    false_rate = float(nulls["false_fail"].mean()) if nulls.height else math.nan
    print(f"wall time {time.perf_counter() - started:.0f} s")
    print(f"RESULT coverage_group_gap={table['covered'].mean():.3f} "
          f"false_different_rate={false_rate:.3f} power_1logit={power_1:.3f} "
          f"plan_width_error={plan_error:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
