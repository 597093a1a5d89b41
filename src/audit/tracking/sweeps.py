"""Sweeps: a Hydra callback that groups a multirun's jobs under one parent MLflow run.

The parent is created in the process that launches the sweep, before any job starts, and its id
travels to the jobs in an environment variable: the in-process launcher runs jobs in the same
process, while joblib workers, submitit's local processes and SLURM jobs (`sbatch` exports the
environment by default) inherit it. Creating it up front also means the MLflow store exists before
parallel jobs open it, so they never race to create its tables.
"""

from __future__ import annotations

import atexit
import logging
import os
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from audit.tracking import mlflow as tracking
from audit.tracking import ui
from audit.tracking.runs_table import runs_frame
from audit.config import TrackingConfig
from audit.tracking.jobs import in_job_order
from audit.tracking.run_names import SWEPT_KEYS_ENV, override_key
from audit.tables import write_frame

log = logging.getLogger(__name__)

PARENT_RUN_ENV = "AUDIT_MLFLOW_PARENT_RUN_ID"
# A job that ended on a user error leaves its one line here, in its own output folder: jobs may
# run in other processes (joblib, submitit, SLURM), so the launching process reads the files.
FAILED_JOB_FILE = "job_failed.txt"
FAILED_JOBS_ARTIFACT = "failed_jobs.txt"  # the parent run's copy of the failed jobs' lines
# The failed jobs' lines of the last multirun this process launched (python -m audit exits 2),
# and how many jobs it ran: the job folders whose Hydra config (.hydra/config.yaml) was written
# since it started (a sweep folder used again keeps the last sweep's); 0 when unknown.
failed_jobs: list[str] = []
jobs_run = 0
_multirun_started = 0.0


@dataclass
class OpenParent:
    """A sweep's parent run between its creation and its end, so that whatever stops the sweep
    early can still end it (end_unfinished_sweep) instead of leaving it RUNNING for good."""
    settings: TrackingConfig
    run_id: str
    sweep_dir: Path


open_parent: OpenParent | None = None


def in_multirun() -> bool:
    """Whether this is a job of a Hydra multirun (-m), whose user error must not end the sweep."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def job_failed(message: str) -> None:
    """Marks this multirun job failed with its one line, for on_multirun_end to count."""
    if in_multirun():
        folder = Path(HydraConfig.get().runtime.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / FAILED_JOB_FILE).write_text(message + "\n", encoding="utf-8")


def failed_jobs_line(advice: str) -> str | None:
    """The closing line of the last multirun when some of its jobs failed (each said why as it
    failed), ending with ``advice``; None when none failed."""
    if not failed_jobs:
        return None
    failed, run = len(failed_jobs), jobs_run
    # "the others finished" was said of a sweep none of whose jobs had (review 2026-12-04);
    # without a count of the jobs (no .hydra folders written), neither is said.
    outcome = (f"{failed} sweep job(s) failed" if run < failed or not run else
               f"all {run} sweep jobs failed" if failed == run else
               f"{failed} of {run} sweep jobs failed")
    others = "; the others finished" if 0 < failed < run else ""
    return f"{outcome} (each said why above){others}. {advice}"


def read_failed_jobs(sweep_dir: Path) -> list[str]:
    """`<job folder>: <its line>` for every job of the sweep folder that failed, in job order."""
    return [f"{path.parent.relative_to(sweep_dir)}: {path.read_text(encoding='utf-8').strip()}"
            for path in sorted(sweep_dir.glob(f"**/{FAILED_JOB_FILE}"),
                               key=lambda path: in_job_order(sweep_dir, path))]


def sweep_name(task_overrides: list[str]) -> str:
    """`+sweep=models` -> `sweep:models`; a hand-written sweep is named by its swept keys
    (`fit.draws=0,300` -> `sweep:fit.draws`), so sweeps can be told apart in the UI."""
    for override in task_overrides:
        if override.lstrip("+~").startswith("sweep="):
            return f"sweep:{override.split('=', 1)[1]}"
    keys = swept_keys(task_overrides, {})
    return f"sweep:{','.join(keys)}" if keys else "sweep"


def _swept_key(override: Any) -> str:
    """A sweep override's key without Hydra's `+`/`++` (an added key): `++design.seed=1,2`
    kept it, so its jobs matched no swept key and were named `job N`."""
    return override.get_key_element().lstrip("+")


def swept_values(task_overrides: list[str], sweeper_params: dict[str, Any]) -> dict[str, str]:
    """Each swept key with its values as written: a preset's params, then the command line's
    sweep overrides (`fit.draws=0,300` -> {"fit.draws": "0,300"}), which Hydra adds to them."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    values = {str(key): str(value) for key, value in sweeper_params.items()}
    for override in OverridesParser.create().parse_overrides(task_overrides):
        if override.is_sweep_override():
            values[_swept_key(override)] = override.input_line.split("=", 1)[1]
    return values


