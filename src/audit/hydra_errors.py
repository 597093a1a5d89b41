"""Hydra's errors that are no config composition error, as one line: raised unwrapped by its
run-mode check, its mkdir of the run's folder and its override parser, each was a traceback from
inside Hydra. audit.config_errors, which runs every entry point, turns each into its line; each
function returns None for an error raised anywhere else, which keeps its traceback."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from audit.outputs import why_unwritable
from audit.yaml_files import frame_in

# Hydra runs one of --run, --multirun, --cfg, --info at a time; `-m +sweep=NAME --cfg job`, the
# natural way to preview a sweep, was its ValueError's 12-line traceback.
HYDRA_MODES = ("-m (--multirun) runs a sweep and --cfg shows a config: give one. To see a sweep's "
               "grid: python -m audit +sweep=NAME --cfg hydra -p hydra.sweeper.params; to see one "
               "job's config: its values without -m, e.g. python -m audit fit=rasch --cfg job")


def conflicting_hydra_modes(error: ValueError) -> bool:
    """Whether Hydra refused two of its run modes on one command line (hydra/_internal/utils.py
    raises a plain ValueError for it; a Hydra that rewords or moves it leaves this False, and the
    traceback shows as before)."""
    return (str(error).startswith("Only one of --run, --multirun")
            and frame_in(error.__traceback__, "hydra._internal.utils") is not None)


def run_folder_problem(error: OSError) -> str | None:
    """One line for a run folder Hydra cannot make (hydra.run.dir naming a file, or a folder
    nobody may write in): its mkdir raised the OSError unwrapped, a 25-line traceback in every
    command (bad-input review 2026-12-06). None for an OSError raised anywhere else. Hydra makes
    a sweep's folder in its basic sweeper and launcher, each job's in hydra.core.utils.run_job."""
    # The frame that called mkdir: run_job also calls the job itself, whose own OSErrors (a
    # full disk, a bug) pass through it and keep their tracebacks.
    frames, traceback = [], error.__traceback__
    while traceback is not None:
        frames.append(traceback.tb_frame.f_globals.get("__name__", ""))
        traceback = traceback.tb_next
    caller = next((name for name in reversed(frames)
                   if name.split(".")[0] not in ("pathlib", "os")), "")  # 3.13: pathlib._local
    sweep = caller.startswith("hydra._internal.core_plugins.basic_")
    if error.filename is None or not (sweep or caller == "hydra.core.utils"):
        return None
    option, default = (("hydra.sweep.dir", "multirun") if sweep else ("hydra.run.dir", "outputs"))
    path = Path(os.fsdecode(error.filename))
    reason = why_unwritable(path, folder=True) or error.strerror or type(error).__name__
    where = reason if reason.startswith(f"{path} ") else f"{path}: {reason}"
    return (f"cannot make the run's folder: {where}; set {option}= to a folder you can write, "
            f"or leave it out ({default}/DATE/TIME)")


def overlong_number(error: ValueError | TypeError, arguments: Sequence[str]) -> str | None:
    """One line for a value of more than 4,300 digits, which Hydra's override parser reads as an
    integer past Python's limit: a ValueError traceback (bad-input review 2026-12-06)."""
    if not ("integer string conversion" in str(error) and frame_in(
            error.__traceback__, "hydra.core.override_parser.overrides_visitor")):
        return None
    key = next((argument.partition("=")[0] for argument in arguments
                if re.search(r"\d{4301}", argument.partition("=")[2])), "an override")
    return (f"{key}= has a number of more than 4,300 digits, which no setting takes: give a "
            "shorter one")
