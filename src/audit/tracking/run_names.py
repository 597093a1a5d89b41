"""What a run is called in MLflow: its method and models, then the overrides that change what it
measures. A sweep's job is named by the values swept; what its jobs share is said by the sweep's
parent run (audit.tracking.sweeps)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

from audit.tracking import mlflow as tracking

SWEPT_KEYS_ENV = "AUDIT_SWEPT_KEYS"  # comma-separated: the keys whose values differ between jobs

# Overrides that change where a run's files and records go, not what it measures
# (tracking.PLACE_KEYS); `model=` and `method=` are named by the run name's base already.
NAMED_KEYS = ("model", "method")
TRANSPORT_KEYS = ("base_url", "base_urls", "api_key_env", "timeout_s", "keep_alive",
                  "max_concurrency")
MAX_VALUE_CHARS = 32
MAX_NAME_CHARS = 160


def override_key(override: str) -> str:
    """An override's key without Hydra's add and delete marks (`+`, `++`, `~`)."""
    return override.split("=", 1)[0].lstrip("+~")


def _tells_apart(override: str) -> bool:
    key = override_key(override)
    return not (key.startswith(tracking.PLACE_KEYS) or key in NAMED_KEYS
                or (key.startswith("model.") and key.rsplit(".", 1)[-1] in TRANSPORT_KEYS))


def _short(override: str) -> str:
    """A long value (a file path) by its last part, cut to MAX_VALUE_CHARS."""
    key, _, value = override.partition("=")
    if len(value) > MAX_VALUE_CHARS and "/" in value.rstrip("/"):
        value = value.rstrip("/").rsplit("/", 1)[-1]
    return f"{key}={value[:MAX_VALUE_CHARS - 1] + '…' if len(value) > MAX_VALUE_CHARS else value}"


def _naming(overrides: Iterable[str]) -> list[str]:
    """The overrides that change what is measured, each value shortened (_short)."""
    return [_short(override) for override in overrides if _tells_apart(override)]


def named_run(base: str, overrides: Iterable[str]) -> str:
    """`base`, then the overrides that change what is measured: the name of a single run,
    whether Hydra's command line or (under `dvc repro`) params.overrides gave the overrides, so
    one audit has one name either way."""
    return " ".join([base, *_naming(overrides)])[:MAX_NAME_CHARS]


def job_run_name(base: str) -> str:
    """A run's name says what differs from other runs: `base` (the method and the models), then
    the command line's overrides that change what is measured (`rasch qwen items=smoke`). A
    sweep's job is named by the values swept, first, so a narrow column still shows them
    (`fit=hurdle · rasch qwen`; a model sweep's `rasch qwen` names its model already): what its
    jobs share is the sweep's parent run's. Where files go and how a server is reached are left
    out."""
    if not HydraConfig.initialized():
        return base
    hydra_config = HydraConfig.get()
    if hydra_config.mode != RunMode.MULTIRUN:
        return named_run(base, hydra_config.overrides.task)
    overrides = _naming(hydra_config.overrides.task)
    keys = {key for key in os.environ.get(SWEPT_KEYS_ENV, "").split(",") if key}
    swept = [override for override in overrides if override_key(override) in keys]
    if not swept and not keys & set(NAMED_KEYS):  # nothing tells this job apart but its number
        swept = [f"job {hydra_config.job.num}"]
    return (f"{', '.join(swept)} · {base}" if swept else base)[:MAX_NAME_CHARS]
