"""A run whose process died without ending it (kill -9, out of memory) is ended KILLED by the next
run in its experiment on the same machine, and no other RUNNING run is touched
(audit.tracking.orphans). On a real SQLite store, with real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import mlflow
import pytest

from audit.config import TrackingConfig
from audit.tracking.mlflow import mlflow_run, start_parent_run
from audit.tracking.orphans import ENDED_BY_TAG, PROCESS_TAG, process_gone, this_process


def _settings(tmp_path) -> TrackingConfig:
    return TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                          artifact_root=str(tmp_path / "artifacts"))


def _runs(settings: TrackingConfig) -> dict[str, mlflow.entities.Run]:
    client = mlflow.MlflowClient(settings.tracking_uri)
    experiment = client.get_experiment_by_name(settings.experiment)
    return {run.info.run_name: run for run in client.search_runs([experiment.experiment_id])}


def _parent_run_then(settings: TrackingConfig, then: str) -> subprocess.Popen:
    """A process that creates a sweep's parent run (open while the sweep's jobs run), then runs
    ``then``."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from audit.config import TrackingConfig
        from audit.tracking.mlflow import start_parent_run
        settings = TrackingConfig(tracking_uri={settings.tracking_uri!r},
                                  artifact_root={settings.artifact_root!r})
        start_parent_run(settings, "sweep", {{}})
        print("created", flush=True)
        {then}
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


@pytest.mark.timeout(120)
def test_a_sweep_killed_by_sigkill_is_ended_killed_by_the_next_run(tmp_path):
    """Bug caught: a sweep's parent run, open for the whole sweep, stayed RUNNING for good after
    kill -9 (or the out-of-memory killer), beside every later run in the UI."""
    settings = _settings(tmp_path)
    killed = _parent_run_then(settings, "os.kill(os.getpid(), signal.SIGKILL)")
    killed.communicate(timeout=100)
    assert killed.returncode == -9
    assert _runs(settings)["sweep"].info.status == "RUNNING"
    with mlflow_run(settings, "next", {}):
        pass
    runs = _runs(settings)
    assert runs["sweep"].info.status == "KILLED" and runs["next"].info.status == "FINISHED"
    ended_by = runs["sweep"].data.tags[ENDED_BY_TAG]
    assert ended_by.startswith(f"left RUNNING by pid {killed.pid} on "), ended_by
    assert runs["sweep"].info.end_time is not None


@pytest.mark.timeout(120)
def test_runs_that_may_still_be_at_work_are_left_running(tmp_path):
    """Bugs caught: ending every RUNNING run (a sweep at work in another process, or in this
    one, would be marked KILLED under its live jobs), or a run without a process record (an
    older audit's, another tool's), which nothing shows to be dead."""
    settings = _settings(tmp_path)
    alive = _parent_run_then(settings, "time.sleep(60)")
    try:
        assert alive.stdout.readline().strip() == "created"
        start_parent_run(settings, "this process's sweep", {})
        client = mlflow.MlflowClient(settings.tracking_uri)
        experiment = client.get_experiment_by_name(settings.experiment)
        client.create_run(experiment.experiment_id, run_name="untagged")
        with mlflow_run(settings, "next", {}):
            pass
        runs = _runs(settings)
    finally:
        alive.kill()
        alive.wait()
    assert {name: run.info.status for name, run in runs.items()} == {
        "sweep": "RUNNING", "this process's sweep": "RUNNING", "untagged": "RUNNING",
        "next": "FINISHED"}
    assert json.loads(runs["next"].data.tags[PROCESS_TAG]) == json.loads(this_process())


def test_only_the_recorded_process_of_this_machine_counts_as_alive():
    """Bugs caught: a pid alone (a pid reused by a later process keeps a dead run RUNNING), and a
    record of another machine or container read here (its pid means another process: a live run
    there was ended)."""
    recorded = json.loads(this_process())
    assert not process_gone(recorded)
    assert process_gone({**recorded, "started": recorded["started"] - 10.0})  # the pid reused
    assert not process_gone({**recorded, "machine": "another boot", "started": 0.0})
    assert not process_gone({**recorded, "pid_namespace": "pid:[1]", "started": 0.0})
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    assert process_gone({**recorded, "pid": int(ended.stdout)})
