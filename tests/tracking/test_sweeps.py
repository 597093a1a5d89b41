"""Sweep presets expand to the jobs they promise, and real multiruns on submitit's local executor
and on joblib log one MLflow run per job under one parent run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import create_config_search_path
from hydra.core.override_parser.overrides_parser import OverridesParser
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from audit.__main__ import CONF_DIR
from audit.methods.configs import register_configs, to_audit_config
from audit.cli.runs import main as runs_main
from audit.methods.rasch.design import design_stage
from audit.tracking.sweeps import sweep_name, swept_keys
from audit.tracking.mlflow import PARENT_RUN_TAG, find_runs

register_configs()
PROJECT_ROOT = Path(__file__).resolve().parents[2]
BANK = pl.read_csv(PROJECT_ROOT / "data" / "items" / "decision_items.csv")
SERVER_EXAMPLES = {"ollama_llama3", "vllm", "openai_gpt4o_mini"}
# Models whose packages are an optional install (pyproject extras), left out of the models sweep.
OPTIONAL_MODELS = {"qwen_coder_1_5b"}


def _jobs(preset: str) -> list[list[str]]:
    """The override list of every job `python -m audit -m +sweep=PRESET` launches, expanded by
    Hydra's own sweeper (globs against the config groups included)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=[f"+sweep={preset}"], return_hydra_config=True)
    params = OmegaConf.to_container(composed.hydra.sweeper.params)
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(CONF_DIR))
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(
        [f"{key}={value}" for key, value in params.items()])
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def _job_config(preset: str, job: list[str]):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=[f"+sweep={preset}", "paths.output_dir=out", *job])
    return to_audit_config(composed)


def _options(group: str) -> set[str]:
    return {path.stem for path in (Path(CONF_DIR) / group).glob("*.yaml")}


def test_the_models_sweep_runs_every_configured_model_but_the_server_examples():
    jobs = _jobs("models")
    assert sorted(job[0] for job in jobs) == sorted(
        f"model={name}" for name in _options("model") - SERVER_EXAMPLES - OPTIONAL_MODELS)
    assert all(list(_job_config("models", job).model) == [job[0].split("=")[1]] for job in jobs)


def test_the_judges_sweep_runs_every_judge_that_needs_no_api_key():
    jobs = _jobs("judges")
    assert {job[0].split("=")[1] for job in jobs} == _options("judge") - SERVER_EXAMPLES
    assert {"logprob", "rules_only", "smollm2", "smollm2_panel"} <= {
        _job_config("judges", job).judge.name for job in jobs}


def test_the_personas_sweep_compares_explicit_names_and_null_personas():
    kinds = []
    for job in _jobs("personas"):
        prompts = design_stage(_job_config("personas", job))
        kinds.append(sorted(prompts["persona_kind"].unique().to_list()))
    assert sorted(kinds) == [["baseline", "explicit"], ["baseline", "name"], ["baseline", "null"]]


def test_the_domains_sweep_runs_each_domain_with_all_its_items():
    domains = []
    for job in _jobs("domains"):
        prompts = design_stage(_job_config("domains", job))
        domain = prompts["domain"][0]
        assert prompts["domain"].n_unique() == 1
        assert prompts["item_id"].n_unique() == BANK.filter(pl.col("domain") == domain).height
        domains.append(domain)
    assert sorted(domains) == ["admissions", "hiring", "housing", "insurance", "lending",
                               "medical_triage"]


def test_name_personas_signal_gender_and_race_in_the_prompt():
    cfg = _job_config("personas", ["personas.generators=[baseline,name]"])
    prompts = design_stage(cfg)
    row = prompts.filter(prompts["persona_id"] == "lakisha_washington").row(0, named=True)
    assert (row["gender"], row["race"], row["persona_kind"]) == ("woman", "Black", "name")
    assert "is named Lakisha Washington." in row["user_prompt"]


def test_every_launcher_composes():
    for launcher, target in (("joblib", "JoblibLauncher"), ("submitit_local", "LocalLauncher"),
                             ("submitit_slurm", "SlurmLauncher"), ("slurm", "SlurmLauncher")):
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            composed = compose("config", overrides=[f"hydra/launcher={launcher}"],
                               return_hydra_config=True)
        assert composed.hydra.launcher._target_.endswith(target)
        if launcher == "slurm":  # the audit's own SLURM settings on top of the plugin's
            assert composed.hydra.launcher.timeout_min == 120


