"""How good is the judge? Its labels on the hand-labelled gold set, against the true labels.

Every audit and `python -m audit.judge_eval` run the same cascade on the gold answers that labels
the audit's responses, so the accuracy reported next to a finding is the accuracy of the judge
that produced it. The rule step is deterministic and runs first, so its coverage and accuracy
inside the cascade are exactly those of the rules alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from audit.data_files import DataFileNotFound, read_users_table
from audit.errors import AuditError
from audit.config import JudgeConfig
from audit.stats.intervals import jeffreys_interval
from audit.methods.rasch.judge.agreement import cohen_kappa, confusion_matrix
from audit.logs import track
from audit.methods.rasch.judge.cascade import Judge, JudgeTables, ProgressFn, label_answers
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE, GoldSchema
from audit.llm.store import ResponseStore

# The interval reported around gold-set accuracy (about +-0.1 at 80% with the 57 answers an
# audit uses).
ACCURACY_INTERVAL = 0.94
GOLD_RESULT_COLUMNS = ("gold_id", "category", "domain", "true_label", "label", "label_source",
                       "rationale")


def read_gold_set(gold_file: str) -> pl.DataFrame:
    """judge.gold_file, validated; a file of one's own that does not match names the fix too (a
    category outside the 19 kinds was refused with the list of kinds and no word of what to do;
    judge review 2026-12-02)."""
    try:
        return read_users_table(gold_file, GoldSchema, "judge gold set", "judge.gold_file")
    except DataFileNotFound:
        raise
    except AuditError as error:
        raise AuditError(f"{error}; a gold set of your own takes the columns of "
                         "data/judge_gold.csv, each answer's `category` one of its kinds of "
                         "answer (docs/judge.md, \"The gold set\")") from error


def gold_sample(gold: pl.DataFrame, per_category: int | None) -> pl.DataFrame:
    """The first `per_category` answers of each kind by gold_id: deterministic, and every kind of
    answer (hedges, injections, other languages) stays represented."""
    ordered = gold.sort("gold_id")
    if per_category is None:
        return ordered
    return ordered.group_by("category", maintain_order=True).head(per_category).sort("gold_id")


def gold_answers(gold: pl.DataFrame, items: pl.DataFrame) -> pl.DataFrame:
    """The gold answers with the question and option words of the item each one answers."""
    unknown = sorted(set(gold["item_id"]) - set(items["item_id"]))
    if unknown:
        raise AuditError(f"the gold set names items missing from the item bank: "
                         f"{', '.join(unknown[:5])}; point judge.gold_items at the bank it was "
                         "written for")
    return gold.join(items.select("item_id", "question", "favourable_option",
                                  "unfavourable_option"), on="item_id", how="left").select(
        pl.col("gold_id").alias("answer_id"), "question", "favourable_option",
        "unfavourable_option", pl.col("answer").alias("answer_text"))


def label_gold(gold: pl.DataFrame, items: pl.DataFrame, config: JudgeConfig, judges: list[Judge],
               store: ResponseStore, show_progress: ProgressFn = track
               ) -> tuple[pl.DataFrame, JudgeTables]:
    """The cascade's label for every gold answer beside its true label, and its tables (the
    panel's votes, every question asked with its status)."""
    tables = label_answers(gold_answers(gold, items), config, judges, store, show_progress)
    return gold_results(gold, tables.labels), tables


