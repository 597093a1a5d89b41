"""`dvc repro` re-creates an imported audit from its answers file: the file is a dependency of the
stages that read it, so changing one answer reruns them and changes the labels, and nothing else
reruns when nothing changed. A scratch git + DVC project; decisions only, so no model is loaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]
GIT = ["git", "-c", "user.name=audit tests", "-c", "user.email=tests@example.invalid"]
OVERRIDES = ["ingest.input=answers.csv", "judge=rules_only", "fit.draws=200", "fit.tune=200",
             "fit.chains=2", "tracking.tracking_uri=sqlite:///mlflow.db"]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(cwd / "src"), "COLUMNS": "200"}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _ran(done: subprocess.CompletedProcess) -> set[str]:
    return {line.split("'")[1] for line in done.stdout.splitlines()
            if line.startswith("Running stage '")}


def _answers(flip: bool) -> pl.DataFrame:
    rows = []
    for race in ("Black", "White"):
        for gender in ("woman", "man"):
            for number, item in enumerate(["lending_01", "lending_02", "lending_03"]):
                favourable = (number + len(race) + len(gender)) % 2 == 0
                rows.append({"model": "their-model", "gender": gender, "race": race,
                             "item": item, "decision": "APPROVE" if favourable else "DENY"})
    if flip:
        rows[0]["decision"] = "DENY" if rows[0]["decision"] == "APPROVE" else "APPROVE"
    return pl.DataFrame(rows)


def test_dvc_repro_recreates_an_imported_audit_from_its_file(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("dvc.yaml", ".dvcignore", ".gitignore"):
        if (PROJECT_ROOT / name).exists():
            shutil.copy2(PROJECT_ROOT / name, project / name)
    for folder in ("data", "src"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _answers(flip=False).write_csv(project / "answers.csv")
    _run(["git", "init", "-q"], project)
    _run([sys.executable, "-m", "dvc", "init", "-q"], project)
    shutil.copy2(PROJECT_ROOT / ".dvc" / "config", project / ".dvc" / "config")
    _run([sys.executable, "-m", "audit.params", *OVERRIDES], project)
    _run(GIT + ["add", "-A"], project)
    _run(GIT + ["commit", "-q", "-m", "project"], project)

    first = _run([sys.executable, "-m", "dvc", "repro"], project)
    assert _ran(first) == {"design", "respond", "score", "analyse", "report"}
    labels = pl.read_parquet(project / "pipeline" / "score" / "labels.parquet")
    assert labels.height == 12 and set(labels["label_source"]) == {"imported"}
    assert (project / "pipeline" / "report" / "metrics.json").is_file()

    assert _ran(_run([sys.executable, "-m", "dvc", "repro"], project)) == set()
    _answers(flip=True).write_csv(project / "answers.csv")
    again = _run([sys.executable, "-m", "dvc", "repro"], project)
    assert {"design", "respond", "score"} <= _ran(again)
    changed = pl.read_parquet(project / "pipeline" / "score" / "labels.parquet")
    assert (changed["label"] == "favourable").sum() != (labels["label"] == "favourable").sum()
