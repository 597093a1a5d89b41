"""One live run a run folder: a second command into a folder a run is still writing is refused.

A run's stages hand their tables to each other through files in its folder (labels.parquet,
fit/posterior.nc), so two runs writing one folder at once read each other's files. A concurrency
probe (2026-12-07, two audits on loopback servers) saw all of it: a run that printed the other
run's gaps and verdict and exited 0, a run that blamed its judge for the other's labels, an
h5netcdf lock traceback. Two runs share a folder by accident easily: the default folder is named
to the second (two CI steps started together: the second then writes to TIME-2), and CI often
fixes hydra.run.dir (the second is refused).

The callback locks the folder before Hydra writes anything in it (its `.hydra/` record, its log)
and the run holds the lock until it ends; the kernel lets go of it when the process ends however
it ends (`kill -9` included), so no stale lock is ever left. The lock is an advisory `flock` on
the folder itself, which leaves no file behind: no locking library locks a folder (filelock
needs a lock file, which would sit among the run's outputs). Where `fcntl` does not exist
(Windows) runs are not checked.

A sweep's folder is locked the same way by the sweep's process, and a sweep whose folder another
sweep holds is refused, the default folder too (jobs are composed again from the sweep's
overrides, so it cannot be moved). A single run pointed into a running sweep's job folder is not
checked: the job folders are known job by job, after Hydra has written in them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, read_write

from audit.methods import hydra_record

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# conf/config.yaml's hydra.run.dir, as written there: a run given no folder of its own moves to
# a free sibling of a folder in use (two runs started in the same second), where a folder that
# was chosen is refused.
DEFAULT_RUN_DIR = "outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}"
# run folder (resolved) -> the descriptor that holds its lock, for this process's run in it
_locks: dict[Path, int] = {}
# sweep folder (resolved) -> the descriptor that holds its lock, for this process's sweep in it
_sweep_locks: dict[Path, int] = {}


class RunFolderInUse(Exception):
    """Another process holds the folder's lock."""


class RunFolderLockCallback(Callback):
    """Configured in conf/config.yaml under hydra.callbacks, after earlier_record (which must
    see the folder as it was)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        run_dir = Path(str(config.hydra.run.dir))
        try:
            lock(run_dir)
            return
        except RunFolderInUse:
            pass
        except OSError:  # a file where the folder goes, no permission: Hydra's own line says so
            return
        if OmegaConf.to_container(config.hydra.run, resolve=False)["dir"] == DEFAULT_RUN_DIR:
            sibling = _free_sibling(run_dir)
            if sibling is not None:
                # The same object is the config Hydra then runs the job with.
                with read_write(config.hydra.run):
                    config.hydra.run.dir = str(sibling)
                hydra_record.forget(run_dir)  # the record read there is the other run's
                log.info("run folder %s is another run's, started in the same second: this run "
                         "writes to %s", run_dir, sibling)
                return
        # SystemExit, not an Exception: Hydra turns a callback's Exception into a warning and
        # runs the job anyway.
        log.error("run folder %s is in use by another run that has not finished: give this run "
                  "its own folder (hydra.run.dir=DIR), or rerun when that one has ended "
                  "(nothing was written)", run_dir)
        raise SystemExit(2) from None

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        release()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A sweep's folder, held by the sweep's own process while its jobs run (the jobs write
        its numbered folders): two sweeps in one folder broke each other's jobs (re-probe
        2026-12-07: both exited 1, with h5netcdf tracebacks and a judge blamed). Refused even
        for the default folder: the sweep's jobs are composed again from its overrides, so it
        cannot be moved from here."""
        sweep_dir = Path(str(config.hydra.sweep.dir))
        try:
            lock(sweep_dir, sweep=True)
        except RunFolderInUse:
            log.error("sweep folder %s is in use by another sweep that has not finished: give "
                      "this sweep its own folder (hydra.sweep.dir=DIR), or rerun when that one "
                      "has ended (nothing was run)", sweep_dir)
            raise SystemExit(2) from None
        except OSError:  # Hydra's own line says what is wrong with the folder
            return

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        release(sweep=True)


def _free_sibling(run_dir: Path) -> Path | None:
    """The first of TIME-2 ... TIME-9 beside the default folder TIME that no run holds, locked
    for this run; None when every one is taken."""
    for number in range(2, 10):
        sibling = run_dir.with_name(f"{run_dir.name}-{number}")
        try:
            lock(sibling)
            return sibling
        except RunFolderInUse:
            continue
    return None


def lock(folder: Path, sweep: bool = False) -> None:
    """Hold `folder`'s lock for a run (or, with `sweep`, for a sweep; the folder is made if it is
    new); RunFolderInUse when another process holds it. This process's own earlier lock on it is
    kept (a rerun in one process)."""
    if fcntl is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    held = _sweep_locks if sweep else _locks
    if key in held:
        return
    descriptor = os.open(key, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise RunFolderInUse(str(folder)) from None
    held[key] = descriptor


def release(sweep: bool = False) -> None:
    """Let go of the run folder locks this process holds (with `sweep`, its sweep folder's): its
    run has ended (a process runs one at a time; the callback's on_run_end is not called when
    the run ends by SystemExit). A sweep's lock outlives its jobs' runs, which a basic launcher
    runs in the sweep's own process."""
    held = _sweep_locks if sweep else _locks
    while held:
        os.close(held.popitem()[1])  # closing the lock's only descriptor releases it
