from __future__ import annotations

import hashlib
import importlib.metadata
import os

import mlflow
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mlflow.tracking import MlflowClient

from audit.config import TrackingConfig
from audit.tracking import mlflow as tracking
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


def test_flatten_redacts_secret_sections_and_secrets_inside_lists_but_keeps_variable_names():
    """Catches a secret logged in clear where it is not the last key (a `secrets:` section was
    flattened to `secrets.db`, a list of mappings logged as its text, keys and all), and the
    name of the key's variable (api_key_env, needed to re-create the run) redacted."""
    flat = flatten({"secrets": {"db": "pw1"},
                    "dvc_params": {"hosts": [{"url": "http://h", "password": "pw2"}, "x"]},
                    "model": {"m": {"api_key_env": "OPENAI_API_KEY", "attributes": ("a", "b")}}})
    assert flat == {"secrets": "***redacted***",
                    "dvc_params.hosts": "[{'url': 'http://h', 'password': '***redacted***'}, 'x']",
                    "model.m.api_key_env": "OPENAI_API_KEY",
                    "model.m.attributes": "('a', 'b')"}


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


def _config(tmp_path, experiment: str = "audit") -> TrackingConfig:
    """A real SQLite store under tmp_path."""
    return TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                          artifact_root=str(tmp_path / "a"), experiment=experiment)


def test_flatten_cuts_a_value_at_mlflows_6000_characters():
    """A value over MLflow's 6000-character limit made log_params fail; 6000 are kept whole."""
    flat = flatten({"a": "x" * 6001, "b": "y" * 6000, "c": {"d": "z"}})
    assert flat == {"a": "x" * 6000, "b": "y" * 6000, "c.d": "z"}


def test_metric_names_keep_slashes_and_colons_and_replace_the_rest():
    """A '/' replaced would break the UI's metric groups (contrast/race/...)."""
    assert metric_name("dif", "gender:F", "p@0.05 (BH)") == "dif/gender:F/p_0.05 _BH_"


def test_a_run_logs_every_param_its_tags_and_metrics_by_step_under_clean_names(tmp_path):
    """Bugs caught: a batch over MLflow's 100 params, or a param lost between batches; a metric
    logged under its raw name; every step logged as step 0; the run's tags dropped."""
    config = _config(tmp_path)
    params = {f"p{index:03d}": str(index) for index in range(250)}
    with mlflow_run(config, "run", {"method": "rasch"}) as run:
        tracking.log_params(params)
        tracking.log_metrics({"contrast/race@x": 1, "n": 2.5})
        tracking.log_metric_steps([(0, {"a@b": 1.0}), (3, {"a@b": 2.0})])
    logged = tracking.get_run(config.tracking_uri, run.run_id)
    assert logged["params"] == params
    assert logged["metrics"] == {"contrast/race_x": 1.0, "n": 2.5, "a_b": 2.0}
    assert (logged["name"], logged["status"], logged["tags"]["method"]) == (
        "run", "FINISHED", "rasch")
    history = MlflowClient(config.tracking_uri).get_metric_history(run.run_id, "a_b")
    assert sorted((point.step, point.value) for point in history) == [(0, 1.0), (3, 2.0)]


def test_a_run_starts_when_its_work_began_and_a_sweep_parent_ends_with_its_status(tmp_path):
    """Bugs caught: started_at read as milliseconds; a job not nested under its parent; the
    parent's totals under raw names, or a failed sweep's parent ended FINISHED."""
    config = _config(tmp_path)
    parent = tracking.start_parent_run(config, "sweep", {"audit.role": "sweep"})
    with mlflow_run(config, "job", {"method": "rasch"}, parent_run_id=parent,
                    started_at=1_700_000_000.5) as run:
        pass
    logged = tracking.get_run(config.tracking_uri, run.run_id)
    assert logged["start_time"] == 1_700_000_000_500
    assert logged["tags"][tracking.PARENT_RUN_TAG] == parent
    assert logged["tags"]["method"] == "rasch"
    tracking.end_parent_run(config, parent, {"jobs@failed": 1}, status="FAILED")
    ended = tracking.get_run(config.tracking_uri, parent)
    assert (ended["status"], ended["metrics"]) == ("FAILED", {"jobs_failed": 1.0})


def test_find_runs_is_newest_first_filtered_limited_and_of_the_named_experiment(tmp_path):
    """Bugs caught: oldest first, the filter or the limit ignored, another experiment's runs
    read, the experiments unsorted."""
    config = _config(tmp_path)
    for name, started in (("old", 1000.0), ("new", 3000.0), ("mid", 2000.0)):
        with mlflow_run(config, name, {"method": "iat" if name == "mid" else "rasch"},
                        started_at=started):
            pass
    for experiment, name, started in (("other", "elsewhere", 4000.0),
                                      ("Default", "by default", 5000.0)):
        with mlflow_run(_config(tmp_path, experiment), name, {}, started_at=started):
            pass
    uri = config.tracking_uri
    assert [run["name"] for run in tracking.find_runs(uri, "audit")] == ["new", "mid", "old"]
    assert [run["name"] for run in tracking.find_runs(uri, "audit", "tags.method = 'rasch'")
            ] == ["new", "old"]
    assert [run["name"] for run in tracking.find_runs(uri, "audit", max_results=1)] == ["new"]
    assert tracking.find_runs(uri, "missing") == []
    assert [run["name"] for run in tracking.find_runs(uri, None)] == [
        "by default", "elsewhere", "new", "mid", "old"]
    assert tracking.experiment_names(uri) == ["Default", "audit", "other"]
    with pytest.raises(LookupError, match=f"^run {'0' * 32} not found in {uri}$"):
        tracking.get_run(uri, "0" * 32)


