from __future__ import annotations

import sqlite3

from audit.llm.store import AnswerTime, ResponseStore

IDENTITY = {"backend": "fake", "model": "m", "digest": "d"}


def test_ok_rows_persist_across_connections_and_errors_are_not_served(tmp_path):
    path = tmp_path / "store.sqlite3"
    with ResponseStore(path) as store:
        store.put_ok("k1", IDENTITY, {"seed": 1}, "APPROVE.", 2, 0.1)
        store.put_error("k2", IDENTITY, {"seed": 2}, "timeout", "took too long")
    with ResponseStore(path) as store:
        assert store.get("k1").response_text == "APPROVE."
        assert store.get("k2") is None
        assert store.count_ok() == 1


def test_wal_mode_and_first_answer_wins(tmp_path):
    path = tmp_path / "store.sqlite3"
    with ResponseStore(path) as store:
        store.put_ok("k", IDENTITY, {}, "first", 1, 0.1)
        store.put_ok("k", IDENTITY, {}, "second", 1, 0.1)
        assert store.get("k").response_text == "first"
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_each_reply_is_committed_at_once(tmp_path):
    """A second connection sees a reply as soon as it is stored: a crash cannot lose it."""
    path = tmp_path / "store.sqlite3"
    store = ResponseStore(path)
    store.put_ok("k", IDENTITY, {}, "kept", 1, 0.1)
    other = sqlite3.connect(path)
    assert other.execute("SELECT response_text FROM responses").fetchone()[0] == "kept"
    store.close()


def test_an_answer_of_only_whitespace_is_not_served_and_a_real_one_takes_its_place(tmp_path):
    """Catches a blank answer ("  \n", stored by an earlier release) served for good."""
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        store.put_ok("k", IDENTITY, {}, "  \n", 1, 0.1)
        assert store.get("k") is None
        assert store.put_ok("k", IDENTITY, {}, "APPROVE.", 1, 0.1).response_text == "APPROVE."
        assert store.get("k").response_text == "APPROVE."


def test_a_failure_is_this_runs_until_an_answer_is_stored(tmp_path):
    """Catches a failure not recorded for the run (its request retried again at once), one
    still reported after an answer came, and one read by the next run's store."""
    path = tmp_path / "store.sqlite3"
    with ResponseStore(path) as store:
        assert store.failure_this_run("k") is None
        store.put_error("k", IDENTITY, {}, "timeout", "no reply within 5 s")
        assert store.failure_this_run("k") == ("timeout", "no reply within 5 s")
        store.put_error("k2", IDENTITY, {}, "timeout", "no reply within 5 s")
        store.put_ok("k", IDENTITY, {}, "APPROVE.", 1, 0.1)
        assert store.failure_this_run("k") is None
    with ResponseStore(path) as rerun:
        assert rerun.failure_this_run("k2") is None


def test_identity_and_request_are_stored_as_sorted_json(tmp_path):
    """Catches the record of what was asked written in the caller's key order (two equal
    requests stored as different text)."""
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        store.put_ok("k", {"model": "m", "backend": "b"}, {"seed": 1, "max_tokens": 8}, "A", 1,
                     0.1)
        store.put_error("e", {"model": "m", "backend": "b"}, {"seed": 2, "max_tokens": 8},
                        "timeout", "late")
        rows = store._connection.execute(
            "SELECT identity_json, request_json FROM responses ORDER BY request_key").fetchall()
    assert rows == [('{"backend": "b", "model": "m"}', '{"max_tokens": 8, "seed": 2}'),
                    ('{"backend": "b", "model": "m"}', '{"max_tokens": 8, "seed": 1}')]


