"""The run skeleton every method shares: its ordered stages, its files, config.yaml and MLflow run.

Each method used to carry its own copy of this (and the copies drifted: only the Rasch run nested
under a sweep's parent and tagged the sweep job, and only Rasch had DVC stages). Here once.

A method declares its stages in the order they run, one for each name in STAGE_NAMES: a function
from the config and the tables earlier stages wrote to the tables it writes (`Stage.writes`).
`run_stages` runs them all in one process (`python -m audit`: every file flat in the run
directory, names unchanged); `run_one_stage` runs one of them (`python -m audit.stages NAME`,
which `dvc repro` calls), each stage's files in a folder named after the stage, so dvc.yaml
declares the same five stages and out folders for every method and dispatches on `method`.
A method's MLflow run always writes config.yaml next to its tables, names and tags its run the
same way (audit.methods.run_identity), nests under the sweep's parent run when it is a sweep job,
and logs the Hydra files and the dvc.lock it ran from. Table I/O (atomic writes, the one
CSV/parquet reader) is audit.tables.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf

from audit.config import ModelConfig, PathsConfig
from audit.interrupts import raise_dropped_interrupt
from audit.methods.timings import (duration_metrics, read_stage_timings, timed,
                                   write_stage_timing)
from audit.design import ADAPTIVE_METHOD, check_adaptive_settings

from audit.methods import hydra_record
from audit.methods.configs import AuditConfig
# Re-exported: method plugins (docs/methods/writing.md before layout.py) import them from here.
from audit.methods.layout import (CONFIG_FILE, STAGE_NAMES, VERDICT_JUNIT_FILE,  # noqa: F401
                                  run_file, stage_name)
from audit.errors import AuditError
from audit.llm.backends import create_backend
from audit.llm.engine import collect_responses, summarise_responses
from audit.llm.failures import check_failures
from audit.llm.store import ResponseStore, store_problem
from audit.methods.run_identity import (composed_from, flat_config, pipeline_overrides, run_name,
                                        run_tags)
from audit.schemas import ResponseSchema
from audit.tables import write_json, write_table
from audit.outputs import check_output
from audit.tracking import mlflow as tracking
from audit.tracking import sweeps

log = logging.getLogger(__name__)

# Under `dvc repro` the report stage also writes the run's headline figures here (flat JSON, no
# durations), the file dvc.yaml declares as metrics for whatever the method is.
DVC_METRICS_FILE = "metrics.json"
# Where a run into a folder that holds an earlier run's files moves them (keep_earlier_run).
EARLIER_FOLDER = "earlier"


@dataclass(frozen=True)
class RunFiles:
    """Where a run's files live. `owners` (file name -> the stage that writes it) is empty for a
    whole run, so every file is flat in `directory` as it always was; under `dvc repro` it puts
    each file in its stage's folder (`pipeline/design/prompts.parquet`)."""

    directory: Path
    owners: Mapping[str, str] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        """`name` is a file or folder a stage writes, or a path inside such a folder."""
        head = name.split("/", 1)[0]
        stage = self.owners.get(head)
        # A folder named like its stage (Rasch's `report`) is that stage's folder, not nested.
        return self.directory / stage / name if stage and stage != head else self.directory / name


@dataclass
class RunClock:
    """When the run started (its MLflow run spans the work, not only its logging) and how long
    each finished stage took; a stage run on its own under DVC sees only its own start."""

    started_at: float = field(default_factory=time.time)
    timings: dict[str, float] = field(default_factory=dict)


StageResult = Mapping[str, object] | None


@dataclass(frozen=True)
class Stage:
    """One step of a method: reads earlier stages' files, writes `writes` (names in RunFiles)."""

    name: str
    run: Callable[[AuditConfig, RunFiles, RunClock], StageResult]
    writes: tuple[str, ...]


def check_stages(method: str, stages: Sequence[Stage]) -> None:
    """A method fills every slot, in order: dvc.yaml's stages are the same for all methods."""
    names = tuple(stage.name for stage in stages)
    if names != STAGE_NAMES:
        raise TypeError(f"method {method} declares stages {names}; every method declares "
                        f"{STAGE_NAMES} in that order")


