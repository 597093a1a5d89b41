"""An MLflow store that cannot be reached is one line naming it and the fix, before any work
(review2/tracking.md #1: it was a traceback after 5 1/2 minutes of retries, and no report)."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from audit.cli.params import write_params
from audit.cli.stages import main as stages_main
from audit.config import TrackingConfig
from audit.tracking.mlflow import TrackingError, check_store, mlflow_run
from audit.tracking.store import (PROBE_SETTINGS, SQLITE_HEADER, _failure_reason,
                                  environment_kept, lost_a_write_race, missing_artifacts,
                                  mistyped_uri, not_a_store_file, reach_store,
                                  retried_on_write_race, sqlite_path, store_fix)

DEAD_STORE = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.fixture
def no_retries(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")


def test_an_unreachable_store_is_one_line_naming_the_uri_and_the_fix(monkeypatch):
    """It was an MlflowException traceback after MLflow's default 7 retries (5 1/2 minutes):
    the check caps them (the environment's setting is left as it was)."""
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    started = time.perf_counter()
    with pytest.raises(TrackingError) as failed:
        check_store(TrackingConfig(tracking_uri=DEAD_STORE))
    message = str(failed.value)
    assert message == (f"MLflow store {DEAD_STORE} unreachable (connection refused): start the "
                       f"server, fix tracking.tracking_uri, or pass tracking=none")
    assert time.perf_counter() - started < 60
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ


def test_a_store_from_the_environment_is_blamed_on_the_environment(monkeypatch, no_retries):
    """Bug caught: a dead server in MLFLOW_TRACKING_URI (which the shipped configs read first)
    was told to "fix tracking.tracking_uri", a setting the user never typed."""
    from audit.cli.params import compose_params

    monkeypatch.setenv("MLFLOW_TRACKING_URI", DEAD_STORE)
    config = compose_params([]).tracking
    assert config.tracking_uri == DEAD_STORE
    with pytest.raises(TrackingError, match=r"start the server, fix MLFLOW_TRACKING_URI "
                                            r"\(the default store comes from it\), or pass "
                                            r"tracking=none$"):
        check_store(config)


def test_a_run_whose_store_fails_after_the_check_is_one_line_too(no_retries):
    """Opening the run itself (mlflow_run) raised MLflow's exception, not a user error."""
    with pytest.raises(TrackingError, match="unreachable"):
        with mlflow_run(TrackingConfig(tracking_uri=DEAD_STORE), "run", {}):
            pass


def test_a_stage_refuses_a_dead_store_before_it_writes_anything(tmp_path, no_retries, caplog,
                                                                 monkeypatch):
    """`python -m audit.stages` reached the store only in the report stage, after the model's
    time was spent, and exited 1 with a traceback; now every stage checks first: exit 2, one
    line, no file written."""
    monkeypatch.chdir(tmp_path)
    params = write_params(["items=smoke", "personas=smoke",
                           f"tracking.tracking_uri={DEAD_STORE}"], tmp_path / "params.yaml")
    with caplog.at_level(logging.ERROR):
        code = stages_main(["design", "--params", str(params), "--dir", str(tmp_path / "pipe")])
    assert code == 2
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1 and DEAD_STORE in errors[0] and "nothing was run" in errors[0]
    assert not list((tmp_path / "pipe").glob("**/*.parquet"))
    # audit.stages takes no overrides: its fix is a params.yaml written without the store
    # (the line said "pass tracking=none", which audit.stages refuses as an argument).
    assert "pass tracking=none" not in errors[0]
    assert "python -m audit.params OVERRIDES tracking=none" in errors[0]


def test_a_sqlite_store_under_a_file_is_one_line_before_mlflow_opens_it(tmp_path):
    """Bad-input review 2026-12-01: `sqlite:///good.csv/mlflow.db` (a file where the store's
    folder should be) was an 81-line FileExistsError traceback from inside MLflow."""
    (tmp_path / "good.csv").write_text("a,b\n")
    uri = f"sqlite:///{tmp_path / 'good.csv' / 'mlflow.db'}"
    with pytest.raises(TrackingError) as failed:
        check_store(TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "art")))
    assert str(failed.value) == (f"MLflow store {uri}: {tmp_path / 'good.csv'} is a file, not a "
                                 "folder: fix tracking.tracking_uri, or pass tracking=none")


