"""The hurdle (sequential) Rasch model: abstention as an outcome of its own.

Each answer first decides or abstains, and only a decided answer is favourable or not:

    P(abstain)                  = logistic(theta_abstain[respondent] - b_abstain[item])
    P(favourable | decided)     = logistic(theta[respondent] - b[item])

Abstaining means the judge labelled the answer ``needs_more_information`` or ``refusal``
(ABSTAIN_LABELS); deciding means ``favourable`` or ``unfavourable``. The two steps are two
identified Rasch models (zero-sum persons, free item difficulties, Binomial cells) over the same
respondents and items, so their likelihood factorises and each step's persona effects are
estimated from the answers that bear on it:

* ``theta_abstain`` (higher: abstains more) supports "asks more questions of Black applicants";
  its contrasts carry outcome ``abstained``. Its cells are the undetermined/determined margin the
  original audit coded (when refusal counts as not deciding).
* ``theta`` (higher: favoured more once it decides) supports "denies Black applicants more";
  its contrasts carry outcome ``favourable_if_decided``. A model that abstains for one group and
  decides at the same rate for both no longer shows up as "less favourable" to that group, as it
  does under the ``favourable`` coding, where an abstention counts as a denial.

The favourable step keeps the names ``theta`` and ``b`` so rankings, summaries and Wright maps
read it like any other fit. Judge error is not modelled here (three labels would need a 3 x 3
confusion matrix); fit.judge_error=true with fit=hurdle fails instead of silently ignoring it.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pymc as pm
import xarray as xr

from audit.errors import AuditError
from audit.methods.rasch.irt.indexing import RaschData, index_design
from audit.methods.rasch.irt.likelihood import binomial_cells

ABSTAIN_LABELS: tuple[str, ...] = ("needs_more_information", "refusal")
DECIDED_FAVOURABLE = "favourable"
ABSTAINED_OUTCOME = "abstained"
DECIDED_OUTCOME = "favourable_if_decided"
THETA_PRIOR_SD = 1.0
ITEM_PRIOR_SD = 2.0


def hurdle_data(outcomes: pl.DataFrame) -> tuple[RaschData, RaschData]:
    """Cells of the two steps over the same respondent and item indices.

    The abstention step sees every parsed answer (1 = abstained); the decision step sees only
    decided answers (1 = favourable). A respondent x item pair with no decided answer has no cell
    in the second step rather than a cell of zero trials.
    """
    if "label" not in outcomes.columns:
        raise AuditError("fit.model=hurdle needs the judge's label column in the outcome table "
                         "(it codes both steps from the labels)")
    abstained = outcomes.with_columns(
        pl.col("label").is_in(list(ABSTAIN_LABELS)).cast(pl.Int64).alias("y"))
    first = index_design(abstained.select("respondent", "item", "y"))
    decided = outcomes.filter(~pl.col("label").is_in(list(ABSTAIN_LABELS))).select(
        "respondent", "item", (pl.col("label") == DECIDED_FAVOURABLE).cast(pl.Int64).alias("y"))
    respondent_index = pl.DataFrame({"respondent": first.respondents,
                                     "respondent_idx": np.arange(len(first.respondents))})
    item_index = pl.DataFrame({"item": first.items, "item_idx": np.arange(len(first.items))})
    cells = (decided.join(respondent_index, on="respondent").join(item_index, on="item")
             .group_by("respondent_idx", "item_idx")
             .agg(successes=pl.col("y").sum(), trials=pl.len())
             .sort("respondent_idx", "item_idx"))
    second = RaschData(
        respondents=first.respondents, items=first.items,
        row_respondent=np.empty(0, np.int64), row_item=np.empty(0, np.int64),
        row_y=np.empty(0, np.int64),
        cell_respondent=cells["respondent_idx"].to_numpy().astype(np.int64),
        cell_item=cells["item_idx"].to_numpy().astype(np.int64),
        successes=cells["successes"].to_numpy().astype(np.int64),
        trials=cells["trials"].to_numpy().astype(np.int64))
    return first, second


def _step(name_suffix: str, data: RaschData, cell_dim: str) -> None:
    theta = pm.ZeroSumNormal(f"theta{name_suffix}", sigma=THETA_PRIOR_SD, dims="respondent")
    b = pm.Normal(f"b{name_suffix}", mu=0.0, sigma=ITEM_PRIOR_SD, dims="item")
    respondent_idx = pm.Data(f"respondent_idx{name_suffix}", data.cell_respondent, dims=cell_dim)
    item_idx = pm.Data(f"item_idx{name_suffix}", data.cell_item, dims=cell_dim)
    trials = pm.Data(f"trials{name_suffix}", data.trials, dims=cell_dim)
    successes = pm.Data(f"successes{name_suffix}", data.successes, dims=cell_dim)
    binomial_cells(f"y{name_suffix}", trials, theta[respondent_idx] - b[item_idx],
                   observed=successes, dims=cell_dim)


def build_hurdle_model(abstention: RaschData, decision: RaschData) -> pm.Model:
    coords = {"respondent": list(abstention.respondents), "item": list(abstention.items),
              "cell_abstain": np.arange(abstention.successes.size),
              "cell": np.arange(decision.successes.size)}
    with pm.Model(coords=coords) as model:
        _step("_abstain", abstention, "cell_abstain")
        if decision.successes.size:
            _step("", decision, "cell")
        else:
            raise AuditError("fit.model=hurdle: no answer decided (every label abstains), so "
                             "there is no favourable step to fit")
    return model


def abstention_posterior(posterior: xr.Dataset) -> xr.Dataset:
    """The abstention step under the names contrasts read (``theta``, ``b``)."""
    return posterior[["theta_abstain", "b_abstain"]].rename(
        {"theta_abstain": "theta", "b_abstain": "b"})
