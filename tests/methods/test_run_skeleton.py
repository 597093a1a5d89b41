"""The run skeleton every method shares (audit.methods.run): a method's MLflow run nests under a
sweep's parent run and is tagged with the sweep job, like the Rasch run always was; config.yaml is
written next to the tables whether or not MLflow is on."""

from __future__ import annotations

from collections.abc import Iterator
import json
import time
from pathlib import Path

import mlflow
import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig

from audit.errors import AuditError
from audit.config import CONF_DIR, ModelConfig, PathsConfig, TrackingConfig
from audit.methods.configs import AuditConfig
from audit.methods import METHODS, create_method
from audit.methods.dif.config import DIFConfig
from audit.methods.run import (
    CONFIG_FILE,
    DVC_METRICS_FILE,
    STAGE_NAMES,
    check_stages,
    find_stage,
    log_run,
    run_one_stage,
    write_config,
)
from audit.tracking import mlflow as tracking
from audit.tracking import run_names, sweeps

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def dif_config(tmp_path: Path, enabled: bool = True) -> AuditConfig:
    return AuditConfig(
        model={"fake": ModelConfig(backend="fake", model="fake-a")},
        dif=DIFConfig(items_file=str(PROJECT_ROOT / "data/dif/items.csv"),
                      personas_file=str(PROJECT_ROOT / "data/dif/personas.csv"), per_cell=1,
                      datasets=["logic"], persona_ids=["black", "woman"], null_count=2,
                      permutation_resamples=99),
        tracking=TrackingConfig(enabled=enabled, tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                                artifact_root=str(tmp_path / "artifacts"), experiment="skeleton"),
        paths=PathsConfig(root_dir=str(tmp_path), response_store=str(tmp_path / "r.sqlite3"),
                          output_dir=str(tmp_path / "out")), method="dif")


@pytest.fixture
def sweep_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[AuditConfig, str]]:
    """A sweep's parent run, announced to this process as the callback announces it to jobs,
    and Hydra's state as a multirun job sees it."""
    cfg = dif_config(tmp_path)
    parent = tracking.start_parent_run(cfg.tracking, "sweep:models", {"audit.role": "sweep"})
    monkeypatch.setenv(sweeps.PARENT_RUN_ENV, parent)
    monkeypatch.setenv(run_names.SWEPT_KEYS_ENV, "model")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        job = compose("config", overrides=["hydra.mode=MULTIRUN", "hydra.job.num=1",
                                           f"hydra.sweep.dir={tmp_path / 'multirun'}",
                                           f"hydra.runtime.output_dir={tmp_path / 'out'}"],
                      return_hydra_config=True)
    HydraConfig.instance().set_config(job)
    yield cfg, parent
    HydraConfig.instance().cfg = None


