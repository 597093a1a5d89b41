"""The terminal a run leaves: library INFO lines only with AUDIT_VERBOSE=1, log lines drawn on
the progress bars' console (above a bar, not through it), and bar rates only for requests sent."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from rich.console import Console
from rich.progress import TextColumn, TimeRemainingColumn

from audit import logs
from audit.config import EngineConfig
from audit.llm.backends import create_backend
from audit.llm.engine import _collect, plan_requests
from audit.logs import progress_bar
from audit.llm.store import ResponseStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Console:
    """The shared console, recording what is drawn on it."""
    console = Console(file=io.StringIO(), record=True, width=200)
    monkeypatch.setattr(logs, "_console", console)
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
    return console


def _log(name: str, level: int, message: str) -> None:
    handler = logs.ConsoleLogHandler()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    record = logging.LogRecord(name, level, __file__, 1, message, None, None)
    if handler.filter(record):
        handler.emit(record)


def test_library_info_lines_are_dropped_unless_verbose(recorded, monkeypatch):
    _log("matplotlib.font_manager", logging.INFO, "generated new fontManager")
    _log("pytensor.link.c.lazylinker_c", logging.INFO, "Compiling new CVM")
    _log("numba.core", logging.WARNING, "a library warning")
    _log("audit.methods.run", logging.INFO, "the tool's own line")
    text = recorded.export_text()
    assert "fontManager" not in text and "CVM" not in text
    assert "a library warning" in text and "the tool's own line" in text
    monkeypatch.setenv(logs.VERBOSE_ENV, "1")
    _log("matplotlib.font_manager", logging.INFO, "generated new fontManager")
    assert "generated new fontManager" in recorded.export_text()


def test_quieted_loggers_drop_info_inside_the_block_and_come_back_after(monkeypatch):
    # Bugs caught: a plan's simulated fits still logging INFO (thousands of lines), their level
    # left at WARNING after the plan (a later run silent), a warning dropped with the INFO
    # lines, or AUDIT_VERBOSE=1 not bringing them back.
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
    logging.getLogger("audit.test_quieted").setLevel(logging.INFO)
    fits = logging.getLogger("audit.test_quieted.fits")  # a module's logger: level NOTSET
    with logs.quieted("audit.test_quieted"):
        assert not fits.isEnabledFor(logging.INFO) and fits.isEnabledFor(logging.WARNING)
    assert fits.isEnabledFor(logging.INFO)
    monkeypatch.setenv(logs.VERBOSE_ENV, "1")
    with logs.quieted("audit.test_quieted"):
        assert fits.isEnabledFor(logging.INFO)


def test_a_line_logged_during_a_bar_is_drawn_on_the_bars_console(recorded):
    """The bug this guards against: log lines written to stderr straight, through a bar drawn
    on stdout (or on another console), break the bar in a terminal."""
    with progress_bar() as progress:
        assert progress.console is recorded
        task = progress.add_task("answers", total=2, errors=0)
        progress.advance(task)
        _log("audit.llm.engine", logging.INFO, "a line in the middle")
        progress.advance(task)
    lines = recorded.export_text().splitlines()
    assert "audit.llm.engine INFO a line in the middle" in lines
    assert any(line.startswith("answers") and "2/2" in line for line in lines)


def test_the_rate_counts_only_requests_sent(tmp_path, fake_models):
    """Answers from the store are counted in before the bar starts: a bar over stored answers
    has no rate (it showed 345040.05/s when they counted as if sent)."""
    prompts = pl.DataFrame({"prompt_id": ["p1", "p2"], "model_name": ["fake_a", "fake_a"],
                            "system_prompt": ["", ""], "user_prompt": ["one", "two"],
                            "seed": [1, 2]})
    models = {"fake_a": fake_models["fake_a"]}
    backends = {"fake_a": create_backend(models["fake_a"])}
    planned = plan_requests(prompts, backends, models)
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        speeds = []
        for _ in range(2):  # the first run sends both, the second finds both stored
            progress = progress_bar()
            outcomes = asyncio.run(_collect(planned, backends, models, store, EngineConfig(),
                                            progress, "answers"))
            (task,) = progress.tasks
            speeds.append(task.speed)
            assert task.completed == 2 and len(outcomes) == 2
    assert speeds[0] is not None and speeds[1] is None


def _tiny_iat_run(tmp_path: Path, verbose: bool) -> subprocess.CompletedProcess:
    conf = tmp_path / "conf" / "model"
    conf.mkdir(parents=True)
    (conf / "fake_a.yaml").write_text("fake_a:\n  backend: fake\n  model: fake-a\n")
    env = {key: value for key, value in os.environ.items()
           if key not in ("HYDRA_FULL_ERROR", logs.VERBOSE_ENV, "MLFLOW_LOGGING_LEVEL")}
    # A fresh matplotlib cache: building it logs `generated new fontManager` at INFO.
    env.update(MPLCONFIGDIR=str(tmp_path / "mpl"), **({logs.VERBOSE_ENV: "1"} if verbose else {}))
    command = [sys.executable, "-m", "audit", "method=iat", "model=fake_a",
               "iat.datasets=[power]", "iat.variations=[replication]", "iat.iterations=1",
               "iat.bootstrap_resamples=100", "iat.permutation_resamples=100",
               f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
               f"hydra.run.dir={tmp_path / 'run'}",
               f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
               f"tracking.artifact_root={tmp_path / 'artifacts'}",
               f"paths.response_store={tmp_path / 'store.sqlite3'}"]
    return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, env=env,
                          timeout=600)


def _info_loggers(stderr: str) -> set[str]:
    """The loggers of the INFO lines Hydra's console format printed (`[time][name][INFO] - `),
    and MLflow's own format (`INFO mlflow...`, `... INFO  [alembic...]`)."""
    hydra = re.findall(r"^\[[^\]]*\]\[([\w.]+)\]\[INFO\]", stderr, re.MULTILINE)
    own = re.findall(r"\bINFO\s+\[?((?:mlflow|alembic)[\w.]*)", stderr)
    return {name.split(".")[0] for name in [*hydra, *own]}