def test_answer_times_leave_out_untimed_answers_and_keep_the_latest_200(tmp_path):
    """Catches an answer timed 0 s (which would make a model look instant) counted, a
    concurrency of 0 passed on (a time is divided by it), and a shorter default window."""
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        store.put_ok("zero", IDENTITY, {}, "A", 1, 0.0, concurrency=2)
        store.put_ok("slots0", IDENTITY, {}, "A", 1, 3.0, concurrency=0)
        assert store.answer_times(IDENTITY) == [AnswerTime(3.0, None)]
        for index in range(205):
            store.put_ok(f"k{index}", IDENTITY, {}, "A", 1, 1.0, concurrency=4)
        times = store.answer_times(IDENTITY)
    assert times == [AnswerTime(1.0, 4)] * 200


def test_a_writer_waits_for_another_process_to_finish_its_write(tmp_path):
    """Catches a store that gives up at once ("database is locked") while another process
    (a second run sharing the store) holds the write lock for a moment."""
    import threading

    path = tmp_path / "store.sqlite3"
    with ResponseStore(path) as store:
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # the write lock
        threading.Timer(0.1, other.execute, ("COMMIT",)).start()
        store.put_ok("k", IDENTITY, {}, "kept", 1, 0.1)
        assert store.get("k").response_text == "kept"
        other.close()


def test_two_processes_adding_the_concurrency_column_at_once_both_open(tmp_path):
    """Catches the second of two processes opening an old store together failing with
    "duplicate column" (the first added the column after the second looked)."""
    from audit.llm.store import _add_concurrency_column

    class Raced:
        def execute(self, statement):
            if statement.startswith("PRAGMA"):
                return [(0, "request_key")]  # looked before the other process added it
            raise sqlite3.OperationalError("duplicate column name: concurrency")

    _add_concurrency_column(Raced())  # no error


def _database(path, *tables: str):
    with sqlite3.connect(path) as connection:
        for table in tables:
            connection.execute(f"CREATE TABLE {table} (x INTEGER)")
        connection.execute("PRAGMA user_version = 1")  # a file even without tables
    return path


def test_store_problem_names_another_programs_tables_sorted_and_at_most_five(tmp_path):
    """Catches the tables listed in creation order or all of them, and an SQLite file without
    tables (a store about to be made) refused."""
    from audit.llm.store import store_problem

    assert store_problem(_database(tmp_path / "empty.db")) is None
    assert store_problem(_database(tmp_path / "two.db", "zeta", "alpha")) == (
        "is another program's SQLite database (its tables: alpha, zeta)")
    assert store_problem(_database(tmp_path / "six.db", "f", "e", "d", "c", "b", "a")) == (
        "is another program's SQLite database (its tables: a, b, c, d, e, ...)")


def test_a_store_another_program_keeps_locked_is_one_line_and_keeps_what_was_saved(
        tmp_path, monkeypatch):
    """Bug caught (concurrency probe 2026-12-07): a store held by another program's open write
    (a database browser with changes not yet written) past the wait was sqlite3's "database is
    locked" traceback and exit 1; now a StoreBusy (an AuditError: one line, exit 2) naming the
    store, on each write."""
    import pytest

    from audit.errors import AuditError
    from audit.llm.store import StoreBusy

    monkeypatch.setattr(ResponseStore, "busy_timeout_s", 0.2)
    path = tmp_path / "store.sqlite3"
    with ResponseStore(path) as store:
        store.put_ok("kept", IDENTITY, {}, "saved before", 1, 0.1)
        browser = sqlite3.connect(path, isolation_level=None)
        browser.execute("BEGIN EXCLUSIVE")
        for write in (lambda: store.put_ok("k", IDENTITY, {}, "answer", 1, 0.1),
                      lambda: store.put_error("k", IDENTITY, {}, "timeout", "took too long")):
            with pytest.raises(StoreBusy, match=rf"^response store {path} stayed locked by "
                                                r"another program for over 0 s \(") as busy:
                write()
            assert isinstance(busy.value, AuditError)
        with ResponseStore(path) as reader:  # WAL: a store in use can still be opened and read
            assert reader.get("kept").response_text == "saved before"
        browser.execute("ROLLBACK")
        assert store.get("kept").response_text == "saved before"
