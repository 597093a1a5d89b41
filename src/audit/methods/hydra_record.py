"""Hydra's record of an earlier run in the run's folder (`.hydra/`: its config, its overrides).

Hydra writes a run's `.hydra/` files as the run starts, before any of this project's code, so a
run into a folder that holds an earlier one (a fixed hydra.run.dir, as in CI) replaced the
earlier run's record: keep_earlier_run moved the earlier tables to earlier/TIME/ without the
command that made them, and a command refused before it ran (a store that is down, a setting out
of range) left its own overrides beside the earlier run's tables, where `audit.verdict`'s advice
to rerun "the same command" points. The callback reads the record before Hydra writes over it;
keep_earlier_run files it with the tables it moves (`take`); a run refused before that puts it
back (`put_back_unstarted`).

Only single runs: a sweep's jobs write theirs in folders a fixed hydra.sweep.dir reuses, but
their folders are known only job by job, after Hydra has written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger(__name__)

# What Hydra writes in a run's record folder (hydra/core/utils.py, run_job's _save_config calls).
HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")
# run folder (resolved) -> (the record's folder name, its files' names and bytes)
_held: dict[Path, tuple[str, dict[str, bytes]]] = {}


class EarlierRecordCallback(Callback):
    """Configured in conf/config.yaml under hydra.callbacks."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        subdir = config.hydra.get("output_subdir")
        if subdir is None:
            return
        try:
            hold(Path(str(config.hydra.run.dir)), str(subdir))
        except OSError as error:  # unreadable: Hydra's own write then says what is wrong
            log.warning("could not read the earlier run's %s/ in %s: %s", subdir,
                        config.hydra.run.dir, error)


def hold(run_dir: Path, subdir: str) -> None:
    """Read the record Hydra is about to write over in `run_dir/subdir`: its files, or none
    when an existing folder has no record (a folder `dvc repro` or audit.iat wrote)."""
    if not run_dir.is_dir():
        return  # a new folder: the record Hydra writes is its run's, whatever happens
    record = run_dir / subdir
    files = ({path.name: path.read_bytes() for path in sorted(record.iterdir())
              if path.is_file()} if record.is_dir() else {})
    _held[run_dir.resolve()] = (subdir, files)


def take(run_dir: Path) -> tuple[str, dict[str, bytes]] | None:
    """The earlier record held for `run_dir`, now the run's to file, as the run starts. Every
    record held is let go: what Hydra wrote is now this run's, also where paths.output_dir is
    not hydra.run.dir (put back at the end, the earlier one replaced the run's own)."""
    record = _held.pop(run_dir.resolve(), None)
    _held.clear()
    return record


def write(directory: Path, subdir: str, files: dict[str, bytes]) -> None:
    if files:
        (directory / subdir).mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / subdir / name).write_bytes(content)


def _restore(run_dir: Path, subdir: str, files: dict[str, bytes]) -> None:
    """The record as it was: the earlier files back, and the files Hydra added removed."""
    record = run_dir / subdir
    for name in HYDRA_FILES:
        if name not in files:
            (record / name).unlink(missing_ok=True)
    write(run_dir, subdir, files)
    if record.is_dir() and not any(record.iterdir()):
        record.rmdir()


def forget(run_dir: Path) -> None:
    """Let go of the record held for `run_dir`: the run goes to another folder (this one is
    another live run's, audit.methods.run_folder), so nothing of it is this run's to put back."""
    _held.pop(run_dir.resolve(), None)


def put_back_unstarted() -> None:
    """Each held record whose run never started (refused before keep_earlier_run) goes back in
    place of the refused command's. A record that cannot be written back is said, not raised:
    the refusal's own line is what the user needs."""
    while _held:
        run_dir, (subdir, files) = _held.popitem()
        try:
            _restore(run_dir, subdir, files)
        except OSError as error:
            log.warning("could not put back the earlier run's %s/ in %s: %s", subdir, run_dir,
                        error)
