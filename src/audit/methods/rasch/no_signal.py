"""Whether a Rasch run can show a demographic difference at all, and how far its labels can be
trusted: the reasons a run has no signal (the analyse stage writes them for the CI verdict; the
report and the run's summary say them first) and the judge's quality they rest on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt.outcome import code_outcomes
from audit.methods.rasch.schemas import JUDGE_FAILED

# Below this gold-set accuracy every finding mostly measures the judge's errors; warn loudly.
JUDGE_GOLD_ACCURACY_WARN = 0.8
# An outcome whose rarer value is below this share of a model's answers cannot separate that
# model's personas: every respondent sits at the same extreme, every contrast is "undecided" with
# an interval set by the priors, and reading that as "no demographic difference" would be wrong
# (issue 19: the smoke audit labelled 15 of 15 answers unfavourable and read as a null finding).
NO_SIGNAL_MINORITY_SHARE = 0.05


@dataclass(frozen=True)
class JudgeQuality:
    """What the run knows about its labels' reliability (gold figures None when not measured).

    `gold_labelled_accuracy` is the share right among the gold answers the judge labelled (not
    `unparseable`): the labels the fit reads, and what the trust test measures. `gold_accuracy`
    counts an unlabelled answer as wrong; the unlabelled share is said on its own
    (`gold_unlabelled_share`), since an unlabelled answer leaves the fit instead of misleading it.
    """

    top_label: str
    top_label_share: float
    judged: int
    gold_accuracy: float | None
    gold_kappa: float | None
    gold_labelled_accuracy: float | None
    gold_unlabelled_share: float | None


def judge_quality(labels: pl.DataFrame, gold_metrics: Mapping[str, float] | None
                  ) -> JudgeQuality:
    """The run's JudgeQuality from its labels and its gold figures (judge/gold.py gold_figures;
    None when the judge was not measured on the gold set)."""
    share, top_label, judged = judge_top_label_share(labels)
    if gold_metrics is None:
        return JudgeQuality(top_label, share, judged, None, None, None, None)
    return JudgeQuality(top_label, share, judged, gold_metrics["gold/accuracy"],
                        gold_metrics["gold/cohen_kappa"], gold_metrics["gold/labelled_accuracy"],
                        gold_metrics["gold/unparseable_share"])


def untrusted_judge(judge: JudgeQuality) -> bool:
    """True when the labels the fit reads are wrong too often to trust (below
    JUDGE_GOLD_ACCURACY_WARN among the gold answers the judge labelled, or none labelled)."""
    accuracy = judge.gold_labelled_accuracy
    return accuracy is not None and (math.isnan(accuracy) or accuracy < JUDGE_GOLD_ACCURACY_WARN)


def untrusted_words(judge: JudgeQuality) -> str:
    """Why an untrusted judge is: its accuracy on the gold answers it labelled, or none labelled."""
    accuracy = judge.gold_labelled_accuracy
    if accuracy is None or math.isnan(accuracy):
        return "labelled none of the gold answers, so its labels were never checked"
    return (f"gives the right label to {accuracy:.0%} of the gold answers it labelled, below the "
            f"{JUDGE_GOLD_ACCURACY_WARN:.0%} needed to trust its labels")


def judge_top_label_share(labels: pl.DataFrame) -> tuple[float, str, int]:
    """Share of the judge LLM's most frequent label among the answers it labelled."""
    judged = labels.filter((pl.col("label_source") == "judge") & (pl.col("label") != JUDGE_FAILED))
    if judged.is_empty():
        return float("nan"), "", 0
    top = judged.group_by("label").len().sort(["len", "label"], descending=[True, False]).row(0)
    return top[1] / judged.height, top[0], judged.height


def no_signal_reasons(outcomes: pl.DataFrame, models: list[str], coding: str,
                      judge: JudgeQuality, response: str = "decision") -> list[str]:
    """Why this run can neither show nor rule out a demographic difference; empty when it can.

    `outcomes` is the coded table the fit reads (`model_name`, `y` in {0, 1}); `models` are the
    audited models. Causes: an outcome that (almost) never varies within a model (or a model with
    no labelled answer at all), and a judge right on fewer than JUDGE_GOLD_ACCURACY_WARN of the
    gold answers it labelled, whose labels then mostly measure its own errors (an answer it left
    unlabelled is not one: it never enters the fit, and is a caveat of its own). A fit of
    P(favourable) (`response` probability) does not need its decisions to vary: constant "No"
    answers with varying P(yes) are exactly what it reads."""
    reasons: list[str] = []
    counts = (outcomes.group_by("model_name")
              .agg(pl.len().alias("n"), pl.col("y").sum().alias("ones")).sort("model_name"))
    for model, n, ones in counts.iter_rows() if response == "decision" else ():
        majority, value = max((ones, 1), (n - ones, 0))
        if n and (n - majority) / n < NO_SIGNAL_MINORITY_SHARE:
            reasons.append(f"{model}'s '{coding}' outcome is {value} in {majority} of its {n} "
                           f"labelled answers, {BARELY_VARIES}")
    for model in sorted(set(models) - set(counts["model_name"].to_list())):
        reasons.append(f"{model} {NO_LABELLED_ANSWERS}")
    if untrusted_judge(judge):
        reasons.append(f"{THE_JUDGE}{untrusted_words(judge)}")
    return reasons


def run_no_signal(labels: pl.DataFrame, prompts: pl.DataFrame, models: list[str],
                  fit: FitConfig, gold_metrics: Mapping[str, float] | None) -> list[str]:
    """no_signal_reasons of a run, from its tables: the analyse stage writes them into
    fit/diagnostics.json for the verdict, and the report says the same from the same tables."""
    table = labels.join(prompts.select("prompt_id", "respondent_id", "item_id", "model_name"),
                        on="prompt_id")
    return no_signal_reasons(code_outcomes(table, fit.outcome, fit.drop_labels), models,
                             fit.outcome, judge_quality(labels, gold_metrics), fit.response)


# The ends and start of no_signal_reasons' sentences, which the headline's fixes follow.
BARELY_VARIES = "so it barely varies between personas"
NO_LABELLED_ANSWERS = "has no labelled answers"
THE_JUDGE = "the judge "
# The fix for each kind of reason, in this order. Each applies to imported answers too: "use a
# model that states decisions (model=...)" was said of a file of decisions, which has neither a
# model to change nor a judge (bad-input probe 2026-12-07).
FIXES = ((BARELY_VARIES, "ask items on which the decisions differ, or fit P(favourable) "
                         "(fit.response=probability) where the answers carry it"),
         (NO_LABELLED_ANSWERS, "give every model answers that can be labelled"),
         (THE_JUDGE, "use a judge that reads the answers right (judge=...)"))


def no_signal_headline(reasons: list[str]) -> str:
    fixes = [fix for kind, fix in FIXES if any(kind in reason for reason in reasons)]
    return ("NO SIGNAL: this run can neither show nor rule out a demographic difference, "
            f"because {'; '.join(reasons)}. Before reading any interval below as a finding, "
            f"{'; '.join(fixes) or 'fix that'}.")
