"""Agreement statistics: between a judge panel's members, and between a judge and the gold labels.

Chance-corrected statistics come from well-kept libraries (statsmodels for Cohen's and Fleiss'
kappa, `krippendorff` for alpha); this module only shapes label tables into their inputs. A vote
of `unparseable` (or `judge_failed`) is a missing rating, not a category: a judge that failed to
answer did not disagree, so alpha treats it as missing and Fleiss' kappa (which needs complete
rows) skips the answer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import krippendorff
import numpy as np
import polars as pl
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE

CATEGORIES: tuple[str, ...] = (*LABELS, UNPARSEABLE)


@dataclass(frozen=True)
class Consensus:
    label: str
    agreement: float  # share of the whole panel (abstaining and failed judges too) for `label`
    reason: str


def majority(votes: dict[str, str]) -> Consensus:
    """The panel's label: the label that more than half of the valid votes (votes for one of
    LABELS) chose. A judge whose reply was no label abstains. No valid vote, or no label over
    half of them (a tie, or five judges split 2/1/1/1), is `unparseable`, since picking one would
    be a guess. A judge whose request failed makes the answer a judge failure (JUDGE_FAILED),
    whatever the others said: the panel was not heard in full, and a rerun asks that judge
    again, so the label is the one a run without the failure gives. `agreement` is the share of
    the whole panel that voted for the label, failed and abstaining judges in the denominator,
    so three judges of which two abstained give a label at agreement 1/3; for a judge failure it
    is the share of the panel whose request failed."""
    panel_size = len(votes)
    summary = ", ".join(f"{judge}={label}" for judge, label in sorted(votes.items()))
    failed = [judge for judge, label in sorted(votes.items()) if label == JUDGE_FAILED]
    if failed:
        return Consensus(JUDGE_FAILED, len(failed) / panel_size,
                         f"judge request failed for {', '.join(failed)} ({summary})")
    counts = Counter(label for label in votes.values() if label in LABELS)
    if not counts:
        return Consensus(UNPARSEABLE, 0.0, f"no judge gave a valid label ({summary})")
    valid = sum(counts.values())
    label, count = max(counts.items(), key=lambda pair: (pair[1], pair[0]))
    if 2 * count <= valid:
        return Consensus(UNPARSEABLE, count / panel_size,
                         f"no majority: no label has more than half of the {valid} valid votes "
                         f"({summary})")
    return Consensus(label, count / panel_size, summary)


def rating_matrix(votes: pl.DataFrame) -> tuple[np.ndarray, list[str], list[str]]:
    """Votes (answer_id, judge, label) -> judges x answers matrix of category codes, NaN missing."""
    judges = sorted(votes["judge"].unique().to_list())
    answers = sorted(votes["answer_id"].unique().to_list())
    judge_index = {judge: row for row, judge in enumerate(judges)}
    answer_index = {answer: column for column, answer in enumerate(answers)}
    codes = {label: code for code, label in enumerate(LABELS)}
    matrix = np.full((len(judges), len(answers)), np.nan)
    for answer_id, judge, label in votes.select("answer_id", "judge", "label").iter_rows():
        if label in codes:
            matrix[judge_index[judge], answer_index[answer_id]] = codes[label]
    return matrix, judges, answers


def krippendorff_alpha(votes: pl.DataFrame) -> float | None:
    """Nominal Krippendorff's alpha across judges; None when it is undefined (one judge, or fewer
    than two pairable ratings, or a single category used throughout)."""
    matrix, judges, _ = rating_matrix(votes)
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    if len(judges) < 2 or not pairable.any():
        return None
    observed = matrix[:, pairable]
    if np.unique(observed[~np.isnan(observed)]).size < 2:
        return None
    return float(krippendorff.alpha(reliability_data=observed, level_of_measurement="nominal",
                                    value_domain=list(range(len(LABELS)))))


def fleiss(votes: pl.DataFrame) -> float | None:
    """Fleiss' kappa over the answers every judge labelled validly; None when undefined."""
    matrix, judges, _ = rating_matrix(votes)
    complete = matrix[:, ~np.isnan(matrix).any(axis=0)]
    if len(judges) < 2 or complete.shape[1] == 0:
        return None
    counts = np.stack([(complete == code).sum(axis=0) for code in range(len(LABELS))], axis=1)
    if (counts.sum(axis=0) > 0).sum() < 2:
        return None  # one category only: expected agreement is 1 and kappa is 0/0
    return float(fleiss_kappa(counts, method="fleiss"))


def confusion_matrix(truth: list[str], predicted: list[str]) -> pl.DataFrame:
    """Counts of true label (rows) by predicted label (columns), `unparseable` a predicted column."""
    pairs = Counter(zip(truth, predicted, strict=True))
    return pl.DataFrame([
        {"true_label": true_label, **{predicted_label: pairs.get((true_label, predicted_label), 0)
                                       for predicted_label in CATEGORIES}}
        for true_label in LABELS
    ])


def cohen_kappa(truth: list[str], predicted: list[str]) -> float | None:
    """Cohen's kappa of predictions against truth over all five categories (an unparseable
    prediction counts as wrong); None when undefined (no rows, or both raters constant and equal)."""
    if not truth:
        return None
    index = {label: code for code, label in enumerate(CATEGORIES)}
    table = np.zeros((len(CATEGORIES), len(CATEGORIES)))
    for true_label, predicted_label in zip(truth, predicted, strict=True):
        table[index[true_label], index[predicted_label]] += 1
    expected = (table.sum(axis=1) @ table.sum(axis=0)) / table.sum() ** 2
    if np.isclose(expected, 1.0):
        return None
    return float(cohens_kappa(table, return_results=False))