def test_a_dif_job_of_a_sweep_nests_under_the_parent_run(sweep_parent, tmp_path: Path):
    """DIF logged a top-level run before the skeleton: a sweep's jobs did not group."""
    cfg, parent = sweep_parent
    result = create_method("dif").run(cfg, tmp_path / "out")
    mlflow.set_tracking_uri(cfg.tracking.tracking_uri)
    run = mlflow.get_run(result["run"].run_id)
    assert run.data.tags[tracking.PARENT_RUN_TAG] == parent
    assert run.data.tags["method"] == "dif" and run.info.run_name == "dif fake"
    assert run.data.tags["sweep.job_num"] == "1"
    logged = {item.path for item in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert "config.yaml" in logged


def test_log_run_outside_a_sweep_is_a_top_level_run(tmp_path: Path, monkeypatch):
    monkeypatch.delenv(sweeps.PARENT_RUN_ENV, raising=False)
    cfg = dif_config(tmp_path)
    config_file = write_config(cfg, tmp_path / "out")
    table = tmp_path / "out" / "t.csv"
    table.write_text("a\n1\n")
    info = log_run(cfg, {"n_prompts": 3.0}, [("tables", table)], config_file, {"extra": "x"})
    run = mlflow.get_run(info.run_id)
    assert tracking.PARENT_RUN_TAG not in run.data.tags
    assert run.data.tags["extra"] == "x" and run.data.metrics["n_prompts"] == 3.0
    assert run.data.params["dif.per_cell"] == "1"


def test_config_yaml_is_written_when_tracking_is_off(tmp_path: Path):
    cfg = dif_config(tmp_path, enabled=False)
    assert log_run(cfg, {}, [], write_config(cfg, tmp_path / "out")) is None
    assert "per_cell: 1" in (tmp_path / "out" / "config.yaml").read_text()


def test_the_mlflow_run_spans_the_work_not_only_its_logging(tmp_path: Path):
    """Runs were opened at publish time, so a multi-minute audit showed a 0.2 s duration."""
    cfg = dif_config(tmp_path)
    method = create_method("dif")  # imports the method's modules before the clock starts
    before = int(time.time() * 1000)
    result = method.run(cfg, tmp_path / "out")
    run = mlflow.get_run(result["run"].run_id)
    work_ms = 1000 * sum(value for name, value in run.data.metrics.items()
                         if name.startswith("duration_s/"))
    assert before <= run.info.start_time <= before + 1000
    assert run.info.end_time - run.info.start_time >= work_ms


# --- one skeleton, two ways of running it --------------------------------------------------------

def test_every_method_declares_the_five_stages_in_order():
    """dvc.yaml's stages are the same for every method: a method missing one would leave
    `dvc repro` with an empty out folder (or a stage that reruns another method's code)."""
    for name in METHODS:
        stages = create_method(name).stages
        check_stages(name, stages)
        written = [file for stage in stages for file in stage.writes]
        assert len(written) == len(set(written)), name  # each file has one owner stage
        assert stages[-1].writes == (CONFIG_FILE,) or name == "rasch"


def test_an_interrupt_dropped_in_a_stage_stops_the_run_before_the_next(tmp_path: Path):
    """Bug caught: a Ctrl-C or SIGTERM that Python dropped in a garbage-collection callback
    during one stage, after which every later stage ran and the run exited 0 (probe
    2026-12-07)."""
    from dropped_interrupt import DroppingOnCollect

    from audit.interrupts import termination_as_interrupt
    from audit.methods.run import Stage, run_stages

    ran = []

    def stage(name: str) -> Stage:
        def run(cfg, files, clock):
            ran.append(name)
            if name == "respond":
                DroppingOnCollect()
        return Stage(name, run, ())

    with termination_as_interrupt(), pytest.raises(KeyboardInterrupt):
        run_stages([stage(name) for name in STAGE_NAMES], dif_config(tmp_path, enabled=False),
                   tmp_path / "out")
    assert ran == ["design", "respond"]


def test_stages_run_one_at_a_time_write_the_same_tables_into_stage_folders(tmp_path: Path):
    """What `dvc repro` runs (one stage a process, files in pipeline/STAGE/) gives the tables a
    whole run gives, and the report stage writes the headline metrics dvc.yaml declares."""
    cfg = dif_config(tmp_path, enabled=False)
    method = create_method("dif")
    whole = method.run(cfg, tmp_path / "out")
    pipeline = tmp_path / "pipeline"
    for stage in STAGE_NAMES:
        run_one_stage(method.stages, stage, cfg, pipeline)
    # A folder a stage (DVC's outs), and the stages' wall times beside them (outside the outs).
    assert sorted(path.name for path in pipeline.iterdir()) == sorted([*STAGE_NAMES, ".timings"])
    for stage, name in (("design", "dif_prompts.parquet"), ("score", "dif_answers.parquet")):
        assert pl.read_parquet(pipeline / stage / name).drop("from_cache", strict=False).equals(
            pl.read_parquet(tmp_path / "out" / name).drop("from_cache", strict=False)), name
    assert pl.read_csv(pipeline / "analyse" / "dif_tests.csv").equals(
        pl.read_csv(tmp_path / "out" / "dif_tests.csv"))
    assert (pipeline / "report" / "config.yaml").is_file()
    headline = json.loads((pipeline / "report" / DVC_METRICS_FILE).read_text())
    assert headline["n_prompts"] == whole["metrics"]["n_prompts"]
    assert not any(key.startswith("duration_s/") for key in headline)
    assert any(key.startswith("duration_s/") for key in whole["metrics"])


def test_an_old_rasch_stage_name_still_runs_and_an_unknown_one_is_one_line():
    stages = create_method("rasch").stages
    assert find_stage(stages, "fit").name == "analyse"
    assert find_stage(stages, "judge_gold").name == "score"
    with pytest.raises(AuditError, match=r"unknown stage 'fitt': use one of design, respond"
                                         r".*\(did you mean 'fit'\?\)"):
        find_stage(stages, "fitt")


@pytest.mark.parametrize(("method", "design", "ingest_input", "message"), [
    ("iat", {"adaptive": True}, None, "design.adaptive=true applies to the Rasch method only"),
    ("rasch", {"adaptive": True}, "answers.csv", "ingest.input=answers.csv imports answers"),
    ("rasch", {"max_prompts": 5, "max_tokens_budget": 100},
     None, "design.max_prompts, design.max_tokens_budget apply to an adaptive Rasch audit only"),
    ("dif", {"max_answer_minutes": 1.0}, None, "design.max_answer_minutes applies to"),
    ("rasch", {"round_prompts": 10}, None, "design.round_prompts applies to"),
    ("rasch", {"futility": 0.1, "futility_from": 0.5}, None,
     "design.futility, design.futility_from apply to"),
    # Bad-input review 2026-12-02: another method ignored ingest.input and asked its model the
    # whole design (168 IAT prompts) instead of reading the answers given.
    ("iat", {}, "answers.csv", "ingest.input=answers.csv imports answers for the Rasch method "
                               "only; method=iat would ignore it"),
    ("dif", {}, "answers.csv", "ingest.input=answers.csv imports answers for the Rasch method"),
])
def test_a_budget_nothing_reads_is_refused_before_the_first_stage(method, design, ingest_input,
                                                                  message, tmp_path: Path):
    """Defect 3 of the adaptive review: design.adaptive with another method (or with imported
    answers), and the budgets without design.adaptive, were silently ignored and the whole
    design sent (168 IAT prompts for design.max_prompts=5). Each is one line before any stage,
    whether the whole run or one DVC stage runs; an adaptive Rasch run with its budgets, and a
    fixed run without them, pass the check."""
    from dataclasses import replace

    from audit.config import DesignConfig
    from audit.methods.rasch.config import IngestConfig
    from audit.methods.run import Stage, run_stages

    ran: list[str] = []
    stages = tuple(Stage(name, lambda cfg, files, clock, name=name: ran.append(name), ())
                   for name in STAGE_NAMES)
    cfg = replace(dif_config(tmp_path, enabled=False), method=method,
                  design=DesignConfig(**design), ingest=IngestConfig(input=ingest_input))
    with pytest.raises(AuditError, match=message):
        run_stages(stages, cfg, tmp_path / "out")
    with pytest.raises(AuditError, match=message):
        run_one_stage(stages, "design", cfg, tmp_path / "pipeline")
    assert ran == []
    adaptive = replace(cfg, method="rasch", ingest=IngestConfig(),
                       design=DesignConfig(**{**design, "adaptive": True}))
    fixed = replace(cfg, design=DesignConfig(), ingest=IngestConfig())
    for passing in (adaptive, fixed):
        run_stages(stages, passing, tmp_path / "out")
    assert ran == [*STAGE_NAMES, *STAGE_NAMES]


def test_a_run_into_a_finished_runs_folder_moves_its_files_aside_first(tmp_path: Path,
                                                                        monkeypatch):
    """A fixed hydra.run.dir run again (CI: `hydra.run.dir=runs/old`). Bugs caught: the second
    run, failing at its respond stage, left its new prompts beside the first run's fit and
    report, which a verdict then judged as one run; or the earlier files deleted (finished work
    lost). They move to earlier/TIME/, whole; Hydra's log and a file no stage declares stay."""
    from dataclasses import replace

    from audit.methods.run import EARLIER_FOLDER, Stage, run_stages

    def writer(name: str, text: str, fail: bool = False):
        def run(cfg, files, clock):
            if fail:
                raise AuditError("the model is down")
            path = files.path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return run

    def stages(run: str, fail_at: str | None = None):
        names = {"design": "prompts.txt", "respond": "responses.txt", "score": "labels.txt",
                 "analyse": "fit/summary.txt", "report": "report/report.txt"}
        return tuple(Stage(stage, writer(file, f"{run} {stage}", fail=stage == fail_at),
                           (file.split("/")[0],)) for stage, file in names.items())

    cfg = replace(dif_config(tmp_path, enabled=False), method="rasch")
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    run_stages(stages("first"), cfg, out)
    (out / "verdict_junit.xml").write_text("the first run's verdict")
    (out / "__main__.log").write_text("hydra's log")
    (out / "notes.md").write_text("the user's own")
    with pytest.raises(AuditError, match="the model is down"):
        run_stages(stages("second", fail_at="respond"), cfg, out)
    assert (out / "prompts.txt").read_text() == "second design"
    assert not any((out / name).exists() for name in
                   ("responses.txt", "labels.txt", "fit", "report")), sorted(out.iterdir())
    (earlier,) = (out / EARLIER_FOLDER).iterdir()
    assert (earlier / "fit" / "summary.txt").read_text() == "first analyse"
    assert (earlier / "report" / "report.txt").read_text() == "first report"
    # The verdict's JUnit file too: left, a CI step publishing it after a cancelled rerun
    # showed the first run's results as the second's (CI review 2026-12-02).
    assert sorted(path.name for path in earlier.iterdir()) == [
        "fit", "labels.txt", "prompts.txt", "report", "responses.txt", "verdict_junit.xml"]
    assert (out / "__main__.log").exists() and (out / "notes.md").exists()
    run_stages(stages("third"), cfg, out)  # a second move does not overwrite the first
    assert len(list((out / EARLIER_FOLDER).iterdir())) == 2
    assert (out / "report" / "report.txt").read_text() == "third report"


def test_a_response_store_that_cannot_be_made_is_one_line_before_the_first_stage(tmp_path):
    """Bad-input review 2026-12-01: paths.response_store under a file (or in /proc) was a
    61-line sqlite3 or FileExistsError traceback after the design stage, when the first answer
    was due; whether the whole run or one DVC stage runs."""
    from dataclasses import replace

    from audit.config import PathsConfig
    from audit.methods.run import Stage, run_stages

    (tmp_path / "good.csv").write_text("a,b\n")
    ran: list[str] = []
    stages = tuple(Stage(name, lambda cfg, files, clock, name=name: ran.append(name), ())
                   for name in STAGE_NAMES)
    cfg = replace(dif_config(tmp_path, enabled=False), paths=PathsConfig(
        root_dir=str(tmp_path), response_store=str(tmp_path / "good.csv" / "r.sqlite3"),
        output_dir=str(tmp_path / "out")))
    message = r"^paths.response_store=.*good.csv/r.sqlite3: .*good.csv is a file, not a folder"
    with pytest.raises(AuditError, match=message):
        run_stages(stages, cfg, tmp_path / "out")
    with pytest.raises(AuditError, match=message):
        run_one_stage(stages, "design", cfg, tmp_path / "pipeline")
    assert ran == []


def _sqlite_with_table(path, table: str):
    import sqlite3

    with sqlite3.connect(path) as connection:
        connection.execute(f"CREATE TABLE {table} (x INTEGER)")
    return path


@pytest.mark.parametrize("make, problem", [
    (lambda path: path.write_text("a,b\n1,2\n"), r"is not an SQLite database"),
    # MLflow's own store: the answers went into it
    (lambda path: _sqlite_with_table(path, "experiments"),
     r"is another program's SQLite database \(its tables: experiments\)"),
])
def test_a_file_that_is_not_a_response_store_is_one_line_before_the_first_stage(
        tmp_path, make, problem):
    """Bad-input review 2026-12-04: paths.response_store naming a text file was sqlite3's "file
    is not a database" traceback after the design stage; naming MLflow's mlflow.db, the answers
    were written into it. An empty file and a store of earlier runs are taken."""
    from dataclasses import replace

    from audit.config import PathsConfig
    from audit.llm.store import ResponseStore
    from audit.methods.run import Stage, check_settings, run_stages

    ran: list[str] = []
    stages = tuple(Stage(name, lambda cfg, files, clock, name=name: ran.append(name), ())
                   for name in STAGE_NAMES)
    store = tmp_path / "store.sqlite3"
    make(store)
    cfg = replace(dif_config(tmp_path, enabled=False), paths=PathsConfig(
        root_dir=str(tmp_path), response_store=str(store), output_dir=str(tmp_path / "out")))
    with pytest.raises(AuditError, match=rf"^paths.response_store=.*store.sqlite3 {problem}, "
                                         r"not a response store: name a new file"):
        run_stages(stages, cfg, tmp_path / "out")
    assert ran == []
    store.unlink()
    store.touch()
    check_settings(cfg)
    ResponseStore(store).close()
    check_settings(cfg)


def test_an_output_folder_that_is_a_file_is_one_line_before_the_first_stage(tmp_path):
    """Bad-input review 2026-12-04: paths.output_dir naming an existing file was a
    FileExistsError traceback when the design stage wrote its first table."""
    from dataclasses import replace

    from audit.config import PathsConfig
    from audit.methods.run import Stage, run_stages

    ran: list[str] = []
    stages = tuple(Stage(name, lambda cfg, files, clock, name=name: ran.append(name), ())
                   for name in STAGE_NAMES)
    (tmp_path / "afile").write_text("x")
    cfg = replace(dif_config(tmp_path, enabled=False), paths=PathsConfig(
        root_dir=str(tmp_path), response_store=str(tmp_path / "r.sqlite3"),
        output_dir=str(tmp_path / "afile")))
    with pytest.raises(AuditError, match=r"^paths.output_dir=.*afile is a file, not a folder"):
        run_stages(stages, cfg, tmp_path / "afile")
    assert ran == []


def test_a_data_folder_setting_that_moves_no_file_is_warned_of(tmp_path, caplog):
    """Bug caught (bad-input review 2026-12-04): paths.data_dir=/my/data was taken without a
    word, and every data file was still read from its own key's path (./data or the shipped
    copy). The default says nothing."""
    from dataclasses import replace

    from audit.config import PathsConfig
    from audit.methods.run import check_settings

    paths = PathsConfig(root_dir=str(tmp_path), response_store=str(tmp_path / "r.sqlite3"),
                        output_dir=str(tmp_path / "out"))
    cfg = replace(dif_config(tmp_path, enabled=False), paths=paths)
    with caplog.at_level("WARNING"):
        check_settings(cfg)
        assert caplog.messages == []
        check_settings(replace(cfg, paths=replace(paths, data_dir="/my/data")))
    assert caplog.messages == ["paths.data_dir=/my/data is read by nothing: each data file has "
                               "its own key (items.bank, personas.explicit_file, "
                               "personas.names_file, judge.gold_file, ...); set those to read "
                               "files from another folder"]


def _silent_stages(ran: list[str], results: bool = False) -> tuple:
    """One stage a slot, recording that it ran (and returning {its name: its index})."""
    from audit.methods.run import Stage

    def stage(name: str, index: int):
        def run(cfg, files, clock):
            ran.append(name)
            return {name: index} if results else None
        return Stage(name, run, ())
    return tuple(stage(name, index) for index, name in enumerate(STAGE_NAMES))


def test_a_file_of_a_stage_is_in_its_folder_and_a_folder_named_like_its_stage_is_not_nested(
        tmp_path: Path):
    """Catches Rasch's `report` folder written to pipeline/report/report/ under `dvc repro`, or a
    path inside a stage's folder (fit/summary.csv) looked up by its last part."""
    from audit.methods.run import RunFiles

    files = RunFiles(tmp_path, {"report": "report", "fit": "analyse", "prompts.csv": "design"})
    assert files.path("report/report.html") == tmp_path / "report" / "report.html"
    assert files.path("fit/summary.csv") == tmp_path / "analyse" / "fit" / "summary.csv"
    assert files.path("prompts.csv") == tmp_path / "design" / "prompts.csv"
    assert files.path("other.csv") == tmp_path / "other.csv"
    assert RunFiles(tmp_path).path("fit/summary.csv") == tmp_path / "fit" / "summary.csv"


def test_stages_declared_out_of_order_are_refused():
    """Catches check_stages comparing the names without their order: a method whose respond
    stage came before its design stage would run it first."""
    from audit.methods.run import Stage

    stages = [Stage(name, lambda cfg, files, clock: None, ()) for name in STAGE_NAMES]
    stages[0], stages[1] = stages[1], stages[0]
    with pytest.raises(TypeError, match=r"method m declares stages \('respond', 'design'"):
        check_stages("m", stages)


@pytest.mark.parametrize(("method", "ending"), [
    ("iat", "use method=rasch; for IAT answers collected elsewhere, python -m audit.iat "
            "import_dir=FOLDER"),
    ("dif", "use method=rasch")])
def test_imported_answers_for_another_method_name_the_iat_import_for_iat_only(
        tmp_path: Path, method: str, ending: str):
    """Catches the IAT's own import command offered to a DIF run (or not to an IAT run)."""
    from dataclasses import replace

    from audit.methods.rasch.config import IngestConfig
    from audit.methods.run import check_settings

    cfg = replace(dif_config(tmp_path, enabled=False), method=method,
                  ingest=IngestConfig(input="answers.csv"))
    with pytest.raises(AuditError) as refused:
        check_settings(cfg)
    assert str(refused.value).endswith(ending)


def test_run_stages_returns_what_every_stage_returned(tmp_path: Path):
    """Catches the results of earlier stages dropped, each stage's replacing the last."""
    from audit.methods.run import run_stages

    ran: list[str] = []
    result = run_stages(_silent_stages(ran, results=True), dif_config(tmp_path, enabled=False),
                        tmp_path / "out")
    assert result == {name: index for index, name in enumerate(STAGE_NAMES)}


@pytest.mark.parametrize("run", ["whole", "one stage"])
def test_a_bad_mlflow_store_is_one_line_before_any_stage_unless_tracking_is_off(
        tmp_path: Path, run: str):
    """Catches the MLflow store checked with tracking off (a run refused for a store it never
    writes), or its line without "nothing was run" and, for a DVC stage, the fix that applies
    there (params.yaml written again)."""
    from dataclasses import replace

    from audit.methods.run import run_stages

    ran: list[str] = []
    cfg = dif_config(tmp_path)
    cfg = replace(cfg, tracking=replace(cfg.tracking, tracking_uri=" "))
    stages = _silent_stages(ran)
    if run == "whole":
        message = r"or pass tracking=none \(checked before the first stage: nothing was run\)$"
        with pytest.raises(tracking.TrackingError, match=message):
            run_stages(stages, cfg, tmp_path / "out")
    else:
        message = (r"or write params.yaml again with `python -m audit.params OVERRIDES "
                   r"tracking=none` \(checked before stage design: nothing was run\)$")
        with pytest.raises(tracking.TrackingError, match=message):
            run_one_stage(stages, "design", cfg, tmp_path / "pipeline")
    assert ran == []
    off = replace(cfg, tracking=replace(cfg.tracking, enabled=False))
    if run == "whole":
        run_stages(stages, off, tmp_path / "out")
    else:
        run_one_stage(stages, "design", off, tmp_path / "pipeline")
    assert ran == (list(STAGE_NAMES) if run == "whole" else ["design"])


def _earlier_run(directory: Path, when: float) -> None:
    """An earlier run's prompts and report, last written at `when` (epoch seconds)."""
    import os

    (directory / "report").mkdir(parents=True)
    for path in (directory / "prompts.txt", directory / "report" / "report.txt"):
        path.write_text("earlier")
    os.utime(directory / "prompts.txt", (when - 3600, when - 3600))
    os.utime(directory / "report", (when, when))  # a folder's time is the one compared


def _stamp(when: float) -> str:
    return time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(when))


