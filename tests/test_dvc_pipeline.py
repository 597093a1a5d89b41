"""`dvc repro` runs the same stages as `python -m audit`, and a second repro reruns nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def pipeline_project(tmp_path_factory) -> Path:
    """A scratch copy of the project's pipeline files in its own git + DVC repository."""
    project = tmp_path_factory.mktemp("dvc_project")
    for name in ("dvc.yaml", ".dvcignore"):
        shutil.copy2(PROJECT_ROOT / name, project / name)
    for folder in ("conf", "data", "src"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _run(["git", "init", "-q"], project)
    _run([sys.executable, "-m", "dvc", "init", "-q"], project)
    _run([sys.executable, "-m", "audit.params", "items=smoke", "personas=smoke",
          "fit.draws=500", "fit.tune=500", "judge.evaluate_on_gold=false"], project)
    return project


def test_dvc_repro_runs_every_stage_then_nothing(pipeline_project: Path):
    first = _run([sys.executable, "-m", "dvc", "repro"], pipeline_project)
    for stage in ("design", "respond", "judge", "fit", "report"):
        assert f"Running stage '{stage}'" in first.stdout, first.stdout
    prompts = pl.read_parquet(pipeline_project / "pipeline" / "prompts.parquet")
    assert prompts.height == 15
    assert (pipeline_project / "pipeline" / "fit" / "posterior.nc").is_file()
    assert (pipeline_project / "pipeline" / "judge_votes.parquet").is_file()
    assert pl.read_parquet(pipeline_project / "pipeline" / "judge_gold.parquet").is_empty()
    assert (pipeline_project / "pipeline" / "report" / "forest_theta.png").is_file()
    assert (pipeline_project / "dvc.lock").is_file()
    assert (pipeline_project / "mlflow.db").is_file()

    second = _run([sys.executable, "-m", "dvc", "repro"], pipeline_project)
    assert "Running stage" not in second.stdout, second.stdout
    status = _run([sys.executable, "-m", "dvc", "status"], pipeline_project)
    assert "up to date" in status.stdout
