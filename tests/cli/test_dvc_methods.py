"""`dvc repro` re-creates a run of every method, following the recipe `python -m audit.runs show`
prints for it; `dvc metrics show` has the method's headline figures; `dvc exp run -S` refuses to
drop the overrides params.yaml was written with and runs when they are repeated.

Before issue 20, dvc.yaml held only the Rasch stages: following the printed recipe for an IAT run
re-ran the Rasch report and logged it as an IAT run. One scratch git + DVC project, one tiny real
run per method on the embedded SmolLM2 (one thread); the reproduction shares the project's
response store, so it sends no request again and costs little.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from audit.tracking.mlflow import find_runs

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]
GIT = ["git", "-c", "user.name=audit tests", "-c", "user.email=tests@example.invalid"]
COMMON = ["model=smollm2", "model.smollm2.n_threads=1"]
TINY = {
    "iat": ["method=iat", "iat.datasets=[power]", "iat.variations=[replication]",
            "iat.iterations=1", "iat.max_tokens=48", "iat.bootstrap_resamples=200",
            "iat.permutation_resamples=200"],
    "dif": ["method=dif", "dif.datasets=[logic]", "dif.forms=[choice]", "dif.difficulties=[1]",
            "dif.per_cell=1", "dif.persona_ids=[woman]", "dif.null_count=2",
            "dif.permutation_resamples=99", "dif.max_tokens=16"],
    "counterfactual": ["method=counterfactual", "counterfactual.axes.name.file=names.csv",
                       "counterfactual.templates=[{id: letter, text: 'Recommend {name} for a "
                       "job in one sentence.'}]", "counterfactual.max_tokens=16",
                       "counterfactual.bootstrap_resamples=100"],
    "rasch": ["items=smoke", "personas=smoke", "design.replicates=1", "judge=smollm2", "judge.gold_per_category=1",
              "judge.models.smollm2.n_threads=1", "fit.draws=200", "fit.tune=200"],
}
# (stage folder, file, columns compared or None for all): tables the reproduction must equal.
# Response tables are compared on their texts: latency and from_cache differ by nature.
TABLES = {
    "iat": [("design", "iat_prompts.parquet", None),
            ("respond", "iat_responses.parquet", ["prompt_id", "status", "response_text"]),
            ("score", "iat_scores.parquet", None), ("analyse", "iat_stats.csv", None)],
    "dif": [("design", "dif_prompts.parquet", None), ("design", "dif_items.csv", None),
            ("score", "dif_answers.parquet", ["prompt_id", "response_text", "correct"]),
            ("analyse", "dif_tests.csv", None), ("analyse", "dif_personas.csv", None)],
    "counterfactual": [("design", "prompts.parquet", None),
                       ("design", "counterfactual_groups.parquet", None),
                       ("score", "counterfactual_metrics.parquet", None),
                       ("analyse", "counterfactual_pairwise.csv", None)],
    "rasch": [("design", "prompts.parquet", None),
              ("respond", "responses.parquet", ["prompt_id", "status", "response_text"]),
              ("score", "labels.parquet", None), ("score", "judge_gold.parquet", None)],
}


def _run(command: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(cwd / "src"), "COLUMNS": "200"}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    if check:
        assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _dvc(*arguments: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "dvc", *arguments], cwd, check)


def _ran(done: subprocess.CompletedProcess) -> set[str]:
    return {line.split("'")[1] for line in done.stdout.splitlines()
            if line.startswith("Running stage '")}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A scratch copy of the project in its own git + DVC repository."""
    project = tmp_path_factory.mktemp("dvc_methods")
    for name in ("dvc.yaml", ".dvcignore", ".gitignore", "params.yaml", "params.overrides"):
        shutil.copy2(PROJECT_ROOT / name, project / name)
    for folder in ("data", "src"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pl.DataFrame({"first_name": ["Emily", "Lakisha"], "race": ["White", "Black"],
                  "gender": ["female", "female"]}).write_csv(project / "names.csv")
    _run(["git", "init", "-q"], project)
    # `dvc exp run` commits with the repository's own identity (a CI machine may have none).
    _run(["git", "config", "user.name", "audit tests"], project)
    _run(["git", "config", "user.email", "tests@example.invalid"], project)
    _dvc("init", "-q", cwd=project)
    shutil.copy2(PROJECT_ROOT / ".dvc" / "config", project / ".dvc" / "config")  # Hydra on
    _run(GIT + ["add", "-A"], project)
    _run(GIT + ["commit", "-q", "-m", "project"], project)
    return project


def _recipe(project: Path, run_id: str) -> list[str]:
    shown = _run([sys.executable, "-m", "audit.runs", "show", run_id], project).stdout
    lines = shown.split("To re-create it:", 1)[1].splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def _follow(project: Path, step: str) -> subprocess.CompletedProcess:
    words = shlex.split(step)
    if words[0] == "python":
        return _run([sys.executable, *words[1:]], project)
    if words[0] == "dvc":
        return _dvc(*words[1:], cwd=project)
    assert words[0] == "git", step
    return _run(GIT + words[1:], project)


def _read(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)


@pytest.mark.parametrize("method", ["iat", "dif", "counterfactual", "rasch"])
def test_the_printed_recipe_recreates_the_run_with_dvc_repro(project: Path, method: str):
    _run([sys.executable, "-m", "audit", *COMMON, *TINY[method],
          f"hydra.run.dir=outputs/{method}"], project)
    (run,) = [run for run in find_runs(f"sqlite:///{project / 'mlflow.db'}", "audit")
              if run["tags"].get("method") == method]
    steps = _recipe(project, run["run_id"])
    assert [step.split()[0] for step in steps] == ["git", "python", "dvc"], steps
    done = None
    for step in steps:
        done = _follow(project, step)
    assert _ran(done) == {"design", "respond", "score", "analyse", "report"}, done.stdout
    # The report stage ends as `python -m audit` does: the findings and the verdict, read from
    # the stage folders.
    assert f"Result: {method} audit of" in done.stdout, done.stdout[-3000:]
    assert "CI verdict: " in done.stdout and "CI verdict: none" not in done.stdout
    # The run's own overrides, recorded for a later `dvc exp run -S` to repeat.
    recorded = (project / "params.overrides").read_text().splitlines()
    assert recorded == [*COMMON, *TINY[method]], recorded

    original, pipeline = project / "outputs" / method, project / "pipeline"
    for stage, name, columns in TABLES[method]:
        expected, again = _read(original / name), _read(pipeline / stage / name)
        if columns:
            expected, again = expected.select(columns), again.select(columns)
        assert again.equals(expected), f"{method}: {stage}/{name}"
    # The report of the method in params.yaml, logged as a run of that method: never Rasch's.
    assert (pipeline / "report" / "report.html").is_file() == (method == "rasch")
    assert not (pipeline / "report" / "report").exists()
    runs = [found for found in find_runs(f"sqlite:///{project / 'mlflow.db'}", "audit")
            if found["tags"].get("method") == method]
    assert len(runs) == 2 and runs[0]["run_id"] != run["run_id"]
    assert runs[0]["metrics"]["n_prompts"] == run["metrics"]["n_prompts"]
    # The headline figures, for `dvc exp show` and `dvc metrics diff`.
    shown = json.loads(_dvc("metrics", "show", "--json", cwd=project).stdout)
    figures = shown[""]["data"]["pipeline/report/metrics.json"]["data"]
    assert figures["n_prompts"] == run["metrics"]["n_prompts"]
    assert "duration_s/respond" not in figures


def test_dvc_exp_run_keeps_the_overrides_of_params_yaml_or_refuses(project: Path):
    """The issue's trap: `audit.params items=smoke`, then `dvc exp run -S fit.draws=600`,
    composed the defaults again and started the full audit. Here with the tiny IAT design: the
    bare `-S` is refused with the overrides to repeat; repeating them runs, with the same
    design, and only what the new value changes does any work."""
    overrides = [*COMMON, *TINY["iat"]]
    _run([sys.executable, "-m", "audit.params", *overrides], project)
    _dvc("repro", cwd=project)
    _run(GIT + ["checkout", "-q", "-B", "work"], project)  # the recipes left HEAD detached
    _run(GIT + ["add", "-A"], project)
    _run(GIT + ["commit", "-q", "-m", "tiny iat"], project)

    refused = _dvc("exp", "run", "-S", "iat.bootstrap_resamples=300", cwd=project, check=False)
    assert refused.returncode != 0
    message = refused.stdout + refused.stderr
    assert "without the overrides that produced the last one" in message
    assert "-S 'method=iat'" in message and "-S 'iat.datasets=[power]'" in message
    assert not _ran(refused) - {"design"}, refused.stdout  # stopped at the first stage
    # An empty item file chosen with -S: DVC composes it in its own process, where it gave the
    # shipped item bank without a word (2026-12-05); refused while composing, before any stage.
    (project / "conf" / "items").mkdir(parents=True, exist_ok=True)
    (project / "conf" / "items" / "mine.yaml").write_text("# later\n")
    empty = _dvc("exp", "run", *[part for override in overrides for part in ("-S", override)],
                 "-S", "items=mine", cwd=project, check=False)
    assert empty.returncode != 0 and not _ran(empty), empty.stdout
    assert "conf/items/mine.yaml holds no settings" in empty.stdout + empty.stderr
    (project / "conf" / "items" / "mine.yaml").unlink()

    arguments = [argument for override in [*overrides, "iat.bootstrap_resamples=300"]
                 for argument in ("-S", override)]
    done = _dvc("exp", "run", *arguments, cwd=project)
    assert "respond" not in _ran(done) and "analyse" in _ran(done), done.stdout
    prompts = pl.read_parquet(project / "pipeline" / "design" / "iat_prompts.parquet")
    assert prompts.height == 1
    shown = _dvc("exp", "show", "--json", cwd=project).stdout
    assert "iat/n_scored" in shown
