"""bench_calibration's plan check: what a plan from one pilot predicts against the realised
widths (the module docstring of bench_calibration.py says why several pilots).

Not a benchmark: bench_calibration imports it (this folder is on its sys.path).
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import polars as pl
from bench_shared import ATTRIBUTES, PLANNED_GAP, PLANTED, Z_95, effects_of

from audit.methods.rasch.config import FitConfig, PlanConfig
from audit.methods.rasch.irt import fit_rasch
from audit.methods.rasch.irt.rasch import posterior_draws
from audit.methods.rasch.pilot import posterior_component_draws, posterior_components
from audit.methods.rasch.power import config_components, half_width, simulate_power
from audit.methods.rasch.simulation import CompiledSampler, simulate_outcomes


def plan_widths(prompts: pl.DataFrame, fit: FitConfig, text_sds, pilots: int, simulations: int,
                realised: pl.DataFrame, rng: np.random.Generator, power_text_sd: float = math.nan,
                power_gaps: tuple[float, ...] = (), power_rng: np.random.Generator | None = None
                ) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """Per text sd and pilot: the width a plan from that pilot predicts against the realised
    mean width of the text sd's audits at the planned gap. At ``power_text_sd`` each pilot also
    plans each of ``power_gaps``: the second list holds those plans' power (p_ci_fails), which
    plan_power_errors compares with the audits simulated there. The power plans' seeds come
    from ``power_rng`` (default: ``rng``), so that with a stream of their own the pilots and
    width plans are the same whatever power gaps are planned."""
    power_rng = power_rng or rng
    widths, powers = [], []
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

            def plan_at(gap: float, seeds: np.random.Generator) -> dict[str, float]:
                plan = PlanConfig(attribute="race", levels=[PLANTED[1], PLANTED[2]], gap=gap,
                                  replicates=[int(prompts.get_column("replicate").max()) + 1],
                                  min_simulations=simulations, simulations=simulations,
                                  draws=fit.draws, tune=fit.tune, chains=fit.chains,
                                  seed=int(seeds.integers(2**31)))
                table = simulate_power(prompts, plan, fit, draws, sampler)
                return table.filter(pl.col("attribute") == "race").row(0, named=True)

            predicted = plan_at(PLANNED_GAP, rng)
            # The plan's race row averages the six race contrasts' widths, as race_width does.
            widths.append({"text_sd": text_sd, "pilot": pilot_index,
                           "pilot_text_sd": means.text_sd, "pilot_item_sd": means.item_sd,
                           "pilot_null_sd": means.null_sd, "predicted": predicted["hdi_width"],
                           "realised": float(real.get_column("race_width").mean())})
            if text_sd == power_text_sd:
                for gap in power_gaps:
                    planned = plan_at(gap, power_rng)
                    powers.append({"gap": gap, "pilot": pilot_index,
                                   "predicted": planned["p_ci_fails"],
                                   "simulations": planned["simulations"]})
            logging.info("plan at text sd %.1f, pilot %d done", text_sd, pilot_index)
    return widths, powers


def plan_power_errors(powers: list[dict[str, float]], realised: pl.DataFrame) -> pl.DataFrame:
    """Per planned gap: the pilots' plans' mean power against the CI failures (with the planted
    sign) of the audits simulated at that gap and text sd (``realised``: theirs alone), and the
    95% half-width of the difference. The plans' part of it is the sd of the pilots' powers over
    the square root of their number (which holds both each plan's Monte Carlo noise and what
    one pilot cannot pin down), floored at the binomial error of all their simulations; the
    audits' part is binomial. Both normal approximations: with 5 pilots, a rough interval."""
    rows = []
    for gap, plans in pl.DataFrame(powers).group_by("gap", maintain_order=True):
        audits = realised.filter(pl.col("gap") == gap[0])
        n_plan, n_real = int(plans["simulations"].sum()), audits.height
        if not n_real:
            continue
        predicted, real = float(plans["predicted"].mean()), float(audits["ci_fails"].mean())
        between = (Z_95 * float(plans["predicted"].std()) / math.sqrt(plans.height)
                   if plans.height > 1 else 0.0)
        rows.append({"gap": gap[0], "pilots": plans.height, "predicted": predicted,
                     "realised": real, "audits": n_real, "error": predicted - real,
                     "half_width": math.hypot(max(between, half_width(predicted, n_plan)),
                                              half_width(real, n_real))})
    return pl.DataFrame(rows)


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
