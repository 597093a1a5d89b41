"""`dvc repro` runs the same stages as `python -m audit` and reruns only what changed; a past run
is re-created from its MLflow record in a fresh clone; `dvc exp run` composes params with Hydra.

One scratch git + DVC project, the smoke design on the embedded model, tests in order."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from audit.methods.rasch.schemas import GOLD_CATEGORIES

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]
# One llama.cpp thread: on a machine whose cores are busy, a second thread spin-waits and slows
# generation many times over (the test suite shares 2 cores).
SMOKE = ["model=smollm2", "items=smoke", "personas=smoke", "design.replicates=1", "fit.draws=300",
         "fit.tune=300",
         "judge=smollm2", "judge.gold_per_category=1", "model.smollm2.n_threads=1",
         "judge.models.smollm2.n_threads=1"]
# The judge is SmolLM2 (a real model, 11 times smaller than the default judge): what is tested
# here is which stages DVC reruns, not how well the judge reads; the default judge's accuracy has
# its own test. With the default judge these tests took 6 minutes of the suite's 23.
# Adds one scenario to the smoke item set: what a changed item set reruns.
MORE_ITEMS = "items.item_ids=[hiring_01,lending_01,medical_triage_01,housing_01]"
GIT = ["git", "-c", "user.name=audit tests", "-c", "user.email=tests@example.invalid"]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _dvc(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "dvc", *arguments], cwd)


def _params(project: Path, *overrides: str) -> None:
    _run([sys.executable, "-m", "audit.params", *overrides], project)


def _ran(done: subprocess.CompletedProcess) -> set[str]:
    return {line.split("'")[1] for line in done.stdout.splitlines()
            if line.startswith("Running stage '")}


@pytest.fixture(scope="module")
def pipeline_project(tmp_path_factory) -> Path:
    """A scratch copy of the project's pipeline files in its own git + DVC repository, with the
    smoke design's params committed."""
    project = tmp_path_factory.mktemp("dvc_project")
    for name in ("dvc.yaml", ".dvcignore", ".gitignore", "params.overrides"):
        shutil.copy2(PROJECT_ROOT / name, project / name)
    for folder in ("data", "src"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _run(["git", "init", "-q"], project)
    # `dvc exp run` commits with the repository's own identity (a CI machine may have none).
    _run(["git", "config", "user.name", "audit tests"], project)
    _run(["git", "config", "user.email", "tests@example.invalid"], project)
    _dvc("init", "-q", cwd=project)
    shutil.copy2(PROJECT_ROOT / ".dvc" / "config", project / ".dvc" / "config")  # Hydra on
    _params(project, *SMOKE)
    _run(GIT + ["add", "-A"], project)
    _run(GIT + ["commit", "-q", "-m", "smoke audit"], project)
    return project


def test_dvc_repro_runs_every_stage_then_nothing(pipeline_project: Path):
    first = _dvc("repro", cwd=pipeline_project)
    assert _ran(first) == {"design", "respond", "score", "analyse", "report"}
    pipeline = pipeline_project / "pipeline"
    assert pl.read_parquet(pipeline / "design" / "prompts.parquet").height == 15
    assert (pipeline / "analyse" / "fit" / "posterior.nc").is_file()
    # one answer of each kind (gold_per_category=1)
    assert pl.read_parquet(pipeline / "score" / "judge_gold.parquet").height == len(GOLD_CATEGORIES)
    assert (pipeline / "report" / "report.html").is_file()
    assert "n_prompts" in json.loads((pipeline / "report" / "metrics.json").read_text())
    assert (pipeline_project / "dvc.lock").is_file()

    second = _dvc("repro", cwd=pipeline_project)
    assert _ran(second) == set(), second.stdout
    assert "up to date" in _dvc("status", cwd=pipeline_project).stdout


def _summary_agrees(first: pl.DataFrame, second: pl.DataFrame) -> None:
    """Posterior means agree within four Monte Carlo standard errors (sd / sqrt(ESS)); the judge
    rates the cut holds fixed (no ESS, irt/judge_cut.py) must agree exactly."""
    joined = first.join(second, on="parameter", suffix="_2")
    assert joined.height == first.height == second.height
    mcse = np.sqrt((joined["sd"] ** 2 / joined["ess_bulk"]
                    + joined["sd_2"] ** 2 / joined["ess_bulk_2"]).to_numpy())
    gap = np.abs((joined["mean"] - joined["mean_2"]).to_numpy())
    agrees = np.where(np.isfinite(mcse), gap <= 4 * mcse, gap == 0)
    assert agrees.all(), joined.filter(pl.Series(~agrees))


def test_a_past_run_is_recreated_from_its_mlflow_record(pipeline_project: Path, tmp_path: Path):
    """What docs/reproducibility.md tells users: the commit and params from the run, then
    `dvc repro` in a fresh clone, with no response store and no DVC cache: every answer is
    generated again."""
    uri = f"sqlite:///{pipeline_project / 'mlflow.db'}"
    from audit.tracking.mlflow import find_runs

    (run,) = find_runs(uri, "audit")
    assert run["tags"]["git.dirty"] == "false"
    clone = tmp_path / "clone"
    _run(GIT + ["clone", "-q", str(pipeline_project), str(clone)], tmp_path)
    _run(GIT + ["checkout", "-q", run["tags"]["git.commit"]], clone)
    _run([sys.executable, "-m", "audit.runs", "--tracking-uri", uri, "params", run["run_id"],
          "--output", "params.yaml"], clone)
    assert not (clone / ".audit").exists() and not (clone / "pipeline").exists()
    redone = _dvc("repro", cwd=clone)
    assert "report" in _ran(redone)

    original, again = pipeline_project / "pipeline", clone / "pipeline"
    for table in ("design/prompts.parquet", "score/labels.parquet", "score/judge_gold.parquet"):
        assert pl.read_parquet(original / table).equals(pl.read_parquet(again / table)), table
    texts = [pl.read_parquet(folder / "respond" / "responses.parquet")
             .select("prompt_id", "response_text") for folder in (original, again)]
    assert texts[0].equals(texts[1])
    assert pl.read_parquet(again / "respond" / "responses.parquet")["from_cache"].sum() == 0
    _summary_agrees(pl.read_csv(original / "analyse" / "fit" / "summary.csv"),
                    pl.read_csv(again / "analyse" / "fit" / "summary.csv"))


def _changed_stages(project: Path) -> set[str]:
    status = json.loads(_dvc("status", "--json", cwd=project).stdout)
    return set(status)


def test_each_stage_reads_only_its_own_params(pipeline_project: Path):
    _params(pipeline_project, *SMOKE, "fit.draws=301")
    assert _changed_stages(pipeline_project) == {"analyse"}
    _params(pipeline_project, *SMOKE, "judge.gold_per_category=2")
    assert _changed_stages(pipeline_project) == {"score"}
    _params(pipeline_project, *SMOKE, "fit.hdi_prob=0.9")
    assert _changed_stages(pipeline_project) == {"analyse", "report"}
    _params(pipeline_project, *SMOKE, "iat.alpha=0.01")  # another method's section: no model
    assert "respond" not in _changed_stages(pipeline_project)  # work, nothing that costs
    _params(pipeline_project, *SMOKE)
    assert _changed_stages(pipeline_project) == set()


def test_a_new_item_set_reruns_what_reads_prompts_and_keeps_the_store(pipeline_project: Path):
    store = pipeline_project / ".audit" / "responses.sqlite3"
    with sqlite3.connect(store) as connection:
        stored_before = connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    _params(pipeline_project, *SMOKE, MORE_ITEMS)
    done = _dvc("repro", cwd=pipeline_project)
    assert _ran(done) == {"design", "respond", "score", "analyse", "report"}, done.stdout
    assert "respond: 5 sent, 15 from the store, 0 failed" in done.stdout + done.stderr
    with sqlite3.connect(store) as connection:
        stored_after = connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert stored_after > stored_before
    assert pl.read_parquet(pipeline_project / "pipeline" / "design" / "prompts.parquet").height == 20


def test_dvc_exp_run_composes_params_from_conf_with_hydra(pipeline_project: Path):
    """`-S` overrides compose conf/pipeline.yaml into params.yaml; a param only the report reads
    reruns only the report, which logs its run under the new name."""
    overrides = [argument for override in [*SMOKE, MORE_ITEMS, "tracking.run_name=dvc-exp"]
                 for argument in ("-S", override)]
    done = _dvc("exp", "run", *overrides, cwd=pipeline_project)
    assert _ran(done) == {"report"}, done.stdout
    params = yaml.safe_load((pipeline_project / "params.yaml").read_text())
    assert params["tracking"]["run_name"] == "dvc-exp"
    assert params["paths"]["output_dir"] == "pipeline"
    assert params["items"]["item_ids"][-1] == "housing_01"
    shown = json.loads(_dvc("exp", "show", "--json", cwd=pipeline_project).stdout)
    assert "dvc-exp" in json.dumps(shown)
    from audit.tracking.mlflow import find_runs

    names = [run["name"] for run in find_runs(f"sqlite:///{pipeline_project / 'mlflow.db'}",
                                              "audit")]
    assert names[0] == "dvc-exp"


def test_dvc_repro_recreates_an_adaptive_run(pipeline_project: Path):
    """design.adaptive=true under `dvc repro`: the respond stage asks in rounds and writes its
    trajectory into its own folder, the analyse stage decides at the last look's alpha, a second
    repro runs nothing, and a changed fit setting reruns respond (its rounds fit). Bugs caught:
    the stage refusing adaptive designs (as it did before), the trajectory written outside the
    respond stage's out (lost on the next repro), a fit change leaving the adaptive run as
    current. Qwen answers (the rules read nearly all of them) so every round has labels to fit;
    labels as truth and no gold set keep it short."""
    adaptive = [*(override for override in SMOKE
                  if not override.startswith(("judge", "model"))),
                "model.qwen_coder_0_5b.n_threads=1", "judge=rules_only",
                "judge.evaluate_on_gold=false", "fit.judge_error=false", "design.replicates=2",
                "design.adaptive=true", "design.round_prompts=8"]
    _params(pipeline_project, *adaptive)
    first = _dvc("repro", cwd=pipeline_project)
    assert {"respond", "score", "analyse", "report"} <= _ran(first), first.stdout
    pipeline = pipeline_project / "pipeline"
    rounds = pl.read_csv(pipeline / "respond" / "adaptive_rounds.csv")
    responses = pl.read_parquet(pipeline / "respond" / "responses.parquet")
    assert responses.height == rounds["prompts"][-1] <= 30
    contrasts = pl.read_csv(pipeline / "analyse" / "fit" / "contrasts.csv")
    assert set(contrasts["familywise_alpha"]) == {rounds["look_alpha"][-1]}
    assert _ran(_dvc("repro", cwd=pipeline_project)) == set()
    _params(pipeline_project, *adaptive, "fit.draws=301")
    assert "respond" in _changed_stages(pipeline_project)
