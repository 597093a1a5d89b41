"""A sweep's job folders in the order Hydra made them: it numbers them 0, 1, 2, ..., and by name
job 10 came before job 2. One key for every reader of a sweep's folder (the failed jobs a sweep
lists, DIF compare's tables, the run a folder of runs points to); no MLflow or Hydra is loaded."""

from __future__ import annotations

from pathlib import Path


def job_order(name: str) -> tuple[int, str]:
    """The sort key of a folder name: numbered jobs in number order, after any other names."""
    return (len(name), name) if name.isdigit() else (0, name)


def in_job_order(sweep_dir: Path, file: Path) -> list[tuple[int, str]]:
    """The sort key of a file under a sweep folder: its path's folders each by job_order."""
    return [job_order(part) for part in file.relative_to(sweep_dir).parts]
