"""Which prompts an adaptive audit asks next (adaptive.py runs the rounds and decides when to stop).

* Round 0 is balanced: every respondent answers ``size / respondents`` items, rotated so that
  consecutive respondents, in the order of their model, kind and attribute levels (so the texts
  of one demographic cell are consecutive), answer different items and every item is asked
  about equally often (a round larger than a replicate of the design goes on to the next
  replicates).
* A later round takes, for every respondent x item cell, its next unasked replicate, scored by
  the Rasch Fisher information of one more answer, E[p (1 - p)] over the posterior draws of
  p = logistic(theta - b), times the respondent's weight: 1 when one of its attribute levels is
  in a contrast still open and alive, ``other_weight`` otherwise (null personas and the baseline
  inform the item difficulties and the text spread, not a contrast directly).

Pure: tables and a fit in, the chosen pool rows out, in pool order for equal scores.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from audit.methods.rasch.irt.contrasts import POOLED_MODEL
from audit.methods.rasch.irt.rasch import RaschFit, posterior_draws

KEY = ("respondent_id", "item_id", "replicate")  # one pool prompt
# The information score is averaged over at most this many posterior draws (a ranking, not an
# estimate: 200 draws put the expected p (1 - p) within about 0.01 of its mean).
SCORE_DRAWS = 200


def first_round(pool: pl.DataFrame, size: int, attributes: tuple[str, ...] = ()) -> pl.DataFrame:
    """Round 0: ``size / respondents`` prompts per respondent (at least one), each respondent
    answering consecutive items from a start chosen in turn (respondents ordered by model,
    persona kind and their levels of ``attributes``; window_start): the items are asked
    equally often, and among the starts that keep them so, the one whose items this
    respondent's levels (each attribute's, and its cell's) have been asked least. So the texts
    of a cell answer different items and every level is asked across the items, which a look
    needs to tell a group from the items it answered. A plain rotation in id order put both
    texts of three of the default design's cells on the same items; in cell order, Asian and
    Black personas on no common item (round 0 of 63 prompts). A round larger than one replicate
    of the design goes on to the next replicates, as later rounds do (choose_next): the
    respondent's k-th pass over the items asks their replicate k, so a round of the whole
    budget asks the whole budget (one replicate alone left half of a two-replicate budget
    unasked)."""
    order = [column for column in ("model_name", "persona_kind", *attributes)
             if column in pool.columns]
    personas = (pool.select("respondent_id", *order).unique("respondent_id")
                .sort([*order, "respondent_id"], nulls_last=True))
    items = sorted(pool.get_column("item_id").unique().to_list())
    replicates = sorted(pool.get_column("replicate").unique().to_list())
    per_respondent = min(len(items) * len(replicates), max(1, size // personas.height))
    asked = np.zeros(len(items))
    by_level: dict[tuple, np.ndarray] = {}
    chosen = []
    for row in personas.iter_rows(named=True):
        levels = [("cell", *(row[column] for column in order))]
        levels += [(column, row[column]) for column in attributes
                   if column in row and row[column] is not None]
        counts = [by_level.setdefault(level, np.zeros(len(items))) for level in levels]
        start = window_start(asked, counts, per_respondent)
        # Step s visits the item s after the start: that item's (s // items)-th visit, so its
        # replicate at that rank.
        for step in range(per_respondent):
            item = (start + step) % len(items)
            asked[item] += 1
            for count in counts:
                count[item] += 1
            chosen.append((row["respondent_id"], items[item], replicates[step // len(items)]))
    picks = pl.DataFrame(chosen, schema={"respondent_id": pl.String, "item_id": pl.String,
                                         "replicate": pool.schema["replicate"]}, orient="row")
    return pool.join(picks, on=list(KEY), how="semi").sort(KEY)


def window_start(asked: np.ndarray, level_counts: list[np.ndarray], length: int) -> int:
    """The first item of a run of ``length`` consecutive items (wrapping): the least asked run,
    then the one this respondent's levels have been asked least, then the lowest start."""
    windows = (np.arange(asked.size)[:, None] + np.arange(length)[None, :]) % asked.size
    spread = sum((count[windows].sum(axis=1) for count in level_counts), np.zeros(asked.size))
    return int(np.lexsort((np.arange(asked.size), spread, asked[windows].sum(axis=1)))[0])


