"""A run's wall times: each stage's, kept in memory by `python -m audit` and in files under
`dvc repro`, where each stage is a process of its own and the report stage logs them all."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

# Each stage's wall time under `dvc repro`, for the report stage (a process of its own) to log as
# `duration_s/STAGE`, as `python -m audit` does: beside the stages' out
# folders, not in them, so a rerun whose tables are identical leaves its out's hash alone and DVC
# does not rerun every later stage (the fit included) for a new time.
TIMINGS_FOLDER = ".timings"


def write_stage_timing(seconds: float, directory: Path, name: str) -> Path:
    path = directory / TIMINGS_FOLDER / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seconds": seconds}) + "\n")
    return path


def read_stage_timings(directory: Path, names: Iterable[str]) -> dict[str, float]:
    """The wall times earlier stages wrote (a stage run before this file existed has none)."""
    timings = {}
    for name in names:
        path = directory / TIMINGS_FOLDER / f"{name}.json"
        if path.is_file():
            timings[name] = float(json.loads(path.read_text())["seconds"])
    return timings


def duration_metrics(timings: Mapping[str, float]) -> dict[str, float]:
    """The stages' wall times as MLflow metrics, `duration_s/STAGE`."""
    return {f"duration_s/{stage}": seconds for stage, seconds in timings.items()}


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Record a stage's wall time under its name (logged as a metric by the method)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = time.perf_counter() - started
