"""Which store a command uses and which view its link opens: MLFLOW_TRACKING_URI is the default
store (review2/tracking.md #9), and audit.compare's link names a view that exists (#12)."""

from __future__ import annotations

import json
import os

import mlflow
from hydra import compose, initialize_config_dir

from audit.cli.compare_run import COMPARE_VIEW, log_comparison
from audit.cli.runs import main as runs_main
from audit.config import CONF_DIR, TrackingConfig
from audit.methods.configs import register_configs, to_audit_config
from audit.tracking.mlflow import mlflow_run
from audit.tracking.ui import SHARED_VIEW_TAG

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=list(overrides)))


def test_mlflow_tracking_uri_is_the_default_store(tmp_path, monkeypatch, capsys):
    """The variable was silently ignored: runs went to ./mlflow.db and audit.runs looked there."""
    uri = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert composed("paths.output_dir=out").tracking.tracking_uri == uri
    settings = TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "a"))
    with mlflow_run(settings, "from the environment", {}):
        pass
    assert runs_main([]) == 0
    assert "from the environment" in capsys.readouterr().out
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert composed("paths.output_dir=out").tracking.tracking_uri == "sqlite:///mlflow.db"


def test_a_run_leaves_no_store_in_the_environment(tmp_path):
    """mlflow.set_tracking_uri also sets os.environ["MLFLOW_TRACKING_URI"]: after one run in a
    process, every later composition read that store as its default (in CI, a test's dead
    store http://127.0.0.1:9 became the default of the tests after it: 8 failed)."""
    assert "MLFLOW_TRACKING_URI" not in os.environ
    settings = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'one.db'}",
                              artifact_root=str(tmp_path / "a"))
    with mlflow_run(settings, "one run", {}):
        pass
    assert "MLFLOW_TRACKING_URI" not in os.environ
    assert composed("paths.output_dir=out").tracking.tracking_uri == "sqlite:///mlflow.db"


def test_the_compare_link_names_a_shared_view_that_exists(tmp_path):
    """The printed URL had viewStateShareKey=compare, but nothing wrote that view."""
    settings = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                              artifact_root=str(tmp_path / "a"))
    table = tmp_path / "changes.csv"
    table.write_text("x\n1\n")
    run_info = log_comparison(settings, "compare a vs b", {}, {"draws": "100"},
                              {"n_worsens": 0.0, "n_contrasts": 3.0, "max_abs_change": 0.2},
                              [("tables", table)])
    tags = mlflow.MlflowClient(settings.tracking_uri).get_experiment(run_info.experiment_id).tags
    view = json.loads(tags[f"{SHARED_VIEW_TAG}{COMPARE_VIEW}"])
    assert "metrics.`n_worsens`" in view["selectedColumns"]


def test_an_experiment_the_store_lacks_is_named_with_those_it_has(tmp_path, caplog):
    """Bug caught (bad-input review 2026-12-04): `audit.runs --experiment nope` said "no runs in
    experiment 'nope' ...: run an audit first" and exited 1, as for an empty store, when the
    store held runs under another experiment. A name the store lacks is exit 2 and lists the
    experiments it has."""
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    settings = TrackingConfig(tracking_uri=uri, experiment="credit",
                              artifact_root=str(tmp_path / "a"))
    with mlflow_run(settings, "a credit audit", {}):
        pass
    assert runs_main(["--tracking-uri", uri, "--experiment", "credti"]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "no experiment 'credti'" in errors[0], errors
    assert "credit" in errors[0].split("credti", 1)[1] and "--experiment" in errors[0], errors
