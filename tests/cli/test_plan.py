"""Power planning: the plan's gap conversion and design, and its answer against real fits."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig, PlanConfig
from audit.methods.rasch.irt import fit_rasch
from audit.cli.plan import scaled_cost
from audit.methods.rasch.power import gap_in_logits, planned_design, simulate_power

RACES = ("A", "B")


def prompts_table(personas_per_level: int = 3, null_count: int = 2, items: int = 10,
                  replicates: int = 1) -> pl.DataFrame:
    """The columns of design.expand_design's output that planning reads, one row per prompt."""
    personas = [(f"{race.lower()}{k}", "explicit", race) for race in RACES
                for k in range(personas_per_level)]
    personas += [(f"null{k}", "null", None) for k in range(null_count)]
    rows = [{"respondent_id": f"m1/{persona}", "model_name": "m1", "persona_kind": kind,
             "race": race, "item_id": f"i{item:02d}", "replicate": replicate}
            for persona, kind, race in personas for item in range(items)
            for replicate in range(replicates)]
    return pl.DataFrame(rows, schema_overrides={"race": pl.String})


def test_percentage_points_are_split_around_the_base_rate():
    assert gap_in_logits(10, "pp", 0.5) == pytest.approx(math.log(0.55 / 0.45) * 2)
    # Near the floor the same 10 points are a much larger log odds ratio (5% against 15%).
    assert gap_in_logits(10, "pp", 0.10) == pytest.approx(
        math.log(0.15 / 0.85) - math.log(0.05 / 0.95))
    assert gap_in_logits(0.7, "logit", 0.1) == 0.7
    with pytest.raises(AuditError, match="0-100% range"):
        gap_in_logits(30, "pp", 0.1)
    with pytest.raises(AuditError, match="gap_unit"):
        gap_in_logits(1, "percent", 0.5)


def test_persona_multiples_copy_only_personas_with_a_level():
    prompts = prompts_table(personas_per_level=3, null_count=2)
    single = planned_design(prompts, PlanConfig(), 1)
    tripled = planned_design(prompts, PlanConfig(), 3)
    assert single.respondents.height == 8
    # 6 personas with a race level, each twice more; the 2 null personas stay 2.
    assert tripled.respondents.height == 8 + 2 * 6
    assert tripled.respondents.filter(pl.col("persona_kind") == "null").height == 2
    assert (single.level_a, single.level_b) == ("A", "B")
    assert len(single.items) == 10
    with pytest.raises(AuditError, match="two levels"):
        planned_design(prompts, PlanConfig(levels=["A", "Z"]), 1)


def test_cost_of_more_personas_adds_their_prompts_at_the_average_price():
    prompts = prompts_table(personas_per_level=3, null_count=2, items=10)
    cost = {"prompts": 80.0, "to_send": 40.0, "prompt_tokens": 4000.0,
            "max_completion_tokens": 1920.0, "minutes": 2.0}
    doubled = scaled_cost(cost, prompts, "race", 2)
    # 60 of the 80 prompts carry a race level; doubling those adds 60 prompts, all to send.
    assert doubled["prompts"] == 140 and doubled["to_send"] == 100
    assert doubled["prompt_tokens"] == pytest.approx(4000 + 60 * 100)
    assert doubled["minutes"] == pytest.approx(2.0 + 60 * 0.05)
    assert scaled_cost(cost, prompts, "race", 1) == cost


def simulated_outcomes(prompts: pl.DataFrame, plan: PlanConfig, gap: float,
                       rng: np.random.Generator) -> pl.DataFrame:
    """One audit's labels written the way the audit produces them: one Bernoulli row a prompt."""
    respondents = prompts.select("respondent_id", "race").unique()
    theta = {row["respondent_id"]: (gap if row["race"] == "A" else 0.0)
             + rng.normal(0.0, plan.persona_sd) for row in respondents.iter_rows(named=True)}
    items = sorted(prompts.get_column("item_id").unique().to_list())
    rate = math.log(plan.base_rate / (1 - plan.base_rate))
    difficulty = dict(zip(items, rng.normal(-rate, plan.item_sd, len(items)), strict=True))
    p = [1 / (1 + math.exp(-(theta[r] - difficulty[i])))
         for r, i in prompts.select("respondent_id", "item_id").iter_rows()]
    return prompts.select(
        pl.col("respondent_id").alias("respondent"), pl.col("item_id").alias("item"),
        pl.Series("y", (rng.random(len(p)) < np.array(p)).astype(np.int64)),
        "model_name", "persona_kind", "race")


@pytest.mark.slow
def test_planned_hdi_width_matches_real_fits_of_the_same_design():
    """The plan's expected HDI width at 4 replicates is the width real audits of that design get.

    Real runs go the audit's way (one Bernoulli row per prompt, index_design, fit_rasch with
    nutpie through PyMC, fit.contrasts), the plan its own (Binomial cells, one compiled model).
    The tolerance is three standard errors of the difference of the two means, and it is checked
    to be far smaller than the gap and than the change in width from 1 to 4 replicates: a plan
    that ignored replicates (width twice as large) or the persona spread fails.
    """
    replicates, gap, real_runs = 4, 1.0, 4
    plan = PlanConfig(gap=gap, replicates=[1, replicates], simulations=8, draws=400, tune=400,
                      seed=5)
    rope, hdi_prob = 0.1814, 0.94
    power = simulate_power(prompts_table(items=10), plan, "rasch", rope, hdi_prob)
    planned = power.filter(pl.col("replicates") == replicates).row(0, named=True)
    single = power.filter(pl.col("replicates") == 1).row(0, named=True)

    rng = np.random.default_rng(11)
    prompts = prompts_table(items=10, replicates=replicates)
    widths, gaps = [], []
    for run in range(real_runs):
        fit = fit_rasch(simulated_outcomes(prompts, plan, gap, rng),
                        FitConfig(draws=400, tune=400, chains=2, cores=2, seed=run,
                                  attributes=["race"], rope=rope, hdi_prob=hdi_prob))
        row = fit.contrasts.filter(pl.col("level_a") == "A").row(0, named=True)
        widths.append(row["hdi_high"] - row["hdi_low"])
        gaps.append(row["mean"])
    real_width = float(np.mean(widths))
    tolerance = 3 * math.sqrt(planned["hdi_width_se"] ** 2
                              + np.var(widths, ddof=1) / real_runs)
    assert tolerance < 0.25 * gap
    assert tolerance < 0.5 * (single["hdi_width"] - planned["hdi_width"])
    assert abs(planned["hdi_width"] - real_width) < tolerance, (planned, widths)
    # The plan recovers the gap it planted, with the sign of level_a minus level_b.
    assert abs(planned["gap_mean"] - gap) < 3 * planned["gap_mean_se"] + 0.05
    assert planned["p_different"] >= single["p_different"]


def test_a_model_the_plan_cannot_simulate_is_refused_before_sampling():
    # rasch_seed fits Bernoulli rows, whose number changes with replicates: one compiled model
    # cannot serve every size, so the plan says which models it can simulate.
    with pytest.raises(AuditError, match="fit=rasch"):
        simulate_power(prompts_table(), PlanConfig(), "rasch_seed", 0.18, 0.94)
