"""The MLflow store's failures as one line, the check that reaches it before any work, and the
retry of a write that another process raced.

A server that is down, a wrong URI or a store that cannot be written used to surface after the
work was done, as a traceback after minutes of retries. audit.tracking.mlflow raises every such
failure as a TrackingError naming the store and the fix, and every run checks the store first.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlparse
from urllib.request import url2pathname

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random

from audit.config import TrackingConfig
from audit.errors import AuditError, first_line
from audit.outputs import why_unwritable

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:  # mlflow is imported when a store is reached, not with this module
    from mlflow.entities import Experiment


class TrackingError(AuditError):
    """The MLflow store failed (a server that is down, a wrong URI): one line with the fix."""


Written = TypeVar("Written")
# The database errors of two writers inserting one row: SQLite's, PostgreSQL's, MySQL's. A
# tracking server passes the database's message on in its own error.
UNIQUE_VIOLATIONS = ("UNIQUE constraint failed", "duplicate key value", "Duplicate entry")


def lost_a_write_race(error: BaseException) -> bool:
    """The error of a write whose row another process inserted first. MLflow's SQL store sets an
    experiment tag by reading it, then inserting it when it was missing, in separate statements:
    two jobs of a parallel sweep that finish together both find the runs table's view missing,
    and the second insert fails (a joblib sweep failed so in CI, 2026-12-01). Known upstream as
    mlflow/mlflow#8442 (tags) and #10334 (creating an experiment); an MLflow whose store upserts
    tags and gets-or-creates experiments in one statement retires the retry."""
    return any(marker in str(error) for marker in UNIQUE_VIOLATIONS)


def retried_on_write_race(write: Callable[[], Written], attempts: int = 3) -> Written:
    """``write()``, again when another process inserted its row first: the row then exists, and
    the store updates it. ``write`` reads what it merges with, so a retry keeps the other
    process's part. Any other failure, or the race's after the last attempt, is raised."""
    return Retrying(retry=retry_if_exception(lost_a_write_race),
                    stop=stop_after_attempt(attempts), wait=wait_random(0.0, 0.2),
                    reraise=True)(write)


# What the check before a run allows: a server that is down is reported in seconds, not after
# MLflow's default seven retries with back-off (over five minutes).
PROBE_SETTINGS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": 1, "MLFLOW_HTTP_REQUEST_TIMEOUT": 10}


# SQLite's words for a write lock another process holds past the wait: MLflow's SQLite store
# takes one writer at a time, and waits some seconds for it (11 s from the start of a run,
# re-probe 2026-12-07).
BUSY = "database is locked"
# The errors of two processes making one new SQLite store's tables at the same moment (each runs
# MLflow's schema migrations): SQLite's, and alembic's when one finds the other's version row.
# One process succeeds and the store ends complete (concurrency probe, 2026-12-07: 4 of 4 pairs
# of runs on a new store lost one run to this).
_CREATION_RACE = ("already exists", "duplicate column name", "Online migration expected")
# How long reaching a new SQLite store waits for another process to make its tables (seconds,
# as a rule: MLflow's migrations of an empty store took 1-2 s here).
CONTENDED_WAIT_S = 30.0


def store_contended(error: BaseException) -> bool:
    """Another process holds the store's write lock, or is making its tables: the store is
    right, and a rerun succeeds once that process is done."""
    return any(marker in str(error) for marker in (BUSY, *_CREATION_RACE))


def _failure_reason(error: Exception) -> str:
    text = str(error)
    if BUSY in text:
        return (f"stayed locked by another process ({BUSY}: one writer at a time; another run "
                "logging, the MLflow UI, a database browser with changes not yet written)")
    for marker, reason in (("Connection refused", "unreachable (connection refused)"),
                           ("Name or service not known", "unreachable (unknown host)"),
                           ("timed out", "unreachable (timed out)"),
                           ("Max retries exceeded", "unreachable"),
                           # MLflow 3 refuses a folder store (./mlruns) unless told otherwise.
                           ("filesystem tracking backend",
                            "is a folder store, which MLflow opens only with "
                            "MLFLOW_ALLOW_FILE_STORE=true (`mlflow migrate-filestore` makes it "
                            "a database)"),
                           # sqlite's words for a file that is not, or no longer, a database.
                           ("file is not a database",
                            "is not a database (the file there is something else)"),
                           ("database disk image is malformed",
                            "is a damaged database (restore it from a backup)")):
        if marker in text:
            return reason
    # MLflow's message lists every scheme it knows and was cut mid-list at 200 characters
    # (bad-input review 2026-12-04): name the kinds of URI instead.
    if "unsupported URI" in text:
        return ("has a scheme MLflow does not know (a store is sqlite:///FILE.db, "
                "http(s)://HOST:PORT, or another database URI MLflow takes)")
    return f"failed ({first_line(error)[:200]})"


# How to run without a store, for entry points that take overrides; `python -m audit.stages`
# reads params.yaml instead (methods/run.py, run_one_stage).
WITHOUT_STORE = "pass tracking=none"


# The setting that names the store, for entry points that take Hydra overrides.
STORE_SETTING = "tracking.tracking_uri"


def from_environment(tracking_uri: str) -> bool:
    """Whether the store is MLFLOW_TRACKING_URI's, which the shipped configs read first: a
    store the user set there, not in any config, was blamed on tracking.tracking_uri, which
    they never typed."""
    return os.environ.get("MLFLOW_TRACKING_URI") == tracking_uri


def store_fix(tracking_uri: str, without_store: str = WITHOUT_STORE,
              setting: str | None = STORE_SETTING) -> str:
    """The fixes of a store that failed: start it (a server), correct the `setting` it came
    from (None: `without_store` already says how to give another store), or `without_store`."""
    server = tracking_uri.startswith(("http://", "https://"))
    if from_environment(tracking_uri):
        setting = "MLFLOW_TRACKING_URI (the default store comes from it)"
    # audit.runs and audit.compare said "fix tracking.tracking_uri" beside their own
    # --tracking-uri and tracking_uri= (review 2026-12-04).
    fixes = [*(["start the server"] if server else []), *([f"fix {setting}"] if setting else [])]
    return f"{', '.join(fixes)}, or {without_store}" if fixes else without_store


@contextmanager
def store_errors(tracking_uri: str, without_store: str = WITHOUT_STORE,
                 setting: str | None = STORE_SETTING) -> Iterator[None]:
    """MLflow's and requests' failures as a TrackingError naming the store and the fix."""
    import requests
    from alembic.util.exc import CommandError  # MLflow's schema migrations
    from mlflow.exceptions import MlflowException
    # MLflow's SQL store lets the database's own errors through: a file that is not a database,
    # or one cut off by a full disk, was sqlalchemy's traceback. A write race is retried inside
    # (retried_on_write_race) before it reaches here.
    from sqlalchemy.exc import DatabaseError

    try:
        yield
    except (MlflowException, requests.RequestException, DatabaseError, CommandError) as error:
        # A store another process holds is not a setting to fix (it said "fix
        # tracking.tracking_uri" for a store that was only busy).
        fix = (f"rerun when it is free, or {without_store}" if store_contended(error)
               else store_fix(tracking_uri, without_store, setting))
        raise TrackingError(f"MLflow store {tracking_uri} {_failure_reason(error)}: {fix}")\
            from error


@contextmanager
def environment_kept(*names: str) -> Iterator[None]:
    """These environment variables as they were before the block, whatever it set in them
    (MLflow reads its settings from the environment, and writes its store there)."""
    before = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


SQLITE_PREFIX = "sqlite:///"


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a SQLite store (`sqlite:///mlflow.db`, relative to the directory the
    command runs in); None for any other store."""
    if not tracking_uri.startswith(SQLITE_PREFIX):
        return None
    return Path(tracking_uri.removeprefix(SQLITE_PREFIX))


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def not_a_store_file(database: Path) -> str | None:
    """Why an existing file cannot be a SQLite MLflow store, for commands that only read one:
    MLflow opens any such file as a store and creates its tables there, so `audit.runs` pointed
    at an empty file (or another program's database) wrote a 1 MB store into it and then said
    "run an audit first" (bad-input review 2026-12-05). None when the file holds MLflow's
    tables (or cannot be read here: MLflow's own error says more)."""
    import sqlite3

    try:
        with database.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError:
        return None
    if not header:
        return "is an empty file, not an MLflow store"
    if header != SQLITE_HEADER:
        return "is not a database file"
    try:
        connection = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {name for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            connection.close()
    except sqlite3.Error:
        return None
    # Two tables every MLflow SQL store has had since its first schema.
    if not {"experiments", "runs"} <= tables:
        return "is a SQLite database without MLflow's tables, not an MLflow store"
    return None


def missing_artifacts(run_id: str, artifact_uri: str) -> str | None:
    """One line when a run's artifacts are recorded in a local folder that does not exist (a
    store copied, or a project moved, without it); None when it exists or is remote. Commands
    that read a run's files said the run lacked them ("has no prompts table", "was not logged
    by audit's report stage"), blaming the run (bad-input review 2026-12-05)."""
    folder = _local_path(artifact_uri)
    # A run's folder is ROOT/RUN_ID/artifacts under its experiment's ROOT: a run that logged
    # no file has none, while the experiment's folder is there. Only a missing ROOT is missing.
    if folder is None or folder.parent.parent.is_dir():
        return None
    return (f"run {run_id[:8]}'s files are missing: MLflow recorded them in {folder}, which does "
            "not exist (the store was copied or moved without its artifact folder): restore "
            "that folder, or run this where the audit ran")


def _local_path(location: str) -> Path | None:
    """The folder of a local artifact location (a path or a file: URI); None for a remote one."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(url2pathname(parsed.path))
    return Path(location) if not parsed.scheme else None


def _check_database(config: TrackingConfig, without_store: str, setting: str | None) -> None:
    """A SQLite store that cannot be written, as one line before MLflow opens it: MLflow
    stopped on a FileExistsError traceback (a file where its folder should be) or retried a
    database it could not open for minutes."""
    database = sqlite_path(config.tracking_uri)
    if database is None:
        return
    reason = why_unwritable(database)
    if reason:
        raise TrackingError(f"MLflow store {config.tracking_uri}: {reason}: "
                            f"{store_fix(config.tracking_uri, without_store, setting)}")


def _check_artifacts(config: TrackingConfig, experiment) -> None:
    """An artifact folder that cannot be written, as one line before any work: MLflow failed
    only when the run logged its files, after the fit. An experiment keeps the folder it was
    made with, whatever tracking.artifact_root says later, so its own folder is checked."""
    if experiment is None:
        reason = why_unwritable(Path(config.artifact_root).resolve(), folder=True)
        if reason:
            raise TrackingError(f"tracking.artifact_root={config.artifact_root}: {reason}: set it "
                                "to a folder you can write")
        return
    folder = _local_path(experiment.artifact_location)
    reason = why_unwritable(folder, folder=True) if folder is not None else None
    if reason:
        raise TrackingError(
            f"experiment '{config.experiment}' keeps its artifacts in {folder}, set when it was "
            f"made: {reason}: make it writable, or name a new tracking.experiment (with a "
            "tracking.artifact_root you can write)")


# A scheme typed with its colon or slashes wrong: MLflow read `sqlite//x.db` as a folder store
# and `sqlite:/x.db` reached sqlalchemy's ArgumentError traceback (bad-input review 2026-12-05).
_MISTYPED_SCHEME = re.compile(r"^(?P<scheme>sqlite|https?)[:/]+(?P<rest>.+)$", re.IGNORECASE)
_DATABASE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def mistyped_uri(tracking_uri: str) -> str | None:
    """Why a store URI is no URI at all, with the one likely meant; None when it may be one."""
    if tracking_uri.startswith((SQLITE_PREFIX, "http://", "https://")):
        return None
    match = _MISTYPED_SCHEME.match(tracking_uri)
    if match:
        scheme, rest = match["scheme"].lower(), match["rest"]
        meant = f"{SQLITE_PREFIX}{rest}" if scheme == "sqlite" else f"{scheme}://{rest}"
        return f"is not a store URI (did you mean {meant}?)"
    if "://" in tracking_uri:
        return None
    # A bare path: MLflow reads it as a folder store, which it opens only with
    # MLFLOW_ALLOW_FILE_STORE=true, and that it makes where none is. A folder named like a
    # database was told to use sqlite:///, and a path typed wrong was called a folder store
    # (bad-input review 2026-12-07). A bare word without a slash may be a URI MLflow knows
    # (`databricks`), so it is left to MLflow.
    path = Path(tracking_uri).expanduser()
    if tracking_uri.lower().endswith(_DATABASE_SUFFIXES) and not path.is_dir():
        return (f"is a file's path, not a store URI (a SQLite store is "
                f"{SQLITE_PREFIX}{tracking_uri})")
    allowed = os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() in ("true", "1")
    if ("/" in tracking_uri or tracking_uri.startswith((".", "~"))) and not path.exists() \
            and not allowed:  # a user who allows folder stores may start a new one
        return (f"is a path where nothing is, not a store URI (a SQLite store is "
                f"{SQLITE_PREFIX}FILE.db, made if new; a server is http://HOST:PORT)")
    return None


def reach_store(config: TrackingConfig, without_store: str = WITHOUT_STORE,
                setting: str | None = STORE_SETTING) -> Experiment | None:
    """Reach the store once, with few retries and a short timeout (PROBE_SETTINGS unless the
    environment asks for less): a store that is down, or a URI MLflow refuses (a bare `mlruns`
    folder, whose file store MLflow 3 no longer opens by default), is a TrackingError in
    seconds. Returns the config's experiment (None when the store has none of that name)."""
    from mlflow.tracking import MlflowClient

    typo = mistyped_uri(config.tracking_uri)
    if typo:
        raise TrackingError(f"MLflow store {config.tracking_uri} {typo}: "
                            f"{store_fix(config.tracking_uri, without_store, setting)}")
    # urllib3 warns of each retry; the TrackingError's one line says it all.
    retries_log = logging.getLogger("urllib3.connectionpool")
    level = retries_log.level
    with environment_kept(*PROBE_SETTINGS):
        for name, cap in PROBE_SETTINGS.items():
            try:
                os.environ[name] = str(min(int(float(os.environ.get(name) or cap)), cap))
            except (ValueError, OverflowError):  # not a number, or inf: the probe's own cap
                os.environ[name] = str(cap)
        retries_log.setLevel(logging.ERROR)
        try:
            # MLflow waits out another process's write lock itself, for some seconds (its
            # engine's first check retries; its sessions then wait up to 20 s).
            with store_errors(config.tracking_uri, without_store, setting), \
                    tables_made_alone(config.tracking_uri):
                return MlflowClient(config.tracking_uri).get_experiment_by_name(
                    config.experiment)
        finally:
            retries_log.setLevel(level)


@contextmanager
def tables_made_alone(tracking_uri: str) -> Iterator[None]:
    """Within, this process alone may make a new SQLite store's tables: MLflow makes them when
    it first opens a store, and two processes opening a new one together both ran its schema
    migrations, one failing on the other's tables (concurrency probe 2026-12-07: 4 of 4 pairs of
    audits on a new store; 5 of 5 pairs in test_write_races; a retry on the errors named still
    lost 1 in 5, to a half-made table). An advisory `flock` on the database file, which SQLite's
    own (fcntl) locks do not see; an empty file is a new SQLite database. Not where `fcntl` does
    not exist (Windows), nor after CONTENDED_WAIT_S (then MLflow's own error is the line)."""
    database = sqlite_path(tracking_uri)
    try:
        handle = database.open("ab") if database is not None and fcntl is not None else None
    except OSError:  # a store to read only (audit.runs): it has its tables; MLflow says the rest
        handle = None
    if handle is None:
        yield
        return
    with handle:
        deadline = time.monotonic() + CONTENDED_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        # Closing the file lets go of the lock. It also drops any POSIX lock SQLite holds on the
        # file in this process, and none is held here: MLflow's read has ended, and its pooled
        # connections to a rollback-journal database hold no lock between transactions.
        yield


def check_store(config: TrackingConfig, without_store: str = WITHOUT_STORE,
                setting: str | None = STORE_SETTING) -> None:
    """Before a run's work: the store reached (reach_store), and the local folders the run will
    write in. An empty store or experiment name passed here and stopped the run after all its
    work, the experiment's as "fix tracking.tracking_uri" (bad-input review 2026-12-04)."""
    if not config.tracking_uri.strip():
        # A CI secret that is missing leaves MLFLOW_TRACKING_URI set and empty.
        source = (" (MLFLOW_TRACKING_URI, which it reads, is set but empty)"
                  if from_environment(config.tracking_uri) else "")
        raise TrackingError(f"{setting or STORE_SETTING}= is empty{source}: give the MLflow "
                            f"store (the default is sqlite:///mlflow.db), or {without_store}")
    if not config.experiment.strip():
        raise TrackingError("tracking.experiment= is empty: name the MLflow experiment the run "
                            "goes to (the default is audit)")
    _check_database(config, without_store, setting)
    _check_artifacts(config, reach_store(config, without_store, setting))