def test_an_artifact_folder_that_cannot_be_made_is_refused_before_any_work(tmp_path):
    """Bad-input review 2026-12-01: tracking.artifact_root under a file ran the whole audit and
    then stopped on a NotADirectoryError traceback when the run logged its files; the
    experiment kept that folder, so the rerun with the root corrected failed the same way after
    its fit. Both are one line now, before any work: the second names the experiment's own
    folder and how to get out of it."""
    (tmp_path / "good.csv").write_text("a,b\n")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    bad = TrackingConfig(tracking_uri=store, artifact_root=str(tmp_path / "good.csv" / "art"),
                         experiment="sticky")
    with pytest.raises(TrackingError, match=r"^tracking.artifact_root=.*good.csv/art: .*good.csv "
                                            r"is a file, not a folder: set it to a folder"):
        check_store(bad)
    from mlflow.tracking import MlflowClient

    # The experiment as a run before this check made it.
    MlflowClient(store).create_experiment(
        "sticky", artifact_location=(tmp_path / "good.csv" / "art").as_uri())
    fixed = TrackingConfig(tracking_uri=store, artifact_root=str(tmp_path / "art"),
                           experiment="sticky")
    with pytest.raises(TrackingError, match=r"^experiment 'sticky' keeps its artifacts in .*"
                                            r"good.csv/art, set when it was made: .*name a new "
                                            r"tracking.experiment"):
        check_store(fixed)
    check_store(TrackingConfig(tracking_uri=store, artifact_root=str(tmp_path / "art"),
                               experiment="fresh"))


@pytest.mark.parametrize("command", [["--tracking-uri", "{store}"],
                                     ["show", "ab12cd34", "--tracking-uri", "{store}"]])
def test_the_runs_command_names_a_store_it_cannot_read_in_one_line(command, tmp_path,
                                                                   monkeypatch, caplog):
    """`python -m audit.runs` read the store without the check the runs have: a bare `mlruns`
    (which MLflow 3 refuses to open as a folder store) gave MlflowException's traceback, and a
    server that is down gave it after MLflow's seven retries. Then the line's fix read "fix
    tracking.tracking_uri, or pass --tracking-uri ...": a setting this command does not take."""
    from audit.cli.runs import main as runs_main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    (tmp_path / "mlruns").mkdir()  # an older audit's folder store (where none is: a typo)
    for store, reason in ((str(tmp_path / "mlruns"), "is a folder store, which MLflow opens "
                           "only with MLFLOW_ALLOW_FILE_STORE=true"),
                          (DEAD_STORE, "unreachable (connection refused)")):
        caplog.clear()
        started = time.perf_counter()
        with caplog.at_level(logging.ERROR):
            code = runs_main([part.format(store=store) for part in command])
        errors = [record.getMessage() for record in caplog.records
                  if record.levelno >= logging.ERROR]
        assert code == 2
        assert len(errors) == 1 and errors[0].startswith(f"MLflow store {store} {reason}")
        assert re.search(r": (start the server, or )?pass --tracking-uri with the store",
                         errors[0]) and "fix" not in errors[0], errors[0]
        assert time.perf_counter() - started < 60


def other_programs_database(path) -> bytes:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE answers (text TEXT)")
    connection.close()
    return path.read_bytes()


