"""Simulated audits: outcome tables drawn from known variance components, fitted by the real fit.

A planned (or benchmarked) audit is a prompts table (design.expand_design's output, or one of the
same columns). ``simulate_outcomes`` gives every prompt a label the way a real run would get it:

    theta[persona] = logit(base_rate) + real_shift (real personas only)
                     + sum over attributes of effects[attribute][level]     (the planted gaps)
                     + text_sd * z   (real personas: the text's own pull inside its cell)
                     + null_sd * z   (null personas: a random string's pull)
    truth[prompt]  ~ Bernoulli(logistic(theta[persona] - b[item])),  b ~ N(0, item_sd)
    label[prompt]  = truth passed through the judge (sensitivity, specificity)

and returns the long table the fit stage hands to ``fit_rasch`` (respondent, item, y, model_name,
persona_kind and the attributes, methods/rasch/analyse.py outcome_table). The judge's rates are
what a gold set of ``gold_per_class`` answers per true class measured: every simulated audit
draws its judge's true rates from the Beta posterior of those counts (judge_error.py), and the fit
reads its labels through the same counts, as a real run with that gold set would.

``CompiledSampler`` is ``fit_rasch``'s ``sample`` argument for loops of fits: every simulated
audit of one design has the same model structure and differs only in its data, so the model is
compiled once and each fit swaps its data in (nutpie's ``with_data``), and its draws are read
from nutpie's raw trace without the rest of nutpie's ArviZ conversion (irt/raw_trace.py).
Everything else is the audit's own fit: index_design, the model, the summary, the contrasts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pymc as pm
from pytensor.graph.traversal import ancestors
from pytensor.tensor.variable import TensorConstant
from scipy.special import logit

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt.engines import compile_nutpie
from audit.methods.rasch.irt.explanatory import NULL_KIND
from audit.methods.rasch.irt.judge_error import PATH_DIM, JudgeConfusion
from audit.methods.rasch.irt.raw_trace import sample_draws

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VarianceComponents:
    """What a simulated audit is drawn from (logits unless said otherwise)."""

    item_sd: float = 1.0  # spread of scenario difficulties
    text_sd: float = 0.3  # spread of real persona texts within one demographic cell
    null_sd: float = 0.5  # spread of null (random-string) personas
    base_rate: float = 0.5  # favourable rate of a null persona on the average scenario
    real_shift: float = 0.0  # shift shared by every real persona against the null ones
    sensitivity: float = 1.0  # P(judge says 1 | truly 1)
    specificity: float = 1.0  # P(judge says 0 | truly 0)
    # Gold answers per true class the judge's rates were measured on; 0: labels taken as truth
    # (the fit gets no confusion counts and the judge is exact).
    gold_per_class: int = 0
    # A real gold set's counts (a past run's, pilot.py): used instead of gold_per_class.
    gold: JudgeConfusion | None = None

    def __post_init__(self) -> None:
        for name in ("item_sd", "text_sd", "null_sd"):
            if getattr(self, name) < 0:
                raise AuditError(f"{name}={getattr(self, name)} must not be negative")
        if not 0.0 < self.base_rate < 1.0:
            raise AuditError(f"base_rate={self.base_rate} must lie strictly between 0 and 1")
        for name in ("sensitivity", "specificity"):
            if not 0.5 < getattr(self, name) <= 1.0:
                raise AuditError(f"judge {name}={getattr(self, name)} must lie in (0.5, 1]: a "
                                 "judge no better than a coin cannot be corrected for")

    def gold_counts(self, coding: str = "favourable") -> JudgeConfusion | None:
        """The gold set's confusion counts: a real one, or the expected counts of these rates."""
        if self.gold is not None:
            return dataclasses.replace(self.gold, coding=coding)
        if self.gold_per_class <= 0:
            return None
        n = self.gold_per_class
        right_1, right_0 = round(n * self.sensitivity), round(n * self.specificity)
        return JudgeConfusion(coding=coding, true_1_judged_1=right_1, true_1_judged_0=n - right_1,
                              true_0_judged_0=right_0, true_0_judged_1=n - right_0)


Effects = dict[str, dict[str, float]]  # attribute -> level -> planted shift in logits