def check_settings(cfg: AuditConfig) -> None:
    """What every method's run refuses before its first stage: settings no stage would read,
    and a response store that cannot be written."""
    ingest = getattr(cfg, "ingest", None)  # the Rasch method's section: answers from elsewhere
    imported = getattr(ingest, "input", None)
    if imported and cfg.method != ADAPTIVE_METHOD:
        # Another method's stages never read it: the answers were dropped and the model asked
        # the whole design instead (bad-input review 2026-12-02).
        raise AuditError(f"ingest.input={imported} imports answers for the Rasch method only; "
                         f"method={cfg.method} would ignore it and ask its model the whole "
                         "design: drop ingest.input, or use method=rasch"
                         + ("; for IAT answers collected elsewhere, python -m audit.iat "
                            "import_dir=FOLDER" if cfg.method == "iat" else ""))
    check_adaptive_settings(cfg.method, cfg.design, imported)
    if cfg.paths.data_dir != PathsConfig().data_dir:
        # It looked like the place data files are read from, and changed nothing (bad-input
        # review 2026-12-04).
        log.warning("paths.data_dir=%s is read by nothing: each data file has its own key "
                    "(items.bank, personas.explicit_file, personas.names_file, judge.gold_file, "
                    "...); set those to read files from another folder", cfg.paths.data_dir)
    # A store that cannot be made (a file in its path, /proc) was a sqlite3 traceback once the
    # design was written and the first answer was due.
    check_output(Path(cfg.paths.response_store), "paths.response_store=")
    problem = store_problem(cfg.paths.response_store)
    if problem:
        raise AuditError(f"paths.response_store={cfg.paths.response_store} {problem}, not a "
                         f"response store: name a new file (the default is "
                         f".audit/responses.sqlite3), or the store of earlier runs")


def check_tracking(cfg: AuditConfig, before: str,
                   without_store: str = tracking.WITHOUT_STORE) -> None:
    """A store that is down (or a wrong tracking_uri) is one line before any work, not a
    traceback after the model's time is spent."""
    if not cfg.tracking.enabled:
        return
    try:
        tracking.check_store(cfg.tracking, without_store)
    except tracking.TrackingError as error:
        raise tracking.TrackingError(f"{error} (checked {before}: nothing was run)") from error


def run_stages(stages: Sequence[Stage], cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
    """`python -m audit`: every stage in order in one process; each writes its tables as soon as
    they exist, so a failure later never loses finished work. Returns the stages' results."""
    clock = RunClock()  # the run spans the work from here, the store's check included
    check_stages(cfg.method, stages)
    check_settings(cfg)
    # An existing file there (or a path under /proc) was a FileExistsError traceback when the
    # design stage wrote its first table (bad-input review 2026-12-04).
    check_output(Path(output_dir), "paths.output_dir=", folder=True)
    check_tracking(cfg, "before the first stage")
    files = RunFiles(Path(output_dir))
    keep_earlier_run(stages, files.directory)
    result: dict[str, object] = {}
    for stage in stages:
        raise_dropped_interrupt()  # one Python dropped in the stage before (audit.interrupts)
        with timed(clock.timings, stage.name):
            result.update(stage.run(cfg, files, clock) or {})
    return result


def keep_earlier_run(stages: Sequence[Stage], directory: Path) -> Path | None:
    """A run into a folder that holds an earlier run's files (a fixed hydra.run.dir run again,
    as in CI) first moves them to EARLIER_FOLDER/TIME/, TIME when they were last written. Left in
    place, a new run that failed halfway left its new prompts beside the old fit and report,
    which a verdict or `audit.compare` then read as one run; deleted, they would be finished work
    lost. Only the files the stages declare (and config.yaml) move: Hydra's own files are the new
    run's, and a folder holding other files (hydra.run.dir=.) keeps them; Hydra's record of the
    earlier run, which it replaced as this run started, moves with them (hydra_record)."""
    record = hydra_record.take(directory)
    working = Path.cwd().resolve()
    if directory.resolve() == working or directory.resolve() in working.parents:
        return None  # hydra.run.dir=.: a file named like a table may be the user's own
    # The verdict's JUnit file too: left in place, a CI job whose rerun was cancelled published
    # the earlier run's results as this one's (CI review 2026-12-02).
    names = dict.fromkeys([*(name for stage in stages for name in stage.writes), CONFIG_FILE,
                           VERDICT_JUNIT_FILE])
    found = [name for name in names if (directory / name).exists()]
    if not found:
        return None
    written = max((directory / name).stat().st_mtime for name in found)
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(written))
    target, copy = directory / EARLIER_FOLDER / stamp, 1
    while target.exists():
        copy += 1
        target = directory / EARLIER_FOLDER / f"{stamp}_{copy}"
    for name in found:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).rename(target / name)
    if record is not None:
        hydra_record.write(target, *record)
    log.warning("%s held an earlier run's files: moved them to %s, so that this run's tables "
                "do not mix with them", directory, target)
    return target


