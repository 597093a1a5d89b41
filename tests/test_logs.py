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
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console

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
