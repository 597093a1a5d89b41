"""What an MLflow run says about itself: a name that tells it apart, only its own method's
params, the tool's version and (in a git checkout) its commit; and `audit.runs` errors that name
the store they looked in."""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from mlflow.tracking import MlflowClient

from audit.cli.runs import main as runs_main
from audit.cli.recreate import reproduction_steps
from audit.config import CONF_DIR, ModelConfig, TrackingConfig
from audit.methods.configs import AuditConfig
from audit.methods.run_identity import flat_config, run_name
from audit.tracking import mlflow as tracking
from audit.tracking import ui
from audit.tracking import run_names, sweeps


def _model() -> ModelConfig:
    return ModelConfig(backend="fake", model="m")


@pytest.fixture
def hydra_job(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Hydra's state as a job started with the given overrides sees it."""
    def start(overrides: list[str], multirun: bool = False, swept: str = "") -> None:
        monkeypatch.setenv(run_names.SWEPT_KEYS_ENV, swept)
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            job = compose("config", overrides=["hydra.mode=MULTIRUN", "hydra.job.num=3"]
                          if multirun else [], return_hydra_config=True)
        job.hydra.overrides.task = overrides
        HydraConfig.instance().set_config(job)

    yield start
    HydraConfig.instance().cfg = None


def test_a_single_run_is_named_by_its_method_models_and_what_the_command_changed(hydra_job):
    hydra_job(["items=smoke", "design.replicates=1", "paths.output_dir=/tmp/x",
               "tracking.experiment=e", "model=vllm", "model.vllm.base_url=http://h:1/v1",
               "counterfactual.axes.name.file=/a/very/long/folder/name/with/first_names.csv"])
    assert run_name(AuditConfig(method="rasch", model={"vllm": _model()})) == (
        "rasch vllm items=smoke design.replicates=1 counterfactual.axes.name.file=first_names.csv")


def test_a_dvc_stage_run_is_named_as_the_same_command_line_under_python_m_audit(hydra_job):
    """Under `dvc repro` the run's name was built by a second copy of the naming rule that kept
    a file path whole, so one audit was `... ingest.input=answers.csv` from `python -m audit`
    and `... ingest.input=/home/me/exports/2026/answers.csv` from `dvc repro`."""
    from audit.methods.run_identity import composed_from

    overrides = ["items=smoke", "paths.output_dir=/tmp/x", "model.vllm.timeout_s=30",
                 "ingest.input=/home/me/exports/2026-11/vendor_batch/answers_from_the_api.csv"]
    cfg = AuditConfig(method="rasch", model={"vllm": _model()})
    hydra_job(overrides)
    by_hydra = run_name(cfg)
    HydraConfig.instance().cfg = None
    assert by_hydra == "rasch vllm items=smoke ingest.input=answers_from_the_api.csv"
    with composed_from(overrides):
        assert run_name(cfg) == by_hydra


def test_a_sweep_job_is_named_by_the_values_swept_first(hydra_job):
    """Sweep jobs were `rasch-qwen_coder_0_5b [fit=hurdle]`, cut to `rasch-qwen_co...` in the
    UI's column; what the jobs of one sweep share is left to the parent run."""
    hydra_job(["fit=hurdle", "items=smoke"], multirun=True, swept="fit")
    assert run_name(AuditConfig(method="rasch", model={"qwen": _model()})) == \
        "fit=hurdle · rasch qwen"
    hydra_job(["model=qwen", "items=smoke"], multirun=True, swept="model")
    assert run_name(AuditConfig(method="rasch", model={"qwen": _model()})) == "rasch qwen"
    hydra_job(["items=smoke"], multirun=True, swept="")
    assert run_name(AuditConfig(method="rasch", model={"qwen": _model()})) == \
        "job 3 · rasch qwen"


def test_params_are_the_shared_sections_and_the_running_methods_own():
    rasch = flat_config(AuditConfig(method="rasch"))
    assert "fit.draws" in rasch and "design.replicates" in rasch and "judge.method" in rasch
    assert not [key for key in rasch if key.startswith(("counterfactual.", "iat.", "dif."))]
    counterfactual = flat_config(AuditConfig(method="counterfactual"))
    assert "counterfactual.alpha" in counterfactual
    assert not [key for key in counterfactual if key.startswith(("fit.", "plan.", "iat."))]


def _git_repo(folder: Path, *tracked: str) -> str:
    """A git checkout at `folder` with the given files committed; its commit."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in tracked:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    return subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_every_run_records_the_tools_version_and_a_commit_only_in_a_git_checkout(tmp_path):
    version = importlib.metadata.version("llm-demographic-audit")
    installed = tmp_path / "site" / "audit"  # an installed audit with no record of its commit
    installed.mkdir(parents=True)
    outside = tracking.provenance(tmp_path / "site", package_dir=installed)
    assert outside["audit.version"] == version
    assert not {"git.commit", "git.dirty", "audit.commit", "audit.dirty"} & set(outside)
    folder = tmp_path / "project"
    commit = _git_repo(folder)
    inside = tracking.provenance(folder, package_dir=installed)
    assert inside["git.commit"] == commit and inside["git.dirty"] == "false"


def test_the_codes_commit_comes_from_audits_checkout_or_wheel_not_the_runs_folder(tmp_path):
    """Bugs caught: the commit was read in the folder the run was made in, so a run from the
    user's own repository recorded that repository's commit as the code's, and a run from any
    other folder recorded none, though audit's code was in a checkout (or a wheel built from
    one); an audit installed in a .venv inside the user's repository read as that repository's
    code."""
    clone_commit = _git_repo(tmp_path / "clone", "src/audit/__init__.py")
    user_commit = _git_repo(tmp_path / "mine", ".gitignore")
    (tmp_path / "mine" / ".gitignore").write_text(".venv/\n")
    tags = tracking.provenance(tmp_path / "mine", package_dir=tmp_path / "clone/src/audit")
    assert (tags["audit.commit"], tags["audit.dirty"]) == (clone_commit, "false")
    assert tags["git.commit"] == user_commit != clone_commit
    venv_package = tmp_path / "mine" / ".venv" / "site-packages" / "audit"
    venv_package.mkdir(parents=True)
    (venv_package / "__init__.py").write_text("")
    assert tracking.source_state(venv_package) is None
    (venv_package / tracking.BUILD_COMMIT_FILE).write_text("f" * 40 + " true\n")
    assert tracking.source_state(venv_package) == ("f" * 40, "true")
    assert tracking.code_state(tracking.provenance(tmp_path / "mine", venv_package)) == \
        ("f" * 40, "true")


def test_re_creating_a_run_checks_out_audits_commit_and_names_the_version_without_one():
    """Bugs caught: a run made outside a git checkout said `pip install
    llm-demographic-audit==0.2.0`, a version no index holds; a run made in the user's own
    repository said `git checkout` of that repository's commit, where there is no dvc.yaml."""
    run = {"run_id": "a" * 32, "tags": {"audit.version": "0.2.0", "method": "iat"}}
    steps = reproduction_steps(run)
    assert "0.2.0" in steps[0] and "clone of audit" in steps[0]
    assert not any(step.startswith(("git checkout", "pip install")) for step in steps)
    older = {"run_id": "a" * 32, "tags": {"git.commit": "unknown"}}
    assert not any(step.startswith("git checkout") for step in reproduction_steps(older))
    elsewhere = {"run_id": "a" * 32, "tags": {"audit.commit": "c" * 40, "audit.dirty": "false",
                                              "git.commit": "u" * 40, "git.dirty": "true"}}
    steps = reproduction_steps(elsewhere)
    assert steps[0].startswith("git checkout " + "c" * 40) and "clone of audit" in steps[0]
    assert not any("uncommitted" in step for step in steps)  # the user's folder's state
    from_root = {"run_id": "a" * 32, "tags": {"audit.commit": "c" * 40, "audit.dirty": "true",
                                              "git.commit": "c" * 40, "git.dirty": "true"}}
    steps = reproduction_steps(from_root)
    assert steps[0] == "git checkout " + "c" * 40 and "uncommitted" in steps[-1]