def next_candidates(pool: pl.DataFrame, asked: pl.DataFrame) -> pl.DataFrame:
    """For every respondent x item cell with a prompt left, its lowest unasked replicate."""
    left = pool.join(asked.select(KEY), on=list(KEY), how="anti")
    return left.sort(KEY).unique(["respondent_id", "item_id"], keep="first", maintain_order=True)


def respondent_weights(respondents: pl.DataFrame, states: pl.DataFrame,
                       other_weight: float) -> pl.DataFrame:
    """1 for a respondent one of whose levels is in an alive contrast of its own audited model
    (or of the pooled "all models" row, which every model's respondents inform), other_weight
    else. Matched on levels alone, a model whose contrast was already decided kept getting
    prompts for another model's open one."""
    alive = states.filter("alive")
    relevant = pl.lit(False)
    for row in alive.iter_rows(named=True):
        if row["attribute"] in respondents.columns:
            levels = pl.col(row["attribute"]).is_in([row["level_a"], row["level_b"]])
            if row.get("model_name", POOLED_MODEL) != POOLED_MODEL \
                    and "model_name" in respondents.columns:
                levels = levels & (pl.col("model_name") == row["model_name"])
            relevant = relevant | levels
    return respondents.select(
        "respondent_id", weight=pl.when(relevant.fill_null(False)).then(1.0)
        .otherwise(other_weight))


def information(fit: RaschFit, candidates: pl.DataFrame) -> np.ndarray:
    """E[p (1 - p)] over the posterior of each candidate's respondent x item (Rasch Fisher
    information of one more answer)."""
    posterior = posterior_draws(fit.idata)
    theta = posterior["theta"].stack(sample=("chain", "draw")).transpose("sample", ...)
    b = posterior["b"].stack(sample=("chain", "draw")).transpose("sample", ...)
    step = max(1, theta.sizes["sample"] // SCORE_DRAWS)
    theta_draws, b_draws = theta.values[::step], b.values[::step]
    respondent_at = {str(name): index for index, name in enumerate(theta["respondent"].values)}
    item_at = {str(name): index for index, name in enumerate(b["item"].values)}
    # A respondent or item not in the fit yet (never asked) sits at the prior: logit 0 apart.
    r = np.array([respondent_at.get(name, -1) for name in candidates["respondent_id"]])
    i = np.array([item_at.get(name, -1) for name in candidates["item_id"]])
    eta = (np.where(r >= 0, theta_draws[:, np.maximum(r, 0)], 0.0)
           - np.where(i >= 0, b_draws[:, np.maximum(i, 0)], 0.0))
    p = 1.0 / (1.0 + np.exp(-eta))
    return (p * (1.0 - p)).mean(axis=0)


def choose_next(pool: pl.DataFrame, asked: pl.DataFrame, fit: RaschFit, states: pl.DataFrame,
                other_weight: float, size: int) -> pl.DataFrame:
    """The next round: the ``size`` candidates with the highest weighted information (ties in
    pool order, so the same posterior always picks the same prompts). A cell offers one replicate
    at a time; when fewer cells than ``size`` have one left (two or more replicates, late in a
    run), their next replicates fill the round, so the round before the last look still takes
    what the budget has left and the last look sees it all."""
    attributes = [column for column in states.get_column("attribute").unique().to_list()
                  if column in pool.columns]
    respondents = pool.select("respondent_id", *attributes,
                              *(["model_name"] if "model_name" in pool.columns else [])
                              ).unique("respondent_id")
    weights = respondent_weights(respondents, states, other_weight)
    chosen = pool.head(0)
    while chosen.height < size:
        candidates = next_candidates(pool, pl.concat([asked.select(KEY), chosen.select(KEY)]))
        if candidates.is_empty():
            break
        # The scores are attached by position: the join must keep the candidates' order.
        scored = (candidates.join(weights, on="respondent_id", how="left",
                                  maintain_order="left")
                  .with_columns(score=pl.Series(information(fit, candidates))
                                * pl.col("weight"))
                  .with_row_index("order"))
        best = (scored.sort(["score", "order"], descending=[True, False])
                .head(size - chosen.height).drop("score", "weight", "order"))
        chosen = pl.concat([chosen, best.select(chosen.columns)])
    return chosen.sort(KEY)
