"""Runs left RUNNING by a process that died without ending them, ended KILLED by a later run.

Ctrl-C and SIGTERM end a run KILLED (audit.tracking.mlflow.mlflow_run), a bug's exception FAILED;
only a process that cannot run any code at its end (`kill -9`, the kernel's out-of-memory
killer, a crash, a machine that lost power) leaves its run RUNNING, and MLflow keeps it so for
good: the UI shows it as in progress, and a reviewer cannot tell it from a live one.

So each run records the process that writes it (PROCESS_TAG): the machine's boot, its pid
namespace, the pid and the process's start time. A run started later in the same experiment and
on the same machine ends every RUNNING run whose process is gone (no such pid, a zombie, or a pid
reused by a process started at another time) as KILLED, and says why in ENDED_BY_TAG. A run of
another machine or container, of a live process, or without the tag (an older audit's, another
tool's) is left as it is: none of those can be told from a run still at work.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import psutil

from audit.tracking.store import retried_on_write_race

log = logging.getLogger(__name__)

PROCESS_TAG = "audit.process"
ENDED_BY_TAG = "audit.ended_by"
# Start times are whole clock ticks after the boot (1/100 s on Linux): equal within this when the
# pid is the same process.
_SAME_START_S = 0.5


@cache
def _machine() -> str:
    """This boot of this machine, as every process on it sees it: the kernel's boot id on Linux
    (containers share it, and differ in pid namespace), else the host name and boot time."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return f"{socket.gethostname()}@{psutil.boot_time():.0f}"


def _pid_namespace() -> str:
    """The pid namespace (Linux): a pid means another process in another container."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def this_process() -> str:
    """The PROCESS_TAG value of the process that runs this: JSON, readable in the UI's tags."""
    return json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                       "started": round(psutil.Process().create_time(), 2),
                       "machine": _machine(), "pid_namespace": _pid_namespace()},
                      sort_keys=True)


def _recorded(tag: str | None) -> dict[str, Any] | None:
    try:
        recorded = json.loads(tag or "")
        return recorded if isinstance(recorded, dict) else None
    except ValueError:
        return None


def process_gone(recorded: dict[str, Any]) -> bool:
    """Whether the recorded process has ended, as far as this process can know: only for a
    process of this machine and pid namespace; a process this one may not inspect counts as
    alive."""
    if (recorded.get("machine") != _machine()
            or recorded.get("pid_namespace") != _pid_namespace()):
        return False
    try:
        process = psutil.Process(int(recorded["pid"]))
        if process.status() == psutil.STATUS_ZOMBIE:  # ended, its parent not yet told
            return True
        return abs(process.create_time() - float(recorded["started"])) > _SAME_START_S
    except psutil.NoSuchProcess:  # ZombieProcess is one too
        return True
    except (psutil.AccessDenied, KeyError, TypeError, ValueError):
        return False


def new_run_tags(client: Any, experiment_id: str, tags: Mapping[str, str]) -> dict[str, str]:
    """The tags of a run about to be created in the experiment: ``tags`` and PROCESS_TAG, this
    process's record. Ends the experiment's orphaned runs first."""
    end_orphaned_runs(client, experiment_id)
    return {**tags, PROCESS_TAG: this_process()}


def end_orphaned_runs(client: Any, experiment_id: str) -> None:
    """End as KILLED each RUNNING run of the experiment whose process has ended (see the module's
    text). ``client`` is an MlflowClient of the store."""
    for run in client.search_runs([experiment_id], "attributes.status = 'RUNNING'",
                                  max_results=1000):
        recorded = _recorded(run.data.tags.get(PROCESS_TAG))
        if recorded is None or not process_gone(recorded):
            continue
        why = (f"left RUNNING by pid {recorded.get('pid')} on {recorded.get('host')}, which "
               "ended without ending it (kill -9, out of memory, a crash)")
        run_id = run.info.run_id

        def end(run_id: str = run_id, why: str = why) -> None:
            client.set_tag(run_id, ENDED_BY_TAG, f"{why}; ended KILLED by pid {os.getpid()}, "
                           "a later run's process")
            client.set_terminated(run_id, "KILLED")

        retried_on_write_race(end)  # two runs that start together may both end it
        log.warning("ended MLflow run %s (%s) KILLED: %s", run_id, run.info.run_name, why)