@pytest.mark.parametrize(("content", "reason"), [
    (lambda path: b"", "is an empty file, not an MLflow store"),
    (other_programs_database, "is a SQLite database without MLflow's tables, not an MLflow "
                              "store"),
    (lambda path: b"respondent,item,y\n1,a,0\n", "is not a database file"),
])
def test_the_runs_command_leaves_a_file_that_holds_no_store_as_it_was(tmp_path, caplog,
                                                                       content, reason):
    """Bug caught (bad-input review 2026-12-05): MLflow opens any SQLite file as a store and
    creates its tables there, so `audit.runs --tracking-uri sqlite:///empty.csv` turned an
    empty file (or another program's database) into a 1 MB MLflow store, then said "run an
    audit first". A command that only reads runs names the file and writes nothing."""
    from audit.cli.runs import main as runs_main

    store = tmp_path / "store.db"
    store.write_bytes(content(store))
    before = store.read_bytes()
    with caplog.at_level(logging.ERROR):
        assert runs_main(["--tracking-uri", f"sqlite:///{store}"]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == [f"no MLflow store at sqlite:///{store} ({store} {reason}); pass "
                      f"--tracking-uri with the store the run was logged to (the audit's "
                      f"tracking.tracking_uri; default sqlite:///mlflow.db, relative to the "
                      f"directory the audit ran in)"]
    assert store.read_bytes() == before


def test_a_plan_from_a_run_id_in_a_dead_store_is_one_line(monkeypatch):
    """`audit.plan plan.from_run=ID` with the store down: MlflowException after the retries."""
    from audit.cli.runs import run_source
    from audit.errors import AuditError

    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    with pytest.raises(AuditError, match=f"plan.from_run=ab12cd34 is neither a run directory nor "
                                         f"a run in the store: MLflow store {DEAD_STORE} "
                                         "unreachable"):
        run_source("ab12cd34", TrackingConfig(tracking_uri=DEAD_STORE), "tracking.tracking_uri",
                   "plan.from_run=ab12cd34")


def cut_off_database(path) -> bytes:
    """A SQLite database whose second half is gone (sqlite reads it as malformed)."""
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE answers (text TEXT)")
        connection.executemany("INSERT INTO answers VALUES (?)", [("x" * 500,)] * 200)
        connection.execute("CREATE TABLE later (y)")
    connection.close()
    whole = path.read_bytes()
    return whole[:len(whole) // 2]


@pytest.mark.parametrize(("content", "reason"), [
    (lambda path: b"respondent,item,y\n1,a,0\n", "is not a database"),  # a CSV named as store
    (cut_off_database, "is a damaged database"),  # an mlflow.db cut off by a full disk
])
def test_a_store_file_that_is_not_a_database_is_one_line(tmp_path, content, reason):
    """Bug caught: `--tracking-uri sqlite:///answers.csv`, or an mlflow.db cut off by a full disk,
    ended audit.runs, compare, plan and ingest in sqlalchemy's DatabaseError traceback (exit 1):
    store_errors caught MLflow's and requests' errors only. The file is left as it was."""
    store = tmp_path / "store.db"
    content = content(store)
    store.write_bytes(content)
    uri = f"sqlite:///{store}"
    with pytest.raises(TrackingError) as failed:
        check_store(TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "art")))
    assert str(failed.value).startswith(f"MLflow store {uri} {reason}"), failed.value
    assert "\n" not in str(failed.value)
    assert store.read_bytes() == content


def test_a_store_uri_of_an_unknown_scheme_is_named_whole(tmp_path):
    """Bug caught (bad-input review 2026-12-04): `foo://bar` gave MLflow's list of schemes cut
    at 200 characters mid-word ("... 'http', 'http)")."""
    with pytest.raises(TrackingError) as failed:
        check_store(TrackingConfig(tracking_uri="foo://bar",
                                   artifact_root=str(tmp_path / "art")))
    assert str(failed.value).startswith("MLflow store foo://bar has a scheme MLflow does not "
                                        "know (a store is sqlite:///FILE.db, http(s)://HOST:PORT"
                                        ), failed.value


