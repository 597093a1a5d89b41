"""Power of a design before any request is sent: simulate it with a planted gap, fit, count.

A planned audit is the composed design (models x personas x items x replicates). For each
candidate number of replicates (and of personas per attribute level), this module draws
``simulations`` data sets from the Rasch model with a known gap between two levels of one
attribute, fits each with the configured Rasch model (the same ``build_rasch_model`` the audit
uses) and reads the same contrast the audit reports (``level_contrasts``). What comes out is what a
user needs to decide how many tokens to spend: the probability that the audit calls the gap
``different`` (HDI outside the ROPE) and the expected width of its HDI, each with its Monte Carlo
standard error.

Cheap by construction: replicates only change the Binomial trials of each respondent x item cell,
never the shape of the model, so one compiled nutpie model serves every simulation and every
replicate count of one persona count (``with_data``). Sampling is short (``PlanConfig.draws``),
which is enough for an HDI width and a decision; the Monte Carlo error of both is reported.

Planning assumptions (``PlanConfig``): personas of one level differ by ``persona_sd`` logits,
items by ``item_sd``, and the overall favourable rate is ``base_rate``. A gap given in
percentage points is converted to logits around ``base_rate``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import nutpie
import polars as pl

from audit.errors import AuditError
from audit.methods.rasch.config import PlanConfig
from audit.methods.rasch.irt.engines import compile_nutpie
from audit.methods.rasch.irt.contrasts import level_contrasts
from audit.methods.rasch.irt.explanatory import RespondentTable, build_explanatory_model
from audit.methods.rasch.irt.indexing import RaschData
from audit.methods.rasch.irt.rasch import build_rasch_model, posterior_draws

logger = logging.getLogger(__name__)

PLANNABLE_MODELS = ("rasch", "twopl", "explanatory", "population")
GAP_UNITS = ("logit", "pp")
POWER_COLUMNS = (
    "model_name", "persona_multiple", "replicates", "respondents", "simulations", "gap_logit",
    "p_different", "p_different_se", "hdi_width", "hdi_width_se", "gap_mean", "gap_mean_se",
)


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def gap_in_logits(size: float, unit: str, base_rate: float) -> float:
    """The planted gap on the model's scale.

    Percentage points are split evenly around the base rate: a 10 pp gap at 50% is the distance
    between 45% and 55% on the logit scale (0.40 logits).
    """
    if unit == "logit":
        return float(size)
    if unit != "pp":
        raise AuditError(f"plan.gap_unit={unit!r} is unknown; use one of {', '.join(GAP_UNITS)}")
    low, high = base_rate - size / 200.0, base_rate + size / 200.0
    if not 0.0 < low < high < 1.0:
        raise AuditError(f"a gap of {size} percentage points around plan.base_rate={base_rate} "
                         "leaves the 0-100% range; lower plan.gap or move plan.base_rate")
    return logit(high) - logit(low)


@dataclass(frozen=True)
class PlannedDesign:
    """Respondents (one row each: respondent, model_name, persona_kind, the attribute) and items."""

    respondents: pl.DataFrame
    items: tuple[str, ...]
    attribute: str
    level_a: str  # the level given the planted advantage
    level_b: str


def planned_design(prompts: pl.DataFrame, plan: PlanConfig, persona_multiple: int) -> PlannedDesign:
    """Respondents and items of a prompts table (design.expand_design's output).

    With ``persona_multiple`` m > 1, every persona with a level of the planned attribute appears m
    times (as m different personas of that level would, e.g. m names per group): the persona
    spread then averages out over more personas, which replicates cannot do.
    """
    attribute = plan.attribute
    if attribute not in prompts.columns:
        raise AuditError(f"plan.attribute={attribute!r} is not a persona column of the design; "
                         "use one of the columns in fit.attributes, e.g. race or gender")
    respondents = (prompts.select(pl.col("respondent_id").alias("respondent"), "model_name",
                                  "persona_kind", attribute)
                   .unique().sort("respondent"))
    levels = sorted(respondents.get_column(attribute).drop_nulls().unique().to_list())
    chosen = list(plan.levels) or levels[:2]
    if len(chosen) != 2 or not set(chosen) <= set(levels):
        raise AuditError(f"plan.levels={list(plan.levels)} must name two levels of {attribute} "
                         f"present in the personas: {', '.join(levels)}")
    with_level = respondents.filter(pl.col(attribute).is_not_null())
    copies = [with_level.with_columns(pl.col("respondent") + f"#{copy}")
              for copy in range(1, persona_multiple)]
    respondents = pl.concat([respondents, *copies]).sort("respondent")
    items = tuple(sorted(prompts.get_column("item_id").unique().to_list()))
    return PlannedDesign(respondents, items, attribute, chosen[0], chosen[1])


def _cell_data(design: PlannedDesign, replicates: int) -> RaschData:
    """Every respondent x item cell, in index_design's order (respondent-major, both sorted)."""
    respondents = tuple(design.respondents.get_column("respondent").to_list())
    n_cells = len(respondents) * len(design.items)
    cell_respondent, cell_item = np.divmod(np.arange(n_cells), len(design.items))
    empty = np.zeros(0, dtype=np.int64)
    return RaschData(respondents=respondents, items=design.items, row_respondent=empty,
                     row_item=empty, row_y=empty, cell_respondent=cell_respondent,
                     cell_item=cell_item, successes=np.zeros(n_cells, dtype=np.int64),
                     trials=np.full(n_cells, replicates, dtype=np.int64))


def planning_model(design: PlannedDesign, respondents: RespondentTable, fit_model: str):
    """The audit's own model on the planned cells; the explanatory one models only the planned
    attribute (other attributes would only add zero-effect terms to the simulation)."""
    data = _cell_data(design, 1)
    if fit_model in ("explanatory", "population"):
        return build_explanatory_model(data, respondents, (), population=fit_model == "population")
    return build_rasch_model(data, fit_model)


def true_theta(design: PlannedDesign, gap: float, plan: PlanConfig,
               rng: np.random.Generator) -> np.ndarray:
    """Persona favourability: the planted gap on level_a plus each persona's own deviation."""
    level = design.respondents.get_column(design.attribute).to_numpy()
    return np.where(level == design.level_a, gap, 0.0) + rng.normal(
        0.0, plan.persona_sd, design.respondents.height)


def simulate_successes(theta: np.ndarray, difficulty: np.ndarray, replicates: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Binomial successes per cell (respondent-major), as the audit's fit aggregates them."""
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - difficulty[None, :])))
    return rng.binomial(replicates, p).reshape(-1).astype(np.int64)