def find_stage(stages: Sequence[Stage], name: str) -> Stage:
    """The stage a name or an older alias (layout.STAGE_ALIASES) means."""
    slot = stage_name(name)
    return next(stage for stage in stages if stage.name == slot)  # check_stages: every slot


def stage_files(stages: Sequence[Stage], directory: Path) -> RunFiles:
    return RunFiles(Path(directory), {name: stage.name for stage in stages
                                      for name in stage.writes})


def run_one_stage(stages: Sequence[Stage], name: str, cfg: AuditConfig, directory: Path,
                  overrides: Sequence[str] | None = None) -> dict[str, object]:
    """`python -m audit.stages NAME` (what dvc.yaml runs): one stage, its files in
    `directory/STAGE/`, reading earlier stages' folders. `overrides` (what params.yaml was
    composed from; None when unknown) name and tag the run as Hydra's do under
    `python -m audit`."""
    check_stages(cfg.method, stages)
    check_settings(cfg)
    stage = find_stage(stages, name)
    check_tracking(cfg, f"before stage {stage.name}",
                   "write params.yaml again with `python -m audit.params OVERRIDES tracking=none`")
    files = stage_files(stages, directory)
    folder = Path(directory) / stage.name
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    clock = RunClock()
    if stage.name == STAGE_NAMES[-1]:
        clock.timings.update(read_stage_timings(Path(directory), STAGE_NAMES[:-1]))
    try:
        with composed_from(overrides), timed(clock.timings, stage.name):
            result = dict(stage.run(cfg, files, clock) or {})
    except BaseException:  # refused at once (an input missing): no empty folder that looks run
        if made and not any(folder.iterdir()):
            folder.rmdir()
        raise
    write_stage_timing(clock.timings[stage.name], Path(directory), stage.name)
    if stage.name == STAGE_NAMES[-1]:
        write_headline_metrics(result.get("metrics") or {},
                               Path(directory) / stage.name / DVC_METRICS_FILE)
    return result


def write_headline_metrics(metrics: Mapping[str, object], path: Path) -> Path:
    """The figures `dvc metrics diff` compares: a flat JSON without wall times (they differ on
    every run and would bury the figures that changed)."""
    headline = {key: value for key, value in sorted(metrics.items())
                if not key.startswith("duration_s/")}
    return write_json(headline, path)