@pytest.mark.parametrize("setting, message", [
    ({"tracking_uri": ""}, r"^tracking.tracking_uri= is empty: give the MLflow store \(the "
                           r"default is sqlite:///mlflow.db\), or pass tracking=none$"),
    ({"tracking_uri": " "}, r"^tracking.tracking_uri= is empty: give the MLflow store"),
    ({"experiment": " "}, r"^tracking.experiment= is empty: name the MLflow experiment"),
])
def test_an_empty_store_or_experiment_is_refused_before_any_work(tmp_path, monkeypatch, setting,
                                                                 message):
    """Bug caught (bad-input review 2026-12-04): `tracking.experiment=` passed the check and
    stopped the run after all its work, as "Invalid experiment name: '' ... fix
    tracking.tracking_uri"; `tracking.tracking_uri=` as "MLflow store  is a folder store"."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
                            artifact_root=str(tmp_path / "art"))
    with pytest.raises(TrackingError, match=message):
        check_store(dataclasses.replace(config, **setting))
    if "tracking_uri" in setting:  # the value came from the environment, which is named
        monkeypatch.setenv("MLFLOW_TRACKING_URI", setting["tracking_uri"])
        with pytest.raises(TrackingError, match=r"^tracking.tracking_uri= is empty "
                                                r"\(MLFLOW_TRACKING_URI, which it reads, is set "
                                                r"but empty\): give the MLflow store"):
            check_store(dataclasses.replace(config, **setting))


def test_a_run_whose_artifact_folder_is_gone_is_named_not_blamed(tmp_path, caplog):
    """Bug caught (bad-input review 2026-12-05): with the store copied or the project moved
    without the artifact folder, audit.compare said the run "has no prompts table", audit.runs
    params that it "was not logged by audit's report stage" and audit.plan that it lacked an
    artifact: each blamed the run. Each now names the folder MLflow recorded."""
    import shutil

    from mlflow.tracking import MlflowClient

    from audit.cli.compare_sources import fetch_run
    from audit.cli.runs import main as runs_main
    from audit.errors import AuditError
    from audit.methods.rasch.pilot import run_files
    from audit.tracking import mlflow as tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    artifacts = tmp_path / "art"
    experiment = client.create_experiment("audit", artifact_location=str(artifacts))
    run_id = client.create_run(experiment, tags={"method": "rasch"}).info.run_id
    (tmp_path / "config.yaml").write_text("method: rasch\n")
    client.log_artifact(run_id, str(tmp_path / "config.yaml"))
    # A run that logged no file has no folder of its own: not a moved store.
    tracking.check_artifacts(uri, client.create_run(experiment).info.run_id)
    shutil.rmtree(artifacts)
    said = (f"run {run_id[:8]}'s files are missing: MLflow recorded them in {artifacts / run_id}"
            f"/artifacts, which does not exist (the store was copied or moved without its "
            f"artifact folder): restore that folder, or run this where the audit ran")
    with pytest.raises(TrackingError) as failed:
        fetch_run(run_id, uri, "audit", tmp_path / "scratch")
    assert str(failed.value) == said
    with caplog.at_level(logging.ERROR):
        assert runs_main(["--tracking-uri", uri, "params", run_id[:8], "--output",
                          str(tmp_path / "params.yaml")]) == 2
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.ERROR] == [said]
    with pytest.raises(AuditError) as failed:
        run_files(run_id, uri, tmp_path / "scratch")
    assert str(failed.value) == f"plan.from_run={run_id}: {said}"


@pytest.mark.parametrize(("uri", "said"), [
    ("sqlite//x.db", "is not a store URI (did you mean sqlite:///x.db?)"),
    ("sqlite:/x.db", "is not a store URI (did you mean sqlite:///x.db?)"),  # was a traceback
    ("http//localhost:5000", "is not a store URI (did you mean http://localhost:5000?)"),
    ("mlflow.db", "is a file's path, not a store URI (a SQLite store is sqlite:///mlflow.db)"),
])
def test_a_store_uri_with_a_mistyped_scheme_names_the_uri_meant(tmp_path, monkeypatch, uri,
                                                                 said):
    """Bug caught (bad-input review 2026-12-05): `sqlite//x.db` and a bare `mlflow.db` were
    called folder stores that MLflow opens only with MLFLOW_ALLOW_FILE_STORE=true, and
    `sqlite:/x.db` ended in sqlalchemy's ArgumentError traceback."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(TrackingError) as failed:
        check_store(TrackingConfig(tracking_uri=uri, artifact_root=str(tmp_path / "art")))
    assert str(failed.value) == f"MLflow store {uri} {said}: fix tracking.tracking_uri, or pass " \
                                "tracking=none"
    assert list(tmp_path.iterdir()) == []  # nothing made where the typo points


