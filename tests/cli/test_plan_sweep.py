"""`python -m audit.plan -m ...`: a sweep of plans, run for real (two simulated audits a job)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_plan_sweep_makes_every_plan_it_can_and_no_mlflow_run(tmp_path: Path):
    """Bugs caught: the first job's refusal (plan.attribute, refused before any simulation)
    ended the whole sweep, so the second job's plan was never made, with no word of it; and the
    sweep made a parent MLflow run, with no job run under it (a plan logs none), that stood in
    the audit experiment as a finished sweep."""
    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "audit.plan", "-m", "items=smoke",
               "plan.attribute=nosuch,race", "plan.replicates=[1]", "plan.min_simulations=2", "plan.simulations=2",
               f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
               f"tracking.artifact_root={tmp_path / 'artifacts'}",
               f"paths.response_store={tmp_path / 'store.sqlite3'}", f"hydra.sweep.dir={sweep}"]
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said[-3000:]
    assert "sweep job 0: plan.attribute='nosuch' is not in fit.attributes" in said
    assert ("1 of 2 sweep jobs failed (each said why above); the others finished. Fix the cause "
            "and rerun those jobs; each finished plan is in its job folder's plan.csv") in said
    assert (sweep / "1" / "plan.csv").is_file() and not (sweep / "0" / "plan.csv").exists()
    assert not (tmp_path / "mlflow.db").exists()