@pytest.mark.slow
@pytest.mark.integration
def test_a_run_prints_no_library_info_line_unless_verbose(tmp_path):
    quiet = _tiny_iat_run(tmp_path / "quiet", verbose=False)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert _info_loggers(quiet.stderr) <= {"audit", "hydra"}, quiet.stderr[-3000:]
    assert "fontManager" not in quiet.stderr
    loud = _tiny_iat_run(tmp_path / "loud", verbose=True)
    assert loud.returncode == 0, loud.stderr[-3000:]
    # The lines are there to hide: the verbose run shows them, matplotlib's font cache first.
    assert "generated new fontManager" in loud.stderr
    assert _info_loggers(loud.stderr) - {"audit", "hydra"}, loud.stderr[-3000:]


@pytest.mark.parametrize(("value", "on"), [("", False), ("0", False), ("false", False),
                                           ("FALSE", False), (" No ", False), ("1", True),
                                           ("yes", True), ("TRUE", True)])
def test_audit_verbose_is_off_for_empty_zero_false_and_no_in_any_case(monkeypatch, value, on):
    """Catches AUDIT_VERBOSE=0 or AUDIT_VERBOSE=FALSE read as on (a value left out of the list,
    or the value compared before lower-casing)."""
    monkeypatch.setenv(logs.VERBOSE_ENV, value)
    assert logs.verbose() is on


@pytest.mark.parametrize("name", ["audit.methods.run", "hydra.core.utils", "__main__"])
def test_info_lines_of_the_tool_and_of_hydra_reach_the_terminal(recorded, name):
    """Catches a sweep's "Launching 2 jobs locally" (Hydra's INFO line) dropped with the
    libraries' INFO lines (hydra left out of OWN_LOGGERS)."""
    _log(name, logging.INFO, f"an INFO line of {name}")
    assert f"an INFO line of {name}" in recorded.export_text()


def test_a_log_line_is_printed_as_written_on_one_line(recorded):
    """Catches a message read as rich markup (`[red]` swallowed, brackets in a path lost) or a
    long line wrapped at the console's width."""
    message = "column [red]x[/red] in [data/items.csv] " + "y" * 300
    _log("audit.tables", logging.WARNING, message)
    assert f"audit.tables WARNING {message}" in recorded.export_text().splitlines()


