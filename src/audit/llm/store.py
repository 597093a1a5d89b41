"""The response store: every reply ever received, keyed by the content hash of its request.

SQLite in WAL mode, one row per response, committed as each reply arrives, so a crash loses at most
the request in flight and a rerun sends only what is missing. Errors are kept for the record but
never served from the cache: a rerun retries them. The first answer stored for a key is the one
every later run gets, including a process that sent the same request at the same time.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    request_key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    identity_json TEXT NOT NULL,
    request_json TEXT NOT NULL,
    response_text TEXT,
    completion_tokens INTEGER,
    latency_s REAL,
    error_kind TEXT,
    error_message TEXT,
    created_at REAL NOT NULL,
    concurrency INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS ok_by_key ON responses (request_key) WHERE status = 'ok';
"""


_INSERT_OK = ("INSERT OR IGNORE INTO responses (request_key, status, identity_json, request_json,"
              " response_text, completion_tokens, latency_s, concurrency, created_at)"
              " VALUES (?, 'ok', ?, ?, ?, ?, ?, ?, ?)")


def _blank(text: str | None) -> bool:
    """An answer with no text: never served (releases before empty replies were errors stored
    some as answers)."""
    return text is None or not text.strip()


@dataclass(frozen=True)
class StoredResponse:
    request_key: str
    response_text: str
    completion_tokens: int
    latency_s: float
    # The requests its model had in flight at most when it was asked (max_concurrency); None
    # for answers stored before the store recorded it.
    concurrency: int | None = None


@dataclass(frozen=True)
class AnswerTime:
    """How long one stored answer took, and at how many requests in flight at most."""

    latency_s: float
    concurrency: int | None


def _concurrency(stored: Any) -> int | None:
    """A stored concurrency, None when unknown or not a count of slots (a time is divided by
    it: a 0 written by hand would spend an adaptive run's whole budget at once)."""
    return int(stored) if isinstance(stored, int) and stored > 0 else None


