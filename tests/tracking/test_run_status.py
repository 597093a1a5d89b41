"""How an MLflow run the audit opened ends when its work does not: KILLED when it was stopped
from outside (Ctrl-C, SIGTERM: audit.interrupts), FAILED on an error, never RUNNING for good.
On a real SQLite store."""

from __future__ import annotations

import time

import mlflow
import pytest

from audit.config import TrackingConfig
from audit.tracking.mlflow import find_runs, mlflow_run


def _settings(tmp_path) -> TrackingConfig:
    return TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                          artifact_root=str(tmp_path / "artifacts"))


def _statuses(settings: TrackingConfig) -> list[str]:
    return [run["status"] for run in find_runs(settings.tracking_uri, settings.experiment)]


@pytest.mark.parametrize("started_at", [None, 1.0])
@pytest.mark.parametrize(("stopped", "status"), [(KeyboardInterrupt, "KILLED"),
                                                 (ValueError, "FAILED")])
def test_a_run_stopped_while_it_logs_ends_killed_or_failed(tmp_path, started_at, stopped,
                                                           status):
    """Bug caught: Ctrl-C while a run logged its files ended it FAILED, as a bug would, where
    the MLflow UI has KILLED for a run stopped from outside."""
    settings = _settings(tmp_path)
    with pytest.raises(stopped):
        with mlflow_run(settings, "stopped", {},
                        started_at=None if started_at is None else time.time()):
            raise stopped
    assert _statuses(settings) == [status]


def test_a_run_stopped_as_it_opens_is_not_left_running(tmp_path, monkeypatch):
    """Bug caught (probe 2026-12-07: 3 of 3 signals sent as the run's row appeared): Ctrl-C or
    SIGTERM between creating the run and opening it left it RUNNING in the UI for good, with no
    params or metrics; the rerun added a second run beside it."""
    def interrupted(**arguments):
        raise KeyboardInterrupt

    monkeypatch.setattr(mlflow, "start_run", interrupted)
    settings = _settings(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        with mlflow_run(settings, "stopped", {}, started_at=time.time()):
            pass
    assert _statuses(settings) == ["KILLED"]
