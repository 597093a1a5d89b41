"""The response table as integer indices: the one place where labels become array positions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from audit.errors import AuditError
from audit.schemas import validate
from audit.methods.rasch.schemas import OutcomeSchema

PATH_COLUMN = "label_source"


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
    # Each cell's labelling path (the labels' label_source) when the cells were split by path
    # (index_design(by_path=True)), so each cell can be read through its own path's judge rates.
    cell_path: np.ndarray | None = None
    # Each cell's observed logit P(favourable) when the fit reads probabilities, not labels
    # (probability.index_probabilities: one response a cell); None for labels.
    cell_logit: np.ndarray | None = None

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


def index_design(outcomes: pl.DataFrame, by_path: bool = False,
                 cells: pl.DataFrame | None = None) -> RaschData:
    """Map labels to integer indices through explicit label->index tables.

    Joins on labels (instead of reshaping a respondent x item matrix) make a transposed or
    misaligned response matrix impossible by construction: every index travels with its own row.
    ``by_path`` (with a ``label_source`` column) splits each respondent x item cell by the path
    that labelled its answers: the same likelihood for labels read as truth, and what lets the
    judge-error correction read each label through its own path's rates.
    ``cells`` (respondent, item pairs): cells that exist even where no answer is in yet, with
    zero trials (they add nothing to the likelihood), so that every round of an adaptive audit
    (methods/rasch/adaptive.py) fits a model of the same shape, compiled once.
    """
    by_path = by_path and PATH_COLUMN in outcomes.columns
    rows = validate(outcomes, OutcomeSchema, "outcome table")
    if by_path:  # OutcomeSchema keeps only its own columns
        rows = rows.with_columns(outcomes.get_column(PATH_COLUMN).cast(pl.String))
    if rows.height == 0:
        raise AuditError("outcome table is empty: there is nothing to fit")
    grid = (rows.select("respondent", "item") if cells is None
            else pl.concat([rows.select("respondent", "item"),
                            cells.select(pl.col("respondent", "item").cast(pl.String))]))
    respondents = tuple(sorted(grid.get_column("respondent").unique().to_list()))
    items = tuple(sorted(grid.get_column("item").unique().to_list()))
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
    keys = ["respondent_idx", "item_idx", *([PATH_COLUMN] if by_path else [])]
    answered = indexed.group_by(keys).agg(successes=pl.col("y").sum(), trials=pl.len())
    if cells is not None:
        empty = (grid.unique().join(respondent_index, on="respondent")
                 .join(item_index, on="item").select("respondent_idx", "item_idx")
                 .join(answered, on=["respondent_idx", "item_idx"], how="anti")
                 .with_columns(successes=pl.lit(0, pl.UInt32), trials=pl.lit(0, pl.UInt32)))
        if by_path:  # a cell without answers reads through any path: its likelihood is 0
            empty = empty.with_columns(pl.lit(answered.get_column(PATH_COLUMN).min())
                                       .alias(PATH_COLUMN))
        answered = pl.concat([answered, empty.select(answered.columns)], how="vertical_relaxed")
    cells = answered.sort(keys)
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
        cell_path=cells.get_column(PATH_COLUMN).to_numpy() if by_path else None,
    )
