"""The run skeleton every method shares: its config.yaml, its timed stages and its MLflow run.

Each method used to carry its own copy of this (and the copies drifted: only the Rasch run nested
under a sweep's parent and tagged the sweep job). Here once, so a method's run always writes
config.yaml next to its tables, names and tags its MLflow run the same way, nests under the
sweep's parent run when it is a sweep job, and logs the Hydra files and the dvc.lock it ran from.
Table I/O (atomic writes, the one CSV/parquet reader) is audit.tables.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from omegaconf import OmegaConf

from audit.config import AuditConfig
from audit.tracking import mlflow as tracking
from audit.tracking import sweeps

log = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"


def write_config(cfg: AuditConfig, directory: Path) -> Path:
    """The composed config next to the run's tables, whether or not MLflow is on."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFIG_FILE
    path.write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))
    return path


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Record a stage's wall time under its name (logged as a metric by the method)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = time.perf_counter() - started


def run_name(cfg: AuditConfig) -> str:
    return sweeps.job_run_name(cfg.tracking.run_name
                               or f"{cfg.method}-{'+'.join(sorted(cfg.model))}")


def run_tags(cfg: AuditConfig, flat: Mapping[str, str],
             extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Provenance (git commit, dirty flag), the config's hash, the method, the models and, in a
    sweep, the job's number and swept keys."""
    return {**tracking.provenance(Path(cfg.paths.root_dir)),
            "config.hash": tracking.config_hash(flat), "method": cfg.method,
            "models": ",".join(sorted(cfg.model)), **sweeps.job_tags(), **(extra or {})}


def flat_config(cfg: AuditConfig) -> dict[str, str]:
    return tracking.flatten(OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True))


@contextmanager
def method_run(cfg: AuditConfig, tags: Mapping[str, str] | None = None,
               started_at: float | None = None) -> Iterator[tracking.RunInfo | None]:
    """The method's MLflow run (None when tracking is off), nested under the sweep's parent run
    when this process is a sweep job, starting when the work started (started_at, epoch
    seconds); params are logged on entry."""
    if not cfg.tracking.enabled:
        yield None
        return
    flat = flat_config(cfg)
    with tracking.mlflow_run(cfg.tracking, run_name(cfg), run_tags(cfg, flat, tags),
                             parent_run_id=sweeps.parent_run_id(),
                             started_at=started_at) as run_info:
        tracking.log_params(flat)
        yield run_info


def provenance_files(cfg: AuditConfig, config_file: Path) -> list[tuple[str, Path]]:
    """config.yaml, the dvc.lock the run was made from (under `dvc repro` every earlier stage has
    its entry) and the Hydra files of the job."""
    lock = Path(cfg.paths.root_dir) / "dvc.lock"
    return [("", config_file), *([("", lock)] if lock.is_file() else []),
            *[("hydra", path) for path in sweeps.hydra_files()]]


def log_run(cfg: AuditConfig, metrics: Mapping[str, float],
            artifacts: Iterable[tuple[str, Path]], config_file: Path,
            tags: Mapping[str, str] | None = None,
            started_at: float | None = None) -> tracking.RunInfo | None:
    """One MLflow run with the metrics, the artifacts and the provenance files; None when off."""
    with method_run(cfg, tags, started_at) as run_info:
        if run_info is None:
            return None
        tracking.log_metrics(metrics)
        tracking.log_artifacts([*artifacts, *provenance_files(cfg, config_file)])
    log.info("MLflow run %s in experiment '%s' at %s; browse with: mlflow ui "
             "--backend-store-uri %s --host 127.0.0.1", run_info.run_id,
             cfg.tracking.experiment, run_info.tracking_uri, run_info.tracking_uri)
    return run_info
