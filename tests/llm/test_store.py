from __future__ import annotations

import sqlite3

from audit.llm.store import ResponseStore

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