def test_earlier_files_move_to_the_time_they_were_last_written_never_onto_a_move_before(
        tmp_path: Path, monkeypatch):
    """Catches the folder named after the first file written instead of the last, or a third
    move in the same second written into the second's folder (`if` for `while`)."""
    from audit.methods.run import EARLIER_FOLDER, Stage, keep_earlier_run

    stages = [Stage("design", None, ("prompts.txt",)), Stage("report", None, ("report",))]
    monkeypatch.chdir(tmp_path)
    out, when = tmp_path / "out", 1_780_000_000.0
    _earlier_run(out, when)
    (out / EARLIER_FOLDER / _stamp(when)).mkdir(parents=True)
    (out / EARLIER_FOLDER / f"{_stamp(when)}_2").mkdir()
    moved = keep_earlier_run(stages, out)
    assert moved == out / EARLIER_FOLDER / f"{_stamp(when)}_3"
    assert (moved / "report" / "report.txt").read_text() == "earlier"


def test_a_run_into_a_folder_above_the_working_directory_moves_nothing(tmp_path: Path,
                                                                      monkeypatch):
    """Catches a run whose output folder holds the working directory (hydra.run.dir=..) moving
    files named like its tables, which may be the user's own."""
    from audit.methods.run import Stage, keep_earlier_run

    out = tmp_path / "out"
    _earlier_run(out, 1_780_000_000.0)
    (out / "work").mkdir()
    monkeypatch.chdir(out / "work")
    assert keep_earlier_run([Stage("design", None, ("prompts.txt",))], out) is None
    assert (out / "prompts.txt").read_text() == "earlier"


