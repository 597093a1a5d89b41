"""`method=dif` end to end on the embedded model: real llama.cpp answers, MLflow on SQLite."""

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

# 2 items x (baseline + 2 real + 2 null personas) = 10 short greedy requests.
DESIGN = ["method=dif", "model=smollm2", "dif.per_cell=1", "dif.datasets=[logic]", "dif.forms=[choice]",
          "dif.difficulties=[1,2]", "dif.persona_ids=[black,woman]", "dif.null_count=2",
          "dif.permutation_resamples=999"]


def _run(tmp_path: Path, run_dir: str) -> subprocess.CompletedProcess:
    overrides = [*DESIGN, f"paths.response_store={tmp_path / 'responses.sqlite3'}",
                 f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
                 f"tracking.artifact_root={tmp_path / 'mlartifacts'}",
                 f"hydra.run.dir={tmp_path / run_dir}"]
    return subprocess.run([sys.executable, "-m", "audit", *overrides], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "160"})


def test_dif_on_the_embedded_model(tmp_path: Path):
    first = _run(tmp_path, "run1")
    assert first.returncode == 0, first.stderr[-3000:]
    out = tmp_path / "run1"
    answers = pl.read_parquet(out / "dif_answers.parquet")
    assert answers.height == 10 and (answers["status"] == "ok").all()
    assert answers["response_text"].str.len_chars().min() > 0
    assert answers["correct"].is_not_null().all()
    personas = pl.read_csv(out / "dif_personas.csv")
    assert personas.height == 5 and personas["accuracy"].is_between(0, 1).all()
    tests = pl.read_csv(out / "dif_tests.csv")
    assert tests["dataset"].to_list() == ["logic"] and tests["n_real"][0] == 2
    assert "DIF: accuracy and bias" in first.stdout

    second = _run(tmp_path, "run2")  # greedy and cached: the same answers, nothing sent
    assert second.returncode == 0, second.stderr[-3000:]
    again = pl.read_parquet(tmp_path / "run2" / "dif_answers.parquet")
    assert again["from_cache"].all()
    assert again.select("prompt_id", "response_text").equals(
        answers.select("prompt_id", "response_text"))

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["audit"], output_format="list")
    assert len(runs) == 2
    run = runs[0]
    assert run.data.tags["method"] == "dif" and run.data.params["dif.null_count"] == "2"
    assert 0 <= run.data.metrics["accuracy/smollm2/logic"] <= 1
    plots = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "plots")}
    assert plots == {"plots/dif_accuracy.png", "plots/dif_null_vs_real.png",
                     "plots/dif_accuracy_vs_bias.png"}
