"""Where `python -m audit.plan plan.from_run=RUN` finds its run (cli/plan.resolved_source,
pilot.run_files): a run directory, or a run in the MLflow store found as audit.runs finds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.cli.plan import resolved_source
from audit.config import TrackingConfig
from audit.errors import AuditError
from audit.methods.rasch.pilot import run_files


def store_with_runs(folder: Path) -> tuple[TrackingConfig, dict[str, str]]:
    """A store with a Rasch run and an IAT run (method tags as audit runs set them)."""
    from mlflow import MlflowClient

    settings = TrackingConfig(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}",
                              experiment="audit")
    client = MlflowClient(settings.tracking_uri)
    experiment = client.create_experiment("audit",
                                          artifact_location=(folder / "artifacts").as_uri())
    runs = {method: client.create_run(experiment, tags={"method": method}).info.run_id
            for method in ("rasch", "iat")}
    return settings, runs


def test_a_store_that_does_not_exist_is_named_not_created(tmp_path: Path):
    """Defect 5 of the adaptive review: plan.from_run=ID with a store that does not exist made
    MLflow create the database (954 KB) and its directory; a mistyped run directory did too."""
    settings = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'no_such_dir' / 'mlflow.db'}")
    with pytest.raises(AuditError, match=r"no MLflow store at .*no_such_dir/mlflow.db .*does not "
                                         r"exist.*tracking.tracking_uri=URI"):
        resolved_source("0123456789abcdef", settings)
    with pytest.raises(AuditError, match="no such run directory"):
        resolved_source(str(tmp_path / "no" / "such" / "dir"), settings)
    assert list(tmp_path.iterdir()) == []


def test_the_ids_audit_runs_shows_are_found_and_another_methods_run_is_named(tmp_path: Path):
    """Defect 5 of the adaptive review: the 8 characters of a run id that `python -m audit.runs`
    shows were refused ("neither a run directory nor an MLflow run"), and an IAT run's failure
    read as a missing Rasch artifact."""
    settings, runs = store_with_runs(tmp_path)
    assert resolved_source(runs["rasch"][:8], settings) == runs["rasch"]
    assert resolved_source(runs["rasch"], settings) == runs["rasch"]
    with pytest.raises(AuditError, match="0 runs in experiment 'audit'"):
        resolved_source("ffffffff", settings)
    assert resolved_source(str(tmp_path), settings) == str(tmp_path)  # a directory, as given
    with pytest.raises(AuditError, match=f"run {runs['iat']} is a run of method=iat, not a "
                                         "Rasch run"):
        run_files(runs["iat"], settings.tracking_uri, tmp_path / "scratch")
