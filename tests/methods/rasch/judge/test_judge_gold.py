"""The shipped gold set and the figures computed from it."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from audit.errors import AuditError
from audit.config import JudgeConfig
from audit.methods.rasch.judge.gold import (
    ACCURACY_INTERVAL,
    gold_answers,
    gold_figures,
    gold_line,
    label_gold,
)
from audit.stats.intervals import jeffreys_interval
from audit.schemas import ItemSchema, validate
from audit.methods.rasch.schemas import (GOLD_CATEGORIES, JUDGE_FAILED, LABELS, UNPARSEABLE,
                                         GoldSchema)
from audit.llm.store import ResponseStore

DATA = Path(__file__).resolve().parents[4] / "data"


@pytest.fixture(scope="module")
def gold() -> pl.DataFrame:
    return validate(pl.read_csv(DATA / "judge_gold.csv"), GoldSchema, "gold set")


@pytest.fixture(scope="module")
def bank() -> pl.DataFrame:
    return validate(pl.read_csv(DATA / "items" / "decision_items.csv"), ItemSchema, "item bank")


def test_the_gold_set_is_large_spread_and_balanced(gold, bank):
    assert gold.height >= 200
    assert set(gold["category"]) == set(GOLD_CATEGORIES)
    assert set(gold["domain"]) == set(bank["domain"])
    assert set(gold["item_id"]) <= set(bank["item_id"])
    domains = gold.join(bank.select("item_id", pl.col("domain").alias("bank_domain")), on="item_id")
    assert (domains["domain"] == domains["bank_domain"]).all()
    shares = gold["label"].value_counts(normalize=True)
    assert set(shares["label"]) == set(LABELS) and shares["proportion"].min() >= 0.15


def test_gold_answers_name_their_items_question_and_options(gold, bank):
    answers = gold_answers(gold, bank)
    assert answers.height == gold.height and answers.null_count().sum_horizontal().item() == 0
    with pytest.raises(AuditError, match="missing from the item bank"):
        gold_answers(gold, bank.filter(pl.col("domain") != "hiring"))


def test_the_rules_are_never_wrong_on_the_gold_set_and_cover_a_third(gold, bank, tmp_path):
    """The rules run first and are trusted without review, so a wrong rule label is a bias no one
    sees; they must stay exact on every gold answer they label, injections included."""
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        results, _ = label_gold(gold, bank, JudgeConfig(name="rules"), [], store,
                                show_progress=lambda rows, total, name: rows)
    figures = gold_figures(results)
    assert figures.metrics["gold/rules_accuracy"] == 1.0
    assert figures.metrics["gold/rules_coverage"] >= 1 / 3
    injections = results.filter((pl.col("category") == "injection")
                                & (pl.col("label_source") == "rule"))
    assert injections.height >= 10 and (injections["label"] == injections["true_label"]).all()


# Four gold answers: the rules label one rightly, the judge one rightly, one wrongly and one not.
HAND_LABELLED = pl.DataFrame({
    "gold_id": ["g1", "g2", "g3", "g4"], "category": ["plain", "plain", "hedge", "refusal"],
    "domain": ["lending"] * 4,
    "true_label": ["favourable", "unfavourable", "needs_more_information", "refusal"],
    "label": ["favourable", "unfavourable", "unfavourable", "unparseable"],
    "label_source": ["rule", "judge", "judge", "judge"], "rationale": [""] * 4})


def test_gold_figures_by_hand():
    results = HAND_LABELLED
    figures = gold_figures(results)
    assert figures.metrics["gold/accuracy"] == 0.5
    assert figures.metrics["gold/rules_coverage"] == 0.25
    assert figures.metrics["gold/rules_accuracy"] == 1.0
    assert figures.metrics["gold/judge_accuracy"] == pytest.approx(1 / 3)
    assert figures.metrics["gold/judge_coverage"] == 0.75
    assert figures.metrics["gold/unparseable_share"] == 0.25
    assert figures.metrics["gold/accuracy/plain"] == 1.0
    assert figures.metrics["gold/recall/refusal"] == 0.0
    assert figures.by_category["n"].to_list() == [1, 2, 1]


def test_the_gold_line_names_each_labelling_path_with_its_share_and_accuracy():
    """Bug caught: the run's line said "accuracy 0.98 (0.98 on the 100% it labelled)", which
    named no labelling path, and never the judge model's own accuracy, where a weaker judge
    model shows; a path with no share (the rules-only judge's model) is not named."""
    results = pl.DataFrame({
        "gold_id": [f"g{i}" for i in range(5)], "category": ["plain"] * 5,
        "domain": ["lending"] * 5,
        "true_label": ["favourable", "unfavourable", "refusal", "favourable", "refusal"],
        "label": ["favourable", "unfavourable", "refusal", "unfavourable", "unparseable"],
        "label_source": ["rule", "rule", "judge", "judge", "judge"], "rationale": [""] * 5})
    line = gold_line("cascade", gold_figures(results).metrics)
    assert line == ("judge 'cascade' on the gold set (5 answers): accuracy 0.60 (0.75 on the 80% "
                    "it labelled), Cohen's kappa 0.47; the rules labelled 40% (accuracy 1.00), "
                    "the judge model read 60% (accuracy 0.33); 20% left unlabelled (out of the "
                    "fit)")
    rules_only = results.with_columns(
        label=pl.when(pl.col("label_source") == "rule").then(pl.col("label"))
        .otherwise(pl.lit(UNPARSEABLE)),
        label_source=pl.when(pl.col("label_source") == "rule").then(pl.lit("rule"))
        .otherwise(pl.lit("none")))
    assert "judge model" not in gold_line("rules_only", gold_figures(rules_only).metrics)
    failed = results.with_columns(label=pl.when(pl.col("gold_id") == "g4")
                                  .then(pl.lit(JUDGE_FAILED)).otherwise(pl.col("label")))
    assert gold_line("cascade", gold_figures(failed).metrics).endswith(
        "; left out: 1 whose judge request failed")


def test_gold_figures_measure_the_labels_given_apart_from_the_unlabelled_ones():
    """gold/labelled_accuracy is over the answers not left `unparseable` (the labels a fit reads),
    with the same Jeffreys interval as gold/accuracy: 2 of the 3 labelled answers are right. It is
    what the NO SIGNAL test reads; gold/accuracy (2 of 4) stays as it was."""
    results = pl.DataFrame({
        "gold_id": ["g1", "g2", "g3", "g4"], "category": ["plain"] * 4, "domain": ["lending"] * 4,
        "true_label": ["favourable", "unfavourable", "needs_more_information", "refusal"],
        "label": ["favourable", "unfavourable", "unfavourable", "unparseable"],
        "label_source": ["rule", "judge", "judge", "judge"], "rationale": [""] * 4})
    metrics = gold_figures(results).metrics
    low, high = jeffreys_interval(2, 3, ACCURACY_INTERVAL)
    assert metrics["gold/accuracy"] == 0.5
    assert metrics["gold/labelled_n"] == 3.0
    assert metrics["gold/labelled_accuracy"] == pytest.approx(2 / 3)
    assert (metrics["gold/labelled_accuracy_low"], metrics["gold/labelled_accuracy_high"]) == \
        (pytest.approx(float(low)), pytest.approx(float(high)))
    none = gold_figures(results.with_columns(label=pl.lit("unparseable"))).metrics
    assert math.isnan(none["gold/labelled_accuracy"]) and none["gold/labelled_n"] == 0.0


def _judge_eval(tmp_path: Path, *overrides: str):
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "audit.judge_eval", *overrides,
               f"paths.response_store={tmp_path / 'store.sqlite3'}",
               f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
               f"tracking.artifact_root={tmp_path / 'mlartifacts'}",
               f"hydra.run.dir={tmp_path / 'run'}"]
    return subprocess.run(command, cwd=DATA.parent, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "160"})


