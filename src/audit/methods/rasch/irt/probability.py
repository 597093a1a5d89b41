"""P(favourable) as the outcome (``fit.response=probability``): the audited model's own probability
of the favourable option, fitted on the logit scale instead of its greedy decision.

Why: a greedy decision keeps one bit of a probability. A model that says "No" to every persona may
still give one group P(yes) = 0.30 and another 0.15; the decision fit sees two identical zeros,
the probability fit sees a gap of 0.9 logits. The likelihood is discrim-eval's own analysis (Tamkin
et al. 2023): logit P is Normal around the same linear predictor the decision fits use (respondent
or persona/cell effects, population text spread, item difficulty), with an estimated residual sd,
``sigma_response``. That is a proper likelihood, so its intervals are calibrated under the model
(tests/methods/rasch/irt/test_irt_probability.py); a fractional Bernoulli would need a dispersion
correction for that.

What a contrast then means: the gap in the mean logit P(favourable) the model assigns, on an
average item. It is not the decision gap (a model whose P(yes) moves from 0.10 to 0.25 has the
same decisions), and it is comparable across groups within one model, not across models: a
model's P(yes) depends on its calibration and temperature (docs/statistics.md).

P is clipped to [PROBABILITY_CLIP, 1 - PROBABILITY_CLIP] before the logit: a probability of
exactly 0 or 1 (a rounded import, or an underflow) would be an infinite outcome, and below the clip
the model's preference is already as decided as anything the residual can tell apart.

No judge-error correction: a probability is read from the model, not labelled, so no gold-set
rates apply to it (the fit logs and records this, and the report says it).
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import polars as pl
import pymc as pm

from audit.errors import AuditError
from audit.methods.rasch.config import RESPONSES
from audit.methods.rasch.irt.indexing import RaschData, index_design
from audit.methods.rasch.irt.judge_error import CellRates, label_cells

logger = logging.getLogger(__name__)

PROBABILITY_COLUMN = "p_favourable"
# logit(0.001) = -6.9: a preference more extreme than this reads as this.
PROBABILITY_CLIP = 1e-3
# The residual sd of logit P around the linear predictor. HalfNormal(2): prompt-to-prompt swings
# of a few logits are common in a small model's P(yes); the data set it on any real design.
RESIDUAL_SD_NAME = "sigma_response"
RESIDUAL_PRIOR_SD = 2.0
OBSERVED_DATA_NAME = "logit_p_observed"
# Models whose likelihood is one observed logit per cell (the rest read labels: rasch_seed is the
# original audit's Bernoulli, the hurdle model codes three labels).
PROBABILITY_MODELS: tuple[str, ...] = ("rasch", "twopl", "explanatory", "population")
JUDGE_ERROR_NOTE = ("the judge-error correction does not apply to P(favourable): it is read from "
                    "the model's option probabilities, not labelled, so no gold-set rates apply")


def check_response(response: str, model: str, outcome: str) -> None:
    """One line naming what fit.response=probability cannot be combined with."""
    if response not in RESPONSES:
        raise AuditError(f"unknown fit.response {response!r}: use one of {', '.join(RESPONSES)}")
    if response != "probability":
        return
    if model not in PROBABILITY_MODELS:
        raise AuditError(f"fit.response=probability fits logit P with fit.model "
                         f"{', '.join(PROBABILITY_MODELS)}, not {model}: choose one of them "
                         f"(fit=population) or set fit.response=decision")
    if outcome != "favourable":
        raise AuditError(f"fit.response=probability reads P(favourable), so it fits "
                         f"fit.outcome=favourable only, not {outcome}: set fit.outcome=favourable "
                         f"or fit.response=decision")


def clipped_logit(probability: np.ndarray) -> np.ndarray:
    """logit(p) with p clipped to [PROBABILITY_CLIP, 1 - PROBABILITY_CLIP]."""
    p = np.clip(np.asarray(probability, dtype=float), PROBABILITY_CLIP, 1 - PROBABILITY_CLIP)
    return np.log(p) - np.log1p(-p)


def probability_outcomes(outcomes: pl.DataFrame) -> pl.DataFrame:
    """The coded outcomes that carry P(favourable); the rest dropped with a warning, and one line
    naming the fix when none does."""
    has_column = PROBABILITY_COLUMN in outcomes.columns
    known = (pl.col(PROBABILITY_COLUMN).is_not_null() & pl.col(PROBABILITY_COLUMN).is_not_nan()
             if has_column else pl.lit(False))
    kept = outcomes.filter(known) if has_column else outcomes.clear()
    if kept.is_empty():
        raise AuditError(f"fit.response=probability, but none of the {outcomes.height} labelled "
                         f"answers carries P(favourable): score the options with judge=logprob "
                         f"(or judge.score_options=true), import option_logprobs or p_favourable "
                         f"(python -m audit.ingest), or set fit.response=decision")
    dropped = outcomes.height - kept.height
    if dropped:
        logger.warning("fit.response=probability: %d of %d labelled answers carry no "
                       "P(favourable) and are left out of the fit", dropped, outcomes.height)
    return kept


def index_probabilities(outcomes: pl.DataFrame) -> RaschData:
    """The design at row grain, each response its own cell with its observed logit P: Normal
    outcomes do not add up into Binomial cells. ``successes``/``trials`` keep the decisions (one
    trial a cell) for whatever reads them. The indices are looked up row by row, so each logit
    stays with its own respondent and item whatever order a join would leave."""
    data = index_design(outcomes)
    respondent = {name: index for index, name in enumerate(data.respondents)}
    item = {name: index for index, name in enumerate(data.items)}
    # As text, as index_design keyed them (OutcomeSchema coerces): integer ids of a table that
    # fits with response=decision stopped this one with a KeyError (mutation review 2026-12-06).
    def indices(column: str, index: dict[str, int]) -> np.ndarray:
        names = outcomes[column].cast(pl.String).to_list()
        return np.array([index[name] for name in names], dtype=np.int64)
    cell_respondent, cell_item = indices("respondent", respondent), indices("item", item)
    return replace(data, cell_respondent=cell_respondent, cell_item=cell_item,
                   successes=outcomes["y"].to_numpy().astype(np.int64),
                   trials=np.ones(outcomes.height, dtype=np.int64), cell_path=None,
                   cell_logit=clipped_logit(outcomes[PROBABILITY_COLUMN].to_numpy()))


def observe_cells(name: str, data: RaschData, trials, successes, logit_p, dims: str,
                  confusion: CellRates | None):
    """The cells' likelihood: judged labels (label_cells), or, when ``data`` carries observed
    logits (index_probabilities), logit P ~ Normal(logit_p, sigma_response)."""
    if data.cell_logit is None:
        return label_cells(name, trials, logit_p, observed=successes, dims=dims,
                           confusion=confusion)
    if confusion is not None:  # fit_rasch never passes one: a bug, not a user's setting
        raise ValueError("a probability outcome has no labels to read through judge rates")
    observed = pm.Data(OBSERVED_DATA_NAME, data.cell_logit, dims=dims)
    sigma = pm.HalfNormal(RESIDUAL_SD_NAME, sigma=RESIDUAL_PRIOR_SD)
    return pm.Normal(name, mu=logit_p, sigma=sigma, observed=observed, dims=dims)