def test_log_artifacts_puts_each_file_in_its_folder_and_refuses_a_missing_one(tmp_path):
    """A missing file was MLflow's own error, not one naming the artifact to log."""
    config = _config(tmp_path)
    (tmp_path / "a.csv").write_text("x\n")
    (tmp_path / "b.json").write_text("{}")
    with mlflow_run(config, "run", {}) as run:
        tracking.log_artifacts([("", tmp_path / "a.csv"), ("tables", tmp_path / "b.json")])
        with pytest.raises(FileNotFoundError, match="^artifact to log is missing: .*gone.csv$"):
            tracking.log_artifacts([("", tmp_path / "gone.csv")])
    client = MlflowClient(config.tracking_uri)
    assert [item.path for item in client.list_artifacts(run.run_id)] == ["a.csv", "tables"]
    assert [item.path for item in client.list_artifacts(run.run_id, "tables")] == [
        "tables/b.json"]


def test_provenance_says_absent_for_no_dvc_lock_and_a_package_not_installed(tmp_path,
                                                                            monkeypatch):
    """Bugs caught: a missing dvc.lock or package left its tag out or empty."""
    monkeypatch.setattr(tracking, "RESULT_PACKAGES", ("polars", "no-such-package-here"))
    tags = tracking.provenance(tmp_path, package_dir=tmp_path / "pkg")
    assert tags["dvc.lock.sha256"] == "absent"
    assert tags["package.no-such-package-here"] == "absent"
    assert tags["package.polars"] == importlib.metadata.version("polars")
    (tmp_path / "dvc.lock").write_bytes(b"schema: '2.0'\n")
    assert tracking.provenance(tmp_path, package_dir=tmp_path / "pkg")["dvc.lock.sha256"] == \
        hashlib.sha256(b"schema: '2.0'\n").hexdigest()


def test_a_code_state_that_is_not_known_is_unknown_not_clean(tmp_path, monkeypatch):
    """Bugs caught: a wheel's BUILD_COMMIT without a dirty flag, a `git status` that failed, or
    a run's tags without a dirty flag read as clean; the folder's commit preferred to audit's."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / tracking.BUILD_COMMIT_FILE).write_text("f" * 40 + "\n")
    assert tracking.source_state(package) == ("f" * 40, "unknown")
    assert tracking.code_state({"audit.commit": "a", "git.commit": "g", "git.dirty": "true"}
                               ) == ("a", "unknown")
    assert tracking.code_state({"git.commit": "g", "git.dirty": "true"}) == ("g", "true")
    assert tracking.code_state({}) == ("", "unknown")
    monkeypatch.setattr(tracking, "_git", lambda *args: "c" * 40 if "rev-parse" in args else None)
    assert tracking.checkout_state(tmp_path) == ("c" * 40, "unknown")


def test_config_hash_leaves_out_every_place_key_and_is_16_hex_characters():
    """Bugs caught: a sweep's keys (where its jobs go) changed the hash; the hash cut short."""
    audit = {"fit.draws": "100", "items.name": "smoke"}
    places = {"sweep.id": "x", "sweep": "y", "hydra.run.dir": "d", "paths.output_dir": "o",
              "tracking.experiment": "e"}
    assert config_hash({**audit, **places}) == config_hash(audit) == hashlib.sha256(
        b"fit.draws=100\nitems.name=smoke").hexdigest()[:16]


def test_download_artifact_turns_mlflows_progress_bar_off_for_the_download_only(tmp_path,
                                                                                monkeypatch):
    """MLflow drew a tqdm bar on stderr for every download, above a command's own lines."""
    config = _config(tmp_path)
    (tmp_path / "a.csv").write_text("x\n")
    with mlflow_run(config, "run", {}) as run:
        tracking.log_artifacts([("t", tmp_path / "a.csv")])
    monkeypatch.delenv(tracking.PROGRESS_BAR_ENV, raising=False)
    real, seen = mlflow.artifacts.download_artifacts, []

    def spy(**kwargs):
        seen.append(os.environ.get(tracking.PROGRESS_BAR_ENV))
        return real(**kwargs)

    monkeypatch.setattr(mlflow.artifacts, "download_artifacts", spy)
    path = tracking.download_artifact(config.tracking_uri, run.run_id, "t/a.csv",
                                      tmp_path / "d" / "e")
    assert path.read_text() == "x\n" and path.name == "a.csv"
    assert seen == ["false"] and tracking.PROGRESS_BAR_ENV not in os.environ