@pytest.mark.parametrize(("setting", "said"), [
    ("n_jobs=0", "hydra.launcher.n_jobs=0 is refused by joblib (n_jobs == 0 in Parallel has no "
                 "meaning); it takes the number of jobs run at once (2; -1 for one per CPU)"),
    ("prefer=proc", "hydra.launcher.prefer=proc is refused by joblib"),
    ("batch_size=0", "hydra.launcher.batch_size=0 is refused by joblib"),
    ("n_jobs=2", None), ("batch_size='4'", None)])
def test_a_joblib_setting_joblib_refuses_ends_the_sweep_before_its_parent_run(
        setting: str, said: str | None, tmp_path: Path):
    """Bug caught (noticed 2026-12-05): `-m ... hydra/launcher=joblib hydra.launcher.n_jobs=0`
    made the sweep's parent run, then ended on joblib's 30-line traceback at launch, the parent
    FAILED. The callback now names the setting and exits 2 before making the parent. A quoted
    batch size is one the launcher reads as an integer, so it passes."""
    from audit.launcher_settings import launcher_problem
    from audit.tracking.sweeps import MlflowSweepCallback

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", overrides=[
            "hydra/launcher=joblib", f"hydra.launcher.{setting}", f"tracking.tracking_uri={uri}",
            f"hydra.sweep.dir={tmp_path / 'multirun'}"], return_hydra_config=True)
        problem = launcher_problem(config.hydra.launcher)
        if said is None:
            assert problem is None
            return
        assert problem is not None and problem.startswith(said)
        with pytest.raises(SystemExit) as ended:
            MlflowSweepCallback().on_multirun_start(config)  # with Hydra's loader, as in a sweep
    assert ended.value.code == 2
    assert not (tmp_path / "mlflow.db").exists()  # no parent run was made
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        other = compose("config", overrides=["hydra/launcher=submitit_local"],
                        return_hydra_config=True)
    assert launcher_problem(other.hydra.launcher) is None


def test_sweep_names_and_swept_keys():
    assert sweep_name(["+sweep=models", "fit.draws=10"]) == "sweep:models"
    assert sweep_name(["model=a,b"]) == "sweep:model"
    assert swept_keys(["+sweep=models", "fit.draws=10", "judge=a,b"], {"model": "glob(*)"}) == [
        "judge", "model"]


def _fake_sweep(tmp_path: Path, sweep: list[str], models: list[str]) -> tuple[str, list[str]]:
    """The MLflow URI and the command of a small multirun on the fake backend: a model file per
    name in a user conf folder, rules-only labels, a short fit."""
    extra = tmp_path / "conf" / "model"
    extra.mkdir(parents=True)
    for name in models:
        (extra / f"{name}.yaml").write_text(f"{name}:\n  backend: fake\n  model: {name}\n")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    return uri, [
        sys.executable, "-m", "audit", "-m", *sweep,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.sweep.dir={tmp_path / 'multirun'}", "judge=rules_only", "items=smoke",
        "personas=smoke", "fit.draws=100", "fit.tune=100", "fit.chains=2", "fit.cores=1",
        f"tracking.tracking_uri={uri}", f"tracking.artifact_root={tmp_path / 'artifacts'}",
        f"paths.response_store={tmp_path / 'store.sqlite'}"]


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("launcher", ["submitit_local", "joblib"])
def test_a_parallel_sweep_nests_one_run_per_job_under_a_parent(launcher, tmp_path, capsys):
    """Jobs run in other processes (submitit's local executor stands in for SLURM; joblib's
    workers), so the parent run's id must reach them through the environment."""
    uri, command = _fake_sweep(tmp_path, [
        "+sweep=models", "hydra.sweeper.params.model='fake_a,fake_b'",
        f"hydra/launcher={launcher}",
        ("hydra.launcher.timeout_min=15" if launcher == "submitit_local"
         else "hydra.launcher.n_jobs=2"),
        "design.replicates=1", "judge.gold_per_category=2"], ["fake_a", "fake_b"])
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]

    runs = find_runs(uri, "audit")
    parents = [run for run in runs if run["tags"].get("audit.role") == "sweep"]
    assert len(parents) == 1
    parent = parents[0]
    assert parent["name"] == "sweep:models" and parent["status"] == "FINISHED"
    assert parent["tags"]["sweep.params"] == "model=fake_a,fake_b"
    assert parent["metrics"]["sweep/n_runs"] == 2
    children = [run for run in runs if run["tags"].get(PARENT_RUN_TAG) == parent["run_id"]]
    assert sorted(run["name"] for run in children) == ["rasch fake_a", "rasch fake_b"]
    for child in children:
        assert child["status"] == "FINISHED"
        assert child["tags"]["sweep.job_num"] in ("0", "1")
        assert child["tags"]["git.commit"] == parent["tags"]["git.commit"]
        artifacts = {item.path for item in MlflowClient(uri).list_artifacts(child["run_id"],
                                                                             "hydra")}
        assert {"hydra/config.yaml", "hydra/overrides.yaml"} <= artifacts
    parent_files = {item.path for item in MlflowClient(uri).list_artifacts(parent["run_id"])}
    assert "sweep_runs.csv" in parent_files

    assert runs_main(["--tracking-uri", uri, "--sweep", parent["run_id"][:8]]) == 0
    table = capsys.readouterr().out
    assert "2 runs in sweep" in table and "fake_a" in table and "fake_b" in table