def test_the_wall_times_of_stages_that_wrote_none_are_left_out_not_an_error(tmp_path: Path):
    """Catches a pipeline whose earlier stages ran before their wall times were written (or in
    another folder) failing its report stage on the missing timing files."""
    from audit.methods.timings import read_stage_timings, write_stage_timing

    write_stage_timing(2.5, tmp_path, "respond")
    assert read_stage_timings(tmp_path, STAGE_NAMES[:-1]) == {"respond": 2.5}


def test_the_metrics_files_list_their_figures_in_name_order(tmp_path: Path):
    """Catches metrics.json (the analyse stage's, or the headline figures DVC compares) written
    in the order the figures were made, so the same figures in another order read as a change."""
    from audit.methods.run import write_headline_metrics, write_metrics

    figures = {"z_gap": 1.0, "duration_s/fit": 9.0, "a_count": 2}
    headline = write_headline_metrics(figures, tmp_path / DVC_METRICS_FILE)
    assert headline.read_text() == '{\n  "a_count": 2,\n  "z_gap": 1.0\n}\n'
    written = write_metrics(figures, tmp_path / "analyse.json")
    assert list(json.loads(written.read_text())) == ["a_count", "duration_s/fit", "z_gap"]


def test_a_report_stage_without_its_metrics_file_says_to_run_the_analyse_stage(tmp_path: Path):
    """Catches a missing metrics.json reported as a FileNotFoundError traceback."""
    from audit.methods.run import read_metrics

    with pytest.raises(AuditError, match=r"^metrics not found at .*metrics.json: run the "
                                         r"analyse stage first$"):
        read_metrics(tmp_path / "metrics.json")