@pytest.mark.parametrize("timeout", ["inf", "1e999"])
def test_an_infinite_timeout_in_the_environment_is_capped_not_a_traceback(tmp_path, monkeypatch,
                                                                          timeout):
    """Bug: reach_store caps MLFLOW_HTTP_REQUEST_TIMEOUT with int(float(value)), which raises
    OverflowError (not the ValueError it catches) for an infinite value: the check before every
    run ended in a traceback instead of using its own cap, as it does for "soon"."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", timeout)
    check_store(TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                               artifact_root=str(tmp_path / "art")))
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == timeout


@pytest.mark.parametrize(("message", "raced"), [
    ("(sqlite3.IntegrityError) UNIQUE constraint failed: experiment_tags.key", True),
    ('duplicate key value violates unique constraint "experiment_tag_pk"', True),
    ("(1062, \"Duplicate entry '1-x' for key 'PRIMARY'\")", True),
    ("(sqlite3.OperationalError) database is locked", False),
])
def test_a_lost_write_race_is_known_by_each_databases_words(message, raced):
    """PostgreSQL's or MySQL's words for a row inserted first were not known as a race."""
    assert lost_a_write_race(RuntimeError(message)) is raced


def test_a_lost_write_race_is_retried_twice_and_any_other_failure_is_raised_at_once():
    """Bugs caught: a race not retried, retried past its attempts, or another failure retried."""
    calls = []

    def write(fails: int, error: Exception):
        def attempt() -> str:
            calls.append(error)
            if len(calls) <= fails:
                raise error
            return "written"
        return attempt

    assert retried_on_write_race(write(2, RuntimeError("UNIQUE constraint failed"))) == "written"
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(RuntimeError, match="UNIQUE constraint failed"):
        retried_on_write_race(write(3, RuntimeError("UNIQUE constraint failed")))
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(ValueError, match="no such table"):
        retried_on_write_race(write(1, ValueError("no such table")))
    assert len(calls) == 1


@pytest.mark.parametrize(("error", "reason"), [
    ("HTTPConnectionPool: Read timed out. (read timeout=10)", "unreachable (timed out)"),
    ("Max retries exceeded with url: /api/2.0/mlflow", "unreachable"),
    ("(sqlite3.DatabaseError) file is not a database",
     "is not a database (the file there is something else)"),
    ("(sqlite3.DatabaseError) database disk image is malformed",
     "is a damaged database (restore it from a backup)"),
    ("\nboom\nsecond line", "failed (boom)"),
    ("x" * 201, f"failed ({'x' * 200})"),
])
def test_a_store_failure_is_named_by_what_its_error_says(error, reason):
    assert _failure_reason(RuntimeError(error)) == reason


def test_the_fix_of_a_store_names_the_server_the_setting_it_came_from_or_neither(monkeypatch):
    """Bugs caught: an https server not told to be started; a store not from the environment
    blamed on MLFLOW_TRACKING_URI."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert store_fix("https://h:1") == ("start the server, fix tracking.tracking_uri, or pass "
                                        "tracking=none")
    assert store_fix("sqlite:///x.db", "pass --tracking-uri X", None) == "pass --tracking-uri X"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///x.db")
    assert store_fix("sqlite:///x.db") == ("fix MLFLOW_TRACKING_URI (the default store comes "
                                           "from it), or pass tracking=none")


def test_environment_kept_removes_what_the_block_set_and_restores_what_it_changed(monkeypatch):
    monkeypatch.delenv("AUDIT_TEST_UNSET", raising=False)
    monkeypatch.setenv("AUDIT_TEST_SET", "before")
    with environment_kept("AUDIT_TEST_UNSET", "AUDIT_TEST_SET"):
        os.environ["AUDIT_TEST_UNSET"] = "set"
        os.environ["AUDIT_TEST_SET"] = "changed"
    assert "AUDIT_TEST_UNSET" not in os.environ
    assert os.environ["AUDIT_TEST_SET"] == "before"


def test_a_sqlite_store_uri_names_its_file_relative_or_absolute():
    assert sqlite_path("sqlite:///store/m.db") == Path("store/m.db")
    assert sqlite_path("sqlite:////data/m.db") == Path("/data/m.db")
    assert sqlite_path("http://h:1") is None


def _database(path, *tables: str) -> None:
    with sqlite3.connect(path) as connection:
        for table in tables:
            connection.execute(f"CREATE TABLE {table} (x)")
    connection.close()


def test_only_a_sqlite_file_with_mlflows_tables_or_one_that_cannot_be_read_is_a_store(tmp_path):
    """Bugs caught: a text file starting with "SQLite", or a database with an experiments
    table alone, taken for a store (MLflow would write its tables into it)."""
    notes = tmp_path / "notes.db"
    notes.write_text("SQLite format notes\n")
    assert not_a_store_file(notes) == "is not a database file"
    _database(tmp_path / "half.db", "experiments")
    assert not_a_store_file(tmp_path / "half.db") == ("is a SQLite database without MLflow's "
                                                      "tables, not an MLflow store")
    _database(tmp_path / "store.db", "experiments", "runs", "params")
    assert not_a_store_file(tmp_path / "store.db") is None
    (tmp_path / "garbled.db").write_bytes(SQLITE_HEADER + b"\xff" * 200)  # sqlite's own error
    assert not_a_store_file(tmp_path / "garbled.db") is None
    assert not_a_store_file(tmp_path / "absent.db") is None