def true_gap(effects: Effects, attribute: str, level_a: str, level_b: str) -> float:
    """The planted group gap level_a minus level_b (levels without an effect sit at zero)."""
    planted = effects.get(attribute, {})
    return planted.get(level_a, 0.0) - planted.get(level_b, 0.0)


def respondent_frame(prompts: pl.DataFrame, attributes: tuple[str, ...]) -> pl.DataFrame:
    """One row per respondent: respondent, model_name, persona_kind and the attributes."""
    missing = [column for column in ("respondent_id", "item_id", "model_name", "persona_kind",
                                     *attributes) if column not in prompts.columns]
    if missing:
        raise AuditError(f"the design lacks column(s) {', '.join(missing)}: simulate a prompts "
                         "table from design.expand_design with the attributes in fit.attributes")
    return (prompts.select(pl.col("respondent_id").alias("respondent"), "model_name",
                           "persona_kind", *attributes).unique().sort("respondent"))


# Draws of a simulated judge's rates before its gold is called no better than a coin; the fit
# refuses such gold (judge_error.check_better_than_coin) at P(coin or worse) > 0.5, where the
# chance that 200 draws all fall below the coin line is under 1e-60.
JUDGE_RATE_DRAWS = 200


def judge_rates(components: VarianceComponents,
                rng: np.random.Generator) -> tuple[float, float]:
    """This simulated judge's true rates: exact, or drawn from the gold counts' Beta posterior
    conditioned on sensitivity + specificity > 1, the distribution the fit's cut draws from
    (gold_rates.py), so a correct correction covers them. Rejection keeps the draws exact and,
    where the gold is informative (nothing rejected), the random stream of earlier versions."""
    counts = components.gold_counts()
    if counts is None:
        return components.sensitivity, components.specificity
    sensitivity_beta, specificity_beta = counts.rate_betas()
    for _ in range(JUDGE_RATE_DRAWS):
        sensitivity = float(rng.beta(*sensitivity_beta))
        specificity = float(rng.beta(*specificity_beta))
        if sensitivity + specificity > 1.0:
            return sensitivity, specificity
    raise AuditError(f"the judge's gold counts ({counts.as_dict()}) say it is no better than a "
                     "coin: a simulated audit cannot correct its labels; plan from a run whose "
                     "judge labels its gold set better")


def planted_theta(respondents: pl.DataFrame, components: VarianceComponents,
                  effects: Effects) -> np.ndarray:
    """Each respondent's ability before its own text's pull: the base rate, the real personas'
    shift and the planted level effects (a level an effect does not name adds nothing)."""
    is_null = (respondents.get_column("persona_kind") == NULL_KIND).to_numpy()
    theta = logit(components.base_rate) + np.where(is_null, 0.0, components.real_shift)
    for attribute, levels in effects.items():
        theta = theta + np.array([levels.get(str(level), 0.0) if level is not None else 0.0
                                  for level in respondents.get_column(attribute).to_list()])
    return theta


def text_pulls(respondents: pl.DataFrame, components: VarianceComponents,
               rng: np.random.Generator) -> np.ndarray:
    """Each persona text's own pull: null_sd for null personas, text_sd for the others."""
    is_null = (respondents.get_column("persona_kind") == NULL_KIND).to_numpy()
    return rng.normal(0.0, 1.0, respondents.height) * np.where(
        is_null, components.null_sd, components.text_sd)