@pytest.mark.parametrize("directory", [None, "out"])
def test_a_store_failing_mid_run_names_the_runs_folder_when_known(
        tmp_path: Path, monkeypatch, directory):
    """Catches the store's error raised without where the run's tables are, or with a
    folder `None` when no folder was given."""
    from contextlib import contextmanager

    @contextmanager
    def failing_run(*args, **kwargs):
        raise tracking.TrackingError("the store is down")
        yield

    monkeypatch.setattr(tracking, "mlflow_run", failing_run)
    cfg = dif_config(tmp_path)
    folder = None if directory is None else tmp_path / directory
    with pytest.raises(tracking.TrackingError) as failed:
        log_run(cfg, {}, [], write_config(cfg, tmp_path / "out"), directory=folder)
    assert str(failed.value) == ("the store is down" if folder is None else
                                 f"the store is down; the run's tables and report are in {folder}")


def test_answered_prompts_log_the_sent_and_stored_counts_in_their_places(tmp_path: Path,
                                                                          fake_models, caplog):
    """Catches the counts of the respond line swapped (answers from the store logged as sent)."""
    from audit.methods.run import answer_prompts

    prompts = pl.DataFrame({"prompt_id": ["p1", "p2", "p3"], "model_name": ["fake_a"] * 3,
                            "system_prompt": [""] * 3, "user_prompt": ["one", "two", "three"],
                            "seed": [1, 2, 3]})
    cfg = dif_config(tmp_path, enabled=False)
    models = {"fake_a": fake_models["fake_a"]}
    with caplog.at_level("INFO", logger="audit.methods.run"):
        answer_prompts(cfg, prompts.head(1), models, "DIF")
        answer_prompts(cfg, prompts, models, "DIF")
    assert [message for message in caplog.messages if "respond" in message] == [
        "DIF respond: 1 sent, 0 from the store, 0 failed",
        "DIF respond: 2 sent, 1 from the store, 0 failed"]