@pytest.mark.parametrize("preset", sorted(_options("sweep")))
def test_a_sweep_file_makes_the_run_a_multirun_by_itself(preset: str):
    """`python -m audit +sweep=NAME` without -m ran one job and no parent run: the sweep file
    must set Hydra's mode, which Hydra reads from the composed config before it launches."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=[f"+sweep={preset}"], return_hydra_config=True)
        single = compose("config", overrides=[], return_hydra_config=True)
    assert str(composed.hydra.mode) == "RunMode.MULTIRUN"
    assert composed.hydra.mode != single.hydra.mode


@pytest.mark.parametrize(("failed", "jobs", "said"), [
    (2, 2, "all 2 sweep jobs failed (each said why above). Fix the cause"),
    (1, 2, "1 of 2 sweep jobs failed (each said why above); the others finished. Fix the cause"),
    # No count of the jobs (no .hydra folder written): neither "all" nor "the others".
    (2, 0, "2 sweep job(s) failed (each said why above). Fix the cause"),
])
def test_the_sweeps_last_line_counts_its_failed_jobs(monkeypatch, caplog, failed: int,
                                                     jobs: int, said: str):
    """Bug caught (bad-input review 2026-12-04): a sweep none of whose jobs finished ended
    "2 sweep job(s) failed ...; the others finished"."""
    import audit.__main__ as entry
    from audit.tracking import sweeps

    monkeypatch.setattr(entry, "app", lambda: None)  # the jobs ran; what is left is the end
    monkeypatch.setattr(sweeps, "failed_jobs", [f"{job}: a line" for job in range(failed)])
    monkeypatch.setattr(sweeps, "jobs_run", jobs)
    with pytest.raises(SystemExit) as ended:
        entry.main()
    assert ended.value.code == 2 and said in caplog.text


@pytest.mark.slow
@pytest.mark.integration
def test_a_hand_written_grid_gets_a_parent_run_and_a_failed_job_fails_the_sweep(tmp_path):
    """`python -m audit -m KEY=a,b` (no +sweep preset) had no parent run: the callback's
    to_container refused the missing sweeper params (a ValueError Hydra turned into a warning),
    so jobs were not nested and were named "job 0". And a sweep whose jobs failed exited 0, so a
    CI step running it passed. Here the second job's design is refused (design.replicates=0)."""
    uri, command = _fake_sweep(tmp_path, ["design.replicates=1,0", "model=fake_a",
                                          "judge.evaluate_on_gold=false"], ["fake_a"])
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
                          env=env)
    assert done.returncode == 2, done.stderr[-3000:]
    said = done.stdout + done.stderr  # after the jobs, Hydra's own log config prints to stdout
    assert "1 of 2 sweep jobs failed (each said why above); the others finished" in said
    assert "sweep job 1: design.replicates=0 must lie in [1, inf)" in said
    assert "raised ValueError" not in said

    runs = find_runs(uri, "audit")
    parents = [run for run in runs if run["tags"].get("audit.role") == "sweep"]
    assert len(parents) == 1
    parent = parents[0]
    # named by its swept key, and FAILED: a job failed (tracking review #11, #5)
    assert parent["name"] == "sweep:design.replicates" and parent["status"] == "FAILED"
    assert parent["metrics"]["sweep/n_runs"] == 1 and parent["metrics"]["sweep/n_failed"] == 1
    children = [run for run in runs if run["tags"].get(PARENT_RUN_TAG) == parent["run_id"]]
    assert [run["name"] for run in children] == ["design.replicates=1 · rasch fake_a"]


