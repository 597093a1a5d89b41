"""An MLflow store that cannot be reached is one line naming it and the fix, before any work
(review2/tracking.md #1: it was a traceback after 5 1/2 minutes of retries, and no report)."""

from __future__ import annotations

import logging
import os
import time

import pytest

from audit.cli.params import write_params
from audit.cli.stages import main as stages_main
from audit.config import TrackingConfig
from audit.tracking.mlflow import TrackingError, check_store, mlflow_run

DEAD_STORE = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.fixture
def no_retries(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")


def test_an_unreachable_store_is_one_line_naming_the_uri_and_the_fix(monkeypatch):
    """It was an MlflowException traceback after MLflow's default 7 retries (5 1/2 minutes):
    the check caps them (the environment's setting is left as it was)."""
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    started = time.perf_counter()
    with pytest.raises(TrackingError) as failed:
        check_store(TrackingConfig(tracking_uri=DEAD_STORE))
    message = str(failed.value)
    assert message == (f"MLflow store {DEAD_STORE} unreachable (connection refused): start the "
                       f"server, fix tracking.tracking_uri, or pass tracking=none")
    assert time.perf_counter() - started < 60
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ


def test_a_run_whose_store_fails_after_the_check_is_one_line_too(no_retries):
    """Opening the run itself (mlflow_run) raised MLflow's exception, not a user error."""
    with pytest.raises(TrackingError, match="unreachable"):
        with mlflow_run(TrackingConfig(tracking_uri=DEAD_STORE), "run", {}):
            pass


def test_a_stage_refuses_a_dead_store_before_it_writes_anything(tmp_path, no_retries, caplog,
                                                                 monkeypatch):
    """`python -m audit.stages` reached the store only in the report stage, after the model's
    time was spent, and exited 1 with a traceback; now every stage checks first: exit 2, one
    line, no file written."""
    monkeypatch.chdir(tmp_path)
    params = write_params(["items=smoke", "personas=smoke",
                           f"tracking.tracking_uri={DEAD_STORE}"], tmp_path / "params.yaml")
    with caplog.at_level(logging.ERROR):
        code = stages_main(["design", "--params", str(params), "--dir", str(tmp_path / "pipe")])
    assert code == 2
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1 and DEAD_STORE in errors[0] and "nothing was run" in errors[0]
    assert not list((tmp_path / "pipe").glob("**/*.parquet"))
    # audit.stages takes no overrides: its fix is a params.yaml written without the store
    # (the line said "pass tracking=none", which audit.stages refuses as an argument).
    assert "pass tracking=none" not in errors[0]
    assert "python -m audit.params OVERRIDES tracking=none" in errors[0]