def _add_concurrency_column(connection: sqlite3.Connection) -> None:
    """Stores written before answers recorded their concurrency gain the column (left empty
    for those answers); two processes opening one old store may both try."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(responses)")}
    if "concurrency" in columns:
        return
    try:
        connection.execute("ALTER TABLE responses ADD COLUMN concurrency INTEGER")
    except sqlite3.OperationalError as error:
        if "duplicate column" not in str(error):
            raise


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def store_problem(path: str | Path) -> str | None:
    """Why an existing file cannot be the response store, or None (a new file, an empty one or
    a store). A text file was sqlite3's "file is not a database" traceback once the design was
    written; another program's database (MLflow's mlflow.db) was taken as the store and the
    answers were written into it (bad-input review 2026-12-04)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if header != SQLITE_HEADER:
        return "is not an SQLite database"
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as connection:
            tables = sorted(row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"))
    except sqlite3.DatabaseError as error:
        return f"cannot be read as an SQLite database ({error})"
    if tables and "responses" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        return f"is another program's SQLite database (its tables: {shown})"
    return None


class StoreBusy(AuditError):
    """Another program held the response store's write lock for longer than a write waits."""


class ResponseStore:
    # How long a write waits for another writer to finish: an audit's own writes take
    # milliseconds, so only a program holding a write open (a database browser with changes not
    # yet written, a copy made through SQLite) waits this long.
    busy_timeout_s = 30.0

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(self.path, timeout=self.busy_timeout_s,
                                           check_same_thread=False)
        with self._busy_as_error():
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.executescript(_SCHEMA)
            _add_concurrency_column(self._connection)
            self._connection.commit()
        # The requests that failed (after their retries) through this store object, by key:
        # a loop that asks again for what was sent ahead moments before gets the failure
        # (failure_this_run) instead of a second round of retries. A rerun opens a new store,
        # so it sends them again.
        self._failures: dict[str, tuple[str, str]] = {}

    @contextmanager
    def _busy_as_error(self) -> Iterator[None]:
        """SQLite's "database is locked" after busy_timeout_s, as one line: it was a traceback
        and exit 1 (concurrency probe, 2026-12-07: the store held by another program for 45 s).
        """
        try:
            yield
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            raise StoreBusy(
                f"response store {self.path} stayed locked by another program for over "
                f"{self.busy_timeout_s:.0f} s (a database browser with changes not yet written, "
                "a copy or backup made through SQLite): the answers saved before are kept; close "
                "that program and rerun the same command") from None

    def __enter__(self) -> ResponseStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def get(self, request_key: str) -> StoredResponse | None:
        row = self._connection.execute(
            "SELECT response_text, completion_tokens, latency_s, concurrency FROM responses "
            "WHERE request_key = ? AND status = 'ok'",
            (request_key,),
        ).fetchone()
        if row is None or _blank(row[0]):
            return None
        return StoredResponse(request_key, row[0], int(row[1] or 0), float(row[2] or 0.0),
                              _concurrency(row[3]))

    def put_ok(
        self,
        request_key: str,
        identity: dict[str, str],
        request: dict[str, Any],
        response_text: str,
        completion_tokens: int,
        latency_s: float,
        concurrency: int | None = None,
    ) -> StoredResponse:
        """Store an answer unless one is stored for the key already (another process may have
        sent the same request at the same time), and return the stored one: the first
        answer wins, so what a run reports is what its rerun replays. `concurrency`: the
        requests its model could have in flight when it was asked, which its latency depends
        on (time estimates and budgets read the two together)."""
        row = (request_key, json.dumps(identity, sort_keys=True),
               json.dumps(request, sort_keys=True), response_text, completion_tokens, latency_s,
               concurrency)
        # One write transaction: no other writer comes in between.
        with self._busy_as_error(), self._connection:
            inserted = self._connection.execute(_INSERT_OK, (*row, time.time())).rowcount
            stored = None if inserted else self.get(request_key)
            if not inserted and stored is None:
                # An empty answer stored before empty replies were errors (never served): kept
                # as an error row for the record, and this answer takes its place.
                self._connection.execute(
                    "UPDATE responses SET status = 'error', error_kind = 'empty_reply', "
                    "error_message = 'empty reply (stored as an answer by an earlier release)' "
                    "WHERE request_key = ? AND status = 'ok'", (request_key,))
                self._connection.execute(_INSERT_OK, (*row, time.time()))
        self._failures.pop(request_key, None)
        return stored or StoredResponse(request_key, response_text, completion_tokens, latency_s,
                                        concurrency)

    def put_error(
        self,
        request_key: str,
        identity: dict[str, str],
        request: dict[str, Any],
        error_kind: str,
        error_message: str,
    ) -> None:
        self._failures[request_key] = (error_kind, error_message)
        with self._busy_as_error(), self._connection:
            self._connection.execute(
                "INSERT INTO responses (request_key, status, identity_json, request_json,"
                " error_kind, error_message, created_at) VALUES (?, 'error', ?, ?, ?, ?, ?)",
                (
                    request_key,
                    json.dumps(identity, sort_keys=True),
                    json.dumps(request, sort_keys=True),
                    error_kind,
                    error_message,
                    time.time(),
                ),
            )

    def failure_this_run(self, request_key: str) -> tuple[str, str] | None:
        """(error kind, message) of the request's failure through this store object, unless an
        answer was stored after it; None otherwise. Never read across runs: a stored failure
        is resolved by the rerun, which sends the request again."""
        return self._failures.get(request_key)

    def count_ok(self) -> int:
        return int(self._connection.execute(
            "SELECT COUNT(*) FROM responses WHERE status = 'ok'"
        ).fetchone()[0])

    def answer_times(self, identity: dict[str, str], limit: int = 200) -> list[AnswerTime]:
        """Latencies of the latest answers from this model, each with its concurrency: what a
        time estimate can go on."""
        rows = self._connection.execute(
            "SELECT latency_s, concurrency FROM responses WHERE status = 'ok' "
            "AND identity_json = ? AND latency_s > 0 ORDER BY created_at DESC LIMIT ?",
            (json.dumps(identity, sort_keys=True), limit)).fetchall()
        return [AnswerTime(float(latency), _concurrency(concurrency))
                for latency, concurrency in rows]
