"""Which store a command uses: MLFLOW_TRACKING_URI is the default store (review2/tracking.md
#9)."""

from __future__ import annotations

from hydra import compose, initialize_config_dir

from audit.cli.runs import main as runs_main
from audit.config import CONF_DIR, TrackingConfig
from audit.methods.configs import register_configs, to_audit_config
from audit.tracking.mlflow import mlflow_run

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