@pytest.mark.slow
def test_judge_eval_reports_and_logs_rules_judge_and_cascade(gold, tmp_path):
    import json

    import mlflow

    subset = gold.sort("gold_id").group_by("category", maintain_order=True).head(1)
    subset.write_csv(tmp_path / "gold.csv")
    done = _judge_eval(tmp_path, "judge=smollm2", f"judge.gold_file={tmp_path / 'gold.csv'}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"on the gold set ({len(GOLD_CATEGORIES)} answers)" in done.stdout
    assert "true label (rows)" in done.stdout
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert set(metrics) == {"rules", "judge", "cascade"}
    assert metrics["judge"]["gold/rules_coverage"] == 0.0
    assert metrics["cascade"]["gold/rules_coverage"] == metrics["rules"]["gold/rules_coverage"]
    # The judge model's share: every answer alone, what the rules left in the cascade, none in
    # the rules alone (whose model accuracy has no value: null on disk, "-" in the table).
    assert metrics["judge"]["gold/judge_coverage"] == 1.0
    assert metrics["cascade"]["gold/judge_coverage"] == pytest.approx(
        1 - metrics["cascade"]["gold/rules_coverage"])
    assert metrics["rules"]["gold/judge_coverage"] == 0.0
    assert metrics["rules"]["gold/judge_accuracy"] is None
    assert "model accuracy" in done.stdout
    assert (tmp_path / "run" / "cascade_confusion.csv").is_file()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = mlflow.search_runs(experiment_names=["judge_eval"], output_format="list")
    assert run.data.metrics["cascade/accuracy"] == metrics["cascade"]["gold/accuracy"]
    assert run.data.params["judge.name"] == "smollm2"


@pytest.mark.slow
def test_judge_eval_names_a_missing_gold_file_in_one_line(tmp_path):
    done = _judge_eval(tmp_path, "judge=rules_only", "judge.gold_file=nowhere.csv")
    assert done.returncode == 2
    assert "judge gold set not found at nowhere.csv" in done.stderr
    assert "Traceback" not in done.stderr


def test_judge_eval_measures_the_judge_an_audit_would_use_or_refuses(tmp_path):
    """Bugs caught (judge review 2026-12-02): `audit.judge_eval judge=logprob` printed "Judge
    'logprob' on the gold set" over the rules' figures alone and logged them as its own; with
    judge.use_rules=false it still printed a cascade row whose rules an audit never runs. The
    last row is the labelling an audit with this judge uses."""
    from audit.cli.judge_eval import check_reads_answers, labelling_modes

    with pytest.raises(AuditError, match=r"judge=logprob reads no answer text .*measures a "
                                         r"judge that reads answers"):
        check_reads_answers(JudgeConfig(name="logprob", method="logprob"))
    check_reads_answers(JudgeConfig())
    panel = ["a judge"]
    assert list(labelling_modes(JudgeConfig(), panel)) == ["rules", "judge", "cascade"]
    alone = labelling_modes(JudgeConfig(use_rules=False), panel)
    assert list(alone) == ["rules", "judge"] and not alone["judge"][0].use_rules
    # The rules row runs the rules alone whatever judge.use_rules says, with no judge model.
    assert alone["rules"][0].use_rules and alone["rules"][1] == [] and alone["judge"][1] == panel
    assert labelling_modes(JudgeConfig(), panel)["cascade"][0].use_rules
    assert list(labelling_modes(JudgeConfig(), [])) == ["rules"]
    done = _judge_eval(tmp_path, "judge=logprob")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "judge=logprob reads no answer text" in done.stderr
    assert not (tmp_path / "mlflow.db").exists() or "judge_eval-logprob" not in \
        (tmp_path / "mlflow.db").read_bytes().decode("latin-1")


def test_judge_eval_refuses_a_judge_with_neither_rules_nor_a_model(tmp_path):
    """Bug (mutation review 2026-12-06): judge=rules_only judge.use_rules=false, where nothing
    labels the answers and an audit refuses to run (score.check_labeller), printed and logged the
    rules' figures as this judge's, though the last row is meant to be what an audit uses."""
    done = _judge_eval(tmp_path, "judge=rules_only", "judge.use_rules=false")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("judge.use_rules=false, and judge=rules_only has no models, so nothing would label "
            "the answers") in done.stderr
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_judge_eval_prints_each_mode_a_dash_for_no_figure_and_the_last_modes_tables(capsys):
    """Catches print_figures showing nan for a figure over no answer, or the first mode's
    confusion and categories where the last (the one an audit uses) belongs."""
    from audit.cli.judge_eval import print_figures

    results = HAND_LABELLED
    by_rules = pl.col("label_source") == "rule"
    rules = results.with_columns(
        label=pl.when(by_rules).then(pl.col("label")).otherwise(pl.lit(UNPARSEABLE)),
        label_source=pl.when(by_rules).then(pl.lit("rule")).otherwise(pl.lit("none")))
    print_figures({"rules": gold_figures(rules), "cascade": gold_figures(results)}, "j", 4)
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines()
            if line.startswith("│")]
    assert "Judge 'j' on the gold set (4 answers)" in out
    assert rows[:2] == [
        ["rules", "0.250", "1.000", "0.200", "0.250", "1.000", "0.000", "-", "0.750"],
        ["cascade", "0.500", "0.667", "0.385", "0.250", "1.000", "0.750", "0.333", "0.250"]]
    assert "cascade: true label (rows) x label given (columns)" in out
    assert ["needs_more_information", "0", "1", "0", "0", "0"] in rows  # the cascade's miss
    assert "cascade: accuracy by kind of answer" in out
    assert ["plain", "2", "1.000", "0.500"] in rows


