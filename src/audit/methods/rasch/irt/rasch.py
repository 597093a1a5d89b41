"""Bayesian Rasch (1PL IRT) models: a favourability theta per respondent, a difficulty b per item.

P(y = 1) = logistic(theta[respondent] - b[item]). Two variants share the likelihood and the names
``theta`` and ``b``, so everything downstream is model-agnostic:

* ``rasch_seed`` is exactly the original audit's model (N(0, 1) priors, one Bernoulli per response);
  ``conf/fit/rasch_seed.yaml`` also sets the audit's coding, ``outcome: undetermined``.
  Its location is fixed only by the priors, which mixes badly on large designs (see FACTS.md).
* ``rasch`` pins the location with a zero-sum person effect, lets the item difficulties carry a
  free mean, and aggregates replicates into Binomial cells: the same likelihood, but well
  identified and about nine times cheaper per gradient on replicated designs (FACTS.md).
* ``twopl`` is ``rasch`` with an item discrimination ``a``: logistic(a[item] * (theta - b)), for
  users who want to see which scenarios separate respondents sharply and which barely do.
* ``explanatory`` (explanatory.py) decomposes theta into model, persona-attribute and residual
  effects, with null personas as the noise floor.
* ``population`` (explanatory.py, ``population=True``): the same decomposition with the spread of
  persona texts inside a demographic cell estimated on a wide prior and informed by the null arm,
  so a contrast is a difference of group (population) effects, not of the design's sentences.
* ``hurdle`` (hurdle.py) models abstention as a step of its own: decide or abstain, then
  favourable or not given a decision, with persona effects on both steps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pymc as pm
import xarray as xr
from xarray import DataTree

from audit.errors import AuditError
from audit.methods.rasch.config import MODELS, FitConfig
from audit.methods.rasch.irt.engines import sample_posterior
from audit.methods.rasch.irt.contrasts import item_gaps, level_contrasts
from audit.methods.rasch.irt.diagnostics import Diagnostics, diagnose
from audit.methods.rasch.irt.explanatory import (RespondentTable, build_explanatory_model,
                                                  respondent_table)
from audit.methods.rasch.irt.hurdle import (
    ABSTAINED_OUTCOME,
    DECIDED_OUTCOME,
    abstention_posterior,
    build_hurdle_model,
    hurdle_data,
)
from audit.methods.rasch.irt.indexing import RaschData, index_design
from audit.methods.rasch.irt.judge_cut import fit_cut
from audit.methods.rasch.irt.judge_error import (
    ANY_PATH,
    CellRates,
    JudgeConfusion,
    JudgeCorrection,
    as_correction,
)
from audit.methods.rasch.irt.probability import (
    JUDGE_ERROR_NOTE,
    check_response,
    index_probabilities,
    observe_cells,
    probability_outcomes,
)
from audit.methods.rasch.irt.summary import summarise

logger = logging.getLogger(__name__)

# Models whose theta is explained by persona attributes (explanatory.py).
ATTRIBUTE_MODELS: tuple[str, ...] = ("explanatory", "population")
# Prior scales of the identified model, on the logit scale. theta keeps the seed model's N(0, 1);
# items get more room because their mean now carries the overall favourable rate, which for a
# model that almost always approves (or denies) sits far from zero.
THETA_PRIOR_SD = 1.0
ITEM_PRIOR_SD = 2.0
# log a ~ N(0, 0.5): discriminations between about 0.4 and 2.7 a priori, centred on the Rasch a = 1.
DISCRIMINATION_LOG_SD = 0.5
SampleFunction = Callable[[pm.Model, FitConfig], DataTree]


def build_rasch_model(data: RaschData, model: str = "rasch",
                      confusion: CellRates | None = None) -> pm.Model:
    """Build a model that needs only the response table; each exposes ``theta`` and ``b``.

    ``confusion`` (the labelling paths' gold counts bound to the cells) makes the likelihood
    read each label through its path's misclassification rates (judge_error.py); the seed model
    keeps the original audit's labels-as-truth likelihood.
    """
    coords = {"respondent": list(data.respondents), "item": list(data.items)}
    if model == "rasch_seed":
        if confusion is not None:
            raise AuditError("fit.model=rasch_seed is the original audit's model, which reads "
                             "labels as truth: set fit.judge_error=false or use fit=rasch")
        return _build_seed_model(data, coords)
    if model in ("rasch", "twopl"):
        return _build_identified_model(data, coords, discrimination=model == "twopl",
                                       confusion=confusion)
    if model == "hurdle":
        raise ValueError("the hurdle model codes its two steps from the judge's labels: fit it "
                         "with fit_rasch on an outcome table that has a label column")
    if model in ATTRIBUTE_MODELS:
        raise ValueError(f"the {model} model needs persona attributes: fit it with fit_rasch "
                         "on an outcome table that has model_name, persona_kind and the attributes")
    raise AuditError(f"unknown model {model!r}; valid models: {', '.join(MODELS)}")


def _build_seed_model(data: RaschData, coords: dict) -> pm.Model:
    """The original audit, unchanged: its location is identified only through the N(0,1) priors."""
    coords = {**coords, "response": np.arange(data.row_y.size)}
    with pm.Model(coords=coords) as model:
        respondent_idx = pm.Data("respondent_idx", data.row_respondent, dims="response")
        item_idx = pm.Data("item_idx", data.row_item, dims="response")
        responses = pm.Data("responses", data.row_y, dims="response")
        theta = pm.Normal("theta", mu=0.0, sigma=1.0, dims="respondent")
        b = pm.Normal("b", mu=0.0, sigma=1.0, dims="item")
        pm.Bernoulli(
            "y", logit_p=theta[respondent_idx] - b[item_idx], observed=responses, dims="response"
        )
    return model


def _build_identified_model(data: RaschData, coords: dict, discrimination: bool,
                            confusion: CellRates | None = None) -> pm.Model:
    """Zero-sum persons, free item difficulties, Binomial cells, no hyperparameters.

    theta sums to zero, so "average respondent" is the reference point and b carries the overall
    rate; without that constraint theta and b shift together and chains drift (ESS 34, R-hat 1.09
    on 100 x 50 x 10 in FACTS.md). The priors are fixed rather than hierarchical on purpose:
    personas of one model often differ by almost nothing, and a learned sigma_theta then mixed
    badly whichever way it was parameterised (bulk ESS 166 to 213 of 2,000 draws on 20 x 30 x 4
    designs), while a learned sigma_b gave divergences on the three-item smoke design. With fixed
    scales neither funnel exists.
    """
    coords = {**coords, "cell": np.arange(data.successes.size)}
    with pm.Model(coords=coords) as model:
        respondent_idx = pm.Data("respondent_idx", data.cell_respondent, dims="cell")
        item_idx = pm.Data("item_idx", data.cell_item, dims="cell")
        trials = pm.Data("trials", data.trials, dims="cell")
        successes = pm.Data("successes", data.successes, dims="cell")
        theta = pm.ZeroSumNormal("theta", sigma=THETA_PRIOR_SD, dims="respondent")
        b = pm.Normal("b", mu=0.0, sigma=ITEM_PRIOR_SD, dims="item")
        logit_p = theta[respondent_idx] - b[item_idx]
        if discrimination:
            a = pm.LogNormal("a", mu=0.0, sigma=DISCRIMINATION_LOG_SD, dims="item")
            logit_p = a[item_idx] * logit_p
        observe_cells("y", data, trials, successes, logit_p, dims="cell", confusion=confusion)
    return model


@dataclass(frozen=True, eq=False)
class RaschFit:
    """What a fit returns instead of printing: the posterior, its summary and its health."""

    idata: DataTree
    summary: pl.DataFrame
    # None: not computed (fit_rasch's diagnostics=False; the summary's R-hat and ESS are null).
    diagnostics: Diagnostics | None
    # Gaps between persona attribute levels (contrasts.CONTRAST_COLUMNS); empty when the outcome
    # table carries no persona attributes (for example `python -m audit.fit` on a bare table).
    contrasts: pl.DataFrame = field(default_factory=pl.DataFrame)
    # Per-item gaps for the attributes in fit.item_dif (population and explanatory models).
    item_gaps: pl.DataFrame = field(default_factory=pl.DataFrame)
    # The outcome coding this fit modelled, and fits of further codings (fit.second_outcome)
    # made on the same labels, so one fit stage carries e.g. favourability and abstention.
    outcome: str = "favourable"
    companions: tuple[RaschFit, ...] = ()
    # The labelling paths' gold-set counts the likelihood read labels through (a cut: the
    # rates come from the gold alone, judge_cut.py); None: labels as truth.
    judge_confusion: JudgeCorrection | None = None
    # What the likelihood read (fit.response): the decisions, or logit P(favourable)
    # (probability.py).
    response: str = "decision"

    def all_fits(self) -> tuple[RaschFit, ...]:
        return (self, *self.companions)

    def _diagnosed(self) -> tuple[RaschFit, ...]:
        """all_fits(), each with its diagnostics; a fit made without them is a caller's
        mistake, named here rather than as 'NoneType has no attribute'."""
        unchecked = [fit.outcome for fit in self.all_fits() if fit.diagnostics is None]
        if unchecked:
            raise ValueError(f"the {', '.join(unchecked)} fit was made with diagnostics=False: "
                             "it has no R-hat or ESS to judge convergence by")
        return self.all_fits()

    @property
    def converged(self) -> bool:
        return all(fit.diagnostics.converged for fit in self._diagnosed())

    def problems(self) -> list[str]:
        return [f"{fit.outcome}: {problem}" for fit in self._diagnosed()
                for problem in fit.diagnostics.problems()]

    def all_contrasts(self) -> pl.DataFrame:
        """Contrasts of every fitted outcome, with the outcome as the first column."""
        tables = [fit.contrasts.select(pl.lit(fit.outcome).alias("outcome"), pl.all())
                  for fit in self.all_fits() if fit.contrasts.height]
        return pl.concat(tables) if tables else pl.DataFrame()


def sample_with_nutpie(model: pm.Model, fit: FitConfig) -> DataTree:
    """Draws from the sampler ``fit.engine`` names (engines.py; nutpie unless it says pymc)."""
    return sample_posterior(model, fit)


_NUTPIE_SAMPLER = sample_with_nutpie  # what fit_rasch samples with unless a test swaps it


def posterior_draws(idata: DataTree) -> xr.Dataset:
    """The posterior group as an xarray Dataset (what contrasts, floors and plots read): ArviZ 1
    returns a DataTree, whose nodes select variables differently from a Dataset."""
    return idata["posterior"].to_dataset()


def judged_outcomes(fit: FitConfig) -> int:
    """The outcomes whose contrasts a run with this config fits and the CI verdict judges:
    fit.outcome, and fit.second_outcome or the hurdle's abstention step (analyse.fit_stage fits
    no second coding next to the hurdle). They share one family-wise alpha (contrasts.py), so
    the planner and an adaptive run's looks, which fit the first outcome alone, decide its
    contrasts on the interval the run's own fit stage decides them on."""
    return 2 if fit.model == "hurdle" or fit.second_outcome else 1


