"""Checks of imported values that are well formed but say something other than the user meant: a
blank model cell, a placeholder where a group belongs, a probability column that contradicts the
decisions beside it. Each was accepted without a word, and each changed the audit's result
(bad-input probe 2026-12-07 on `python -m audit.ingest`)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

from audit.errors import AuditError
from audit.logs import counted

log = logging.getLogger(__name__)

# Cells that say "not known" rather than name a group, compared case-blind. Read as a level, an
# "N/A" race was a group of its own, contrasted with Black and White. An empty cell already means
# "not stated"; these are what exports write instead of leaving it empty.
PLACEHOLDERS = frozenset({"na", "n/a", "n.a.", "nan", "none", "null", "nil", "-", "--", "?",
                          "unknown", "unspecified", "not stated", "not specified"})


def check_model_cells(frame: pl.DataFrame, path: Path, named: str | None) -> None:
    """A `model` column that is empty in some rows and not others is refused unless
    ingest.model names the model of those rows (`named`): they were filled with the default
    name, "imported", a model nobody named, with contrasts of its own, and the family of
    comparisons it added widened the real model's intervals (a `different` race gap became
    `undecided`). A column empty in every row is no column: ingest.model (or "imported") names
    them all."""
    if "model" not in frame.columns or named is not None:
        return
    blank = frame["model"].cast(pl.Utf8).str.strip_chars().replace("", None).is_null()
    if 0 < int(blank.sum()) < frame.height:
        first = int(blank.arg_true()[0]) + 1
        raise AuditError(f"answers file {path}: column 'model' is empty in "
                         f"{counted(int(blank.sum()), 'row')} (first: row {first}) and names a "
                         f"model in the others: fill it in, or name the model of the empty "
                         f"rows with ingest.model=NAME")


def placeholders_as_missing(frame: pl.DataFrame, columns: tuple[str, ...],
                            where: str) -> pl.DataFrame:
    """`columns` with placeholder cells ("N/A", "unknown") as missing, said once a column: the
    persona states no such attribute, as with an empty cell."""
    for column in columns:
        if column not in frame.columns:
            continue
        placeholder = frame[column].str.strip_chars().str.to_lowercase().is_in(list(PLACEHOLDERS))
        count = int(placeholder.sum())
        if not count:
            continue
        shown = sorted(set(frame.filter(placeholder)[column].to_list()))
        log.warning("%s: column '%s' holds %s in %s, read as empty (the persona states no %s); "
                    "write the level, or leave the cell empty", where, column,
                    " and ".join(map(repr, shown)), counted(count, "row"), column)
        frame = frame.with_columns(pl.when(placeholder).then(None).otherwise(pl.col(column))
                                   .alias(column))
    return frame


def check_decisions_agree(labels: pl.DataFrame, source: str) -> None:
    """Refuse a file whose `p_favourable` contradicts its `decision` column: the default fit reads
    the decisions and fit.response=probability the probabilities, so one file gave opposite
    verdicts (the probe's file, with P(unfavourable) in the column, said "treated less
    favourably" under one and "more favourably" under the other).

    A decision drawn from its row's probability p lands on the option p gives under even odds
    with probability min(p, 1 - p), so the number of such rows is Poisson-binomial. A file is
    refused when at least as many as it has would happen by that chance less than once in
    REFUSE_BELOW: a few rows against the odds are what sampling at a temperature gives."""
    both = labels.filter(pl.col("label").is_in(["favourable", "unfavourable"])
                         & pl.col("p_favourable").is_not_null())
    if both.is_empty():
        return
    p = both["p_favourable"].to_numpy().astype(float)
    stated = np.where(both["label"].to_numpy() == "favourable", p, 1 - p)
    against = int((stated < 0.5).sum())
    chance = np.where(np.isclose(p, 0.5), 0.0, np.minimum(p, 1 - p))
    tail = at_least(against, chance)
    if tail < REFUSE_BELOW:
        raise AuditError(
            f"{source}: column 'p_favourable' gives the row's own decision less than even odds in "
            f"{against} of the {both.height} rows that have both, where decisions drawn from "
            f"those probabilities would do so in about {chance.sum():.0f} (chance of {against} "
            f"or more: {tail:.1g}), so the fit would read one thing from the decisions and "
            f"another from the probabilities: p_favourable is the probability of the favourable "
            f"option; if the column holds the unfavourable one's, write 1 - p, or drop one of "
            f"the two columns")


# Fewer refusals of a sound file than one in a thousand imports.
REFUSE_BELOW = 1e-3
EXACT_UP_TO = 5000  # rows: the exact tail costs n^2 / 2 additions (0.05 s at 5,000 here)


def at_least(count: int, chances: np.ndarray) -> float:
    """P(at least `count` of independent events with these chances happen): the Poisson-binomial
    tail (scipy has none), exact up to EXACT_UP_TO events, else its refined normal
    approximation, which adds the skewness term (Volkova 1996): within 2% of the binomial tail
    at 2,500 events of chance 0.012, where the plain normal one was 10% low, so refusing more
    sound files than REFUSE_BELOW says."""
    if count <= 0:
        return 1.0
    if len(chances) <= EXACT_UP_TO:
        distribution = np.zeros(len(chances) + 1)
        distribution[0] = 1.0
        for step, chance in enumerate(chances, start=1):
            distribution[1:step + 1] = (distribution[1:step + 1] * (1 - chance)
                                        + distribution[:step] * chance)
            distribution[0] *= 1 - chance
        return float(min(1.0, distribution[count:].sum()))
    spread = chances * (1 - chances)
    sd = np.sqrt(max(spread.sum(), 1e-12))
    skew = (spread * (1 - 2 * chances)).sum() / sd ** 3
    x = (count - 0.5 - chances.sum()) / sd
    below = stats.norm.cdf(x) + skew * (1 - x ** 2) * stats.norm.pdf(x) / 6
    return float(np.clip(1 - below, 0.0, 1.0))