def test_re_creating_an_imported_run_names_the_answers_file_it_needs():
    """Bug caught (CI review 2026-12-02): an imported run's steps were the checkout, params and
    `dvc repro`, and a clone, which does not hold the answers file, re-created nothing; they now
    name the file and its digest before `dvc repro`."""
    run = {"run_id": "a" * 32, "tags": {"audit.commit": "c" * 40, "method": "rasch",
                                        "answers.source": "/data/answers_bias.csv",
                                        "answers.sha256": "d" * 64}}
    steps = reproduction_steps(run)
    (note,) = [step for step in steps if "answers file" in step]
    assert "/data/answers_bias.csv" in note and "d" * 64 in note
    assert steps.index(note) == len(steps) - 2 and steps[-1].startswith("dvc repro")


@pytest.fixture
def store(tmp_path: Path) -> str:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    settings = TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "artifacts"))
    with tracking.mlflow_run(settings, "one", {}):
        pass
    return uri


def test_runs_errors_name_the_store_they_looked_in(store, tmp_path, caplog):
    """`audit.runs params ID` against the wrong store said the run 'has no config.yaml
    artifact'; a store that does not exist was created, empty."""
    unknown = "0123456789abcdef0123456789abcdef"
    assert runs_main(["--tracking-uri", store, "params", unknown]) == 2
    assert (f"run {unknown} not found in {store}; pass --tracking-uri" in caplog.text)
    caplog.clear()
    assert runs_main(["--tracking-uri", store, "show", "01234567"]) == 2
    assert f"0 runs in {store} (any experiment) start with '01234567'" in caplog.text
    caplog.clear()
    missing = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    assert runs_main(["--tracking-uri", missing, "params", unknown]) == 2
    assert f"no MLflow store at {missing}" in caplog.text
    assert not (tmp_path / "elsewhere.db").exists()


