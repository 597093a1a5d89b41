"""A sweep's parent MLflow run ends in a state that tells the truth: a grid with a job that does
not compose is refused before the parent exists, a sweep with failed jobs ends FAILED and names
them, a sweep stopped by a bug ends FAILED rather than RUNNING, and the parent carries the command
that runs the sweep again.

The sweeps are real Hydra multiruns of `python -m audit`'s main in a subprocess, with
`run_method` replaced by a stand-in that answers at once (no model, no fit): what is tested is
the launching process, not the jobs' work."""

from __future__ import annotations

import shlex
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from audit.cli.runs import reproduction_steps
from audit.tracking.mlflow import find_runs
from audit.tracking import run_names, sweeps

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Stands in for the audit: the job with design.replicates=2 fails, on a user error (AuditError,
# which the job turns into its one line) or on a bug (RuntimeError), as argv[1] says.
DRIVER = """
import sys
import audit.__main__ as entry
from audit.errors import AuditError

failure = {"user": AuditError, "bug": RuntimeError}[sys.argv.pop(1)]
# "main": python -m audit's main; "app": the Hydra app alone, as audit.ingest's main runs its own
call = entry.main if sys.argv.pop(1) == "main" else entry.app

def stand_in(method, cfg, out):
    if cfg.design.replicates == 2:
        raise failure("design.replicates=2 refused by the test")
    return None

entry.run_method = stand_in
call()
"""


def _sweep(tmp_path: Path, failure: str, *grid: str, entry: str = "main", uri: str | None = None
           ) -> tuple[subprocess.CompletedProcess, str, list[str]]:
    uri = uri or f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = ["items=smoke", "personas=smoke", *grid, f"hydra.sweep.dir={tmp_path / 'multi'}",
                 f"tracking.tracking_uri={uri}",
                 f"tracking.artifact_root={tmp_path / 'artifacts'}"]
    # An in-process test of one_line_config_errors leaves HYDRA_FULL_ERROR=1 behind, which
    # asks for the traceback this test says is not printed.
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    env["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"  # a dead store fails at once
    done = subprocess.run([sys.executable, "-c", DRIVER, failure, entry, "-m", *overrides],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, env=env)
    return done, uri, overrides


def _parents(uri: str) -> list[dict]:
    return [run for run in find_runs(uri, "audit") if run["tags"].get("audit.role") == "sweep"]


def test_a_grid_value_that_does_not_compose_refuses_the_sweep_before_its_parent_run(tmp_path):
    """Bug #2 (tracking review): `fit=nonexistent_fit,population` created the parent run, then
    Hydra's sweeper stopped on the typo and the parent stayed RUNNING for good."""
    done, uri, _ = _sweep(tmp_path, "user", "fit=nonexistent_fit,population")
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert lines == [lines[0]] and "unknown option 'nonexistent_fit' for config group 'fit'" in (
        lines[0])
    assert not (tmp_path / "mlflow.db").exists() or _parents(uri) == []
    assert [path.name for path in (tmp_path / "multi").iterdir()] == ["multirun.yaml"]  # no job


def test_a_dead_store_stops_the_sweep_before_its_first_job(tmp_path):
    """Noticed at the last stop: the parent run's store check failed inside Hydra's callback,
    which Hydra turned into a UserWarning; then every job started and failed on the same store
    with its own line. Now the sweep ends at the check: one line, exit 2, no job."""
    dead = "http://127.0.0.1:9"  # nothing listens on the discard port
    done, _, _ = _sweep(tmp_path, "user", "design.replicates=1,2", uri=dead)
    assert done.returncode == 2, done.stderr[-3000:]
    said = done.stdout + done.stderr
    lines = said.strip().splitlines()
    assert len(lines) == 1 and dead in lines[0] and "none was run" in lines[0], said[-3000:]
    assert "UserWarning" not in said and "Traceback" not in said
    assert not [path for path in (tmp_path / "multi").glob("*") if path.is_dir()]  # no job


@pytest.mark.parametrize("entry", ["main", "app"])
def test_a_bug_that_stops_a_sweep_ends_its_parent_run_failed_not_running(tmp_path, entry):
    """Bug #2: an exception other than a user error ends the multirun without Hydra calling
    on_multirun_end, the only place that ended the parent run. `python -m audit` says why in
    the parent's description; another entry point (the Hydra app alone) still ends it FAILED,
    at exit."""
    done, uri, _ = _sweep(tmp_path, "bug", "design.replicates=1,2", entry=entry)
    assert done.returncode == 1
    assert "RuntimeError: design.replicates=2 refused by the test" in done.stderr  # a bug: traced
    (parent,) = _parents(uri)
    assert parent["status"] == "FAILED"
    if entry == "main":
        assert "RuntimeError: design.replicates=2 refused by the test" in (
            parent["tags"]["mlflow.note.content"])


def test_a_sweep_with_a_failed_job_ends_failed_and_names_the_job(tmp_path):
    """Bug #5: the parent ended FINISHED even when every job failed, and the failed jobs'
    overrides and lines appeared nowhere in MLflow. Bug #11: a hand-written grid's parent was
    named `sweep` with `sweep.params: (none)`. Bug #8: `audit.runs show` printed a DVC recipe for
    it that failed on its missing config.yaml; the sweep command it prints now is the one run."""
    done, uri, overrides = _sweep(tmp_path, "user", "design.replicates=1,2,3")
    assert done.returncode == 2, done.stderr[-3000:]
    (parent,) = _parents(uri)
    assert parent["status"] == "FAILED"
    assert parent["metrics"]["sweep/n_failed"] == 1
    line = "1: design.replicates=2 refused by the test"
    assert parent["tags"]["mlflow.note.content"].splitlines()[1:] == [line]
    client = MlflowClient(uri)
    assert "failed_jobs.txt" in {item.path for item in client.list_artifacts(parent["run_id"])}
    local = client.download_artifacts(parent["run_id"], "failed_jobs.txt", str(tmp_path))
    assert Path(local).read_text(encoding="utf-8") == f"{line}\n"

    assert parent["name"] == "sweep:design.replicates"
    assert parent["tags"]["sweep.params"] == "design.replicates=1,2,3"
    command = reproduction_steps(parent)[1]
    assert command == parent["tags"]["sweep.command"]
    # what the shell hands the entry point: the sweep's own overrides, its folder left out so a
    # rerun writes a new one
    assert shlex.split(command) == ["python", "-m", "audit", "-m",
                                    *[o for o in overrides if not o.startswith("hydra.sweep.dir")]]


def test_a_hand_written_grid_is_named_and_described_by_its_swept_keys():
    """Bug #11: every hand-written sweep was named `sweep`, so the UI could not tell them apart."""
    assert sweeps.sweep_name(["items=smoke", "fit.draws=0,300"]) == "sweep:fit.draws"
    assert sweeps.sweep_name(["model=a,b", "fit=rasch,population"]) == "sweep:fit,model"
    assert sweeps.sweep_name(["+sweep=models", "fit.draws=10"]) == "sweep:models"
    assert sweeps.sweep_name(["items=smoke"]) == "sweep"  # -m with nothing swept
    assert sweeps.swept_values(["fit.draws=0,300", "items=smoke"], {"model": "glob(*)"}) == {
        "fit.draws": "0,300", "model": "glob(*)"}


def test_failed_jobs_are_read_sorted_by_job_folder_with_their_lines_stripped(tmp_path):
    """Catches read_failed_jobs listing the marks in the file system's order, not sorted, or
    keeping the newline job_failed wrote after each line. Bug caught: sorted by name, job 10
    came before job 2."""
    for job in (7, 11, 3, 0, 9, 1, 10, 5, 2, 8, 4, 6):
        (tmp_path / str(job)).mkdir()
        (tmp_path / str(job) / sweeps.FAILED_JOB_FILE).write_text(f"refused {job}\n",
                                                                  encoding="utf-8")
    assert sweeps.read_failed_jobs(tmp_path) == [
        f"{job}: refused {job}" for job in range(12)]


@pytest.mark.parametrize(("word", "quoted"), [
    ("plain=1,2", "plain=1,2"), ("a b", "'a b'"), ("x=it's", '"x=it\'s"'),
    ("hydra.sweeper.params.model='a,b'", '"hydra.sweeper.params.model=\'a,b\'"'),
    ("k='a$b'", "'k='\"'\"'a$b'\"'\"''"), ("k='a`b`'", "'k='\"'\"'a`b`'\"'\"''"),
    ("k='a!b'", "'k='\"'\"'a!b'\"'\"''"), ("k='a\\b'", "'k='\"'\"'a\\b'\"'\"''")])
def test_a_shell_word_is_quoted_as_the_docs_write_it_and_reads_back(word, quoted):
    """Catches shell_word putting a word in double quotes where the shell would expand `$`,
    backquotes or `!` or read a backslash inside them, or where plain single quotes serve."""
    assert sweeps.shell_word(word) == quoted
    assert shlex.split(quoted) == [word]


def test_the_sweep_command_names_the_entry_point_and_leaves_out_the_sweeps_folders():
    """Catches sweep_command naming `audit` for another entry point's sweep (audit.ingest's
    config) or keeping the overrides that would make the rerun write into the old folder."""
    from omegaconf import OmegaConf

    config = OmegaConf.create({"hydra": {"job": {"config_name": "ingest"}, "overrides": {
        "hydra": ["hydra.sweep.dir=/old", "hydra.run.dir=/r", "hydra.mode=MULTIRUN",
                  "hydra/launcher=joblib"], "task": ["fit=a,b"]}}})
    assert sweeps.sweep_command(config) == "python -m audit.ingest -m hydra/launcher=joblib fit=a,b"


def test_jobs_compose_checks_the_basic_sweepers_grid_and_trusts_another_sweeper():
    """Catches jobs_compose passing a grid with a job that does not compose (its error taken for
    success), or refusing every sweep whose sweeper is not Hydra's basic one (no parent run)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from audit.config import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", return_hydra_config=True)
        config.hydra.overrides.task.append("fit=rasch,nonexistent_fit")
        assert not sweeps.jobs_compose(config)
        config.hydra.overrides.task[-1] = "fit=rasch,rasch_seed"
        assert sweeps.jobs_compose(config)
    other = OmegaConf.create({"hydra": {"sweeper": {"_target_": "plugins.OptunaSweeper"}}})
    assert sweeps.jobs_compose(other)


@pytest.fixture
def unfinished(tmp_path, monkeypatch):
    """A sweep parent run left open, with the MLflow calls that end it recorded."""
    from audit.config import TrackingConfig

    calls: list[tuple] = []
    monkeypatch.setattr(sweeps.ui, "set_run_description",
                        lambda uri, run_id, text: calls.append(("description", run_id, text)))
    monkeypatch.setattr(sweeps.tracking, "end_parent_run",
                        lambda settings, run_id, metrics, files=(), status="FINISHED":
                        calls.append(("end", run_id, status)))
    monkeypatch.setattr(sweeps, "open_parent",
                        sweeps.OpenParent(TrackingConfig(tracking_uri="u"), "rid", tmp_path))
    monkeypatch.setenv(sweeps.PARENT_RUN_ENV, "rid")
    monkeypatch.setenv(run_names.SWEPT_KEYS_ENV, "fit")
    return calls


@pytest.mark.parametrize(("ended", "why"), [
    (SystemExit(2), "exit status 2 (the sweep's log says why)"),
    (KeyboardInterrupt(), "KeyboardInterrupt"),
    (RuntimeError("\n  bad value\nsecond line"), "RuntimeError: bad value"),
    (None, "it stopped early or its end could not be recorded (the sweep's log says why)")])
def test_an_unfinished_sweep_ends_failed_saying_why(unfinished, tmp_path, ended, why):
    """Catches end_unfinished_sweep describing an exit as an exception (`SystemExit: 2`), an
    exception with no message as `KeyboardInterrupt: `, or leaving out the failed jobs."""
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / sweeps.FAILED_JOB_FILE).write_text("refused\n", encoding="utf-8")
    sweeps.end_unfinished_sweep(ended)
    assert unfinished == [
        ("description", "rid", f"The sweep stopped before its end: {why}.\n1 job(s) failed:\n"
                               "1: refused"),
        ("end", "rid", "FAILED")]
    assert sweeps.open_parent is None
    assert sweeps.PARENT_RUN_ENV not in os.environ and run_names.SWEPT_KEYS_ENV not in os.environ


def test_a_store_error_while_ending_an_unfinished_sweep_is_a_warning(unfinished, monkeypatch,
                                                                     caplog):
    """Catches the cleanup's error replacing the error that stopped the sweep."""
    def refuse(*args):
        raise OSError("store gone")

    monkeypatch.setattr(sweeps.ui, "set_run_description", refuse)
    sweeps.end_unfinished_sweep(None)
    assert "could not end sweep parent MLflow run rid as FAILED: store gone" in caplog.text
    assert sweeps.open_parent is None


def test_a_sweep_that_ended_leaves_no_parent_id_for_the_next_single_run(monkeypatch):
    """Catches end_unfinished_sweep keeping the parent's id and the swept keys in the
    environment when no parent is open: a later run of the same process nested under it."""
    monkeypatch.setattr(sweeps, "open_parent", None)
    monkeypatch.setenv(sweeps.PARENT_RUN_ENV, "rid")
    monkeypatch.setenv(run_names.SWEPT_KEYS_ENV, "fit")
    sweeps.end_unfinished_sweep(None)
    assert sweeps.PARENT_RUN_ENV not in os.environ and run_names.SWEPT_KEYS_ENV not in os.environ


def test_a_sweeps_start_names_its_grid_and_forgets_the_last_sweeps_failures(tmp_path,
                                                                            monkeypatch):
    """Catches on_multirun_start passing its jobs the command line's swept keys without the
    sweep file's (`fit` of +sweep=fits), its `sweep.params` tag unsorted, or keeping the failed
    jobs of the last sweep this process or this sweep folder ran."""
    from hydra import compose, initialize_config_dir

    from audit.config import CONF_DIR

    monkeypatch.setattr(sweeps, "failed_jobs", ["0: the last sweep's"])
    monkeypatch.setattr(sweeps, "open_parent", None)
    monkeypatch.delenv(sweeps.PARENT_RUN_ENV, raising=False)
    monkeypatch.delenv(run_names.SWEPT_KEYS_ENV, raising=False)
    started: list = []
    monkeypatch.setattr(sweeps.tracking, "start_parent_run",
                        lambda settings, name, tags: started.append((name, tags)) or "rid")
    sweep_dir = tmp_path / "multi"
    (sweep_dir / "0").mkdir(parents=True)
    (sweep_dir / "0" / sweeps.FAILED_JOB_FILE).write_text("the last sweep's\n", encoding="utf-8")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", overrides=[
            "+sweep=fits", f"hydra.sweep.dir={sweep_dir}"],
            return_hydra_config=True)
        config.hydra.overrides.task.append("design.replicates=1,2")  # compose refuses a grid
        sweeps.MlflowSweepCallback().on_multirun_start(config)
    assert os.environ[run_names.SWEPT_KEYS_ENV] == "design.replicates,fit"
    assert sweeps.failed_jobs == [] and not list(sweep_dir.glob(f"**/{sweeps.FAILED_JOB_FILE}"))
    ((name, tags),) = started
    assert (name, os.environ[sweeps.PARENT_RUN_ENV]) == ("sweep:fits", "rid")
    assert tags["sweep.params"] == "design.replicates=1,2; fit=rasch,rasch_seed"
    monkeypatch.setattr(sweeps, "open_parent", None)  # nothing to end at exit