@pytest.fixture
def library_levels() -> Iterator[None]:
    """The quieted libraries' levels (and MLflow's variable) at NOTSET for the test, then back."""
    loggers = [logging.getLogger(name) for name in logs.QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    mlflow_level = os.environ.pop("MLFLOW_LOGGING_LEVEL", None)
    for logger in loggers:
        logger.setLevel(logging.NOTSET)
    yield
    for logger, level in zip(loggers, levels):
        logger.setLevel(level)
    os.environ.pop("MLFLOW_LOGGING_LEVEL", None)
    if mlflow_level is not None:
        os.environ["MLFLOW_LOGGING_LEVEL"] = mlflow_level


def test_every_noisy_library_is_set_to_warning_and_mlflow_told_so(library_levels, monkeypatch):
    """Catches a library of QUIET_LOGGERS left at its level (MLflow's and alembic's table
    creation lines are printed by their own handlers) or MLFLOW_LOGGING_LEVEL left unset (MLflow
    sets its level again from it when imported)."""
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
    logs.quiet_noisy_loggers()
    assert {name: logging.getLogger(name).level for name in logs.QUIET_LOGGERS} == dict.fromkeys(
        logs.QUIET_LOGGERS, logging.WARNING)
    assert os.environ["MLFLOW_LOGGING_LEVEL"] == "WARNING"


def test_quiet_noisy_loggers_changes_nothing_when_verbose(library_levels, monkeypatch):
    """Catches AUDIT_VERBOSE=1 still silencing the libraries' INFO lines it promises."""
    monkeypatch.setenv(logs.VERBOSE_ENV, "1")
    logs.quiet_noisy_loggers()
    assert all(logging.getLogger(name).level == logging.NOTSET for name in logs.QUIET_LOGGERS)
    assert "MLFLOW_LOGGING_LEVEL" not in os.environ


def test_configure_cli_logging_prints_info_on_the_console_and_quiets_libraries(
        library_levels, monkeypatch):
    """Catches the entry points Hydra does not configure (`audit.stages`, `audit.fit`) set to
    WARNING (their own progress lines lost) or left with the libraries' INFO chatter."""
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()  # basicConfig acts only on a root logger without handlers
    try:
        logs.configure_cli_logging()
        assert root.level == logging.INFO
        assert [type(handler) for handler in root.handlers] == [logs.ConsoleLogHandler]
        assert logging.getLogger("httpx").level == logging.WARNING
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_quieted_gives_each_logger_back_its_own_level():
    """Catches the loggers reset to NOTSET after the block, instead of the level they had (a
    logger set to ERROR by the user then printed warnings)."""
    logger = logging.getLogger("audit.test_quieted_level")
    logger.setLevel(logging.ERROR)
    with logs.quieted("audit.test_quieted_level"):
        assert logger.level == logging.WARNING
    assert logger.level == logging.ERROR


def _record(name: str, message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, args, None)


def test_said_once_passes_each_distinct_message_once_inside_the_block_only():
    """Catches two messages of one format with different values (two designs' aliased
    attributes) taken for one, a message repeated inside the block, or the filter left on the
    logger after the block (a later run's warnings never shown)."""
    logger = logging.getLogger("audit.test_said_once")
    with logs.said_once("audit.test_said_once"):
        assert logger.filter(_record(logger.name, "%s is aliased", "race"))
        assert logger.filter(_record(logger.name, "%s is aliased", "gender"))
        assert not logger.filter(_record(logger.name, "%s is aliased", "race"))
    assert logger.filters == []
    assert logger.filter(_record(logger.name, "%s is aliased", "race"))


def test_the_rate_column_shows_requests_a_second_or_a_dash():
    """Catches the rate column blank, or drawn as `-/s` while requests are being sent."""
    assert logs.RateColumn().render(SimpleNamespace(speed=2.5)).plain == "2.50/s"
    assert logs.RateColumn().render(SimpleNamespace(speed=None)).plain == "-/s"


def test_a_bar_shows_its_rate_and_errors_only_when_asked(recorded):
    """Catches the rate and time left missing from the engine's bar (progress_bar's default), or
    shown on a bar over the store, or an errors column on a bar without requests."""
    def kinds(progress) -> list[type]:
        return [type(column) for column in progress.columns]

    default = kinds(progress_bar())
    assert logs.RateColumn in default and TimeRemainingColumn in default
    assert any("errors" in str(column.text_format) for column in progress_bar().columns
               if isinstance(column, TextColumn))
    bare = progress_bar(rate=False, errors=False)
    assert logs.RateColumn not in kinds(bare) and TimeRemainingColumn not in kinds(bare)
    assert not any("errors" in str(column.text_format) for column in bare.columns
                   if isinstance(column, TextColumn))


def test_track_yields_every_row_and_draws_the_bar_to_its_total(recorded):
    """Catches a bar over labelled answers that never advances (0/3 at the end), that loses its
    total, or that is erased when the loop ends."""
    assert list(logs.track(iter("abc"), 3, "labelled answers")) == ["a", "b", "c"]
    lines = recorded.export_text().splitlines()
    assert any(line.startswith("labelled answers") and "3/3" in line for line in lines), lines


@pytest.mark.parametrize(("count", "verbs", "phrase"), [
    (0, None, "0 rows"), (1, None, "1 row"), (2, None, "2 rows"),
    (0, ("has", "have"), "0 rows have"), (1, ("has", "have"), "1 row has"),
    (3, ("has", "have"), "3 rows have")])
def test_counted_agrees_the_noun_and_verb_with_the_count(count, verbs, phrase):
    """Catches "0 row" (none counted as one) or "1 row have" (the verbs swapped)."""
    assert logs.counted(count, "row", verbs) == phrase