def test_a_runs_files_are_missing_only_when_the_experiments_folder_is_gone(tmp_path):
    """Bugs caught: a run that logged no file (no folder of its own) called moved; a remote
    store's files called missing."""
    run_id = "0123456789abcdef" * 2
    folder = tmp_path / "art" / run_id / "artifacts"
    assert missing_artifacts(run_id, folder.as_uri()) == (
        f"run 01234567's files are missing: MLflow recorded them in {folder}, which does not "
        "exist (the store was copied or moved without its artifact folder): restore that "
        "folder, or run this where the audit ran")
    assert missing_artifacts(run_id, str(folder)) is not None
    (tmp_path / "art").mkdir()
    assert missing_artifacts(run_id, folder.as_uri()) is None
    assert missing_artifacts(run_id, f"s3://bucket/1/{run_id}/artifacts") is None


@pytest.mark.parametrize(("uri", "said"), [
    ("SQLITE:/x.db", "is not a store URI (did you mean sqlite:///x.db?)"),
    ("answers.SQLITE3", "is a file's path, not a store URI (a SQLite store is "
                        "sqlite:///answers.SQLITE3)"),
    ("https://h:1", None),
    ("sqlite:///x.db", None),
    ("postgresql://u@h/x.db", None),
    ("databricks", None),  # a URI MLflow knows, with no slash
])
def test_a_mistyped_store_uri_is_known_whatever_its_case(uri, said):
    assert mistyped_uri(uri) == said


def test_a_bare_path_is_a_folder_store_only_where_a_folder_is(tmp_path, monkeypatch):
    """Bugs caught (bad-input review 2026-12-07): `--tracking-uri ./typo_store`, where nothing
    is, was called "a folder store, which MLflow opens only with MLFLOW_ALLOW_FILE_STORE=true",
    and with that set MLflow made the folder; a folder named fs.db was told to use
    sqlite:///fs.db, which then failed on the folder. A real folder is still MLflow's to read."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    nowhere = "is a path where nothing is, not a store URI (a SQLite store is sqlite:///FILE.db"
    assert mistyped_uri("./typo_store").startswith(nowhere)
    assert mistyped_uri("~/surely/not/here").startswith(nowhere)
    (tmp_path / "fs.db").mkdir()
    (tmp_path / "mlruns").mkdir()
    assert mistyped_uri("fs.db") is None and mistyped_uri("./mlruns") is None
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # then a new folder store is allowed
    assert mistyped_uri("./typo_store") is None


def test_the_store_check_caps_mlflows_retries_and_timeout_and_puts_them_back(monkeypatch,
                                                                              tmp_path):
    """Bugs caught: the environment's longer timeout or missing retry setting used by the check
    (minutes for a dead server), or urllib3's log level left at ERROR after it."""
    from mlflow.tracking import MlflowClient

    seen = []
    urllib3_log = logging.getLogger("urllib3.connectionpool")
    monkeypatch.setattr(urllib3_log, "level", logging.WARNING)

    def probe(client, name):
        seen.append(({setting: os.environ.get(setting) for setting in PROBE_SETTINGS},
                     urllib3_log.level))

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", probe)
    config = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'm.db'}")
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "120")
    assert reach_store(config) is None
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "soon")
    reach_store(config)
    assert seen == [({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"},
                     logging.ERROR),
                    ({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"},
                     logging.ERROR)]
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "soon"
    assert urllib3_log.level == logging.WARNING


@pytest.mark.slow
def test_a_store_another_process_keeps_locked_is_named_busy_not_misconfigured(tmp_path):
    """Bug caught (concurrency probe 2026-12-07): a SQLite store held by another process's write
    was "failed ((sqlite3.OperationalError) database is locked): fix tracking.tracking_uri", a
    setting that was right, after MLflow's ERROR lines with the SQL and two tracebacks. Now it
    is named busy, with the fix that fits. Slow: MLflow waits about 10 s for the lock first."""
    config = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
                            artifact_root=str(tmp_path / "artifacts"))
    check_store(config)  # its tables made
    other = sqlite3.connect(tmp_path / "mlflow.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(TrackingError) as busy:
        check_store(config)
    other.execute("ROLLBACK")
    assert str(busy.value) == (f"MLflow store {config.tracking_uri} stayed locked by another "
                               "process (database is locked: one writer at a time; another run "
                               "logging, the MLflow UI, a database browser with changes not yet "
                               "written): rerun when it is free, or pass tracking=none")
    check_store(config)