@pytest.fixture
def ending(tmp_path, monkeypatch):
    """A sweep folder to end with on_multirun_end, its MLflow calls recorded: one job folder of
    this sweep that failed, one an earlier sweep left, and three child runs, one converged."""
    calls: list = []
    children = [{"tags": {"converged": "true"}}, {"tags": {"converged": "false"}}, {"tags": {}}]
    monkeypatch.setattr(sweeps.tracking, "find_runs", lambda *args, **kwargs: children)
    monkeypatch.setattr(sweeps, "runs_frame", lambda runs: None)
    monkeypatch.setattr(sweeps, "write_frame", lambda frame, path: path.write_text(""))
    monkeypatch.setattr(sweeps.ui, "set_run_description",
                        lambda uri, run_id, text: calls.append(text))
    monkeypatch.setattr(sweeps.tracking, "end_parent_run",
                        lambda settings, run_id, metrics, files=(), status="FINISHED":
                        calls.append((run_id, metrics, [path.name for path in files], status)))
    monkeypatch.setattr(sweeps, "failed_jobs", [])
    monkeypatch.setattr(sweeps, "jobs_run", 0)
    monkeypatch.setattr(sweeps, "open_parent", "open")
    monkeypatch.setattr(sweeps, "_multirun_started", 1_000_000.0)
    monkeypatch.setenv(sweeps.PARENT_RUN_ENV, "rid")
    for job, written in (("0", 1_000_000.0 - 0.5), ("old", 1_000_000.0 - 100)):
        config = tmp_path / job / ".hydra" / "config.yaml"
        config.parent.mkdir(parents=True)
        config.write_text("{}\n", encoding="utf-8")
        os.utime(config, (written, written))
    (tmp_path / "0" / sweeps.FAILED_JOB_FILE).write_text("refused\n", encoding="utf-8")
    return calls