def test_the_printed_url_opens_the_runs_table_with_the_shared_view(store):
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("audit").experiment_id
    assert ui.runs_page_url(store, experiment, "audit-rasch") == (
        f"http://127.0.0.1:5000/#/experiments/{experiment}/runs?"
        "workflowType=machine_learning&viewStateShareKey=audit-rasch")
    assert ui.runs_page_url("http://mlflow.example:8080/", "7").startswith(
        "http://mlflow.example:8080/#/experiments/7/runs?workflowType=machine_learning")
    assert ui.ui_command("http://mlflow.example:8080") is None
    # Bug caught: a store path with a space split into two shell words.
    spaced = "sqlite:////home/a/My Audits/mlflow.db"
    assert shlex.split(ui.ui_command(spaced))[:4] == ["mlflow", "ui", "--backend-store-uri",
                                                      spaced]
    ui.set_runs_view(store, experiment, "audit-rasch", ["contrast/race/a_vs_b/mean"])
    ui.set_runs_view(store, experiment, "audit-rasch", ["contrast/gender/w_vs_m/mean"])
    view = json.loads(client.get_experiment(experiment).tags[
        "mlflow.sharedViewState.audit-rasch"])
    # The newest run's headline first, an earlier run's kept after it.
    assert view["selectedColumns"] == ["metrics.`contrast/gender/w_vs_m/mean`",
                                       "metrics.`contrast/race/a_vs_b/mean`"]


def test_show_prints_the_audit_compare_command_that_made_a_comparison_run():
    """Bug #8 (tracking review): for a compare run `audit.runs show` printed `audit.runs params`
    and `dvc repro # the compare stages`, which do not exist; the recipe is now the
    audit.compare command, read back by audit.compare's own parser to the settings recorded."""
    from dataclasses import replace

    from audit.cli.compare import parse_arguments
    from audit.cli.compare_run import gate_params
    from audit.methods.rasch.config import FitConfig

    fit = replace(FitConfig(), draws=200, tune=300, chains=2, target_accept=0.9)
    params = {**gate_params(fit, 5.0, "pp", 0.9, confusion=None), "items": "all"}
    run_a, run_b = "a" * 32, "b" * 32
    run = {"run_id": "c" * 32, "params": params,
           "tags": {"git.commit": "f" * 40, "method": "compare", "compare.run_a": run_a,
                    "compare.run_b": run_b, "compare.model_a": "qwen", "compare.model_b": "smol"}}
    steps = reproduction_steps(run, "sqlite:////data/mlflow.db")
    assert steps[0] == f"git checkout {'f' * 40}" and len(steps) == 2
    words = shlex.split(steps[1])
    assert words[:3] == ["python", "-m", "audit.compare"]
    sources, options = parse_arguments(words[3:])
    assert sources == [run_a, run_b]
    assert options == {"max_worsening": "5pp", "worsening_prob": "0.9", "draws": "200",
                       "tune": "300", "chains": "2", "target_accept": "0.9",
                       "judge_error": "false", "items": "all",
                       "tracking_uri": "sqlite:////data/mlflow.db"}

    one_run = {**run, "params": gate_params(fit, None, "logit", 0.95, confusion=object()),
               "tags": {**run["tags"], "compare.run_b": run_a}}
    sources, options = parse_arguments(shlex.split(reproduction_steps(one_run)[1])[3:])
    assert sources == [run_a]
    assert (options["model_a"], options["model_b"], options["judge_error"]) == (
        "qwen", "smol", "true")
    assert "max_worsening" not in options and "tracking_uri" not in options