def replaced_grid(task_overrides: list[str], sweeper_params: dict[str, Any]) -> list[str]:
    """A line for each key of a sweep file's grid that a single value on the command line also
    sets: Hydra's sweeper lets the command line win, so `+sweep=fits fit=rasch` ran one job, not
    the grid's two, without a word (noticed 2026-12-04)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return [f"{override.input_line} on the command line replaces the sweep's values of "
            f"{override.get_key_element()} ({sweeper_params[override.get_key_element()]}), so "
            f"every job runs it; to sweep other values, set "
            f"hydra.sweeper.params.{override.get_key_element()}='A,B'"
            for override in OverridesParser.create().parse_overrides(task_overrides)
            if not override.is_sweep_override() and override.get_key_element() in sweeper_params]


def _tracking_config(config: DictConfig) -> TrackingConfig | None:
    section = config.get("tracking")
    if section is None or not section.get("enabled", False):
        return None
    return TrackingConfig(**OmegaConf.to_container(section, resolve=True))  # type: ignore[arg-type]


def parent_run_id() -> str | None:
    """The sweep's parent run, for a job of a Hydra multirun; None for a single run."""
    if not in_multirun():
        return None
    return os.environ.get(PARENT_RUN_ENV) or None


def job_tags() -> dict[str, str]:
    """What distinguishes this job inside its sweep (empty outside Hydra)."""
    if not HydraConfig.initialized():
        return {}
    hydra_config = HydraConfig.get()
    tags = {"hydra.overrides": " ".join(hydra_config.overrides.task) or "(none)"}
    if hydra_config.mode == RunMode.MULTIRUN:
        tags.update({"sweep.job_num": str(hydra_config.job.num),
                     "sweep.dir": str(hydra_config.sweep.dir)})
    return tags


def swept_keys(task_overrides: list[str], sweeper_params: dict[str, Any]) -> list[str]:
    """Keys a sweep varies: its preset's params and any command-line override with choices."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(task_overrides)
    keys = {_swept_key(override) for override in parsed if override.is_sweep_override()}
    return sorted(keys | set(sweeper_params))


def hydra_files() -> list[Path]:
    """The composed config, Hydra's own config and the overrides Hydra saved for this run."""
    if not HydraConfig.initialized():
        return []
    hydra_config = HydraConfig.get()
    if not hydra_config.output_subdir:
        return []
    folder = Path(hydra_config.runtime.output_dir) / hydra_config.output_subdir
    return sorted(path for path in folder.glob("*.yaml") if path.is_file())


# Hydra overrides that say where a sweep's folders go or that -m stands for: left out of the
# command that re-creates a sweep, so the rerun writes a new sweep folder, not into the old one.
RERUN_DROPS = ("hydra.sweep.dir", "hydra.run.dir", "hydra.mode")


def sweep_command(config: DictConfig) -> str:
    """The command that runs this sweep again (the `sweep.command` tag, which
    `python -m audit.runs show` prints): the entry point its config belongs to, -m, Hydra's own
    overrides (a preset's `hydra.sweeper.params.*`, the launcher) and the task's."""
    config_name = str(config.hydra.job.config_name)
    entry = "audit" if config_name == "config" else f"audit.{config_name}"
    hydra_overrides = [str(override) for override in config.hydra.overrides.hydra
                       if not override_key(str(override)).startswith(RERUN_DROPS)]
    return " ".join(shell_word(word) for word in ["python", "-m", entry, "-m", *hydra_overrides,
                                                   *map(str, config.hydra.overrides.task)])