def test_a_sweep_with_a_failed_job_ends_its_parent_failed_with_its_totals(ending, tmp_path):
    """Catches on_multirun_end counting a job folder an earlier sweep left or missing one
    written just before the sweep's start was taken, counting the runs that did not converge,
    ending the parent FINISHED though a job failed, or leaving the ended parent open for
    end_unfinished_sweep to end again."""
    from omegaconf import OmegaConf

    config = OmegaConf.create({"tracking": {"enabled": True, "tracking_uri": "u"},
                               "hydra": {"sweep": {"dir": str(tmp_path)}}})
    sweeps.MlflowSweepCallback().on_multirun_end(config)
    assert (sweeps.jobs_run, sweeps.failed_jobs) == (1, ["0: refused"])
    assert ending == [
        "1 sweep job(s) failed (job folder: its line):\n0: refused",
        ("rid", {"sweep/n_runs": 3.0, "sweep/n_failed": 1.0, "sweep/n_converged": 1.0},
         ["sweep_runs.csv", "failed_jobs.txt"], "FAILED")]
    assert sweeps.open_parent is None


def test_a_sweep_without_tracking_counts_its_jobs_and_logs_nothing(ending, tmp_path):
    """Catches on_multirun_end going on to MLflow when tracking is off but a parent id is in the
    environment (it then failed on the missing settings)."""
    from omegaconf import OmegaConf

    config = OmegaConf.create({"tracking": {"enabled": False},
                               "hydra": {"sweep": {"dir": str(tmp_path)}}})
    sweeps.MlflowSweepCallback().on_multirun_end(config)
    assert (sweeps.jobs_run, sweeps.failed_jobs, ending) == (1, ["0: refused"], [])


def test_a_grid_that_does_not_compose_makes_no_parent_run(tmp_path, monkeypatch):
    """Catches on_multirun_start making the parent run without asking jobs_compose: the sweeper
    then stopped on the job that does not compose and the parent stayed RUNNING (the fast
    check of test_a_grid_value_that_does_not_compose_refuses_the_sweep_before_its_parent_run)."""
    from hydra import compose, initialize_config_dir

    from audit.config import CONF_DIR

    monkeypatch.setattr(sweeps, "open_parent", None)
    monkeypatch.delenv(sweeps.PARENT_RUN_ENV, raising=False)
    started: list = []
    monkeypatch.setattr(sweeps.tracking, "start_parent_run",
                        lambda settings, name, tags: started.append(name) or "rid")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", overrides=[f"hydra.sweep.dir={tmp_path}"],
                         return_hydra_config=True)
        config.hydra.overrides.task.append("fit=rasch,nonexistent_fit")
        sweeps.MlflowSweepCallback().on_multirun_start(config)
    assert started == [] and sweeps.PARENT_RUN_ENV not in os.environ