def test_a_gold_file_of_ones_own_that_does_not_match_names_the_fix(gold, tmp_path):
    """Bug caught (judge review 2026-12-02): a gold file whose `category` was not one of the
    19 kinds was refused with the list of kinds and nothing about what to do."""
    from audit.methods.rasch.judge.gold import read_gold_set

    own = tmp_path / "own_gold.csv"
    gold.head(3).with_columns(category=pl.lit("my_kind")).write_csv(own)
    with pytest.raises(AuditError, match=r"column 'category' holds 'my_kind'.*; a gold set of "
                                         r"your own takes the columns of data/judge_gold.csv") \
            as error:
        read_gold_set(str(own))
    assert "\n" not in str(error.value)
    assert read_gold_set(str(DATA / "judge_gold.csv")).height == gold.height


@pytest.mark.parametrize("content", ["", 'gold_id,item_id\n"unclosed,hiring_01\n'])
def test_a_gold_file_that_cannot_be_read_says_how_to_write_one_not_which_stage_writes_it(
        tmp_path, content: str):
    """Bug caught (bad-input review 2026-12-04): an empty or badly quoted judge.gold_file ended
    "run the stage that writes it first", but the user writes it: no stage does."""
    from audit.methods.rasch.judge.gold import read_gold_set

    own = tmp_path / "own_gold.csv"
    own.write_text(content, encoding="utf-8")
    with pytest.raises(AuditError) as error:
        read_gold_set(str(own))
    assert "stage" not in str(error.value) and "\n" not in str(error.value)
    assert "point judge.gold_file at another file" in str(error.value)