def shell_word(word: str) -> str:
    """`word` as a POSIX shell reads it back, quoted the way the docs write it: an override with
    single quotes inside (`hydra.sweeper.params.model='a,b'`) in double quotes."""
    if shlex.quote(word) == word or "'" not in word or any(char in word for char in '"\\$`!'):
        return shlex.quote(word)
    return f'"{word}"'


def jobs_compose(config: DictConfig) -> bool:
    """Whether every job of the grid composes, as Hydra's basic sweeper will compose them. When
    one does not (`fit=nonexistent_fit,population`), the sweep gets no parent run: the sweeper
    composes the same jobs before it launches any (one batch: max_batch_size is unset) and raises
    that job's error, which every entry point turns into one line and exit 2. The parent was
    created first and then stayed RUNNING for good."""
    if not str(config.hydra.sweeper.get("_target_", "")).endswith("BasicSweeper"):
        return True  # another sweeper makes its own grid
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from audit.config_errors import HYDRA_ERRORS

    loader = GlobalHydra.instance().config_loader()
    params = config.hydra.sweeper.get("params") or {}
    listed = [*(f"{key}={value}" for key, value in params.items()),
              *map(str, config.hydra.overrides.task)]
    try:
        parsed = OverridesParser.create(config_loader=loader).parse_overrides(listed)
        for batch in BasicSweeper.split_arguments(parsed, None):
            for job in batch:
                loader.load_sweep_config(config, list(job))
    except HYDRA_ERRORS:
        return False
    return True


def end_unfinished_sweep(ended: BaseException | None) -> None:
    """Ends the sweep's parent run FAILED when the sweep stopped before on_multirun_end recorded
    its end (a job's bug, Ctrl-C, an error while ending it), saying why in its description: an
    open run would stay RUNNING in the UI for good. Nothing to do after a normal end."""
    global open_parent
    parent, open_parent = open_parent, None
    os.environ.pop(PARENT_RUN_ENV, None)
    os.environ.pop(SWEPT_KEYS_ENV, None)
    if parent is None:
        return
    if isinstance(ended, SystemExit):
        why = f"exit status {ended.code} (the sweep's log says why)"
    elif ended is not None:
        first_line = next(iter(str(ended).strip().splitlines()), "")
        why = f"{type(ended).__name__}: {first_line}" if first_line else type(ended).__name__
    else:
        why = "it stopped early or its end could not be recorded (the sweep's log says why)"
    lines = read_failed_jobs(parent.sweep_dir)
    text = "\n".join([f"The sweep stopped before its end: {why}.",
                      *([f"{len(lines)} job(s) failed:", *lines] if lines else [])])
    try:
        ui.set_run_description(parent.settings.tracking_uri, parent.run_id, text)
        tracking.end_parent_run(parent.settings, parent.run_id, {}, status="FAILED")
    except Exception as error:  # the cleanup must not hide why the sweep stopped
        log.warning("could not end sweep parent MLflow run %s as FAILED: %s", parent.run_id,
                    error)
        return
    log.error("sweep parent MLflow run %s ended FAILED: the sweep stopped before its end",
              parent.run_id)


