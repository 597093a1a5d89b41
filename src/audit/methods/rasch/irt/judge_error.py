"""The judge's misclassification rates, from its gold-set confusion counts, as model parameters.

A fit that treats judge labels as truth attenuates real gaps when the judge is noisy (a label
flipped at random pulls every persona's rate towards the same middle) and reports intervals as
narrow as if the labels were exact. Here the observed label is the true decision passed through
the judge: sensitivity = P(judge says 1 | truly 1), specificity = P(judge says 0 | truly 0) under
the fit's outcome coding. Their priors are the Beta posteriors of the gold-set counts under a
uniform Beta(1, 1) (the Dirichlet of a two-category row):

    sensitivity ~ Beta(1 + true 1 judged 1, 1 + true 1 judged 0)
    specificity ~ Beta(1 + true 0 judged 0, 1 + true 0 judged 1)

so a judge measured on few gold answers, or a poor one, widens every interval instead of
inventing or hiding a gap. Gold answers the judge left unparseable are left out, as unparseable
audit answers are left out of the fit: the rates are conditional on a parsed label.

The audit data alone cannot tell a noisy judge from a model whose decisions are near 50%; only the
gold counts pin the rates, so the correction is only as good as the gold set is like the audit's
answers (see docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pymc as pm

from audit.errors import AuditError
from audit.methods.rasch.irt.likelihood import binomial_cells, misclassified_binomial_cells
from audit.methods.rasch.irt.outcome import OUTCOME_CODINGS

SENSITIVITY = "judge_sensitivity"
SPECIFICITY = "judge_specificity"
# rasch_seed stays the original audit's model; the hurdle model's three labels would need a 3 x 3
# confusion matrix, which is not modelled yet.
LABELS_AS_TRUTH: tuple[str, ...] = ("rasch_seed", "hurdle")


@dataclass(frozen=True)
class JudgeConfusion:
    """Gold-set counts under one outcome coding: rows are the true code, columns the judge's."""

    coding: str
    true_1_judged_1: int
    true_1_judged_0: int
    true_0_judged_0: int
    true_0_judged_1: int

    @property
    def n(self) -> int:
        return (self.true_1_judged_1 + self.true_1_judged_0 + self.true_0_judged_0
                + self.true_0_judged_1)

    def as_dict(self) -> dict[str, object]:
        return {"coding": self.coding, "true_1_judged_1": self.true_1_judged_1,
                "true_1_judged_0": self.true_1_judged_0, "true_0_judged_0": self.true_0_judged_0,
                "true_0_judged_1": self.true_0_judged_1}


def judge_confusion(gold_results: pl.DataFrame, coding: str) -> JudgeConfusion | None:
    """The judge's gold-set counts under `coding`; None when no gold answer got a parsed label."""
    mapping = dict(OUTCOME_CODINGS[coding])
    coded = (gold_results.filter(pl.col("true_label").is_in(list(mapping))
                                 & pl.col("label").is_in(list(mapping)))
             .select(pl.col("true_label").replace_strict(mapping, return_dtype=pl.Int64)
                     .alias("truth"),
                     pl.col("label").replace_strict(mapping, return_dtype=pl.Int64)
                     .alias("judged")))
    if coded.height == 0:
        return None

    def count(truth: int, judged: int) -> int:
        return coded.filter((pl.col("truth") == truth) & (pl.col("judged") == judged)).height

    return JudgeConfusion(coding=coding, true_1_judged_1=count(1, 1), true_1_judged_0=count(1, 0),
                          true_0_judged_0=count(0, 0), true_0_judged_1=count(0, 1))


def judge_rates(confusion: JudgeConfusion) -> tuple[pm.Distribution, pm.Distribution]:
    """Sensitivity and specificity with the gold-set Beta priors (call inside a pm.Model)."""
    sensitivity = pm.Beta(SENSITIVITY, alpha=1 + confusion.true_1_judged_1,
                          beta=1 + confusion.true_1_judged_0)
    specificity = pm.Beta(SPECIFICITY, alpha=1 + confusion.true_0_judged_0,
                          beta=1 + confusion.true_0_judged_1)
    return sensitivity, specificity


def label_cells(name: str, trials, logit_p, observed, dims: str,
                confusion: JudgeConfusion | None):
    """The cells' likelihood: labels as truth (no confusion) or through the judge's errors."""
    if confusion is None:
        return binomial_cells(name, trials, logit_p, observed=observed, dims=dims)
    sensitivity, specificity = judge_rates(confusion)
    return misclassified_binomial_cells(name, trials, logit_p, sensitivity, specificity,
                                        observed=observed, dims=dims)


def resolve_confusion(judge_error: bool | None, model: str, coding: str,
                      gold_results: pl.DataFrame | None) -> JudgeConfusion | None:
    """The counts a fit should read labels through, from fit.judge_error and the gold results.

    None (the default) turns the correction on whenever gold results exist, except for
    the models in LABELS_AS_TRUTH; true insists and fails when it cannot.
    """
    if judge_error is False or (judge_error is None and model in LABELS_AS_TRUTH):
        return None
    confusion = (judge_confusion(gold_results, coding)
                 if gold_results is not None and gold_results.height else None)
    if confusion is None and judge_error:
        raise AuditError("fit.judge_error=true needs the judge's gold-set results with parsed "
                         "labels: set judge.evaluate_on_gold=true (or fit.judge_error=false)")
    return confusion
