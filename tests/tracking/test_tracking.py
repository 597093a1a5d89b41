from __future__ import annotations

import mlflow
from hypothesis import given
from hypothesis import strategies as st

from audit.config import TrackingConfig
from audit.tracking.mlflow import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG, config_hash, flatten
from audit.tracking.mlflow import metric_name, mlflow_run


def test_flatten_keeps_token_counts_but_redacts_tokens():
    flat = flatten({"model": {"m": {"sampling": {"max_tokens": 64}, "hf_token": "hf_x"}}})
    assert flat == {"model.m.sampling.max_tokens": "64", "model.m.hf_token": "***redacted***"}


def test_flatten_dots_nested_keys_and_redacts_secrets():
    flat = flatten({"model": {"m": {"api_key": "sk-123", "sampling": {"temperature": 0.7}}},
                    "tracking": {"token": "abc"}, "items": {"name": "smoke"}})
    assert flat == {"model.m.api_key": "***redacted***", "model.m.sampling.temperature": "0.7",
                    "tracking.token": "***redacted***", "items.name": "smoke"}


def test_config_hash_ignores_order_and_sees_values():
    assert config_hash({"a": "1", "b": "2"}) == config_hash({"b": "2", "a": "1"})
    assert config_hash({"a": "1"}) != config_hash({"a": "2"})


@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4))
def test_metric_names_only_use_characters_mlflow_accepts(parts):
    name = metric_name(*parts)
    assert all(char.isalnum() and char.isascii() or char in "_-. /:" for char in name)


def test_experiments_are_marked_as_model_development(tmp_path):
    """Without the experiment-kind tag MLflow 3's UI opens an audit on an empty GenAI page; an
    experiment an older version created gets the tag on its next run."""
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.create_experiment("old", artifact_location=(tmp_path / "a").as_uri())
    for name in ("new", "old"):
        config = TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "a"),
                                experiment=name)
        with mlflow_run(config, "run", {}):
            pass
        tags = mlflow.get_experiment_by_name(name).tags
        assert tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
