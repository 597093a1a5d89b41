"""`python -m audit method=iat` on the embedded model, with MLflow on SQLite: a small design."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import polars as pl
import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module")
def iat_run(tmp_path_factory):
    """Two prompts (one dataset, two wordings, one iteration). 96 tokens hold about ten pairs:
    enough to see real answers scored, short enough for a busy 2-core machine."""
    tmp_path = tmp_path_factory.mktemp("iat")
    overrides = [
        "method=iat", "model=smollm2", "iat.datasets=[power]", "iat.variations=[replication,instruction1]",
        "iat.iterations=1", "iat.max_tokens=96", "iat.bootstrap_resamples=1000",
        "iat.permutation_resamples=1000",
        f"paths.response_store={tmp_path / 'responses.sqlite3'}",
        f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"tracking.artifact_root={tmp_path / 'mlartifacts'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    done = subprocess.run([sys.executable, "-m", "audit", *overrides], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "COLUMNS": "160"})
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp_path, done


def test_the_embedded_model_answers_every_prompt_and_each_answer_is_scored(iat_run):
    tmp_path, _ = iat_run
    run = tmp_path / "run"
    prompts = pl.read_parquet(run / "iat_prompts.parquet")
    responses = pl.read_parquet(run / "iat_responses.parquet")
    scores = pl.read_parquet(run / "iat_scores.parquet")
    assert prompts.height == 2
    assert (responses["status"] == "ok").all()
    assert responses["response_text"].str.len_chars().min() > 0
    assert sorted(scores["response_id"]) == sorted(prompts["prompt_id"])
    assert scores["d_score"].drop_nulls().is_between(-1, 1).all()
    stats = pl.read_csv(run / "iat_stats.csv")
    assert stats.select("model", "category", "dataset").row(0) == ("smollm2", "gender", "power")
    # strict scoring: n counts the complete answers, the rest are reported as left out
    assert stats["n"][0] == scores["parsed"].sum()
    assert stats["n"][0] + stats["n_left_out_strict"][0] == 2
    assert stats["parse_rate"][0] == pytest.approx(scores["parsed"].mean())


def test_the_run_is_logged_to_mlflow_with_per_dataset_metrics_tables_and_plots(iat_run):
    tmp_path, done = iat_run
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["audit"], output_format="list")
    assert len(runs) == 1
    run = runs[0]
    assert run.data.tags["method"] == "iat"
    assert run.data.params["iat.datasets"] == "['power']"
    assert run.data.params["iat.bootstrap_resamples"] == "1000"
    for metric in ("iat/smollm2/power/parse_rate", "iat/smollm2/power/n",
                   "iat/smollm2/power/n_left_out_strict", "iat/smollm2/parse_rate",
                   "iat/n_left_out_strict", "iat/n_left_out_lenient", "n_prompts",
                   "duration_s/respond"):
        assert metric in run.data.metrics, metric
    # SmolLM2 seldom answers every word: with no complete answer strict scoring has no D to log
    assert ("iat/smollm2/power/mean_d" in run.data.metrics) == \
        (run.data.metrics["iat/smollm2/power/n"] > 0)
    assert run.data.metrics["iat/smollm2/power/n"] + \
        run.data.metrics["iat/smollm2/power/n_left_out_strict"] == 2
    assert run.data.metrics["n_prompts"] == 2
    client = mlflow.MlflowClient()
    artifacts = {item.path for folder in ("tables", "plots", "data")
                 for item in client.list_artifacts(run.info.run_id, folder)}
    assert {"tables/iat_stats.csv", "tables/iat_stats_by_variation.csv",
            "plots/iat_d_by_dataset.png", "plots/iat_d_by_variation.png",
            "data/iat_scores.parquet", "data/iat_prompts.parquet"} <= artifacts
    assert "IAT word association" in done.stdout
    # The run ends with its summary on stdout: the runs-table link and how to serve it.
    assert f"/#/experiments/{run.info.experiment_id}/runs?workflowType=machine_learning" \
        in done.stdout
    assert "mlflow ui --backend-store-uri" in done.stdout
