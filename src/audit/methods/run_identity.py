"""What a method's MLflow run is called and carries: its name, its tags and its params.

Part of the run skeleton (audit.methods.run), kept apart because none of it touches a file: each
is a function of the composed config and of the overrides the run was made with, which Hydra
holds under `python -m audit` and params.overrides holds under `dvc repro` (`composed_from`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields
from pathlib import Path

from omegaconf import OmegaConf

from audit.config import SharedConfig
from audit.methods import headline_metrics, method_module
from audit.methods.configs import AuditConfig
from audit.tracking import mlflow as tracking
from audit.tracking import run_names, sweeps
from audit.tracking.runs_table import HEADLINE_TAG

# Under `dvc repro` there is no Hydra: the overrides params.yaml was composed from
# (params.overrides) name and tag the run instead (set by run_one_stage through composed_from).
_pipeline_overrides: ContextVar[tuple[str, ...] | None] = ContextVar("pipeline_overrides",
                                                                     default=None)


@contextmanager
def composed_from(overrides: Sequence[str] | None) -> Iterator[None]:
    """While a stage runs under `dvc repro`: the overrides params.yaml was composed from (None
    when unknown, as for a params.yaml written before params.overrides existed)."""
    token = _pipeline_overrides.set(None if overrides is None else tuple(overrides))
    try:
        yield
    finally:
        _pipeline_overrides.reset(token)


def pipeline_overrides() -> tuple[str, ...] | None:
    """The overrides `composed_from` set; None under `python -m audit` (Hydra has them)."""
    return _pipeline_overrides.get()


def run_name(cfg: AuditConfig) -> str:
    """`tracking.run_name`, else the method and the models; with what the command line changed
    (run_names.job_run_name; under `dvc repro`, params.overrides named the same way), so that two
    runs of one model are told apart by their names."""
    base = cfg.tracking.run_name or f"{cfg.method} {'+'.join(sorted(cfg.model))}"
    overrides = pipeline_overrides()
    if overrides is None:
        return run_names.job_run_name(base)
    if cfg.tracking.run_name:  # a name the user gave is the name (`dvc exp run -S ...run_name=`)
        return base
    return run_names.named_run(base, overrides)


def pipeline_tags() -> dict[str, str]:
    """Under `dvc repro`, the overrides params.yaml was composed from, in the tag a
    `python -m audit` run keeps Hydra's in."""
    overrides = pipeline_overrides()
    return {} if overrides is None else {"hydra.overrides": " ".join(overrides) or "(none)"}


def output_dir_param(cfg: AuditConfig) -> str | None:
    """paths.output_dir relative to paths.root_dir: an absolute, per-machine path (Hydra's
    timestamped folder) says nothing about the audit. None when it lies outside the root."""
    output, root = Path(cfg.paths.output_dir).resolve(), Path(cfg.paths.root_dir).resolve()
    return Path(os.path.relpath(output, root)).as_posix() if output.is_relative_to(root) else None


def run_tags(cfg: AuditConfig, flat: Mapping[str, str],
             extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Provenance (git commit, dirty flag), the config's hash, the method, the models and, in a
    sweep, the job's number and swept keys."""
    return {**tracking.provenance(Path(cfg.paths.root_dir)),
            "config.hash": tracking.config_hash(flat), "method": cfg.method,
            HEADLINE_TAG: ",".join(headline_metrics(cfg.method)),
            "models": ",".join(sorted(cfg.model)),
            # Where this machine wrote the run's files (a place, so a tag and not a param).
            "paths.output_dir": str(Path(cfg.paths.output_dir).resolve()),
            **sweeps.job_tags(), **pipeline_tags(), **(extra or {})}


def own_sections(method: str) -> list[str]:
    """The config sections a run of `method` reads: the shared ones and the method's own."""
    return [*(section.name for section in fields(SharedConfig)),
            *method_module(method, "config").SECTIONS]


def flat_config(cfg: AuditConfig) -> dict[str, str]:
    """The run's params (and what config.hash hashes, less tracking.PLACE_KEYS): the shared
    sections and the running method's own; another method's settings (a Rasch run's
    `counterfactual.alpha`) say nothing about this run. paths.output_dir is relative to
    paths.root_dir, or left out when outside it (the `paths.output_dir` tag has it): no
    per-machine path in the params. config.yaml, logged with every run, keeps the whole config."""
    config = OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)
    flat = tracking.flatten({key: config[key] for key in own_sections(cfg.method)})
    relative = output_dir_param(cfg)
    if relative is None:
        flat.pop("paths.output_dir", None)
    else:
        flat["paths.output_dir"] = relative
    return flat
