"""Adaptive audits: ask in rounds, choose each round's prompts from the last fit, stop early.

The pool is the fixed design's prompts (item x persona x replicate, design.expand_design). An
adaptive audit asks a subset of it in rounds:

* Round 0 is balanced over respondents and items; each later round takes the prompts with the
  most Rasch information, weighted towards the personas of contrasts still open and alive
  (selection.py).
* After each round the audit's own fit (fit_rasch, the population model by default) decides the
  headline contrasts. Each look decides on the family-wise HDI (over every contrast of the run,
  contrasts.py) at its own share of ``familywise_alpha`` (``look_alphas``): a Bonferroni split
  over the planned looks, most of it kept for the last look, so the chance of any false
  `different` at any look stays below alpha by the union bound, whatever the looks' correlation.
* It stops when every contrast is decided (``decided``), when the budget (``max_prompts``, at most
  the pool, or the answering time ``max_answer_seconds``: below) is spent (``budget``), or when no
  open contrast can still be decided within the budget (``futile``): a contrast is alive while the
  posterior-predictive probability that the decision interval at the budget lies wholly outside
  (or wholly inside) the ROPE is at least ``futility`` (futility.py: the part of the contrast's
  variance that comes from its groups' few persona texts stays, the rest shrinks as 1 / prompts).
  Futility is judged only once ``futility_from`` of the budget is asked: before that, a look
  without alive contrasts still goes on (its rounds then weigh every respondent alike). The last
  planned look, which holds most of the alpha, stops on the budget unless it decided all.
  The looks are planned from round 0's real size (at least one prompt a persona, so it can be
  larger than a round). Whichever look ends the run on its budget (the last planned one, or an
  earlier one when round 0 or the answering time spends the budget) is known to be the last
  before its fit, and decides at the alpha left (``alpha_left``: familywise_alpha less the
  interim looks' shares), so the looks made spend exactly ``familywise_alpha``.
* A time budget counts answering time as the response store recorded it (``answer_seconds``:
  each answer's latency when the model first gave it, summed per model over its concurrency),
  not the clock, so a rerun served from the store spends the same time and stops at the same
  look. After each look the time left buys prompts at the run's mean recorded time a prompt so
  far; once one round can take them all, that round is the last. Round 0 is asked whole before
  any time is known, so a time budget it spends is overspent by the rest of round 0; later the
  last round is sized at the mean time a prompt so far, so faster or slower answers end it
  somewhat under or over.

Pure: tables in, tables out. ``run_adaptive`` takes an ``answer`` function that turns chosen pool
rows into outcome rows (simulated labels in benchmarks/bench_adaptive.py; the engine, store and
judge in a run), so the same selection and stopping code drives both.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from audit.config import DesignConfig
from audit.errors import AuditError
from audit.llm.preflight import CHARS_PER_TOKEN
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.futility import contrast_states, nearest_open, text_floors
from audit.methods.rasch.irt import fit_rasch
from audit.methods.rasch.irt.balance import balanced_contrasts
from audit.methods.rasch.irt.explanatory import level_names, two_level_attributes
from audit.methods.rasch.irt.rasch import ATTRIBUTE_MODELS, RaschFit, SampleFunction
from audit.methods.rasch.selection import KEY, choose_next, first_round

logger = logging.getLogger(__name__)
# Each look's lines, apart: a plan simulates hundreds of adaptive audits and quiets these alone.
look_logger = logging.getLogger(f"{__name__}.looks")

STOPS = ("decided", "futile", "budget")
# Models with Binomial cells, where a cell not asked yet can enter with zero trials.
CELL_MODELS = ("rasch", "twopl", "explanatory", "population")
ROUND_COLUMNS = ("round", "prompts", "answer_seconds", "look_alpha", "final_look", "contrasts",
                 "decided", "open", "alive", "mean_open_width", "stop")


@dataclass(frozen=True)
class AdaptiveRule:
    """How an adaptive audit asks and when it stops (design.* in a run's config)."""

    round_prompts: int  # prompts per round, round 0 included
    max_prompts: int  # the budget; capped at the pool's size
    familywise_alpha: float = 0.05
    # Of familywise_alpha kept for the last planned look. A run that reaches the budget holds the
    # fixed design's answers and decides at this share: at 0.8, every disagreement with the fixed
    # design in bench_adaptive was at a budget stop (16 of 142 decided contrasts at 3-4 logit
    # gaps); at 0.95, 5 of 114 (RESULTS.md "Adaptive audits", rules D and E), and over the
    # held-out runs of rule E20 still 16 of the 32 contrasts lost in all. 0.99 leaves the interim
    # looks 1% (as Haybittle-Peto boundaries do: interim decisions only on overwhelming evidence,
    # the last look at nearly the full level): on three of those runs' simulated answers it
    # lost 14 contrasts, none at the last look, against 21 (agreement 245 of 259 against 238),
    # with the same prompts, power and false `different`s. Futility reads the last look's level
    # (futility.py), so stricter interim looks do not make it stop sooner.
    final_share: float = 0.99
    # A contrast is alive while P(decidable by the budget) >= this; design.futility's default,
    # where the choice is measured (config.py).
    futility: float = DesignConfig.futility
    # Futility stops a run only from this share of the budget on (design.futility_from).
    futility_from: float = DesignConfig.futility_from
    other_weight: float = 0.25  # weight of respondents in no open contrast (null, baseline)
    # Answering time the run may spend (design.max_answer_minutes; None: no time budget).
    max_answer_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.round_prompts < 1 or self.max_prompts < 1:
            raise AuditError("an adaptive design needs design.round_prompts and "
                             "design.max_prompts of at least 1")
        if not 0.0 < self.familywise_alpha < 1.0:
            raise AuditError("fit.familywise_alpha must lie in (0, 1) for an adaptive design "
                             "(its looks split it)")
        if not 0.0 < self.final_share <= 1.0:  # a benchmark's --final-share, not a setting
            raise AuditError(f"final_share={self.final_share} must lie in (0, 1]: the share of "
                             "fit.familywise_alpha kept for the last look")
        if not 0.0 <= self.futility < 1.0:
            raise AuditError(f"design.futility={self.futility} must lie in [0, 1)")
        if not 0.0 <= self.futility_from <= 1.0:
            raise AuditError(f"design.futility_from={self.futility_from} must lie in [0, 1] "
                             "(a share of the budget)")
        if self.max_answer_seconds is not None and not self.max_answer_seconds > 0:
            raise AuditError(f"design.max_answer_minutes={self.max_answer_seconds / 60:g} must "
                             "be above 0 (null: no time budget)")


def design_rule(design: DesignConfig, familywise_alpha: float | None, pool_size: int,
                tokens_per_prompt: float | None = None,
                respondents: int | None = None) -> AdaptiveRule:
    """A run's design.* as the rule (the audit and audit.plan read it alike): the budget is
    design.max_prompts (null: the whole pool), lowered to what design.max_tokens_budget buys at
    ``tokens_per_prompt``; a round is a quarter of the budget unless design.round_prompts says
    otherwise. design.max_answer_minutes is spent as the run goes (run_adaptive).
    ``respondents``: round 0 asks each once, so a budget below that is refused here, naming
    the setting that binds in its own unit (run_adaptive's check cannot tell which)."""
    if design.max_prompts is not None and design.max_prompts < 1:
        raise AuditError(f"design.max_prompts={design.max_prompts} must be at least 1 (null: "
                         "the whole design)")
    if familywise_alpha is None:
        raise AuditError("design.adaptive=true needs fit.familywise_alpha (its looks split it); "
                         "set fit.familywise_alpha=0.05")
    budget = min(design.max_prompts or pool_size, pool_size)
    if design.max_tokens_budget is not None:
        if tokens_per_prompt is None:
            raise ValueError("design.max_tokens_budget needs the design's tokens a prompt")
        affordable = int(design.max_tokens_budget // tokens_per_prompt)
        if affordable < 1:
            raise AuditError(f"design.max_tokens_budget={design.max_tokens_budget} buys no "
                             f"prompt (about {tokens_per_prompt:.0f} tokens each): raise it, "
                             "or set it to null")
        if affordable < budget:
            logger.info("adaptive budget: %d prompts (design.max_tokens_budget=%d at about %.0f "
                        "tokens a prompt)", affordable, design.max_tokens_budget,
                        tokens_per_prompt)
        budget = min(budget, affordable)
    if respondents is not None and budget < respondents:
        if design.max_tokens_budget is not None and budget == affordable:
            raise AuditError(
                f"design.max_tokens_budget={design.max_tokens_budget} buys {budget} prompts "
                f"(about {tokens_per_prompt:.0f} tokens each), and round 0 asks each of the "
                f"design's {respondents} personas once: raise it to at least "
                f"{math.ceil(respondents * tokens_per_prompt)} tokens, or set it to null")
        raise AuditError(f"design.max_prompts={budget} is below the design's {respondents} "
                         "personas, which round 0 asks once each: raise it to at least "
                         f"{respondents}")
    # `is None`, not `or`: design.round_prompts=0 is refused (AdaptiveRule), not the default.
    round_prompts = (math.ceil(budget / 4) if design.round_prompts is None
                     else design.round_prompts)
    return AdaptiveRule(round_prompts=round_prompts,
                        max_prompts=budget, familywise_alpha=familywise_alpha,
                        futility=design.futility, futility_from=design.futility_from,
                        max_answer_seconds=(None if design.max_answer_minutes is None
                                            else 60.0 * design.max_answer_minutes))


def tokens_per_prompt(prompts: pl.DataFrame, max_tokens: dict[str, int]) -> float:
    """The preflight's estimate of one prompt's tokens, averaged over the design: the system
    and user prompts' characters at CHARS_PER_TOKEN a token (summed before dividing, as
    preflight.estimate does), plus each prompt's model's max_tokens for the answer."""
    chars = prompts.select(pl.col("system_prompt").str.len_chars()
                           + pl.col("user_prompt").str.len_chars()).to_series()
    answers = prompts.get_column("model_name").replace_strict(max_tokens, return_dtype=pl.Int64)
    return float(chars.mean() / CHARS_PER_TOKEN + answers.mean())


def planned_looks(rule: AdaptiveRule, pool_size: int,
                  first_round_size: int | None = None) -> int:
    """Fits the audit may make: one after round 0 (``first_round_size`` prompts; default a
    round), then one after each round until the budget is spent: the budget round 0 leaves over
    the round size, rounded (so the last round, which takes what is left, asks half a round to
    one and a half, not a sliver after a full round), and at least one when round 0 leaves any.
    Round 0 asks at least one prompt a persona, so it can be larger than a round: counting its
    real size keeps the budget from running out before the last planned look."""
    budget = min(rule.max_prompts, pool_size)
    first = rule.round_prompts if first_round_size is None else first_round_size
    if budget <= first:
        return 1
    return 1 + max(1, math.floor((budget - first) / rule.round_prompts + 0.5))


def alpha_left(rule: AdaptiveRule, alphas: list[float], look: int) -> float:
    """The alpha a look that ends the run decides at: familywise_alpha less the earlier looks'
    shares (every earlier look was an interim one). The last planned look's is its own share; a
    run whose budget ends sooner (a round 0 or a time budget that spends it) keeps the shares of
    the looks it never makes, and the looks made still sum to familywise_alpha (union bound)."""
    return rule.familywise_alpha - sum(alphas[:look])


def look_alphas(rule: AdaptiveRule, looks: int) -> list[float]:
    """Each look's share of the family-wise alpha: final_share for the last look, the rest split
    evenly over the earlier ones (one look: all of it). They sum to familywise_alpha, so by the
    union bound P(any false `different` at any look) <= familywise_alpha."""
    if looks == 1:
        return [rule.familywise_alpha]
    interim = rule.familywise_alpha * (1.0 - rule.final_share) / (looks - 1)
    return [interim] * (looks - 1) + [rule.familywise_alpha * rule.final_share]


def pool_cells(pool: pl.DataFrame, attributes) -> pl.DataFrame:
    """Every respondent x item cell of the pool in the fit's column names (fit_rasch's pool)."""
    persona = [column for column in ("model_name", "persona_kind", *attributes)
               if column in pool.columns]
    return (pool.select(pl.col("respondent_id").alias("respondent"),
                        pl.col("item_id").alias("item"), *persona)
            .unique(["respondent", "item"]).sort("respondent", "item"))


def check_contrastable(pool: pl.DataFrame, attributes, model: str = "population") -> None:
    """Before round 0 is asked: an adaptive design decides contrasts, so fit.attributes must name
    a persona column of the pool with two levels (a blank value is no level), and a fit without
    level effects (`model` not in ATTRIBUTE_MODELS) must find two levels sharing a cell of the
    other attributes (irt/balance.py). Found only after round 0's fit, either cost that round's
    requests."""
    if not two_level_attributes(pool, attributes):
        raise AuditError(f"an adaptive design needs contrasts to decide, and fit.attributes="
                         f"{list(attributes)} names no persona column of the design with two "
                         "levels: set fit.attributes to such columns (e.g. [gender,race])")
    if model in ATTRIBUTE_MODELS:
        return
    named = [attribute for attribute in attributes if attribute in pool.columns]
    frame = pool.select(pl.col("respondent_id").alias("respondent"), "model_name",
                        *[level_names(a) for a in named]).unique()
    if not any(balanced_contrasts(frame, tuple(named), name)[0]
               for name in frame.get_column("model_name").unique().to_list()):
        raise AuditError(f"fit={model} compares two levels only within a cell of the other "
                         f"attributes, and no two levels of fit.attributes={named} share one in "
                         "this design (the attributes move together): add personas that cross "
                         "them, or use fit=population, whose level effects are additive")


def check_pool(pool: pl.DataFrame) -> pl.DataFrame:
    missing = [column for column in (*KEY, "model_name", "persona_kind")
               if column not in pool.columns]
    if missing:
        raise AuditError(f"an adaptive design needs prompts with {', '.join(missing)}: build "
                         "the pool with design.expand_design")
    if pool.select(KEY).is_duplicated().any():
        raise AuditError("the prompts table repeats a respondent x item x replicate: an "
                         "adaptive design needs each prompt once")
    return pool.sort(KEY)


@dataclass(frozen=True, eq=False)
class AdaptiveRun:
    asked: pl.DataFrame  # the pool rows asked, with the `round` that asked them
    outcomes: pl.DataFrame  # their outcome rows, as the fit read them
    fit: RaschFit  # the last look's fit (its contrasts decided at that look's alpha)
    rounds: pl.DataFrame  # ROUND_COLUMNS, one row a look: the trajectory
    states: pl.DataFrame  # the last look's contrasts with p_decidable, open and alive
    stop: str  # one of STOPS

    @property
    def prompts(self) -> int:
        return self.asked.height


def round_row(index: int, prompts: int, seconds: float | None, alpha: float, final: bool,
              states: pl.DataFrame, stop: str | None) -> dict[str, object]:
    """One look's row of ROUND_COLUMNS; `final`: the look decided at the alpha left (the last
    planned look, or one the budget made the last), not at an interim look's share."""
    open_rows = states.filter("open")
    widths = (open_rows.get_column("decision_high") - open_rows.get_column("decision_low"))
    return {"round": index, "prompts": prompts, "answer_seconds": seconds, "look_alpha": alpha,
            "final_look": final, "contrasts": states.height,
            "decided": states.height - open_rows.height, "open": open_rows.height,
            "alive": int(states.get_column("alive").sum()),
            "mean_open_width": float(widths.mean()) if open_rows.height else None, "stop": stop}


def stop_reason(states: pl.DataFrame, prompts: int, budget: int, pool_left: int, *,
                futility_from: float) -> str | None:
    """Why a run stops after this look, or None: ``futility_from`` is the share of the budget
    that must be asked before a look without alive contrasts stops it as `futile`."""
    if not states.get_column("open").any():
        return "decided"
    if prompts >= budget or pool_left == 0:
        return "budget"
    if prompts >= futility_from * budget and not states.get_column("alive").any():
        return "futile"
    return None


def prompts_affordable(rule: AdaptiveRule, seconds: float | None, asked: int) -> int | None:
    """Prompts the answering time left buys at the mean recorded time a prompt so far (None:
    no time budget, or no time recorded yet)."""
    if rule.max_answer_seconds is None or seconds is None or seconds <= 0 or asked == 0:
        return None
    return max(0, math.floor((rule.max_answer_seconds - seconds) / (seconds / asked)))


Answer = Callable[[pl.DataFrame, int], pl.DataFrame]  # (chosen pool rows, round) -> outcome rows
OnRound = Callable[[dict[str, object], RaschFit], None]


def answers_from(labels: pl.DataFrame) -> Answer:
    """An ``answer`` that reads labels drawn beforehand (fit_rasch's long table plus the
    prompt's ``replicate``) for the prompts a round chooses: how a simulation asks."""
    def answer(chosen: pl.DataFrame, _round: int) -> pl.DataFrame:
        keys = chosen.select(pl.col("respondent_id").alias("respondent"),
                             pl.col("item_id").alias("item"), "replicate")
        return labels.join(keys, on=["respondent", "item", "replicate"],
                           how="semi").drop("replicate")
    return answer


def run_adaptive(pool: pl.DataFrame, answer: Answer, fit_config: FitConfig, rule: AdaptiveRule,
                 sample: SampleFunction | None = None, confusion=None,
                 on_round: OnRound | None = None,
                 answer_seconds: Callable[[pl.DataFrame], float] | None = None,
                 diagnostics: bool = True) -> AdaptiveRun:
    """Rounds of asking, fitting and choosing until a stop (module docstring).

    ``answer`` gets the chosen pool rows and the round number and returns their outcome rows
    (fit_rasch's long table); ``sample`` and ``confusion`` are fit_rasch's (``confusion`` may
    be a function, called before each fit: a run labels its gold set in round 0); ``on_round``
    sees each look's trajectory row and fit as it is made; ``answer_seconds`` gets the pool
    rows asked so far and gives the answering time they took (a run reads the store; needed
    for ``rule.max_answer_seconds``); ``diagnostics`` is fit_rasch's (False: the looks' fits
    skip R-hat and ESS, which no stopping rule reads)."""
    pool = check_pool(pool)
    if fit_config.model not in CELL_MODELS:
        raise AuditError(f"an adaptive design fits fit.model in {', '.join(CELL_MODELS)}; got "
                         f"{fit_config.model!r}")
    cells = pool_cells(pool, fit_config.attributes)
    budget = min(rule.max_prompts, pool.height)
    respondents = pool.get_column("respondent_id").n_unique()
    if budget < respondents:
        # Round 0 asks every persona at least once; a smaller budget would be overspent.
        raise AuditError(f"an adaptive budget of {budget} prompts cannot ask each of the "
                         f"design's {respondents} personas once: raise design.max_prompts (or "
                         f"design.max_tokens_budget) to at least {respondents} prompts")
    check_contrastable(pool, fit_config.attributes, fit_config.model)
    if rule.max_answer_seconds is not None and answer_seconds is None:
        raise ValueError("a time budget needs answer_seconds, the answering time spent")
    chosen = first_round(pool, min(rule.round_prompts, budget), tuple(fit_config.attributes))
    alphas = look_alphas(rule, planned_looks(rule, pool.height, chosen.height))
    asked_parts, outcome_parts, rows = [], [], []
    final = False  # the round asked took what the budget had left: its look is the last
    for index in range(len(alphas)):
        asked_parts.append(chosen.with_columns(round=pl.lit(index)))
        outcome_parts.append(answer(chosen, index))
        asked, outcomes = pl.concat(asked_parts), pl.concat(outcome_parts, how="diagonal_relaxed")
        # The budget is known before the fit, so a look that ends the run on it is known to be
        # the last, and decides at the alpha left, not at an interim look's sliver.
        seconds = answer_seconds(asked) if answer_seconds is not None else None
        affordable = prompts_affordable(rule, seconds, asked.height)
        reachable = budget if affordable is None else min(budget, asked.height + affordable)
        if reachable < budget:
            look_logger.info("adaptive time budget: %.0f of %.0f s answered, about %d prompts "
                             "left", seconds, rule.max_answer_seconds,
                             max(0, reachable - asked.height))
        pool_left = pool.height - asked.height
        final = (final or index == len(alphas) - 1 or asked.height >= reachable
                 or pool_left == 0)
        alpha = alpha_left(rule, alphas, index) if final else alphas[index]
        look_fit = dataclasses.replace(fit_config, familywise_alpha=alpha)
        fit = fit_rasch(outcomes, look_fit, sample=sample, pool=cells,
                        confusion=confusion() if callable(confusion) else confusion,
                        diagnostics=diagnostics)
        if fit.contrasts.is_empty():  # check_contrastable's levels all among unlabelled answers
            raise AuditError("an adaptive design needs contrasts to decide, and this look's "
                             "labelled answers compare no two levels of fit.attributes (see the "
                             "warnings above): set fit.attributes to persona columns with at "
                             "least two levels that cross each other")
        # Futility predicts the planned last look's alpha. A run its budget ends sooner decides
        # at the alpha left (alpha_left), which is larger: predicting with the smaller one can
        # only call a contrast dead that the end could decide (power, never error control).
        states = contrast_states(fit.contrasts, asked.height, reachable, rule.futility,
                                 text_floors(fit, fit.contrasts, pool), final_alpha=alphas[-1])
        left = reachable - asked.height
        stop = stop_reason(states, asked.height, reachable, pool_left,
                           futility_from=rule.futility_from)
        if final and stop != "decided":
            # The last look: the alpha is spent, so the run stops on its budget, never as
            # `futile` (a time budget re-estimated at the mean time a prompt so far can leave a
            # few prompts affordable after the round meant to be the last).
            stop = "budget"
        row = round_row(index, asked.height, seconds, alpha, final, states, stop)
        rows.append(row)
        look_logger.info("adaptive round %d: %d prompts, %d of %d contrasts decided, %d alive%s%s",
                         index, asked.height, row["decided"], row["contrasts"], row["alive"],
                         nearest_open(states, rule.futility), f"; stop: {stop}" if stop else "")
        if on_round is not None:
            on_round(row, fit)
        if stop is not None:
            break
        # The round that reaches the budget (or what the time left buys) is the last: the round
        # before the last planned look takes what the budget has left, so the last look, which
        # holds most of the alpha, sees the whole budget.
        final = index == len(alphas) - 2 or left <= rule.round_prompts
        size = left if final else min(rule.round_prompts, left)
        chosen = choose_next(pool, asked, fit, states, rule.other_weight, size)
    return AdaptiveRun(asked=asked, outcomes=outcomes, fit=fit,
                       rounds=pl.DataFrame(rows, schema_overrides={
                           "answer_seconds": pl.Float64, "mean_open_width": pl.Float64,
                           "stop": pl.String}),
                       states=states, stop=stop)
