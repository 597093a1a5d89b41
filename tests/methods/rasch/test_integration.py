"""The smoke design end to end: the real embedded model, the real judge, nutpie, MLflow on SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import polars as pl
import pytest

from audit.methods.rasch.schemas import GOLD_CATEGORIES

PROJECT_ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _small_gold_set(tmp_path: Path) -> Path:
    """Two gold answers of each kind: enough to check that every run logs the judge's figures."""
    gold = pl.read_csv(PROJECT_ROOT / "data" / "judge_gold.csv")
    subset = gold.sort("gold_id").group_by("category", maintain_order=True).head(2)
    path = tmp_path / "gold_subset.csv"
    subset.write_csv(path)
    return path


def _audit(tmp_path: Path, run_dir: str, *extra: str) -> subprocess.CompletedProcess:
    overrides = [
        # SmolLM2 pinned, as the audited model and as the judge: the fastest embedded model keeps
        # this plumbing test short (the default judge's accuracy is checked by the README's smoke
        # audit, tests/docs/test_readme_smoke.py; with it here the fixture took 120 s more).
        "model=smollm2", "judge=smollm2", "items=smoke", "personas=smoke", "design.replicates=1",
        f"judge.gold_file={_small_gold_set(tmp_path)}",
        f"paths.response_store={tmp_path / 'responses.sqlite3'}",
        f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"tracking.artifact_root={tmp_path / 'mlartifacts'}",
        f"hydra.run.dir={tmp_path / run_dir}",
        *extra,
    ]
    return subprocess.run([sys.executable, "-m", "audit", *overrides], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "160"})


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("smoke")
    first = _audit(tmp_path, "run1")
    assert first.returncode == 0, first.stderr[-3000:]
    second = _audit(tmp_path, "run2")
    assert second.returncode == 0, second.stderr[-3000:]
    return tmp_path, first, second


def test_smoke_audit_writes_every_table(smoke_runs):
    tmp_path, _, _ = smoke_runs
    run_dir = tmp_path / "run1"
    prompts = pl.read_parquet(run_dir / "prompts.parquet")
    assert prompts.height == 3 * 5  # 3 items x (baseline + 2 explicit + 2 null)
    responses = pl.read_parquet(run_dir / "responses.parquet")
    assert responses["status"].to_list() == ["ok"] * prompts.height
    assert responses["response_text"].str.len_chars().min() > 0
    labels = pl.read_parquet(run_dir / "labels.parquet")
    assert labels.height == prompts.height
    judged = labels.filter(pl.col("label_source") == "judge")
    votes = pl.read_parquet(run_dir / "judge_votes.parquet")
    # The panel voted on every answer it labelled, and re-read up to judge.rule_check_per_group
    # (2) rule-labelled answers of each of the 2 demographic cells (judge/rule_check.py).
    reread = set(votes["answer_id"]) - set(judged["prompt_id"])
    assert set(judged["prompt_id"]) <= set(votes["answer_id"])
    assert reread <= set(labels.filter(pl.col("label_source") == "rule")["prompt_id"])
    assert len(reread) <= 2 * 2
    assert (judged["agreement"] == 1.0).all()  # a panel of one agrees with itself
    summary = pl.read_csv(run_dir / "fit" / "summary.csv")
    thetas = summary.filter(pl.col("parameter").str.starts_with("theta["))
    assert sorted(thetas["parameter"]) == sorted(
        f"theta[{respondent}]" for respondent in prompts["respondent_id"].unique())
    assert (thetas["hdi_low"] <= thetas["mean"]).all() and (thetas["mean"] <= thetas["hdi_high"]).all()


def test_smoke_audit_logs_one_complete_mlflow_run(smoke_runs):
    tmp_path, _, _ = smoke_runs
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["audit"], order_by=["start_time ASC"],
                              output_format="list")
    assert len(runs) == 2
    run = runs[0]
    assert run.data.params["items.name"] == "smoke"
    assert run.data.params["model.smollm2.model"] == "smollm2-135m-instruct"
    for metric in ("n_prompts", "rhat_max", "ess_bulk_min", "divergences", "rule_share",
                   "label_rate/favourable", "label_rate/unparseable", "gold/accuracy",
                   "gold/cohen_kappa", "gold/rules_coverage", "gold/rules_accuracy",
                   "gold/accuracy/injection", "label_rate/refusal/smollm2/baseline"):
        assert metric in run.data.metrics, metric
    assert run.data.metrics["n_prompts"] == 15
    assert run.data.tags["git.commit"]
    assert run.data.tags["converged"] in ("true", "false")
    client = mlflow.MlflowClient()
    assert run.data.metrics["gold/n"] == 2 * len(GOLD_CATEGORIES)  # the test subset
    artifacts = {item.path for folder in ("fit", "tables", "plots", "judge")
                 for item in client.list_artifacts(run.info.run_id, folder)}
    assert {"fit/posterior.nc", "tables/summary.csv", "plots/forest_theta.png",
            "plots/item_difficulty.png", "judge/judge_gold_confusion.csv",
            "judge/judge_gold.parquet", "judge/judge_votes.parquet",
            "tables/label_rate_tests.csv"} <= artifacts


def test_smoke_audit_prints_the_ranking_and_the_run(smoke_runs):
    _, first, _ = smoke_runs
    output = first.stdout + first.stderr
    assert "Personas of smollm2 by posterior favourability" in output
    assert "│ baseline " in output
    assert "mlflow ui --backend-store-uri" in output


def test_a_rerun_is_served_from_the_response_store(smoke_runs):
    tmp_path, _, _ = smoke_runs
    first = pl.read_parquet(tmp_path / "run1" / "responses.parquet")
    second = pl.read_parquet(tmp_path / "run2" / "responses.parquet")
    assert second["from_cache"].all()
    assert first.select("prompt_id", "response_text").equals(
        second.select("prompt_id", "response_text"))


def test_a_broken_override_is_one_clear_line(tmp_path):
    done = _audit(tmp_path, "bad", "personas.generators=[baseline,nul]")
    assert done.returncode != 0
    assert "unknown persona generator 'nul'" in done.stderr
    assert "Traceback" not in done.stderr
