"""The terminal of the command-line entry points: one console, one format, no library chatter.

Progress bars and log lines share one rich Console on stderr (`console()`): a line logged while a
bar is drawn is printed above the bar instead of through it, and stdout keeps only results (the
summary, tables), so `python -m audit > result.txt` keeps them.

By default only the tool's own INFO lines reach the terminal; libraries speak at WARNING and
above (matplotlib's font cache, pytensor's "Compiling new CVM", ArviZ's backend discovery, one
httpx line per request, MLflow's and alembic's table creation). `AUDIT_VERBOSE=1` brings every
INFO line back, for all entry points (`python -m audit`, `audit.stages`, `audit.runs`, ...).
Hydra's own log file in the run directory keeps the INFO lines of every logger either way.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

VERBOSE_ENV = "AUDIT_VERBOSE"
# Loggers whose INFO lines a user reads: the tool's own, and Hydra's (a sweep's "Launching 2 jobs
# locally" and the job list).
OWN_LOGGERS = ("audit", "hydra", "__main__")
# Libraries that log through handlers of their own instead of the root logger's, so the console
# handler's filter never sees them: their level is set instead. MLflow (re)configures its logger
# when it is imported, from MLFLOW_LOGGING_LEVEL, which is set too.
SELF_HANDLED_LOGGERS = ("mlflow", "alembic")
QUIET_LOGGERS = ("arviz", "httpx", "httpcore", "matplotlib", "numba", "pytensor",
                 *SELF_HANDLED_LOGGERS)
CLI_FORMAT = "%(levelname)s %(name)s: %(message)s"

_console: Console | None = None


def verbose() -> bool:
    """AUDIT_VERBOSE set to anything but empty, 0 or false."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def console() -> Console:
    """The one stderr console that progress bars and log lines are drawn on."""
    global _console
    if _console is None:
        _console = Console(stderr=True)
    return _console


class LibraryInfoFilter(logging.Filter):
    """Below WARNING, only the tool's own loggers pass, unless AUDIT_VERBOSE is set."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.WARNING or record.name.split(".")[0] in OWN_LOGGERS
                or verbose())


class ConsoleLogHandler(logging.Handler):
    """Log records printed on `console()`, one unwrapped line each, above any progress bar.

    `stream` is accepted and ignored: Hydra's default job_logging names one for its console
    handler, and the key survives when conf/config.yaml swaps the handler's class for this one."""

    def __init__(self, stream: object = None, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.addFilter(LibraryInfoFilter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            console().print(message, markup=False, highlight=False, emoji=False, soft_wrap=True)
        except Exception:  # noqa: BLE001 - logging must never raise; report it the logging way
            self.handleError(record)


def quiet_noisy_loggers() -> None:
    """Libraries at WARNING, unless AUDIT_VERBOSE is set (then nothing is changed)."""
    if verbose():
        return
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # MLflow's SQL store logs each database error it raises at ERROR, with the SQL and two
    # tracebacks, before audit says it in one line (audit.tracking.store.store_errors).
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)


@contextmanager
def quieted(*names: str) -> Iterator[None]:
    """These loggers at WARNING inside the block (unless AUDIT_VERBOSE is set): a loop of many
    small fits, a plan's simulated audits, would otherwise print each fit's INFO lines (three a
    look of a simulated adaptive audit, thousands a plan)."""
    if verbose():
        yield
        return
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


class RepeatFilter(logging.Filter):
    """Passes each distinct message once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


@contextmanager
def said_once(*names: str) -> Iterator[None]:
    """Inside the block, each message of these loggers is logged once: an adaptive run reads the
    same design at every look, and its warnings about that design (aliased attributes, contrasts
    left out) would otherwise repeat once a look."""
    repeats = RepeatFilter()
    loggers = [logging.getLogger(name) for name in names]
    for logger in loggers:
        logger.addFilter(repeats)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(repeats)


def configure_cli_logging() -> None:
    """For entry points Hydra does not configure (`audit.stages`, `audit.fit`, `audit.params`)."""
    handler = ConsoleLogHandler()
    handler.setFormatter(logging.Formatter(CLI_FORMAT))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    quiet_noisy_loggers()


# --- progress bars, on the same console ---------------------------------------------------------

class RateColumn(ProgressColumn):
    def render(self, task) -> Text:
        return Text(f"{task.speed:.2f}/s" if task.speed else "-/s")


def progress_bar(rate: bool = True, errors: bool = True) -> Progress:
    """A bar on the stderr console log lines are printed on, so a line logged
    meanwhile appears above it. `rate`: requests a second and the time left, for bars that count
    requests actually sent (answers already in the store are counted in before it starts, so
    they do not inflate the rate); a loop that mostly reads the store shows neither. `errors`: a
    count of failed requests (its tasks need an `errors` field); a loop without requests has
    none."""
    timing = (RateColumn(), TimeRemainingColumn()) if rate else ()
    failed = (TextColumn("[red]{task.fields[errors]} errors"),) if errors else ()
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    *timing, *failed, transient=False, console=console())


def track(rows: Iterable, total: int, description: str) -> Iterable:
    """A bar over a loop; `description` says what it counts ("labelled answers")."""
    with progress_bar(rate=False) as progress:
        task = progress.add_task(description, total=total, errors=0)
        for row in rows:
            yield row
            progress.advance(task)


def counted(count: int, noun: str, verbs: tuple[str, str] | None = None) -> str:
    """"1 replicate", "2 replicates": for the lines that count what is often one (a design's
    models and replicates, an adaptive audit's looks). `verbs` (singular, plural) adds the one
    that agrees: "1 row has", "2 rows have"."""
    phrase = f"{count} {noun}{'' if count == 1 else 's'}"
    return phrase if verbs is None else f"{phrase} {verbs[count != 1]}"