def fit_rasch(
    outcomes: pl.DataFrame, fit: FitConfig, sample: SampleFunction | None = None,
    confusion: JudgeCorrection | JudgeConfusion | None = None,
    pool: pl.DataFrame | None = None,
    diagnostics: bool = True,
) -> RaschFit:
    """Fit one of MODELS to a long 0/1 table.

    ``sample`` defaults to sample_with_nutpie, looked up at call time so that fast tests of the
    stages around a fit can swap in a prior-predictive stand-in (as pymc-marketing's tests do).
    ``confusion``: the labelling paths' gold-set counts under this coding (or one matrix for
    every label), to carry their errors into the posterior (None reads labels as truth).
    ``pool``: every respondent x item cell the design can ask, with the outcome table's persona
    columns; cells without answers yet enter with zero trials, so the rounds of an adaptive
    audit share one model shape (and one compiled sampler).
    ``diagnostics=False``: no R-hat, ESS or divergence count (``RaschFit.diagnostics`` None, the
    summary's R-hat and ESS null), for callers that read the contrasts alone, such as the
    planner's simulated audits: ArviZ's R-hat and two ESS of every parameter took 0.13 s an
    imputation there, about a third of a simulated audit (benchmarks/RESULTS.md, "Planner
    speed").
    """
    default_sampler = sample is None and sample_with_nutpie is _NUTPIE_SAMPLER
    sample = sample or sample_with_nutpie
    attributes = tuple(fit.attributes)
    has_personas = {"model_name", "persona_kind", *attributes} <= set(outcomes.columns)
    check_response(fit.response, fit.model, fit.outcome)
    correction = as_correction(confusion)
    if fit.response == "probability":
        if pool is not None:
            raise AuditError("fit.response=probability fits answered prompts only, not an "
                             "adaptive design's pool of cells: set design.adaptive=false or "
                             "fit.response=decision")
        if correction is not None:
            logger.warning("fit.response=probability: %s; fitted without it", JUDGE_ERROR_NOTE)
            correction = None
        outcomes = probability_outcomes(outcomes)
        data = index_probabilities(outcomes)
    else:
        per_path = correction is not None and set(correction.by_path) != {ANY_PATH}
        data = index_design(outcomes, by_path=per_path, cells=pool)
    respondents = (respondent_table(outcomes if pool is None else pool, data, attributes)
                   if has_personas else None)
    if fit.model == "hurdle":
        if confusion is not None:
            raise AuditError("fit.model=hurdle reads labels as truth (its three labels would need "
                             "a 3 x 3 confusion matrix): set fit.judge_error=false")
        return _fit_hurdle(outcomes, fit, sample, respondents)
    rates = None if correction is None else correction.for_cells(data.cell_path)
    # An attribute left out for a lone labelled level (explanatory.contrastable) takes its item
    # interactions with it; names that were never attributes still reach the model's check.
    left_out = set(attributes) - set(respondents.attributes if respondents else attributes)
    item_dif = tuple(attribute for attribute in fit.item_dif if attribute not in left_out)
    if fit.model in ATTRIBUTE_MODELS:
        if respondents is None:
            raise AuditError(f"fit.model={fit.model} needs model_name, persona_kind and "
                             f"{', '.join(attributes)} in the outcome table")
        model = build_explanatory_model(data, respondents, item_dif, rates,
                                        population=fit.model == "population")
    else:
        model = build_rasch_model(data, fit.model, rates)
    logger.info(
        "fitting %s to %s: %d responses, %d respondents, %d items, %d chains x %d draws%s",
        fit.model, "logit P(favourable)" if fit.response == "probability" else "decisions",
        data.row_y.size, len(data.respondents), len(data.items), fit.chains, fit.draws,
        "" if rates is None else f", judge error from {correction.n} gold answers",
    )
    if rates is None:
        idata = sample(model, fit)
        summary = summarise(idata, fit.hdi_prob, diagnostics=diagnostics)
    else:
        idata, summary = fit_cut(model, fit, rates, None if default_sampler else sample,
                                 diagnostics=diagnostics)
    posterior = posterior_draws(idata)
    contrasts = (level_contrasts(posterior, respondents, fit.rope, fit.hdi_prob,
                                 fit.familywise_alpha, outcomes=judged_outcomes(fit))
                 if respondents is not None and attributes else pl.DataFrame())
    gaps = [item_gaps(posterior, attribute, fit.hdi_prob) for attribute in item_dif
            if fit.model in ATTRIBUTE_MODELS]
    return RaschFit(idata=idata, summary=summary,
                    diagnostics=diagnose(idata, summary, fit) if diagnostics else None,
                    contrasts=contrasts, item_gaps=pl.concat(gaps) if gaps else pl.DataFrame(),
                    outcome=fit.outcome, response=fit.response,
                    judge_confusion=None if rates is None else rates.correction)