def write_config(cfg: AuditConfig, directory: Path) -> Path:
    """The composed config next to the run's tables, whether or not MLflow is on."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFIG_FILE
    path.write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))
    return path


@contextmanager
def method_run(cfg: AuditConfig, tags: Mapping[str, str] | None = None,
               started_at: float | None = None,
               directory: Path | None = None) -> Iterator[tracking.RunInfo | None]:
    """The method's MLflow run (None when tracking is off), nested under the sweep's parent run
    when this process is a sweep job, starting when the work started (started_at, epoch
    seconds); params are logged on entry. A store that fails is one line that says the run's
    files are safe in `directory`."""
    if not cfg.tracking.enabled:
        yield None
        return
    flat = flat_config(cfg)
    try:
        with tracking.mlflow_run(cfg.tracking, run_name(cfg), run_tags(cfg, flat, tags),
                                 parent_run_id=sweeps.parent_run_id(),
                                 started_at=started_at) as run_info:
            tracking.log_params(flat)
            yield run_info
    except tracking.TrackingError as error:
        if directory is None:
            raise
        raise tracking.TrackingError(f"{error}; the run's tables and report are in "
                                     f"{directory}") from error


def provenance_files(cfg: AuditConfig, config_file: Path) -> list[tuple[str, Path]]:
    """config.yaml, the dvc.lock the run was made from (under `dvc repro` every earlier stage has
    its entry) and the Hydra files of the job."""
    lock = Path(cfg.paths.root_dir) / "dvc.lock"
    hydra = sweeps.hydra_files()
    overrides = pipeline_overrides()
    if not hydra and overrides is not None:
        # Under `dvc repro`, params.overrides in Hydra's own file: `audit.runs params` restores
        # it from there, so a later `dvc exp run -S` is again held to repeat them.
        hydra = [config_file.with_name("overrides.yaml")]
        OmegaConf.save(OmegaConf.create(list(overrides)), hydra[0])
    return [("", config_file), *([("", lock)] if lock.is_file() else []),
            *[("hydra", path) for path in hydra]]


def log_run(cfg: AuditConfig, metrics: Mapping[str, float],
            artifacts: Iterable[tuple[str, Path]], config_file: Path,
            tags: Mapping[str, str] | None = None, started_at: float | None = None,
            directory: Path | None = None) -> tracking.RunInfo | None:
    """One MLflow run with the metrics, the artifacts and the provenance files; None when off.
    `directory`: where the run's files are, named if the store fails."""
    with method_run(cfg, tags, started_at, directory) as run_info:
        if run_info is None:
            return None
        tracking.log_metrics(metrics)
        tracking.log_artifacts([*artifacts, *provenance_files(cfg, config_file)])
    # Where to see it is in the summary the run ends with (audit.methods.summary).
    log.info("MLflow run %s in experiment '%s'", run_info.run_id, cfg.tracking.experiment)
    return run_info


def read_metrics(path: Path) -> dict[str, float]:
    if not path.is_file():
        raise AuditError(f"metrics not found at {path}: run the analyse stage first")
    # null is a figure with no value (write_json); MLflow takes it as NaN, as it was logged
    # before metrics files were strict JSON.
    return {name: math.nan if value is None else value
            for name, value in json.loads(path.read_text()).items()}


def write_metrics(metrics: Mapping[str, float], path: Path) -> Path:
    return write_json(dict(metrics), path, sort_keys=True)


def logged_report(cfg: AuditConfig, files: RunFiles, clock: RunClock, metrics_file: str,
                  artifacts: Iterable[tuple[str, str]],
                  tags: Mapping[str, str] | None = None) -> dict[str, object]:
    """The report stage of a method whose analyse stage wrote its figures to `metrics_file`:
    config.yaml, then one MLflow run with those figures, the stages' wall times and the
    `artifacts` (MLflow folder, file name) that exist."""
    metrics = {**read_metrics(files.path(metrics_file)), **duration_metrics(clock.timings)}
    config_file = write_config(cfg, files.path(CONFIG_FILE).parent)
    paths = [(folder, files.path(name)) for folder, name in artifacts]
    run_info = log_run(cfg, metrics, [(folder, path) for folder, path in paths if path.exists()],
                       config_file, tags, clock.started_at, files.directory)
    return {"run": run_info, "metrics": metrics}


def answer_prompts(cfg: AuditConfig, prompts: pl.DataFrame, models: Mapping[str, ModelConfig],
                   what: str) -> pl.DataFrame:
    """Each prompt through the shared engine and response store (what the store holds is not sent
    again), with the counts logged; failures stay rows of the table."""
    backends = {name: create_backend(models[name]) for name in sorted(models)}
    with ResponseStore(cfg.paths.response_store) as store:
        responses = collect_responses(prompts, backends, dict(models), store, cfg.engine)
    counts = summarise_responses(responses)
    log.info("%s respond: %d sent, %d from the store, %d failed", what, counts["sent"],
             counts["cached"], counts["failed"])
    return responses


def send_prompts(cfg: AuditConfig, prompts: pl.DataFrame, models: Mapping[str, ModelConfig],
                 path: Path, what: str) -> pl.DataFrame:
    """Every method's respond stage: the answers (answer_prompts) written to `path`, and the
    stage stopped when too many requests failed (the written answers are kept)."""
    responses = answer_prompts(cfg, prompts, models, what)
    write_table(responses, path, ResponseSchema, f"{what} responses")
    check_failures(responses, cfg.engine.max_failed_share, cfg.paths.response_store,
                   f"{what} requests")
    return responses