def test_show_prints_the_sweep_command_for_a_sweep_parent_run():
    """Bug #8: for a sweep's parent `audit.runs show` printed `audit.runs params PARENT`, which
    failed (a parent has no config.yaml). A parent logged before the sweep.command tag existed
    gets its task overrides back, quoted for the shell."""
    parent = {"run_id": "d" * 32, "params": {},
              "tags": {"git.commit": "f" * 40, "audit.role": "sweep",
                       "sweep.command": "python -m audit -m fit.draws=0,300"}}
    steps = reproduction_steps(parent)
    assert steps[1] == "python -m audit -m fit.draws=0,300"
    assert f"python -m audit.runs --sweep {'d' * 32}" in steps[2]
    assert not any("audit.runs params" in step or "dvc repro" in step for step in steps)
    older = {**parent, "tags": {"audit.role": "sweep", "git.commit": "f" * 40,
                                "sweep.overrides": "items=smoke personas.generators=[a,\"null\"]"}}
    command = reproduction_steps(older)[1]
    assert command.startswith("python -m audit -m items=smoke 'personas.generators=[a,\"null\"]'")


def test_the_printed_steps_read_the_run_from_the_store_it_was_shown_from(store, tmp_path,
                                                                          monkeypatch, caplog):
    """Bug caught: `audit.runs show ID --tracking-uri URI` printed `audit.runs params ID` and
    `audit.runs --sweep ...` without the store, so run as printed they looked in ./mlflow.db
    ("no MLflow store at sqlite:///mlflow.db"). Each step is run here, from another folder."""
    client = MlflowClient(store)
    (logged,) = client.search_runs([client.get_experiment_by_name("audit").experiment_id])
    run_id = logged.info.run_id
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    run = {"run_id": run_id, "params": {}, "tags": {"git.commit": "f" * 40, "method": "iat"}}
    (params_step,) = [step for step in reproduction_steps(run, store) if "runs params" in step]
    assert runs_main(shlex.split(params_step)[3:]) == 2
    # Found in its store (whose run holds no files), not looked for in ./mlflow.db.
    assert f"run {run_id[:8]}" in caplog.text and "no MLflow store" not in caplog.text
    parent = {**run, "tags": {**run["tags"], "audit.role": "sweep", "sweep.command": "x"}}
    listing = reproduction_steps(parent, store)[-1]
    old_jobs = listing.split("(the old ones: ")[1].rstrip(")")
    caplog.clear()
    runs_main(shlex.split(old_jobs)[3:])
    assert f"run {run_id[:8]} is not a sweep's parent run" in caplog.text  # found in its store
    assert "--tracking-uri" in listing.split("#")[0]
    assert "--tracking-uri" not in " ".join(reproduction_steps(run))  # the default store


def test_a_run_id_prefix_is_found_in_any_experiment_of_the_store(tmp_path):
    """Compare review 2026-12-02: a run logged under tracking.experiment=myaudits was found by
    its full id, but its 8-character prefix was "0 runs in experiment 'audit' ... pass
    tracking_uri=URI", though the store was the right one."""
    from audit.cli.runs import run_source

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    settings = TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "artifacts"),
                              experiment="myaudits")
    with tracking.mlflow_run(settings, "elsewhere", {"method": "rasch"}) as run_info:
        pass
    default = TrackingConfig(tracking_uri=uri)  # experiment "audit", as compare looks
    assert run_source(run_info.run_id[:8], default, "tracking_uri=URI", "A") == run_info.run_id


