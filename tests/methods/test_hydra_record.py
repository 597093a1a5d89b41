"""Hydra's record of an earlier run (`.hydra/`) stays with that run when a run reuses its folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.methods import hydra_record
from audit.methods.run import Stage, keep_earlier_run

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STAGES = [Stage("design", None, ("prompts.txt",)), Stage("report", None, ("report",))]


@pytest.fixture(autouse=True)
def _nothing_held():
    hydra_record._held.clear()
    yield
    hydra_record._held.clear()


def _record(folder: Path, **files: str) -> None:
    (folder / ".hydra").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / ".hydra" / f"{name}.yaml").write_text(text)


def _earlier_run(out: Path) -> None:
    (out / "report").mkdir(parents=True)
    (out / "prompts.txt").write_text("earlier")
    (out / "report" / "report.txt").write_text("earlier")
    _record(out, overrides="- model=earlier\n")


def test_an_earlier_run_moved_aside_takes_hydras_record_of_it_along(tmp_path, monkeypatch):
    """Catches the earlier run's .hydra/ lost when its tables move to earlier/TIME/: Hydra has
    written the new command's over it by then, so the moved run no longer said what made it."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    _earlier_run(out)
    hydra_record.hold(out, ".hydra")
    _record(out, overrides="- model=new\n", config="new: 1\n", hydra="new: 1\n")  # Hydra's
    moved = keep_earlier_run(STAGES, out)
    assert moved is not None
    assert (moved / ".hydra" / "overrides.yaml").read_text() == "- model=earlier\n"
    assert sorted(path.name for path in (moved / ".hydra").iterdir()) == ["overrides.yaml"]
    assert (out / ".hydra" / "overrides.yaml").read_text() == "- model=new\n"
    hydra_record.put_back_unstarted()  # the run started: its own record stays
    assert (out / ".hydra" / "overrides.yaml").read_text() == "- model=new\n"


@pytest.mark.parametrize("where", ["no earlier tables", "the working folder"])
def test_a_run_that_started_keeps_its_own_record_when_nothing_moves(tmp_path, monkeypatch,
                                                                     where):
    """Catches keep_earlier_run taking the held record only when it moves tables: a run that
    started (into a folder with no earlier tables, or hydra.run.dir=.) and then failed had the
    record of a command before it put back over its own."""
    out = tmp_path / "out"
    _record(out, overrides="- model=earlier\n")
    if where == "the working folder":
        _earlier_run(tmp_path / "elsewhere")
        (out / "prompts.txt").write_text("the user's own")
    monkeypatch.chdir(out if where == "the working folder" else tmp_path)
    hydra_record.hold(out, ".hydra")
    _record(out, overrides="- model=new\n")
    assert keep_earlier_run(STAGES, out) is None
    hydra_record.put_back_unstarted()
    assert (out / ".hydra" / "overrides.yaml").read_text() == "- model=new\n"


def test_a_run_whose_tables_go_elsewhere_keeps_its_own_record(tmp_path, monkeypatch):
    """Catches a record held for hydra.run.dir put back after a run that started, when the run's
    tables go to another folder (paths.output_dir set apart): the earlier command's overrides
    replaced those of the run that had just finished."""
    monkeypatch.chdir(tmp_path)
    hydra_dir, tables = tmp_path / "hydra_dir", tmp_path / "tables"
    _record(hydra_dir, overrides="- model=earlier\n")
    hydra_record.hold(hydra_dir, ".hydra")
    _record(hydra_dir, overrides="- model=new\n")
    keep_earlier_run(STAGES, tables)
    hydra_record.put_back_unstarted()
    assert (hydra_dir / ".hydra" / "overrides.yaml").read_text() == "- model=new\n"


def _refused_run(run_dir: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    return subprocess.run([sys.executable, "-m", "audit", f"hydra.run.dir={run_dir}",
                           "design.replicates=0", "tracking=none"],
                          cwd=run_dir.parent, capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(PROJECT_ROOT / "src")})


def test_a_command_refused_in_an_earlier_runs_folder_leaves_that_runs_record(tmp_path):
    """Catches the callback left out of conf/config.yaml, or no put-back on a refusal: the
    refused command's overrides replaced those of the run whose tables the folder holds (where
    audit.verdict's advice to rerun "the same command" points), and a folder with no record
    (one `dvc repro` wrote) was given one."""
    out, other = tmp_path / "out", tmp_path / "other"
    _earlier_run(out)
    (other / "prompts.txt").parent.mkdir()
    (other / "prompts.txt").write_text("earlier")
    for folder in (out, other):
        done = _refused_run(folder)
        assert done.returncode == 2 and "design.replicates=0 must lie in" in done.stderr, \
            done.stderr
    assert sorted(path.name for path in (out / ".hydra").iterdir()) == ["overrides.yaml"]
    assert (out / ".hydra" / "overrides.yaml").read_text() == "- model=earlier\n"
    assert not (other / ".hydra").exists()
