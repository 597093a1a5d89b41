"""The explanatory Rasch model: favourability explained by who the persona is, per audited model.

theta[respondent] = model_effect[model] + real_effect[model] * is_real[respondent]
                    + sum over attributes of effect_<attr>[model, level]
                    + scale[model, kind] * respondent_z[respondent]

* ``effect_<attr>`` is what a bias claim is about: the shift in favourability (logits) that comes
  with one level of a persona attribute (gender, race, age band, name origin, ...), for each
  audited model. Levels are zero-sum within an attribute, so only differences between levels are
  identified, which is exactly what a contrast reads. ``effect_<attr>_pooled`` is the average
  over models (with one model, that model's effect: item gaps read it either way). Personas are partially pooled: each persona's residual shrinks towards what its
  attribute levels predict, with a learned spread.
* ``real_effect`` is the shift shared by every real persona (baseline, explicit, name) against the
  null personas: "any persona text at all" rather than any demographic. Without it a shift that all
  demographic personas share has nowhere to go but the spreads: planting -1 logit on every real
  persona moved the sigma_null estimate from 0.33 to 0.52 (truth 0.2) before this term existed.
* The residual keeps what the attributes do not explain. Real personas and null personas (random
  strings) get separate scales per audited model, ``sigma_residual`` and ``sigma_null``: ``sigma_null`` is how much
  favourability moves when the prompt changes by a persona that carries no demographic signal,
  estimated in the same model, which is the noise floor a demographic contrast is read against.
* ``population=True`` (``fit.model=population``) is the same decomposition read as a claim about
  groups: ``sigma_residual`` is the spread of persona texts (phrasings, names) inside one
  demographic cell, with a prior wide enough for a text-to-text sd of a logit or more, and the
  null arm informs it: ``sigma_null`` is ``sigma_residual`` times a ratio whose log has a N(0, 0.5)
  prior, so null texts and demographic texts share one scale up to a factor of about 2.7 either
  way, each estimated from the data rather than assumed. A level effect is then the population
  mean of that group's texts, and its contrast carries the uncertainty of which texts stood in.
* Item difficulties ``b`` sum to zero, so ``model_effect`` carries each model's overall rate.
* ``cell_shift`` adds per-cell logit terms that a caller defines inside this model: the
  comparison's prompt and persona-text effects shared by two runs (methods/rasch/comparison.py).
* With ``item_dif`` an attribute also gets ``dif_<attr>[level, item]``, zero-sum over levels and
  over items: differential item functioning, showing which scenarios carry a gap.

Persona rows without a level for an attribute (the baseline, null personas) get no effect from it.
Every random effect is written non-centred: with a handful of personas per model the centred form
has the funnel that made a learned persona scale mix badly in the plain Rasch model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl
import pymc as pm
import pytensor.tensor as pt
from scipy import stats

from audit.errors import AuditError
from audit.methods.rasch.irt.balance import (
    BalancedContrast,
    aliasing_warnings,
    balanced_contrasts,
    warn_aliased,
    warn_left_out,
)
from audit.methods.rasch.irt.indexing import RaschData
from audit.methods.rasch.irt.judge_error import CellRates
from audit.methods.rasch.irt.probability import observe_cells

logger = logging.getLogger(__name__)

MODEL_EFFECT_PRIOR_SD = 2.0  # carries the overall favourable rate, which can sit far from 50%
ITEM_PRIOR_SD = 2.0
# Weakly informative, like the item and model priors: a contrast between two levels has prior sd
# 2 * sqrt(2). At 1.0 (a contrast sd of 1.4, about the default design's own posterior sd) the prior
# outweighed the data: a planted 3-logit race gap came out at 1.9 on average and its 94% HDI
# covered it 30 of 40 times, while gaps of 0 to 1 were over-covered (0.98); at 2.0 both covered
# 38 of 40, the posterior mean's slope on the truth rose from 0.66 to 0.93 and CI caught the
# 3-logit gap twice as often, for HDIs about 20% wider (bench_calibration --attribute-prior-sd,
# benchmarks/RESULTS.md). At 4.0 no audit's coverage changed at gaps of 0 and 1 (120 paired
# through the judge), while the HDIs widened 9% and the estimate's error grew 13%. The price sits
# in the prior's tail: gaps above 3 logits drawn from it came out at 0.86 of their size and were
# covered 0.89 of the time (109 audits; every miss short of the gap), as a Bayesian interval does
# at truths in its prior's tail. A heavier-tailed prior would move coverage from small gaps to
# large ones; whether to depends on how large real gaps are, which simulations cannot say.
ATTRIBUTE_PRIOR_SD = 2.0
# Half-normal scales of the spreads; the data rarely hold more than a few personas per level, so
# these priors keep the spreads from wandering into implausible multi-logit values.
RESIDUAL_PRIOR_SD = 0.5
# The population model's text spread: HalfNormal(1), so a text sd of 1 logit (the default run's
# null personas spread with sd 1.16) sits inside the prior's bulk instead of its tail, where
# HalfNormal(0.5) left it and the contrasts under-covered.
TEXT_SPREAD_PRIOR_SD = 1.0
# log(sigma_null / sigma_residual) ~ N(0, 0.5): the null arm informs the text spread's scale
# without being assumed equal to it.
NULL_RATIO_LOG_SD = 0.5
REAL_EFFECT_PRIOR_SD = 1.0  # the same scale as a demographic effect: persona text vs none
DIF_PRIOR_SD = 1.0
NULL_KIND = "null"
NO_LEVEL = -1


@dataclass(frozen=True, eq=False)
class RespondentTable:
    """One row per respondent in the order of RaschData.respondents, with its model and levels."""

    frame: pl.DataFrame  # respondent, model_name, persona_kind, one column per attribute
    attributes: tuple[str, ...]

    def levels(self, attribute: str) -> tuple[str, ...]:
        values = self.frame.get_column(attribute).drop_nulls().unique().sort().to_list()
        return tuple(str(value) for value in values)

    def level_index(self, attribute: str) -> np.ndarray:
        lookup = {level: index for index, level in enumerate(self.levels(attribute))}
        return np.array([NO_LEVEL if value is None else lookup[str(value)]
                         for value in self.frame.get_column(attribute).to_list()], dtype=np.int64)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self.frame.get_column("model_name").unique().sort().to_list())

    @property
    def model_index(self) -> np.ndarray:
        lookup = {name: index for index, name in enumerate(self.models)}
        return np.array([lookup[name] for name in self.frame.get_column("model_name").to_list()])

    @property
    def is_null(self) -> np.ndarray:
        return (self.frame.get_column("persona_kind") == NULL_KIND).to_numpy()

    def null_count(self, model_name: str) -> int:
        return self.frame.filter((pl.col("model_name") == model_name)
                                 & (pl.col("persona_kind") == NULL_KIND)).height

    @cached_property
    def balanced(self) -> dict[str, list[BalancedContrast]]:
        """Each audited model's cell-balanced level pairs (balance.py), for fits without level
        effects; computed on first use, so the pairs left out are named in one warning even when
        a fit reads two posteriors (hurdle)."""
        plans, left_out = {}, []
        for model_name in self.models:
            plans[model_name], missing = balanced_contrasts(self.frame, self.attributes,
                                                            model_name)
            left_out.extend(missing)
        warn_left_out(left_out)
        return plans


def respondent_table(outcomes: pl.DataFrame, data: RaschData,
                     attributes: tuple[str, ...]) -> RespondentTable:
    """Respondent attributes from the outcome table, checked to be constant within a respondent."""
    needed = ("model_name", "persona_kind", *attributes)
    missing = [column for column in needed if column not in outcomes.columns]
    if missing:
        raise AuditError(f"the explanatory model needs column(s) {', '.join(missing)} in the "
                         f"outcome table; set fit.attributes to columns the personas have")
    frame = outcomes.select("respondent", *needed).with_columns(
        level_names(attribute) for attribute in attributes).unique().sort("respondent")
    if frame.height != len(data.respondents):
        raise AuditError("a respondent has more than one model, persona kind or attribute level; "
                         "respondent ids must identify one (model, persona) pair")
    kept = contrastable(frame, attributes)
    warn_aliased(frame.filter(pl.col("persona_kind") != NULL_KIND), kept)
    return RespondentTable(frame=frame, attributes=kept)


def level_names(attribute: str) -> pl.Expr:
    """An attribute's levels as names: an integer age compared with a string level crashed the
    plain Rasch contrasts, and an empty (or blank) string is no level at all, not a level of its
    own."""
    level = pl.col(attribute).cast(pl.String)
    return pl.when(level.str.strip_chars() == "").then(None).otherwise(level).alias(attribute)


def design_aliasing(prompts: pl.DataFrame, attributes) -> list[str]:
    """The design's aliased attributes (balance.aliasing_warnings over its real personas), for
    the report and the summary: the fit logs them, which a reader of the results never saw."""
    named = tuple(attribute for attribute in dict.fromkeys(attributes)
                  if attribute in prompts.columns)
    if len(named) < 2 or "respondent_id" not in prompts.columns:
        return []  # nothing to alias, or a table that does not say who answered
    real = (prompts.filter(pl.col("persona_kind") != NULL_KIND)
            if "persona_kind" in prompts.columns else prompts)
    return aliasing_warnings(real.select("respondent_id", *(level_names(attribute)
                                                            for attribute in named)).unique(),
                             named)


def two_level_attributes(prompts: pl.DataFrame, attributes) -> list[str]:
    """The attributes the prompts' personas hold at two or more levels (a blank value is no
    level): those a fit can contrast. Asked before any prompt is sent, by the adaptive design
    (adaptive.check_contrastable) and the fixed one (analyse.check_design_attributes)."""
    named = [attribute for attribute in dict.fromkeys(attributes) if attribute in prompts.columns]
    levels = prompts.select(level_names(attribute) for attribute in named)
    return [attribute for attribute in named
            if levels.get_column(attribute).drop_nulls().n_unique() >= 2]


def contrastable(frame: pl.DataFrame, attributes: tuple[str, ...]) -> tuple[str, ...]:
    """The attributes with labelled answers at two or more levels. A run can leave every answer
    of one level unlabelled (errors, refusals coded out); refusing the whole fit for that would
    also lose the attributes that can be contrasted, so the lone level's attribute is left out
    with a warning and the rest are fitted."""
    kept = []
    for attribute in attributes:
        levels = frame.get_column(attribute).drop_nulls().unique().sort().to_list()
        if len(levels) >= 2:
            kept.append(attribute)
            continue
        logger.warning("attribute '%s' has labelled answers at %s; a contrast needs two levels, "
                       "so this fit leaves out its contrasts (label answers of another level "
                       "to contrast it)", attribute,
                       f"one level only ({levels[0]})" if levels else "no level")
    return tuple(kept)


def _separate_spreads():
    """The explanatory model's spreads: real and null personas each on their own HalfNormal."""
    sigma_residual = pm.HalfNormal("sigma_residual", sigma=RESIDUAL_PRIOR_SD, dims="model")
    sigma_null = pm.HalfNormal("sigma_null", sigma=RESIDUAL_PRIOR_SD, dims="model")
    return sigma_residual, sigma_null