class MlflowSweepCallback(Callback):
    """Configured in conf/config.yaml under hydra.callbacks; does nothing for single runs.
    ``parent_run: false`` (conf/plan.yaml): a sweep whose jobs log no MLflow run still checks
    its launcher and counts its failed jobs, but gets no parent run."""

    def __init__(self, parent_run: bool = True) -> None:
        self.parent_run = parent_run

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global open_parent, _multirun_started
        from audit.config_errors import exit_with_config_line
        from audit.launcher_settings import launcher_problem

        problem = launcher_problem(config.hydra.get("launcher"))
        if problem:  # before the parent run: a sweep that cannot launch has none
            exit_with_config_line(problem)
        failed_jobs.clear()
        _multirun_started = time.time()
        # A rerun into the same sweep folder (a fixed hydra.sweep.dir) must not count the last
        # run's failures, of jobs this grid may no longer have.
        for mark in Path(str(config.hydra.sweep.dir)).glob(f"**/{FAILED_JOB_FILE}"):
            mark.unlink(missing_ok=True)
        overrides = list(config.hydra.overrides.task)
        # A hand-written grid (`-m model=a,b`) has no sweeper params: to_container refuses a
        # plain dict, and the ValueError cost the sweep its parent run.
        params = config.hydra.sweeper.get("params")
        preset = dict(OmegaConf.to_container(params, resolve=True) if params else {})
        for line in replaced_grid(overrides, preset):
            log.warning("%s", line)
        settings = _tracking_config(config)
        if settings is None or not self.parent_run:
            return
        if not jobs_compose(config):
            return
        swept = swept_values(overrides, preset)
        tags = {**tracking.provenance(Path(str(config.paths.root_dir))),
                "sweep.dir": str(config.hydra.sweep.dir),
                "sweep.overrides": " ".join(overrides) or "(none)",
                "sweep.command": sweep_command(config),
                "sweep.params": "; ".join(f"{key}={value}" for key, value in
                                          sorted(swept.items())) or "(none)",
                "sweep.launcher": str(config.hydra.launcher.get("_target_", "")),
                "audit.role": "sweep"}
        try:
            run_id = tracking.start_parent_run(settings, sweep_name(overrides), tags)
        except tracking.TrackingError as error:
            # Hydra turns a callback's Exception into a UserWarning and launches the jobs, each
            # then failing on the same store with its own line; SystemExit is not an Exception,
            # so the sweep ends here, before any job: one line, exit 2.
            log.error("%s (checked before the sweep's jobs: none was run)", error)
            raise SystemExit(2) from None
        open_parent = OpenParent(settings, run_id, Path(str(config.hydra.sweep.dir)))
        # Entry points other than `python -m audit` (audit.ingest) do not call
        # end_unfinished_sweep with the exception: at exit, the parent still ends FAILED.
        atexit.register(end_unfinished_sweep, None)
        os.environ[PARENT_RUN_ENV] = run_id
        os.environ[SWEPT_KEYS_ENV] = ",".join(swept_keys(overrides, preset))
        log.info("sweep parent MLflow run %s (%s)", run_id, sweep_name(overrides))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global open_parent
        settings = _tracking_config(config)
        run_id = os.environ.pop(PARENT_RUN_ENV, None)
        os.environ.pop(SWEPT_KEYS_ENV, None)
        global jobs_run
        sweep_dir = Path(str(config.hydra.sweep.dir))
        failed_jobs[:] = read_failed_jobs(sweep_dir)
        jobs_run = sum(1 for path in sweep_dir.glob("**/.hydra/config.yaml")
                       if path.stat().st_mtime >= _multirun_started - 1.0)
        for line in failed_jobs:
            log.error("sweep job %s", line)
        if settings is None or run_id is None:
            return
        children = tracking.find_runs(settings.tracking_uri, settings.experiment,
                                      f"tags.`{tracking.PARENT_RUN_TAG}` = '{run_id}'",
                                      max_results=1000)
        metrics = {"sweep/n_runs": float(len(children)),
                   "sweep/n_failed": float(len(failed_jobs)),
                   "sweep/n_converged": float(sum(run["tags"].get("converged") == "true"
                                                  for run in children))}
        with tempfile.TemporaryDirectory() as scratch:
            table = Path(scratch) / "sweep_runs.csv"
            write_frame(runs_frame(children), table)
            files = [table]
            if failed_jobs:
                # A sweep with failed jobs must not look green in the UI: the parent ends
                # FAILED and says which jobs failed and why, in its description and a file.
                failed = Path(scratch) / FAILED_JOBS_ARTIFACT
                failed.write_text("".join(f"{line}\n" for line in failed_jobs),
                                  encoding="utf-8")
                files.append(failed)
                ui.set_run_description(
                    settings.tracking_uri, run_id,
                    "\n".join([f"{len(failed_jobs)} sweep job(s) failed (job folder: its line):",
                               *failed_jobs]))
            tracking.end_parent_run(settings, run_id, metrics, files,
                                    status="FAILED" if failed_jobs else "FINISHED")
        open_parent = None  # only now: an error above leaves it to end_unfinished_sweep
        log.info("sweep parent MLflow run %s: %d job runs logged under it; compare them with "
                 "`python -m audit.runs --sweep %s` or in the MLflow UI", run_id, len(children),
                 run_id)