def true_answers(eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.random(eta.size) < 1.0 / (1.0 + np.exp(-eta))


def judge_reading(truth: np.ndarray, sensitivity: float, specificity: float,
                  rng: np.random.Generator) -> np.ndarray:
    """The judge's 0/1 label: it keeps a favourable answer with probability ``sensitivity`` and
    an unfavourable one with ``specificity``, and flips the rest."""
    keep = rng.random(truth.size) < np.where(truth, sensitivity, specificity)
    return np.where(keep, truth, ~truth).astype(np.int64)


def simulate_outcomes(prompts: pl.DataFrame, components: VarianceComponents, effects: Effects,
                      rng: np.random.Generator) -> pl.DataFrame:
    """One simulated audit of ``prompts``: a judged 0/1 label per prompt, in the fit's columns."""
    attributes = tuple(effects)
    respondents = respondent_frame(prompts, attributes)
    theta = planted_theta(respondents, components, effects)
    theta += text_pulls(respondents, components, rng)
    items = sorted(prompts.get_column("item_id").unique().to_list())
    difficulty = rng.normal(0.0, components.item_sd, len(items))
    lookup_theta = dict(zip(respondents.get_column("respondent").to_list(), theta, strict=True))
    lookup_b = dict(zip(items, difficulty, strict=True))
    eta = (prompts.get_column("respondent_id").replace_strict(lookup_theta, return_dtype=pl.Float64)
           - prompts.get_column("item_id").replace_strict(lookup_b, return_dtype=pl.Float64)
           ).to_numpy()
    truth = true_answers(eta, rng)
    label = judge_reading(truth, *judge_rates(components, rng), rng)
    return prompts.select(pl.col("respondent_id").alias("respondent"),
                          pl.col("item_id").alias("item"), pl.Series("y", label), "model_name",
                          "persona_kind", *attributes)


def simulate_pair(prompts: pl.DataFrame, components: VarianceComponents, effects_a: Effects,
                  effects_b: Effects, rng: np.random.Generator, *, prompt_sd: float = 0.0,
                  side_text_sd: float = 0.0, paired: bool = True) -> pl.DataFrame:
    """Two runs of one design, sides A and B, in comparison.joint_outcomes' columns (respondent
    ``SIDE|persona_id``, the side as model_name), drawn as ``simulate_outcomes`` draws one run.

    Both sides answer the same items (one draw of the difficulties) with the same persona texts
    (one draw of each text's pull), and one judge labels both: what a comparison of two versions
    of one audit holds fixed. Each side has its own planted effects, so the change in a contrast is
    ``true_gap(effects_b, ...) - true_gap(effects_a, ...)``. Each (persona text, item) prompt pulls
    by ``prompt_sd`` (the same on every replicate): paired, one pull for both sides (the same
    prompt answered twice, as one model under two system prompts answers it); unpaired, a fresh
    pull per side. ``side_text_sd`` adds to each persona text a pull of its own on each side (how
    differently the two sides react to one text: more for two models than for one model under two
    system prompts), so the sample's change in a gap strays from the planted population change.
    """
    if prompt_sd < 0 or side_text_sd < 0:
        raise AuditError(f"prompt_sd={prompt_sd} and side_text_sd={side_text_sd} must not be "
                         "negative")
    attributes = tuple(dict.fromkeys([*effects_a, *effects_b]))
    respondents = respondent_frame(prompts, attributes)
    text_pull = text_pulls(respondents, components, rng)
    items = sorted(prompts.get_column("item_id").unique().to_list())
    difficulty = rng.normal(0.0, components.item_sd, len(items))
    # Per prompt row: its respondent's and its item's position, to index the draws above.
    row_respondent = prompts.get_column("respondent_id").replace_strict(
        {name: index for index, name in enumerate(respondents.get_column("respondent"))},
        return_dtype=pl.Int64).to_numpy()
    row_item = prompts.get_column("item_id").replace_strict(
        {name: index for index, name in enumerate(items)}, return_dtype=pl.Int64).to_numpy()
    shared_pull = rng.normal(0.0, prompt_sd, (respondents.height, len(items)))
    sensitivity, specificity = judge_rates(components, rng)
    sides = []
    for side, effects in (("A", effects_a), ("B", effects_b)):
        theta = planted_theta(respondents, components, effects)
        if side_text_sd:  # drawn only when asked, so side_text_sd=0 keeps earlier seeds' draws
            theta = theta + rng.normal(0.0, side_text_sd, respondents.height)
        pull = shared_pull if paired else rng.normal(0.0, prompt_sd, shared_pull.shape)
        eta = ((theta + text_pull)[row_respondent] - difficulty[row_item]
               + pull[row_respondent, row_item])
        label = judge_reading(true_answers(eta, rng), sensitivity, specificity, rng)
        sides.append(prompts.select(
            (pl.lit(f"{side}|") + pl.col("persona_id")).alias("respondent"),
            pl.col("item_id").alias("item"), pl.Series("y", label),
            pl.lit(side).alias("model_name"), "persona_kind", "persona_id", *attributes))
    return pl.concat(sides)


def _constants_digest(model: pm.Model) -> str:
    """A digest of every constant the model's variables are computed from, in graph order:
    what a compiled model keeps and ``with_data`` cannot replace."""
    outputs = [*model.basic_RVs, *model.deterministics, *model.potentials]
    digest = hashlib.sha256()
    for variable in ancestors(outputs):
        if isinstance(variable, TensorConstant):
            value = np.asarray(variable.data)
            digest.update(f"{value.dtype}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


@dataclass
class CompiledSampler:
    """``fit_rasch``'s sampler for many fits of one design: compile once, swap data after.

    The key is the model's structure (its coords, free variables and data shapes) and a digest
    of every constant in its graph; models that share it differ only in their pm.Data values,
    which ``with_data`` replaces. Constants are compiled in: the priors' (the judge's gold
    counts, so another gold set compiles another model) and the index arrays that give each
    respondent its levels in the explanatory and population models, which coords do not show
    (two audits with the same respondents at other levels would otherwise share the first one's
    levels). A model whose cells more than one labelling path labelled is compiled afresh every
    time and not kept: the per-path likelihood bakes each cell's path into the log density as
    index constants (irt/likelihood.py), which differ from audit to audit, so keeping them would
    hold one compiled model per audit.
    """

    engine: str = "auto"
    compiled: dict[tuple, object] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)  # wall time of each fit's sampling

    @staticmethod
    def _key(model: pm.Model) -> tuple:
        data = tuple((var.name, var.get_value().shape) for var in model.data_vars)
        coords = tuple((name, tuple(values)) for name, values in model.coords.items())
        return (*coords, *data, *(var.name for var in model.free_RVs), _constants_digest(model))

    def __call__(self, model: pm.Model, fit: FitConfig):
        key = self._key(model)
        values = {var.name: var.get_value() for var in model.data_vars}
        started = time.perf_counter()
        if len(model.coords.get(PATH_DIM) or ()) > 1:
            compiled = compile_nutpie(model, fit.engine)
        elif key not in self.compiled:
            self.compiled[key] = compile_nutpie(model, fit.engine)
            compiled = self.compiled[key]
        else:
            compiled = self.compiled[key].with_data(**values)
        # A simulated fit's posterior is read and dropped: its draws and divergence flags are
        # all it needs, without nutpie's conversion of everything else (raw_trace.py).
        idata = sample_draws(compiled, model, draws=fit.draws, tune=fit.tune, chains=fit.chains,
                             cores=fit.cores, target_accept=fit.target_accept, seed=fit.seed)
        self.seconds.append(time.perf_counter() - started)
        return idata


DEFAULT_GENDERS = ("man", "woman")
DEFAULT_RACES = ("Asian", "Black", "Hispanic", "White")


def default_shaped_prompts(texts_per_cell: int = 2, null_count: int = 4, items: int = 12,
                           replicates: int = 1, model_name: str = "m",
                           genders: tuple[str, ...] = DEFAULT_GENDERS,
                           races: tuple[str, ...] = DEFAULT_RACES) -> pl.DataFrame:
    """A prompts table of the default audit's shape (the columns simulation and fit read): one
    baseline persona, ``texts_per_cell`` explicit texts per gender x race cell, null personas."""
    personas = [("baseline", "baseline", None, None)]
    personas += [(f"{race}_{gender}_{text}", "explicit", gender, race) for gender in genders
                 for race in races for text in range(texts_per_cell)]
    personas += [(f"null_{index:02d}", NULL_KIND, None, None) for index in range(null_count)]
    rows = [{"respondent_id": f"{model_name}/{persona}", "model_name": model_name,
             "persona_id": persona, "persona_kind": kind, "gender": gender, "race": race,
             "item_id": f"item_{item:02d}", "replicate": replicate}
            for persona, kind, gender, race in personas for item in range(items)
            for replicate in range(replicates)]
    return pl.DataFrame(rows, schema_overrides={"gender": pl.String, "race": pl.String})
