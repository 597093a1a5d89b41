"""Power of a design before any request is sent: simulate audits with a planted gap, fit, decide.

For each design option (``plan.replicates`` x ``plan.persona_multiples``) this module simulates
audits of the composed design (simulation.py: item, text and null spreads, the judge's errors,
from ``plan.*`` or a past run, pilot.py: there simulation k takes the components of the run's
k-th sampled posterior draw, so the plan averages over the run's uncertainty), fits each with
the audit's own ``fit_rasch`` and ``fit.model``, and passes its contrasts through the CI
verdict's own rule (``methods/rasch/verdict.py contrast_fails``, with its default rules, whatever
multiplicity control it applies). Per design option and model:

* ``hdi_width`` per attribute: the expected width of its headline contrasts' HDIs;
* ``p_different``: how often the planted contrast is decided ``different`` with the planted
  sign;
* ``p_ci_fails``: how often the CI verdict fails on the planted contrast with the planted sign:
  the power of the decision a user's pipeline acts on, with its 95% Monte Carlo half-width
  ``p_ci_fails_hw``. A failure with the wrong sign is an error, not power (at a planted gap of
  0 there is no sign to get right, and every failure counts: a false-alarm rate);
* ``p_false_fail`` per attribute: how often any of its contrasts with no planted gap fails the
  CI verdict.

How many simulations: until the half-width of ``p_ci_fails`` is at most ``plan.precision``
(``plan.min_simulations`` first, at most ``plan.simulations``): about 1,070 at a power near 0.5,
fewer towards 0 or 1. Each fit after the first reuses the compiled model (simulation.py
CompiledSampler), reads only the posterior and the divergence flags from nutpie's raw trace
(irt/raw_trace.py) and computes no R-hat or ESS, which no plan reads: a simulated audit of the
default design takes about 0.9 s on 2 cores at ``plan.draws`` 300 (the judge cut's 4 samplings
of about 0.2 s each, the model built and the contrasts read; benchmarks/RESULTS.md, "Planner
speed"), so 1,070 simulations take about 16 minutes an option.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
from scipy import optimize
from scipy.special import expit, logit

from audit.config import DesignConfig
from audit.errors import AuditError, did_you_mean
from audit.methods.configs import VerdictConfig
from audit.methods.rasch.adaptive import (
    AdaptiveRule,
    answers_from,
    design_rule,
    run_adaptive,
)
from audit.methods.rasch.config import GAP_UNITS, FitConfig, PlanConfig
from audit.methods.rasch.irt import fit_rasch
from audit.methods.rasch.simulation import CompiledSampler, Effects, VarianceComponents, \
    simulate_outcomes, true_gap
from audit.methods.rasch.verdict import contrast_fails

logger = logging.getLogger(__name__)

PLANNABLE_MODELS = ("rasch", "twopl", "explanatory", "population")
Z_95 = 1.959964
POWER_COLUMNS = (
    "model_name", "persona_multiple", "replicates", "respondents", "simulations", "attribute",
    "hdi_width", "hdi_width_se", "gap_logit", "level_a", "level_b", "gap_mean", "p_different",
    "p_ci_fails", "p_ci_fails_hw", "p_false_fail", "prompts_asked",
)

# Power counts a `different` or a CI failure on the planted contrast only with the true gap's
# sign: a claim of the opposite gap is the worst an audit can make, not evidence that the design
# detects the gap. At a true gap of 0 there is no sign to get right and every failure counts.
RIGHT_SIGN = (pl.col("truth") == 0) | (pl.col("mean") * pl.col("truth") > 0)


# Gauss-Hermite nodes for the average of a rate over normally spread items and texts.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
MAX_GAP_LOGITS = 10.0  # an odds ratio of 22,000: beyond it a plan describes no audit


def pp_gap(logits: float, centre: float, spread: float) -> float:
    """Percentage points between the planted level, `logits` above the other, and the other,
    which sits at `centre` (the real personas' logit), averaged over items and persona texts
    spread with sd `spread`: the difference of the two groups' favourable shares a reader of the
    answers would count, as the simulation plants it (simulation.planted_theta)."""
    points = centre + spread * _NODES
    return 100.0 * float(_WEIGHTS @ (expit(points + logits) - expit(points)))


def gap_in_logits(size: float, unit: str, centre: float, spread: float = 0.0) -> float:
    """The planted gap on the model's scale.

    Percentage points: the planted level's favourable share minus the other level's, that one at
    the real personas' rate (``centre``, a logit), averaged over items and texts (``spread``,
    their sd together): with no spread a 10 pp gap at 50% is 60% against 50% (0.41 logits). At
    the default spreads (item sd 2, text sd 0.6) a gap converted at the average item alone
    showed up as 5.9 pp, not 10, in the answers (plan review 2026-12-02): the spread flattens
    the rate, so more logits buy the same points. A negative gap puts the planted level below.
    """
    if unit == "logit":
        if abs(size) > MAX_GAP_LOGITS:
            raise AuditError(f"plan.gap={size:g} logits is an odds ratio above "
                             f"{math.exp(MAX_GAP_LOGITS):,.0f}: plan a gap of at most "
                             f"{MAX_GAP_LOGITS:g} logits")
        return float(size)
    if unit != "pp":
        raise AuditError(f"plan.gap_unit={unit!r} is unknown; use one of {', '.join(GAP_UNITS)}")
    if size == 0:
        return 0.0
    bound = math.copysign(MAX_GAP_LOGITS, size)
    room = abs(pp_gap(bound, centre, spread))
    if room < abs(size):
        raise AuditError(f"a gap of {size:g} percentage points from a favourable rate of "
                         f"{100 * expit(centre):.0f}% leaves the 0-100% range (at most "
                         f"{room:.0f} points {'up' if size > 0 else 'down'}): lower plan.gap or "
                         "move plan.base_rate")
    found = optimize.brentq(lambda logits: pp_gap(logits, centre, spread) - size,
                            min(0.0, bound), max(0.0, bound), xtol=1e-9)
    return float(found)


def planted_gap(plan: PlanConfig, draws: Sequence[VarianceComponents]) -> float:
    """plan.gap in logits. A gap in percentage points is converted at the real personas' rate
    (the draws' average base logit plus their shared shift: with a past run the null personas'
    rate, 0.66, stood in for the real ones' 0.75) over the draws' item and text spreads."""
    centre = float(np.mean([logit(c.base_rate) + c.real_shift for c in draws]))
    spread = math.sqrt(float(np.mean([c.item_sd ** 2 + c.text_sd ** 2 for c in draws])))
    return gap_in_logits(plan.gap, plan.gap_unit, centre, spread)


def config_components(plan: PlanConfig) -> VarianceComponents:
    """The planning assumptions of the config (plan.*), used where no past run is given."""
    return VarianceComponents(item_sd=plan.item_sd, text_sd=plan.text_sd, null_sd=plan.null_sd,
                              base_rate=plan.base_rate, sensitivity=plan.sensitivity,
                              specificity=plan.specificity, gold_per_class=plan.gold_per_class)


def check_plannable(prompts: pl.DataFrame, plan: PlanConfig, fit: FitConfig) -> tuple[str, str]:
    """The planted pair of levels, after the plan's settings are checked against the fit and the
    design: what `python -m audit.plan` asks before its progress bar starts, so a mistyped
    attribute is its one line, not a line under an emptied bar."""
    if fit.model not in PLANNABLE_MODELS:
        raise AuditError(f"planning simulates fit.model in {', '.join(PLANNABLE_MODELS)}; got "
                         f"{fit.model!r}: plan with fit=rasch (the same respondents and items)")
    if plan.attribute not in fit.attributes:
        raise AuditError(f"plan.attribute={plan.attribute!r} is not in fit.attributes "
                         f"{list(fit.attributes)}: the audit would not contrast it"
                         + did_you_mean(plan.attribute, list(fit.attributes)))
    if plan.simulations < plan.min_simulations:
        raise AuditError(f"plan.simulations={plan.simulations} is below "
                         f"plan.min_simulations={plan.min_simulations}: raise plan.simulations "
                         "or lower plan.min_simulations")
    # The gap's own checks with the components of the config, before any simulation (a past
    # run's are checked again with its own): a pp gap out of range was refused inside the bar.
    gap_in_logits(plan.gap, plan.gap_unit,
                  logit(plan.base_rate), math.hypot(plan.item_sd, plan.text_sd))
    return planted_levels(prompts, plan)


def planted_levels(prompts: pl.DataFrame, plan: PlanConfig) -> tuple[str, str]:
    """The two levels of plan.attribute the gap is planted between (level_a gets the gap)."""
    if plan.attribute not in prompts.columns:
        raise AuditError(f"plan.attribute={plan.attribute!r} is not a persona column of the "
                         "design; use one of the columns in fit.attributes, e.g. race or gender")
    levels = sorted(prompts.get_column(plan.attribute).drop_nulls().unique().to_list())
    if len(levels) < 2:
        raise AuditError(f"the design's personas hold {len(levels)} level(s) of "
                         f"{plan.attribute} ({', '.join(levels) or 'none'}), and a gap is planted "
                         "between two: add explicit (or name) personas to personas.generators, "
                         "or plan another plan.attribute")
    chosen = list(plan.levels) or levels[:2]
    if len(chosen) != 2 or len(set(chosen)) != 2 or not set(chosen) <= set(levels):
        unknown = next((level for level in chosen if level not in levels), "")
        raise AuditError(f"plan.levels={list(plan.levels)} must name two different levels of "
                         f"{plan.attribute} present in the personas: {', '.join(levels)}"
                         f"{did_you_mean(unknown, levels) if unknown else ''}")
    return chosen[0], chosen[1]


def resized_design(prompts: pl.DataFrame, replicates: int, persona_multiple: int,
                   attribute: str) -> pl.DataFrame:
    """The design with ``replicates`` answers per persona and item, and every persona with a
    level of ``attribute`` present ``persona_multiple`` times (as that many different texts of
    its cell would be: their own pulls average out, which replicates cannot do)."""
    cells = prompts.drop("replicate", strict=False).unique(["respondent_id", "item_id"])
    copies = [cells.filter(pl.col(attribute).is_not_null())
              .with_columns(pl.col("respondent_id") + f"#{copy}")
              for copy in range(1, persona_multiple)]
    cells = pl.concat([cells, *copies])
    return (cells.join(pl.DataFrame({"replicate": list(range(replicates))}), how="cross")
            .sort("respondent_id", "item_id", "replicate"))


def plan_fit_config(fit: FitConfig, plan: PlanConfig) -> FitConfig:
    """The audit's fit settings with the plan's shorter sampling; engine pymc cannot reuse a
    compiled model, so a plan under it samples with nutpie (the same model and posterior)."""
    return dataclasses.replace(fit, draws=plan.draws, tune=plan.tune, chains=plan.chains,
                               cores=min(fit.cores, plan.chains),
                               engine="auto" if fit.engine == "pymc" else fit.engine)


def ci_failures(contrasts: pl.DataFrame) -> dict[tuple[str, str, str, str], bool]:
    """(model, attribute, level_a, level_b) -> whether the CI verdict fails that contrast, by
    the verdict's own rule. Keyed by the row's columns, not by parsing the verdict's check names
    back: a model named `gpt-4.1-mini` made "rasch.gpt-4.1-mini.race" split into model "gpt-4"."""
    rules = VerdictConfig()
    return {(row["model_name"], row["attribute"], row["level_a"], row["level_b"]):
            contrast_fails(row, rules)[0] for row in contrasts.iter_rows(named=True)}


def one_simulation(prompts: pl.DataFrame, components: VarianceComponents, effects: Effects,
                   fit: FitConfig, sampler: CompiledSampler, rng: np.random.Generator,
                   planted: tuple[str, str, str], rule: AdaptiveRule | None = None,
                   seconds_per_prompt: float | None = None) -> pl.DataFrame:
    """One simulated audit's contrasts with their width, true gap, CI outcome and the prompts it
    asked: the whole design in one fit, or with ``rule`` round by round as an adaptive audit
    asks it (run_adaptive reading the simulated labels of the prompts it picks; a time budget
    spent at ``seconds_per_prompt`` a prompt asked)."""
    outcomes = simulate_outcomes(prompts, components, effects, rng)
    fit = dataclasses.replace(fit, seed=int(rng.integers(2**31)))
    confusion = components.gold_counts(fit.outcome)
    if rule is None:
        # The plan reads contrasts alone: no fit's R-hat or ESS (a third of its time).
        contrasts = fit_rasch(outcomes, fit, sample=sampler, confusion=confusion,
                              diagnostics=False).contrasts
        asked = prompts.height
    else:
        answer = answers_from(outcomes.with_columns(prompts.get_column("replicate")))
        clock = (None if seconds_per_prompt is None
                 else (lambda asked: seconds_per_prompt * asked.height))
        run = run_adaptive(prompts, answer, fit, rule, sample=sampler, confusion=confusion,
                           answer_seconds=clock, diagnostics=False)
        contrasts, asked = run.fit.contrasts, run.prompts
    failed = ci_failures(contrasts)
    attribute, level_a, level_b = planted
    return contrasts.with_columns(
        width=pl.col("hdi_high") - pl.col("hdi_low"),
        truth=pl.struct("attribute", "level_a", "level_b").map_elements(
            lambda row: true_gap(effects, row["attribute"], row["level_a"], row["level_b"]),
            return_dtype=pl.Float64),
        planted=(pl.col("attribute") == attribute)
        & (pl.col("level_a") == min(level_a, level_b))
        & (pl.col("level_b") == max(level_a, level_b)),
        ci_fails=pl.Series([failed[key] for key in contrasts.select(
            "model_name", "attribute", "level_a", "level_b").iter_rows()], dtype=pl.Boolean),
        prompts_asked=pl.lit(asked))


def half_width(p: float, n: int) -> float:
    """95% normal half-width of a proportion, never below one simulation's worth."""
    return Z_95 * math.sqrt(max(p * (1.0 - p), 1.0 / n) / n)


def simulate_option(prompts: pl.DataFrame, components: tuple[VarianceComponents, ...],
                    effects: Effects, fit: FitConfig, plan: PlanConfig, rng: np.random.Generator,
                    planted: tuple[str, str, str], sampler: CompiledSampler,
                    rule: AdaptiveRule | None = None,
                    seconds_per_prompt: float | None = None,
                    progress: Callable[[int, int], None] | None = None) -> pl.DataFrame:
    """Every simulation of one design option, stopping once each model's power is as precise as
    plan.precision (after plan.min_simulations, at most plan.simulations); simulation k draws
    from ``components[k]`` (cycling when there are fewer). ``progress(done, most)`` after each
    simulation, and once more with most = done when the option stops."""
    runs, seconds = [], []
    # The sampler serves every option of a plan: this option's fits are those after this index.
    first_fit = len(sampler.seconds)
    while len(runs) < plan.simulations:
        drawn_from = components[len(runs) % len(components)]
        started = time.perf_counter()
        runs.append(one_simulation(prompts, drawn_from, effects, fit, sampler, rng, planted,
                                   rule, seconds_per_prompt)
                    .with_columns(simulation=pl.lit(len(runs))))
        seconds.append(time.perf_counter() - started)
        if progress is not None:
            progress(len(runs), plan.simulations)
        if len(runs) >= plan.min_simulations:
            power = pl.concat(runs).filter("planted").group_by("model_name").agg(
                (pl.col("ci_fails") & RIGHT_SIGN).mean().alias("p"))
            if all(half_width(p, len(runs)) <= plan.precision for p in power.get_column("p")):
                break
    if progress is not None:
        progress(len(runs), len(runs))
    # The sampler's own seconds are the sampling alone; a simulated audit also builds its model,
    # summarises its posterior and reads its contrasts. The first of each is left out: it may
    # compile (an option with more replicates has other shapes).
    sampling = sampler.seconds[first_fit:]
    logger.info("plan: %d simulations, %.2f s a simulated audit after the first (sampling "
                "%.2f s a fit)", len(runs),
                float(np.mean(seconds[1:])) if len(seconds) > 1 else math.nan,
                float(np.mean(sampling[1:])) if len(sampling) > 1 else math.nan)
    return pl.concat(runs)


def summarise_option(runs: pl.DataFrame, multiple: int, replicates: int, respondents: int,
                     gap: float, sign: float, levels: tuple[str, str] = ("", "")
                     ) -> pl.DataFrame:
    """One row per model and attribute: widths, and on the planted attribute the decisions
    (``sign`` orients the planted contrast's mean as the planted level minus the other,
    ``levels``: that level and the other, named on the planted row)."""
    n = runs.get_column("simulation").n_unique()
    per_run = runs.group_by("model_name", "attribute", "simulation").agg(
        pl.col("width").mean(),
        pl.col("ci_fails").filter(pl.col("truth") == 0).any().alias("false_fail"))
    # Per attribute: one model-wide rate on every attribute's row read as that attribute's
    # (a gender false alarm showed on race's row; plan review 2026-12-02).
    false_fail = per_run.group_by("model_name", "attribute").agg(
        pl.col("false_fail").cast(pl.Float64).mean().alias("p_false_fail"))
    asked = runs.unique("simulation").get_column("prompts_asked").mean()
    widths = per_run.group_by("model_name", "attribute").agg(
        hdi_width=pl.col("width").mean(),
        hdi_width_se=pl.col("width").std() / math.sqrt(n))
    planted = runs.filter("planted").group_by("model_name", "attribute").agg(
        gap_mean=pl.col("mean").mean() * sign,
        p_different=((pl.col("decision") == "different") & RIGHT_SIGN)
        .cast(pl.Float64).mean(),
        p_ci_fails=(pl.col("ci_fails") & RIGHT_SIGN).cast(pl.Float64).mean())
    table = (widths.join(planted, on=["model_name", "attribute"], how="left")
             .join(false_fail, on=["model_name", "attribute"], how="left")
             .with_columns(persona_multiple=pl.lit(multiple), replicates=pl.lit(replicates),
                           respondents=pl.lit(respondents), simulations=pl.lit(n),
                           prompts_asked=pl.lit(asked),
                           gap_logit=pl.when(pl.col("p_ci_fails").is_not_null())
                           .then(pl.lit(gap)),
                           level_a=pl.when(pl.col("p_ci_fails").is_not_null())
                           .then(pl.lit(levels[0])),
                           level_b=pl.when(pl.col("p_ci_fails").is_not_null())
                           .then(pl.lit(levels[1])),
                           p_ci_fails_hw=pl.col("p_ci_fails").map_elements(
                               lambda p: half_width(p, n), return_dtype=pl.Float64)))
    return table.select(POWER_COLUMNS).sort("model_name", "attribute")


def simulate_power(prompts: pl.DataFrame, plan: PlanConfig, fit: FitConfig,
                   components: VarianceComponents | Sequence[VarianceComponents],
                   sampler: CompiledSampler | None = None,
                   design: DesignConfig | None = None,
                   tokens_per_prompt: float | None = None,
                   seconds_per_prompt: float | None = None,
                   on_simulation: Callable[[str, int, int], None] | None = None
                   ) -> pl.DataFrame:
    """Expected HDI widths, the power of the CI decision and the prompts asked per design option
    and model.

    ``components``: one set for every simulated audit (the plan.* figures), or one per simulated
    audit (a past run's posterior draws, pilot.run_components). ``sampler``: a caller that plans
    many times (benchmarks/bench_calibration.py) passes one, so its compiled models are reused.
    ``design`` with ``adaptive`` on: each simulated audit asks in rounds and stops as the audit
    would (its design.* rule for each option's size), so ``prompts_asked`` is what it expects to
    spend and the power is the adaptive design's (``tokens_per_prompt``: the design's estimate,
    for design.max_tokens_budget; ``seconds_per_prompt``: the store's, for
    design.max_answer_minutes, which is not simulated without it). ``on_simulation(option,
    done, most)``: the caller's progress, per design option ("x1 personas, 2 replicates")."""
    draws = (components,) if isinstance(components, VarianceComponents) else tuple(components)
    if not draws:
        raise ValueError("simulate_power needs at least one set of variance components")
    level_a, level_b = check_plannable(prompts, plan, fit)
    gap = planted_gap(plan, draws)
    # The planted gap, oriented as the contrast table orients it (level_a sorts first).
    effects: Effects = {attribute: {} for attribute in fit.attributes}
    effects[plan.attribute] = {level_a: gap}
    planted = (plan.attribute, level_a, level_b)
    fit_config = plan_fit_config(fit, plan)
    rng = np.random.default_rng(plan.seed)
    time_budget = (design is not None and design.adaptive
                   and design.max_answer_minutes is not None)
    timed = (time_budget and seconds_per_prompt is not None and math.isfinite(seconds_per_prompt)
             and seconds_per_prompt > 0)
    if time_budget:
        if timed:
            logger.info("plan: design.max_answer_minutes spent at %.2f s a prompt (as the "
                        "preflight times this model's answers in the store)", seconds_per_prompt)
        else:
            logger.info("plan: design.max_answer_minutes is not simulated (the store holds no "
                        "answer of this model to time a prompt by); the plan spends the prompt "
                        "budget")
    tables = []
    for multiple in plan.persona_multiples:
        for replicates in plan.replicates:
            option = resized_design(prompts, replicates, multiple, plan.attribute)
            rule = (design_rule(design, fit_config.familywise_alpha, option.height,
                                tokens_per_prompt)
                    if design is not None and design.adaptive else None)
            if rule is not None and not timed:
                rule = dataclasses.replace(rule, max_answer_seconds=None)
            label = f"x{multiple} personas, {replicates} replicate{'s' * (replicates != 1)}"
            progress = (None if on_simulation is None else
                        lambda done, most, label=label: on_simulation(label, done, most))
            runs = simulate_option(option, draws, effects, fit_config, plan, rng, planted,
                                   sampler or CompiledSampler(engine=fit_config.engine), rule,
                                   seconds_per_prompt if timed else None, progress)
            respondents = option.get_column("respondent_id").n_unique()
            tables.append(summarise_option(runs, multiple, replicates, respondents, gap,
                                            1.0 if level_a < level_b else -1.0,
                                            (level_a, level_b)))
            logger.info("plan: %s done", label)
    return pl.concat(tables)