def _planted_row(contrasts: pl.DataFrame, design: PlannedDesign, model_name: str) -> tuple:
    """(decision, HDI width, gap estimate oriented as level_a minus level_b) of one model."""
    pair = sorted((design.level_a, design.level_b))
    row = contrasts.filter((pl.col("model_name") == model_name) & (pl.col("level_a") == pair[0])
                           & (pl.col("level_b") == pair[1])).row(0, named=True)
    sign = 1.0 if pair[0] == design.level_a else -1.0
    return row["decision"], row["hdi_high"] - row["hdi_low"], sign * row["mean"]


def _summary_row(model_name: str, multiple: int, replicates: int, design: PlannedDesign,
                 gap: float, outcomes: list[tuple]) -> dict[str, object]:
    different = np.array([decision == "different" for decision, _, _ in outcomes], dtype=float)
    widths = np.array([width for _, width, _ in outcomes])
    estimates = np.array([estimate for _, _, estimate in outcomes])
    n = len(outcomes)

    def standard_error(values: np.ndarray) -> float:
        return float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")

    p = float(different.mean())
    return {
        "model_name": model_name, "persona_multiple": multiple, "replicates": replicates,
        "respondents": design.respondents.height, "simulations": n, "gap_logit": gap,
        # Binomial standard error, floored at one simulation's worth so 0/n or n/n is not exact.
        "p_different": p, "p_different_se": max(math.sqrt(p * (1 - p) / n), 1.0 / n),
        "hdi_width": float(widths.mean()), "hdi_width_se": standard_error(widths),
        "gap_mean": float(estimates.mean()), "gap_mean_se": standard_error(estimates),
    }


def simulate_power(prompts: pl.DataFrame, plan: PlanConfig, fit_model: str, rope: float,
                   hdi_prob: float, engine: str = "auto") -> pl.DataFrame:
    """Probability of a ``different`` decision and expected HDI width per design size.

    ``engine`` is fit.engine; PyMC's sampler cannot swap data into one compiled model, so a plan
    under fit.engine=pymc samples with nutpie (the same model and posterior)."""
    if fit_model not in PLANNABLE_MODELS:
        raise AuditError(f"planning simulates fit.model in {', '.join(PLANNABLE_MODELS)}; got "
                         f"{fit_model!r}: plan with fit=rasch (the same respondents and items)")
    gap = gap_in_logits(plan.gap, plan.gap_unit, plan.base_rate)
    rng = np.random.default_rng(plan.seed)
    rows = []
    for multiple in plan.persona_multiples:
        design = planned_design(prompts, plan, multiple)
        respondents = RespondentTable(design.respondents, (design.attribute,))
        compiled = compile_nutpie(planning_model(design, respondents, fit_model),
                                  "auto" if engine == "pymc" else engine)
        for replicates in plan.replicates:
            outcomes: dict[str, list[tuple]] = {name: [] for name in respondents.models}
            for simulation in range(plan.simulations):
                theta = true_theta(design, gap, plan, rng)
                difficulty = rng.normal(-logit(plan.base_rate), plan.item_sd, len(design.items))
                successes = simulate_successes(theta, difficulty, replicates, rng)
                trials = np.full(successes.size, replicates, dtype=np.int64)
                idata = nutpie.sample(
                    compiled.with_data(successes=successes, trials=trials), draws=plan.draws,
                    tune=plan.tune, chains=plan.chains, cores=plan.chains,
                    seed=int(rng.integers(2**31)), progress_bar=False)
                contrasts = level_contrasts(posterior_draws(idata), respondents, rope, hdi_prob)
                for name in outcomes:
                    outcomes[name].append(_planted_row(contrasts, design, name))
                logger.debug("plan: x%d personas, %d replicates, simulation %d done", multiple,
                             replicates, simulation)
            rows += [_summary_row(name, multiple, replicates, design, gap, found)
                     for name, found in outcomes.items()]
    return pl.DataFrame(rows).select(POWER_COLUMNS)

