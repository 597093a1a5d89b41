"""Bayesian Rasch (1PL IRT) models: a favourability theta per respondent, a difficulty b per item.

P(y = 1) = logistic(theta[respondent] - b[item]). Two variants share the likelihood and the names
``theta`` and ``b``, so everything downstream is model-agnostic:

* ``rasch_seed`` is exactly the original audit's model (N(0, 1) priors, one Bernoulli per response).
  Its location is fixed only by the priors, which mixes badly on large designs (see FACTS.md).
* ``rasch`` pins the location with a zero-sum person effect, lets the item difficulties carry a
  free mean, and aggregates replicates into Binomial cells: the same likelihood, but well
  identified and about nine times cheaper per gradient on replicated designs (FACTS.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import arviz as az
import numpy as np
import polars as pl
import pymc as pm

from audit.config import FitConfig
from audit.irt.diagnostics import Diagnostics, diagnose
from audit.schemas import OutcomeSchema, SummarySchema, validate

logger = logging.getLogger(__name__)

# Convergence thresholds from Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021),
# "Rank-normalization, folding, and localization: an improved R-hat for assessing convergence
# of MCMC", Bayesian Analysis 16(2). FitConfig carries the same defaults; these are the reference.
RHAT_MAX_VEHTARI_2021 = 1.01
ESS_MIN_VEHTARI_2021 = 400.0

MODELS: tuple[str, ...] = ("rasch", "rasch_seed")
# Prior scales of the identified model, on the logit scale. theta keeps the seed model's N(0, 1);
# items get more room because their mean now carries the overall favourable rate, which for a
# model that almost always approves (or denies) sits far from zero.
THETA_PRIOR_SD = 1.0
ITEM_PRIOR_SD = 2.0
# Variables summarised, in order; every model in MODELS defines both.
SUMMARY_VARIABLES: tuple[str, ...] = ("theta", "b")
SUMMARY_COLUMNS: tuple[str, ...] = (
    "parameter", "mean", "sd", "hdi_low", "hdi_high", "r_hat", "ess_bulk", "ess_tail",
)

SampleFunction = Callable[[pm.Model, FitConfig], az.InferenceData]


@dataclass(frozen=True, eq=False)
class RaschData:
    """The response table as index arrays, at two grains.

    Row grain (one entry per response) feeds the Bernoulli ``rasch_seed`` model; cell grain (one
    entry per respondent x item pair, replicates summed) feeds the Binomial ``rasch`` model. Index
    ``i`` in ``*_respondent`` arrays points into ``respondents``, index ``j`` in ``*_item`` arrays
    into ``items``; both label tuples are sorted so the same data always gets the same indices.
    """

    respondents: tuple[str, ...]
    items: tuple[str, ...]
    row_respondent: np.ndarray
    row_item: np.ndarray
    row_y: np.ndarray
    cell_respondent: np.ndarray
    cell_item: np.ndarray
    successes: np.ndarray
    trials: np.ndarray

    @property
    def cells(self) -> pl.DataFrame:
        """The Binomial cells with their labels, for reading and for tests."""
        return pl.DataFrame(
            {
                "respondent": [self.respondents[i] for i in self.cell_respondent],
                "item": [self.items[j] for j in self.cell_item],
                "successes": self.successes,
                "trials": self.trials,
            }
        )


def index_design(outcomes: pl.DataFrame) -> RaschData:
    """Map labels to integer indices through explicit label->index tables.

    Joins on labels (instead of reshaping a respondent x item matrix) make a transposed or
    misaligned response matrix impossible by construction: every index travels with its own row.
    """
    rows = validate(outcomes, OutcomeSchema, "outcome table")
    if rows.height == 0:
        raise ValueError("outcome table is empty: there is nothing to fit")
    respondents = tuple(sorted(rows.get_column("respondent").unique().to_list()))
    items = tuple(sorted(rows.get_column("item").unique().to_list()))
    respondent_index = pl.DataFrame(
        {"respondent": respondents, "respondent_idx": np.arange(len(respondents))},
        schema={"respondent": pl.String, "respondent_idx": pl.Int64},
    )
    item_index = pl.DataFrame(
        {"item": items, "item_idx": np.arange(len(items))},
        schema={"item": pl.String, "item_idx": pl.Int64},
    )
    indexed = rows.join(respondent_index, on="respondent", how="left").join(
        item_index, on="item", how="left"
    )
    cells = (
        indexed.group_by("respondent_idx", "item_idx")
        .agg(successes=pl.col("y").sum(), trials=pl.len())
        .sort("respondent_idx", "item_idx")
    )
    return RaschData(
        respondents=respondents,
        items=items,
        row_respondent=indexed.get_column("respondent_idx").to_numpy(),
        row_item=indexed.get_column("item_idx").to_numpy(),
        row_y=indexed.get_column("y").to_numpy().astype(np.int64),
        cell_respondent=cells.get_column("respondent_idx").to_numpy(),
        cell_item=cells.get_column("item_idx").to_numpy(),
        successes=cells.get_column("successes").to_numpy().astype(np.int64),
        trials=cells.get_column("trials").to_numpy().astype(np.int64),
    )


def build_rasch_model(data: RaschData, model: str = "rasch") -> pm.Model:
    """Build one of MODELS; both expose ``theta`` (dims respondent) and ``b`` (dims item)."""
    coords = {"respondent": list(data.respondents), "item": list(data.items)}
    if model == "rasch_seed":
        return _build_seed_model(data, coords)
    if model == "rasch":
        return _build_identified_model(data, coords)
    raise ValueError(f"unknown model {model!r}; valid models: {', '.join(MODELS)}")


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


def _build_identified_model(data: RaschData, coords: dict) -> pm.Model:
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
        pm.Binomial(
            "y",
            n=trials,
            logit_p=theta[respondent_idx] - b[item_idx],
            observed=successes,
            dims="cell",
        )
    return model


@dataclass(frozen=True, eq=False)
class RaschFit:
    """What a fit returns instead of printing: the posterior, its summary and its health."""

    idata: az.InferenceData
    summary: pl.DataFrame
    diagnostics: Diagnostics


def sample_with_nutpie(model: pm.Model, fit: FitConfig) -> az.InferenceData:
    """nutpie through PyMC; ``cores`` must be passed or PyMC guesses one core here (FACTS.md)."""
    with model:
        return pm.sample(
            draws=fit.draws,
            tune=fit.tune,
            chains=fit.chains,
            target_accept=fit.target_accept,
            random_seed=fit.seed,
            nuts_sampler="nutpie",
            nuts_sampler_kwargs={"cores": fit.cores},
            progressbar=False,
            compute_convergence_checks=False,
        )


def summarise(idata: az.InferenceData, hdi_prob: float) -> pl.DataFrame:
    """ArviZ's summary as a validated polars table with the column names of the CLI contract."""
    table = az.summary(idata, var_names=list(SUMMARY_VARIABLES), hdi_prob=hdi_prob, kind="all",
                       round_to="none")
    low, high = (column for column in table.columns if column.startswith("hdi_"))
    summary = pl.DataFrame(
        {
            "parameter": [str(name) for name in table.index],
            "mean": table["mean"].to_numpy(dtype=float),
            "sd": table["sd"].to_numpy(dtype=float),
            "hdi_low": table[low].to_numpy(dtype=float),
            "hdi_high": table[high].to_numpy(dtype=float),
            "r_hat": table["r_hat"].to_numpy(dtype=float),
            "ess_bulk": table["ess_bulk"].to_numpy(dtype=float),
            "ess_tail": table["ess_tail"].to_numpy(dtype=float),
        }
    )
    return validate(summary, SummarySchema, "posterior summary").select(SUMMARY_COLUMNS)


def fit_rasch(
    outcomes: pl.DataFrame, fit: FitConfig, sample: SampleFunction = sample_with_nutpie
) -> RaschFit:
    """Fit one of MODELS to a long 0/1 table; ``sample`` is swappable so fast tests skip NUTS."""
    data = index_design(outcomes)
    model = build_rasch_model(data, fit.model)
    logger.info(
        "fitting %s: %d responses, %d respondents, %d items, %d chains x %d draws",
        fit.model, data.row_y.size, len(data.respondents), len(data.items), fit.chains, fit.draws,
    )
    idata = sample(model, fit)
    summary = summarise(idata, fit.hdi_prob)
    return RaschFit(idata=idata, summary=summary, diagnostics=diagnose(idata, summary, fit))


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
