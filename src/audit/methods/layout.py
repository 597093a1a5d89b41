"""Where a finished run keeps its files, for everything that reads one afterwards (findings,
verdicts, `audit.compare`, `audit.plan from_run=`): the two layouts and the stage names that
make the second one. Kept apart from the run skeleton (methods/run.py), which imports the request
engine, the backends and MLflow, so a reader of finished runs does not load them."""

from __future__ import annotations

import re
from pathlib import Path

from audit.errors import AuditError, did_you_mean
from audit.tracking.jobs import job_order

CONFIG_FILE = "config.yaml"
# What `python -m audit.verdict` writes into a run's folder unless told junit=PATH: a file of the
# run, moved aside with its tables when the folder is run into again (methods/run.py).
VERDICT_JUNIT_FILE = "verdict_junit.xml"
_HYDRA_TIME = re.compile(r"\d{2}-\d{2}-\d{2}")  # a run's folder in outputs/DATE/
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


def runs_inside(folder: Path) -> str | None:
    """What to pass instead of a folder that holds runs rather than being one: a sweep's folder
    (jobs 0, 1, ...: its first job) or Hydra's day folder (outputs/DATE holds HH-MM-SS runs:
    the latest, which the first sorted was not; bad-input review 2026-12-05). None when no
    folder inside is a finished run (a dot-folder never is: Hydra's .hydra/ holds a config.yaml
    from the moment a run starts; nor is a stage's folder, such as the report/ that holds a
    `dvc repro` run's config.yaml: counted, a run missing its prompts was "not one run: pass
    RUN/report", and RUN/report then "a folder inside a run: pass RUN", a loop; bad-input review
    2026-12-06)."""
    stages = {*STAGE_NAMES, *STAGE_ALIASES}
    runs = sorted((child.name for child in folder.iterdir()
                   if child.is_dir() and not child.name.startswith(".")
                   and child.name not in stages
                   and found_run_file(child, CONFIG_FILE) is not None), key=job_order)
    if not runs:
        return None
    if all(name.isdigit() for name in runs):
        listed = f"{', '.join(runs[:10])}{', ...' if len(runs) > 10 else ''}"
        return (f"it is a sweep's folder: pass one job's run, e.g. {folder / runs[0]} "
                f"(jobs: {listed})")
    # Hydra names a day's runs by their start time, so the last name is the latest run; of other
    # names ("best", "0") none is known to be the latest, and the line said so of "0".
    timed = all(_HYDRA_TIME.fullmatch(name) for name in runs)
    example = f"the latest, {folder / runs[-1]}" if timed else str(folder / runs[0])
    return (f"it holds {len(runs)} run{'s' if len(runs) > 1 else ''} (folders of finished runs "
            f"inside it): pass one, e.g. {example}")