def test_a_rerun_into_the_same_sweep_folder_forgets_the_last_runs_failures(tmp_path):
    """A job of an earlier sweep into a fixed hydra.sweep.dir left job_failed.txt, which the
    next sweep (perhaps a smaller grid, without that job) counted and exited 2 for."""
    from audit.tracking.sweeps import FAILED_JOB_FILE, MlflowSweepCallback, read_failed_jobs

    old = tmp_path / "3"
    old.mkdir()
    (old / FAILED_JOB_FILE).write_text("design.replicates=0 must lie in [1, inf)\n")
    assert read_failed_jobs(tmp_path) == ["3: design.replicates=0 must lie in [1, inf)"]
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}, "sweeper": {},
                                         "overrides": {"task": []}},
                               "tracking": {"enabled": False}})
    MlflowSweepCallback().on_multirun_start(config)
    assert read_failed_jobs(tmp_path) == []


def test_a_command_line_value_for_a_swept_key_is_named_before_the_jobs(tmp_path, caplog):
    """Bug caught (noticed 2026-12-04): Hydra's sweeper lets a command-line value replace a sweep
    file's grid for its key, so `+sweep=fits fit=rasch` ran one job instead of two and nothing
    said so. The sweep's start names the override and how to sweep other values; a command-line
    grid for the key (`fit=a,b`) is the user's own sweep and is not named."""
    from audit.tracking.sweeps import MlflowSweepCallback, replaced_grid

    overrides = ["+sweep=fits", "fit=rasch", "tracking=none", f"hydra.sweep.dir={tmp_path}"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", overrides=overrides, return_hydra_config=True)
    params = OmegaConf.to_container(config.hydra.sweeper.params)
    jobs = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(
        [f"{key}={value}" for key, value in params.items()] + overrides), None)
    # Hydra's own expansion: the command line replaced the grid, one job, fit=rasch.
    assert [[override for override in job if override.startswith("fit=")]
            for batch in jobs for job in batch] == [["fit=rasch"]]
    with caplog.at_level("WARNING", logger="audit.tracking.sweeps"):
        MlflowSweepCallback().on_multirun_start(config)
    assert [record.getMessage() for record in caplog.records] == [
        "fit=rasch on the command line replaces the sweep's values of fit (rasch,rasch_seed), so "
        "every job runs it; to sweep other values, set hydra.sweeper.params.fit='A,B'"]
    caplog.clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", overrides=["+sweep=fits", "tracking=none",
                                              f"hydra.sweep.dir={tmp_path}"],
                         return_hydra_config=True)
    MlflowSweepCallback().on_multirun_start(config)
    assert caplog.records == []
    assert replaced_grid(["+sweep=fits", "fit=rasch,rasch_seed"], {"fit": "rasch,mine"}) == []


def test_a_joblib_launcher_refusal_names_the_settings_own_choices():
    """Bug it would catch: every refused setting given the hint of n_jobs (or none), so
    `prefer=proc` was not told it takes processes or threads."""
    from audit.launcher_settings import JOBLIB_LAUNCHER, launcher_problem

    launcher = OmegaConf.create({"_target_": JOBLIB_LAUNCHER, "n_jobs": 2, "prefer": "proc"})
    problem = launcher_problem(launcher)
    assert problem is not None
    assert problem.startswith("hydra.launcher.prefer=proc is refused by joblib ("), problem
    # joblib's own words (between the brackets) change with its version; the hint is ours
    assert problem.endswith("; it takes processes or threads: set it again, or leave the "
                            "override out for its default"), problem


def test_only_settings_the_joblib_launcher_passes_on_are_checked():
    """Bugs it would catch: a `backend` the launcher replaces with loky, or another launcher's
    settings, refused as if joblib would read them."""
    from audit.launcher_settings import JOBLIB_LAUNCHER, launcher_problem

    ignored = OmegaConf.create({"_target_": JOBLIB_LAUNCHER, "n_jobs": 2, "backend": "nope"})
    assert launcher_problem(ignored) is None
    other = OmegaConf.create({"_target_": "hydra_plugins.hydra_submitit_launcher."
                                           "submitit_launcher.LocalLauncher", "n_jobs": 0})
    assert launcher_problem(other) is None and launcher_problem(None) is None