def test_answers_are_written_before_too_many_failures_stop_the_stage(tmp_path: Path,
                                                                      fake_models):
    """Catches the failure check made before the table is written: the answers that did come
    back were lost with the stage (send_prompts promises they are kept)."""
    from dataclasses import replace

    from audit.config import EngineConfig
    from audit.llm.failures import TooManyFailures
    from audit.methods.run import send_prompts

    prompts = pl.DataFrame({"prompt_id": ["p1", "p2"], "model_name": ["fake_a"] * 2,
                            "system_prompt": [""] * 2, "user_prompt": ["one", "two FAIL"],
                            "seed": [1, 2]})
    cfg = replace(dif_config(tmp_path, enabled=False), engine=EngineConfig(max_attempts=1))
    path = tmp_path / "responses.parquet"
    with pytest.raises(TooManyFailures, match="1 of 2 DIF requests failed"):
        send_prompts(cfg, prompts, {"fake_a": fake_models["fake_a"]}, path, "DIF")
    assert pl.read_parquet(path)["status"].to_list() == ["ok", "error"]


def test_the_report_logs_the_figures_timings_and_the_artifacts_that_exist(tmp_path: Path):
    """Catches a listed artifact the run did not make (a plot left out) stopping the report
    stage with a FileNotFoundError, or the stages' wall times left out of the logged figures."""
    from audit.methods.run import RunClock, RunFiles, logged_report, write_metrics

    cfg = dif_config(tmp_path)
    files = RunFiles(tmp_path / "out")
    write_metrics({"n_prompts": 3.0}, files.path("metrics.json"))
    files.path("tests.csv").write_text("a\n1\n")
    clock = RunClock(timings={"design": 1.5})
    result = logged_report(cfg, files, clock, "metrics.json",
                           [("tables", "tests.csv"), ("plots", "absent.png")])
    assert result["metrics"] == {"n_prompts": 3.0, "duration_s/design": 1.5}
    run_id = result["run"].run_id
    mlflow.set_tracking_uri(cfg.tracking.tracking_uri)
    client = mlflow.MlflowClient()
    assert {item.path for item in client.list_artifacts(run_id)} >= {"tables", "config.yaml"}
    assert "plots" not in {item.path for item in client.list_artifacts(run_id)}
    assert [item.path for item in client.list_artifacts(run_id, "tables")] == ["tables/tests.csv"]
    assert client.get_run(run_id).data.metrics["duration_s/design"] == 1.5