@pytest.mark.parametrize("multirun", [True, False])
def test_only_a_sweeps_job_leaves_its_failure_for_the_sweeps_end(hydra_job, tmp_path, multirun):
    """Catches job_failed writing its mark for a single run too: a single run's output folder
    then held a sweep job's mark that no sweep's end reads."""
    from omegaconf import read_write

    hydra_job(["items=smoke"], multirun=multirun)
    config = HydraConfig.instance().cfg
    with read_write(config.hydra):
        config.hydra.runtime.output_dir = str(tmp_path)
    sweeps.job_failed("refused")
    assert [path.name for path in tmp_path.iterdir()] == (
        [sweeps.FAILED_JOB_FILE] if multirun else [])


def test_a_sweeps_job_and_a_single_run_are_tagged_and_nested_as_they_ran(hydra_job,
                                                                        monkeypatch):
    """Catches job_tags giving a single run a sweep's job number and folder, or an empty
    `hydra.overrides` tag for a run without overrides; and parent_run_id nesting a single run
    under a parent id left in the environment, or a sweep's job under an empty id."""
    monkeypatch.setenv(sweeps.PARENT_RUN_ENV, "rid")
    hydra_job([])
    assert sweeps.job_tags() == {"hydra.overrides": "(none)"}
    assert sweeps.parent_run_id() is None
    hydra_job(["fit=hurdle"], multirun=True)
    tags = sweeps.job_tags()
    assert (tags["hydra.overrides"], tags["sweep.job_num"]) == ("fit=hurdle", "3")
    assert sweeps.parent_run_id() == "rid"
    monkeypatch.setenv(sweeps.PARENT_RUN_ENV, "")
    assert sweeps.parent_run_id() is None


def test_a_long_value_is_cut_to_its_limit_with_an_ellipsis_and_a_name_to_its_limit(hydra_job):
    """Catches a value of more than MAX_VALUE_CHARS cut one character longer than the limit, and
    a run's name (single run or sweep job) left longer than MAX_NAME_CHARS."""
    limit = run_names.MAX_VALUE_CHARS
    assert run_names.named_run("rasch", ["a=" + "x" * limit]) == "rasch a=" + "x" * limit
    assert run_names.named_run("rasch", ["a=" + "x" * (limit + 1)]) == (
        "rasch a=" + "x" * (limit - 1) + "…")
    overrides = [f"k{number}=" + "v" * limit for number in range(6)]
    assert len(run_names.named_run("rasch", overrides)) == run_names.MAX_NAME_CHARS
    hydra_job(overrides, multirun=True, swept=",".join(f"k{number}" for number in range(6)))
    assert len(run_names.job_run_name("rasch qwen")) == run_names.MAX_NAME_CHARS


def test_a_run_that_saved_no_hydra_files_has_none_to_log(hydra_job):
    """Catches hydra_files joining a missing output subfolder (hydra.output_subdir=null) to the
    run's folder: a TypeError ended the run."""
    from omegaconf import read_write

    hydra_job([])
    config = HydraConfig.instance().cfg
    with read_write(config.hydra):
        config.hydra.output_subdir = None
    assert sweeps.hydra_files() == []


@pytest.mark.parametrize("prefix", ["+", "++"])
def test_a_sweep_of_an_added_key_names_its_jobs_by_their_values(monkeypatch, prefix):
    """Bug caught (mutation review 2026-12-06): swept_keys kept Hydra's prefix
    (`++design.seed`) while job_run_name compares keys without it, so every job of
    `-m ++design.seed=1,2` was named `job N · rasch qwen`, and the parent `sweep:++design.seed`."""
    grid = f"{prefix}design.seed=1,2"
    monkeypatch.setenv(run_names.SWEPT_KEYS_ENV, ",".join(sweeps.swept_keys([grid], {})))
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        job = compose("config", overrides=["hydra.mode=MULTIRUN", "hydra.job.num=3"],
                      return_hydra_config=True)
    job.hydra.overrides.task = [f"{prefix}design.seed=1"]
    HydraConfig.instance().set_config(job)
    try:
        assert run_names.job_run_name("rasch qwen") == f"{prefix}design.seed=1 · rasch qwen"
    finally:
        HydraConfig.instance().cfg = None
    assert sweeps.sweep_name([grid]) == "sweep:design.seed"
    assert sweeps.swept_values([grid], {}) == {"design.seed": "1,2"}