def _fit_hurdle(outcomes: pl.DataFrame, fit: FitConfig, sample: SampleFunction,
                respondents: RespondentTable | None) -> RaschFit:
    """Both steps in one model and one sampling run; the abstention step is the companion fit."""
    abstention, decision = hurdle_data(outcomes)
    logger.info("fitting hurdle: %d answers (%d decided), %d respondents, %d items, "
                "%d chains x %d draws", int(abstention.trials.sum()), int(decision.trials.sum()),
                len(abstention.respondents), len(abstention.items), fit.chains, fit.draws)
    idata = sample(build_hurdle_model(abstention, decision), fit)
    summary = summarise(idata, fit.hdi_prob)
    diagnostics = diagnose(idata, summary, fit)
    steps = {}
    draws = posterior_draws(idata)
    for outcome, posterior in ((DECIDED_OUTCOME, draws),
                               (ABSTAINED_OUTCOME, abstention_posterior(draws))):
        steps[outcome] = (level_contrasts(posterior, respondents, fit.rope, fit.hdi_prob,
                                          fit.familywise_alpha, outcomes=judged_outcomes(fit))
                          if respondents is not None and fit.attributes else pl.DataFrame())
    companion = RaschFit(idata=idata, summary=summary, diagnostics=diagnostics,
                         contrasts=steps[ABSTAINED_OUTCOME], outcome=ABSTAINED_OUTCOME)
    return RaschFit(idata=idata, summary=summary, diagnostics=diagnostics,
                    contrasts=steps[DECIDED_OUTCOME], outcome=DECIDED_OUTCOME,
                    companions=(companion,))


def parameter_table(summary: pl.DataFrame, name: str, key: str) -> pl.DataFrame:
    """Rows of one indexed parameter (``theta`` or ``b``) with the index as a column named key."""
    prefix = f"{name}["
    return (
        summary.filter(pl.col("parameter").str.starts_with(prefix))
        .with_columns(
            pl.col("parameter").str.strip_prefix(prefix).str.strip_suffix("]").alias(key)
        )
        .select(key, *[column for column in summary.columns if column != "parameter"])
    )


def respondent_ranking(summary: pl.DataFrame) -> pl.DataFrame:
    """Respondents from most to least favoured by posterior mean theta, with their HDIs."""
    return parameter_table(summary, "theta", "respondent").sort(
        ["mean", "respondent"], descending=[True, False]
    )