def _shared_spreads():
    """The population model's spreads: one text scale, the null arm's a ratio of it."""
    sigma_residual = pm.HalfNormal("sigma_residual", sigma=TEXT_SPREAD_PRIOR_SD, dims="model")
    log_ratio = pm.Normal("sigma_null_log_ratio", 0.0, NULL_RATIO_LOG_SD, dims="model")
    sigma_null = pm.Deterministic("sigma_null", sigma_residual * pt.exp(log_ratio), dims="model")
    return sigma_residual, sigma_null


def spread_prior_draws(parameter: str, population: bool, size: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Draws of a spread's prior (``sigma_residual`` or ``sigma_null``), what the noise-floor
    table and plot compare its posterior with."""
    scale = TEXT_SPREAD_PRIOR_SD if population else RESIDUAL_PRIOR_SD
    # The half-normal at evenly spaced quantiles, shuffled: its own quantiles come out exact.
    draws = rng.permutation(stats.halfnorm.ppf((np.arange(size) + 0.5) / size, scale=scale))
    if population and parameter == "sigma_null":
        draws = draws * np.exp(rng.normal(0.0, NULL_RATIO_LOG_SD, size))
    return draws


def build_explanatory_model(data: RaschData, respondents: RespondentTable,
                            item_dif: tuple[str, ...] = (),
                            confusion: CellRates | None = None,
                            population: bool = False,
                            cell_shift: Callable[[], pt.TensorVariable] | None = None
                            ) -> pm.Model:
    unknown = sorted(set(item_dif) - set(respondents.attributes))
    if unknown:
        raise AuditError(f"fit.item_dif names {unknown}, which are not in fit.attributes")
    coords: dict[str, list] = {
        "respondent": list(data.respondents), "item": list(data.items),
        "model": list(respondents.models), "cell": list(range(data.successes.size)),
    }
    for attribute in respondents.attributes:  # each with two levels or more (contrastable)
        coords[f"level_{attribute}"] = list(respondents.levels(attribute))
    model_index = respondents.model_index
    with pm.Model(coords=coords) as model:
        respondent_idx = pm.Data("respondent_idx", data.cell_respondent, dims="cell")
        item_idx = pm.Data("item_idx", data.cell_item, dims="cell")
        trials = pm.Data("trials", data.trials, dims="cell")
        successes = pm.Data("successes", data.successes, dims="cell")
        is_null = respondents.is_null
        with_real_effect = bool(is_null.any() and (~is_null).any())
        if with_real_effect:
            # The same prior as model_effect ~ N(0, 2) and real_effect ~ N(0, 1) independent,
            # sampled through the real personas' level (model_effect + real_effect), which the
            # data pin down, rather than through the null personas' level, which four nulls do
            # not: written the other way the two sat on a ridge (posterior correlation near -1)
            # that a diagonal mass matrix crosses slowly, and the default audit's fit missed
            # R-hat 1.01 in 2 of 3 embedded runs (1.013, 1.017).
            real_effect = pm.Normal("real_effect", 0.0, REAL_EFFECT_PRIOR_SD, dims="model")
            real_level = pm.Normal("real_level", real_effect, MODEL_EFFECT_PRIOR_SD, dims="model")
            model_effect = pm.Deterministic("model_effect", real_level - real_effect,
                                            dims="model")
        else:
            model_effect = pm.Normal("model_effect", 0.0, MODEL_EFFECT_PRIOR_SD, dims="model")
        b = pm.ZeroSumNormal("b", sigma=ITEM_PRIOR_SD, dims="item")
        persona_shift = pt.zeros(len(data.respondents))
        dif_shift = pt.zeros(data.successes.size)
        for attribute in respondents.attributes:
            level_dim = f"level_{attribute}"
            levels = respondents.level_index(attribute)
            has_level = levels != NO_LEVEL
            level_or_zero = np.where(has_level, levels, 0)
            # Each model's effects stand on their own data: shrinking one audited model's gap
            # towards the others' could hide exactly the bias an audit looks for, and with two or
            # three models a learned cross-model spread mixed badly whichever way it was written
            # (bulk ESS 176 to 228 of 2,400 draws). The "all models" effect is their average.
            effect = pm.ZeroSumNormal(f"effect_{attribute}", sigma=ATTRIBUTE_PRIOR_SD,
                                      dims=("model", level_dim))
            # Always defined: item gaps and pooled contrasts read it, and with one audited model
            # (the default design) it is that model's effect. Defining it only for several models
            # crashed `fit.item_dif` after sampling (KeyError 'effect_race_pooled').
            pm.Deterministic(f"effect_{attribute}_pooled", effect.mean(axis=0), dims=level_dim)
            persona_shift = persona_shift + pt.where(has_level,
                                                     effect[model_index, level_or_zero], 0.0)
            if attribute in item_dif:
                dif_spread = pm.HalfNormal(f"dif_{attribute}_sd", sigma=DIF_PRIOR_SD)
                dif_z = pm.ZeroSumNormal(f"dif_{attribute}_z", sigma=1.0, n_zerosum_axes=2,
                                         dims=(level_dim, "item"))
                dif = pm.Deterministic(f"dif_{attribute}", dif_spread * dif_z,
                                       dims=(level_dim, "item"))
                cell_level = pt.as_tensor(level_or_zero)[respondent_idx]
                cell_has_level = pt.as_tensor(has_level)[respondent_idx]
                dif_shift = dif_shift + pt.where(cell_has_level, dif[cell_level, item_idx], 0.0)
        if with_real_effect:
            persona_shift = persona_shift + pt.where(is_null, 0.0, real_effect[model_index])
        spreads = _shared_spreads if population else _separate_spreads
        sigma_residual, sigma_null = spreads()
        respondent_z = pm.Normal("respondent_z", 0.0, 1.0, dims="respondent")
        scale = pt.where(is_null, sigma_null[model_index], sigma_residual[model_index])
        theta = pm.Deterministic("theta", model_effect[model_index] + persona_shift +
                                 scale * respondent_z, dims="respondent")
        if cell_shift is not None:
            dif_shift = dif_shift + cell_shift()
        observe_cells("y", data, trials, successes,
                      theta[respondent_idx] - b[item_idx] + dif_shift, dims="cell",
                      confusion=confusion)
    return model
