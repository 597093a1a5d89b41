"""Where a finished run keeps its files, for everything that reads one afterwards (findings,
verdicts, `audit.compare`, `audit.plan from_run=`): the two layouts and the stage names that
make the second one. Kept apart from the run skeleton (methods/run.py), which imports the request
engine, the backends and MLflow, so a reader of finished runs does not load them."""

from __future__ import annotations

from pathlib import Path

from audit.errors import AuditError, did_you_mean

CONFIG_FILE = "config.yaml"
# What `python -m audit.verdict` writes into a run's folder unless told junit=PATH: a file of the
# run, moved aside with its tables when the folder is run into again (methods/run.py).
VERDICT_JUNIT_FILE = "verdict_junit.xml"
# The slots every method fills, in order; dvc.yaml declares one stage (and out folder) for each.
STAGE_NAMES = ("design", "respond", "score", "analyse", "report")
# Older names `python -m audit.stages` still accepts (dvc.yaml files written before the slots had
# these names, when the Rasch method was the only one): the same slots for every method.
STAGE_ALIASES = {"judge": "score", "judge_gold": "score", "fit": "analyse"}


def stage_name(name: str) -> str:
    """The slot a stage name or an older alias means. Asked before anything is read, so a
    mistyped stage is its own one line, not the complaint of a params file it never needed."""
    if name in STAGE_NAMES:
        return name
    if name in STAGE_ALIASES:
        return STAGE_ALIASES[name]
    raise AuditError(f"unknown stage '{name}': use one of {', '.join(STAGE_NAMES)}"
                     + did_you_mean(name, [*STAGE_NAMES, *STAGE_ALIASES]))


def run_file(run_dir: Path, name: str | Path) -> Path:
    """A file of a finished run in either layout: DIR/NAME after `python -m audit`, DIR/STAGE/NAME
    after `dvc repro` (in the folder of the stage that wrote it), so a run's findings and verdict
    read both. The flat path when neither exists: a missing table is named where a run keeps it."""
    flat = Path(run_dir) / name
    staged = (Path(run_dir) / stage / name for stage in STAGE_NAMES)
    return flat if flat.exists() else next((path for path in staged if path.exists()), flat)


def found_run_file(run_dir: Path, name: str | Path) -> Path | None:
    """`run_file` when the run has that file, else None: for tables a reader can do without."""
    path = run_file(run_dir, name)
    return path if path.is_file() else None