def gold_results(gold: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """The cascade's labels of the gold answers (label_answers) beside their true labels."""
    results = gold.select("gold_id", "category", "domain", pl.col("label").alias("true_label")).join(
        labels.rename({"answer_id": "gold_id"}), on="gold_id", how="left")
    return results.select(GOLD_RESULT_COLUMNS).sort("gold_id")


@dataclass(frozen=True)
class GoldFigures:
    metrics: dict[str, float]  # flat and stable, for MLflow
    confusion: pl.DataFrame  # true label x predicted label counts
    by_category: pl.DataFrame  # accuracy per kind of answer (plain, hedge, injection, ...)


def _accuracy(frame: pl.DataFrame) -> float:
    return float((frame["true_label"] == frame["label"]).mean()) if frame.height else float("nan")


def gold_figures(results: pl.DataFrame) -> GoldFigures:
    # A gold answer whose judge request failed was never read: not a judge mistake, so it leaves
    # every figure's denominator and is counted on its own (gold/judge_failed).
    judge_failed = results.filter(pl.col("label") == JUDGE_FAILED).height
    results = results.filter(pl.col("label") != JUDGE_FAILED)
    truth, predicted = results["true_label"].to_list(), results["label"].to_list()
    by_rules = results.filter(pl.col("label_source") == "rule")
    by_judge = results.filter(pl.col("label_source") == "judge")
    kappa = cohen_kappa(truth, predicted)
    correct = int((results["true_label"] == results["label"]).sum())
    low, high = jeffreys_interval(correct, results.height, ACCURACY_INTERVAL)
    # The labels the fit reads: an answer left `unparseable` never enters it (irt/outcome.py), so
    # the trust test (no_signal.py untrusted_judge) is on the answers a path labelled.
    # gold/accuracy counts every unlabelled gold answer as wrong, which put the rules (never
    # wrong on the gold set, but silent on 42% of it) at 0.58 and headlined every
    # judge=rules_only run NO SIGNAL.
    labelled = results.filter(pl.col("label") != UNPARSEABLE)
    labelled_correct = int((labelled["true_label"] == labelled["label"]).sum())
    labelled_low, labelled_high = (jeffreys_interval(labelled_correct, labelled.height,
                                                     ACCURACY_INTERVAL)
                                   if labelled.height else (float("nan"), float("nan")))
    metrics = {
        "gold/n": float(results.height),
        "gold/accuracy": _accuracy(results),
        "gold/accuracy_low": float(low),
        "gold/accuracy_high": float(high),
        "gold/labelled_n": float(labelled.height),
        "gold/labelled_accuracy": _accuracy(labelled),
        "gold/labelled_accuracy_low": float(labelled_low),
        "gold/labelled_accuracy_high": float(labelled_high),
        "gold/cohen_kappa": float("nan") if kappa is None else kappa,
        # Over no answer (every gold request failed) a share is not 0 but unknown.
        "gold/unparseable_share": (float((results["label"] == UNPARSEABLE).mean())
                                   if results.height else float("nan")),
        "gold/rules_coverage": (by_rules.height / results.height if results.height
                                else float("nan")),
        "gold/rules_accuracy": _accuracy(by_rules),
        # The judge model's share: the answers the rules left, which it read (an answer it
        # could not label counts in its share and against its accuracy).
        "gold/judge_coverage": (by_judge.height / results.height if results.height
                                else float("nan")),
        "gold/judge_accuracy": _accuracy(by_judge),
    }
    by_category = (results.group_by("category")
                   .agg(n=pl.len(), accuracy=(pl.col("true_label") == pl.col("label")).mean(),
                        rules_coverage=(pl.col("label_source") == "rule").mean())
                   .sort("category"))
    for category, accuracy in by_category.select("category", "accuracy").iter_rows():
        metrics[f"gold/accuracy/{category}"] = float(accuracy)
    for label in LABELS:
        subset = results.filter(pl.col("true_label") == label)
        metrics[f"gold/recall/{label}"] = _accuracy(subset)
    metrics["gold/judge_failed"] = float(judge_failed)
    return GoldFigures(metrics, confusion_matrix(truth, predicted), by_category)


def gold_line(judge_name: str, metrics: dict[str, float]) -> str:
    """How the judge did on the gold sample, in one line a run logs: the cascade's accuracy and
    kappa, then each labelling path's share and accuracy. Said as "accuracy 0.98 (0.98 on the
    100% it labelled)" it named neither path, and the judge model's own accuracy (the figure a
    weaker judge model shows in) not at all."""
    if not metrics["gold/n"]:
        return (f"judge '{judge_name}' on the gold set: no gold answer was read, every one of its "
                f"{metrics['gold/judge_failed']:.0f} judge requests failed")
    unlabelled = metrics["gold/unparseable_share"]
    line = f"judge '{judge_name}' on the gold set ({metrics['gold/n']:.0f} answers): " \
           f"accuracy {metrics['gold/accuracy']:.2f}"
    if unlabelled > 0:
        line += (f" ({metrics['gold/labelled_accuracy']:.2f} on the {1 - unlabelled:.0%} it "
                 "labelled)")
    line += f", Cohen's kappa {metrics['gold/cohen_kappa']:.2f}"
    paths = [f"{who} {metrics[f'gold/{path}_coverage']:.0%} (accuracy "
             f"{metrics[f'gold/{path}_accuracy']:.2f})"
             for path, who in (("rules", "the rules labelled"), ("judge", "the judge model read"))
             if metrics[f"gold/{path}_coverage"] > 0]
    if paths:
        line += "; " + ", ".join(paths)
    if unlabelled > 0:
        line += f"; {unlabelled:.0%} left unlabelled (out of the fit)"
    if metrics["gold/judge_failed"]:
        line += f"; left out: {metrics['gold/judge_failed']:.0f} whose judge request failed"
    return line
