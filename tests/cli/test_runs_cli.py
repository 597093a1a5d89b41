"""`python -m audit.runs`: its bad arguments are one line and exit 2, before the store is read."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from audit.cli import OneLineParser, runs


class StoreRead(Exception):
    """Raised where the command would read the MLflow store."""


@pytest.fixture
def no_store(monkeypatch, tmp_path: Path) -> None:
    def read(*args, **kwargs):
        raise StoreRead

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runs, "check_store", lambda *args, **kwargs: None)
    monkeypatch.setattr(runs.tracking, "find_runs", read)


@pytest.mark.parametrize("csv", [
    "folder",
    "good.csv/x.csv",
    pytest.param("/proc/x.csv", marks=pytest.mark.skipif(not Path("/proc").is_dir(),
                                                          reason="no /proc here")),
])
def test_a_csv_that_cannot_be_written_is_one_line_before_the_store_is_read(no_store, tmp_path,
                                                                           caplog, csv: str):
    """Bug caught: --csv FOLDER was an IsADirectoryError traceback and --csv /proc/x.csv a
    FileNotFoundError one (exit 1), after the runs were read."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "good.csv").write_text("a\n")
    assert runs.main(["--csv", csv]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and f"--csv {csv}" in errors[0] and "pass --csv PATH" in errors[0]


@pytest.mark.parametrize("arguments", [["--csv", "mlflow.db"],
                                       ["params", "abc", "--output", "mlflow.db"]])
def test_the_store_given_as_an_output_file_is_refused_and_kept(no_store, tmp_path, caplog,
                                                               arguments: list[str]):
    """Bug caught (bad-input review 2026-12-07): `--tracking-uri sqlite:///mlflow.db --csv
    mlflow.db` (or `params ID --output mlflow.db`) wrote the runs table (the params YAML) over
    the MLflow store and exited 0: every run in it was gone. A text file is still replaced."""
    store = tmp_path / "mlflow.db"
    store.write_bytes(b"SQLite format 3\x00" + bytes(100))
    assert runs.main(["--tracking-uri", f"sqlite:///{store}", *arguments]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "mlflow.db is an existing file that is not a text file" in errors[0]
    assert store.read_bytes().startswith(b"SQLite format 3\x00")
    (tmp_path / "old.csv").write_text("run_id\nold\n")
    with pytest.raises(StoreRead):  # past the checks, to the store
        runs.main(["--csv", "old.csv"])


@pytest.mark.parametrize("arguments, said", [
    (["--sweep", ""], "argument --sweep: is empty: give a run id"),
    (["--csv", "runs.csv", "show", "abc"], "--csv shape the runs table, which `show` does not"),
    (["--limit", "5", "--metric", "x", "params", "abc"], "--limit, --metric shape the runs"),
])
def test_a_table_option_that_would_be_ignored_is_refused(no_store, capsys, arguments, said):
    """Bugs caught (bad-input review 2026-12-07): `--sweep ''` listed every run, as if no sweep
    had been named, and `--csv FILE show ID` printed the run and wrote no file, exit 0 both."""
    with pytest.raises(SystemExit) as exited:
        runs.main(arguments)
    printed = capsys.readouterr().err.splitlines()
    assert exited.value.code == 2 and len(printed) == 1 and said in printed[0], printed


@pytest.mark.parametrize("limit", ["0", "-3", "many", "50001"])
def test_a_limit_that_is_not_a_positive_integer_is_refused(no_store, capsys, limit: str):
    """Bugs caught: --limit 0 or --limit -3 reached MLflow, whose MlflowException was a 29-line
    traceback (exit 1); then argparse's refusal printed its five-line usage block above the
    line that says what to fix. One line, naming --help; a subcommand's refusal too. Above
    50,000 (MLflow's most at once) was the same traceback (bad-input review 2026-12-06)."""
    with pytest.raises(SystemExit) as exited:
        runs.main(["--limit", limit])
    assert exited.value.code == 2
    printed = capsys.readouterr().err.splitlines()
    assert len(printed) == 1, printed
    assert printed[0].startswith("python -m audit.runs: error: argument --limit: ")
    assert printed[0].endswith("(see python -m audit.runs --help)")
    with pytest.raises(SystemExit):
        runs.main(["show"])
    assert capsys.readouterr().err.splitlines() == [
        "python -m audit.runs show: error: the following arguments are required: run_id "
        "(see python -m audit.runs show --help)"]


@pytest.mark.parametrize(("arguments", "said"), [
    (["--tracking_uri", "sqlite:///m.db"],
     "unknown option --tracking_uri (did you mean '--tracking-uri'?)"),
    (["--limt", "3"], "unknown option --limt (did you mean '--limit'?)"),
    (["show", "--experment", "audit", "abc"],
     "unknown option --experment (did you mean '--experiment'?)"),
    (["tracking_uri=sqlite:///m.db"],
     "tracking_uri=sqlite:///m.db is not an option here: write --tracking-uri VALUE"),
    (["tracking.tracking_uri=sqlite:///m.db", "show", "abc"],
     "tracking.tracking_uri=sqlite:///m.db is not an option here: write --tracking-uri VALUE"),
])
def test_a_mistyped_option_is_named_not_read_as_a_subcommand(no_store, capsys, arguments, said):
    """Bug caught (bad-input review 2026-12-05): argparse set an unknown option aside and read
    its value as the subcommand, so `--tracking_uri sqlite:///m.db` (or audit.compare's
    `tracking_uri=` spelling) said "argument command: invalid choice: 'sqlite:///m.db' (choose
    from 'show', 'params')"."""
    with pytest.raises(SystemExit) as exited:
        runs.main(arguments)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"python -m audit.runs: error: {said} (see python -m audit.runs --help)"]


def test_options_argparse_takes_are_not_refused_by_the_option_check(capsys):
    """What the check must leave to argparse: an abbreviation, `--option=value`, a negative
    number as a value, an option after its subcommand, and everything after `--`."""
    parser = OneLineParser(prog="p")
    parser.add_argument("--tracking-uri")
    parser.add_argument("--offset", type=int)
    store = OneLineParser(add_help=False)
    store.add_argument("--experiment")
    show = parser.add_subparsers(dest="command").add_parser("show", parents=[store])
    show.add_argument("run_id")
    parsed = parser.parse_args(["--track=u", "--offset", "-3", "show", "--experiment", "e",
                                "--", "--not-an-option"])
    assert (parsed.tracking_uri, parsed.offset, parsed.experiment, parsed.run_id) == (
        "u", -3, "e", "--not-an-option")
    plain = OneLineParser(prog="q", parents=[argparse.ArgumentParser(add_help=False)])
    plain.add_argument("--known")
    # A parent of another class: its options are unknown here, so argparse's own line stands.
    with pytest.raises(SystemExit):
        plain.parse_args(["--unknwn", "x"])
    assert "unrecognized arguments: --unknwn x" in capsys.readouterr().err


def test_a_params_output_that_is_a_folder_is_one_line(no_store, tmp_path, caplog):
    """Bug caught: `params RUN --output FOLDER` downloaded the run's config, then raised
    IsADirectoryError (exit 1)."""
    assert runs.main(["params", "abcd1234", "--output", str(tmp_path)]) == 2
    assert f"--output {tmp_path} is a folder" in caplog.text


def test_a_params_output_named_as_its_overrides_record_is_one_line(no_store, tmp_path, caplog):
    """Bug caught: `params RUN --output params.overrides` wrote the run's config there, then the
    overrides record over it (exit 0): the params file was lost."""
    assert runs.main(["params", "abcd1234", "--output", str(tmp_path / "params.overrides")]) == 2
    assert "is the name of an overrides record" in caplog.text
    assert not (tmp_path / "params.overrides").exists()


def test_a_table_wider_than_the_terminal_continues_in_tables_that_fit(monkeypatch):
    """Bug caught (CI review 2026-12-02): `audit.runs --metric 'contrast/*/mean'` made one
    table wider than the console: rich squeezed every column of a 120-character terminal to
    four characters, and piped output (160) cut off the contrast columns. Each next table
    repeats run_id and holds the columns that did not fit."""
    import io

    import polars as pl
    from rich.console import Console

    metrics = {f"metric:contrast/race/level{index}_vs_White/mean": [-5.047 + index, 0.25]
               for index in range(6)}
    frame = pl.DataFrame({
        "run_id": ["f137d8d0" + "0" * 24, "adf676c2" + "0" * 24],
        "name": ["rasch their-model ingest.input=answers_bias.csv", "rasch m"],
        "started": ["2026-12-02 12:55 +00:00", "2026-12-02 12:54 +00:00"],
        "status": ["FINISHED"] * 2,
        "models": ["their-model", "m"], "param:fit.draws": ["200000", "300"],
        "metric:n_prompts": [144.0, 8.0], "metric:rhat_max": [1.019, 1.012], **metrics})
    buffer = io.StringIO()
    runs.print_runs(frame, "2 runs", Console(file=buffer, width=120))
    printed = buffer.getvalue()
    assert max(map(len, printed.splitlines())) <= 120
    assert "2 runs, continued (2 of" in printed
    for value in ("200000", "-5.047", "-0.047", "FINISHED", "their-model"):
        assert value in printed, value  # whole, not folded across lines
    assert printed.count("f137d8d0") >= 2  # each table names its rows


def test_show_lists_the_codes_commit_and_takes_the_store_after_the_subcommand(monkeypatch,
                                                                               capsys):
    """Bugs caught (CI review 2026-12-02): `show` left out the audit.commit and audit.dirty
    tags the docs name among its provenance, and `show ID --tracking-uri URI` (where the
    not-found message's advice puts it) was "unrecognized arguments"."""
    run_id = "b7028099" + "1" * 24
    asked = []

    def get_run(uri, wanted):
        asked.append(uri)
        return {"run_id": wanted, "name": "rasch m", "status": "FINISHED", "start_time": 0,
                "params": {}, "metrics": {},
                "tags": {"method": "rasch", "audit.commit": "0123456789abcdef",
                         "audit.dirty": "false", "git.commit": "0123456789abcdef"}}

    monkeypatch.setattr(runs, "check_store", lambda *args, **kwargs: None)
    monkeypatch.setattr(runs.tracking, "get_run", get_run)
    assert runs.main(["show", run_id, "--tracking-uri", "sqlite:///elsewhere.db"]) == 0
    out = capsys.readouterr().out
    assert asked and set(asked) == {"sqlite:///elsewhere.db"}
    assert "audit.commit" in out and "0123456789abcdef" in out and "audit.dirty" in out
    assert runs.main(["--tracking-uri", "sqlite:///before.db", "show", run_id]) == 0
    assert asked[-1] == "sqlite:///before.db"


@pytest.mark.parametrize(("change", "named"), [
    ({"design": {"replicates": "three"}}, "design.replicates"),  # a field whose type changed
    ({"design": {"retired_setting": 1}}, "design.retired_setting"),  # a field since removed
])
def test_params_of_a_run_from_another_version_is_one_line_naming_its_version(
        monkeypatch, tmp_path, caplog, change, named):
    """Bug caught: `audit.runs params OLD_ID` for a run whose logged config.yaml has a field
    this version of audit removed, or types differently, ended in OmegaConf's ValidationError
    traceback. It is one line naming the field, the audit version and commit that made the run,
    and where the steps to re-create it are; params.yaml is not written."""
    from omegaconf import OmegaConf

    from audit.cli.params import compose_params

    run_id = "0a1b2c3d" + "4" * 24
    logged = OmegaConf.to_container(OmegaConf.structured(compose_params([])))
    for section, values in change.items():
        logged[section].update(values)

    def download_artifact(uri, wanted_run, artifact, destination):
        if artifact != runs.CONFIG_ARTIFACT:
            raise OSError("no such artifact")
        path = destination / artifact
        path.write_text(OmegaConf.to_yaml(OmegaConf.create(logged)))
        return path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runs, "check_store", lambda *args, **kwargs: None)
    monkeypatch.setattr(runs.tracking, "download_artifact", download_artifact)
    monkeypatch.setattr(runs.tracking, "get_run", lambda uri, wanted: {
        "run_id": wanted, "tags": {"audit.version": "0.1.0", "audit.commit": "fedcba9876543210"},
        "artifact_uri": str(tmp_path)})
    assert runs.main(["params", run_id]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert named in errors[0] and "audit 0.1.0" in errors[0] and "fedcba9876" in errors[0]
    assert f"python -m audit.runs show {run_id[:8]}" in errors[0]
    assert not (tmp_path / "params.yaml").exists()


@pytest.mark.parametrize(("uri", "said"), [("", "the store's URI is empty"),
                                           ("sqlite:///adir", "(adir is a folder)")])
def test_an_empty_or_folder_store_uri_is_named_and_nothing_is_made(monkeypatch, tmp_path, caplog,
                                                                   uri, said):
    """Bugs caught (bad-input review 2026-12-04): `--tracking-uri ''` made a 950 KB mlflow.db
    in the working folder (MLflow's default store) and ended "at :"; a SQLite URI naming a
    folder said the folder "does not exist"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    assert runs.main(["--tracking-uri", uri]) == 2
    assert said in caplog.text
    assert sorted(path.name for path in tmp_path.iterdir()) == ["adir"]


def test_a_sweep_option_naming_a_run_that_is_no_sweep_says_which_run_is(tmp_path, caplog,
                                                                         capsys):
    """Bug caught (bad-input review 2026-12-05): `--sweep ID` of an ordinary run, or of one of a
    sweep's jobs, said "no runs in experiment 'audit' ... under sweep ID" and exited 1, as if the
    sweep had no jobs. One line and exit 2 now, naming the parent for a job."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("audit", artifact_location=str(tmp_path / "art"))
    sweep = client.create_run(experiment, tags={"audit.role": "sweep"},
                              run_name="sweep:models").info.run_id
    job = client.create_run(experiment, tags={"mlflow.parentRunId": sweep},
                            run_name="rasch a").info.run_id
    alone = client.create_run(experiment, run_name="rasch b").info.run_id
    for run_id, fix in ((job, f"it is a job of sweep {sweep[:8]}: pass --sweep {sweep[:8]}"),
                        (alone, "pass a sweep's parent run (the runs named sweep:NAME)")):
        caplog.clear()
        assert runs.main(["--tracking-uri", uri, "--sweep", run_id[:8]]) == 2
        errors = [record.getMessage() for record in caplog.records
                  if record.levelname == "ERROR"]
        assert errors == [f"--sweep {run_id[:8]}: run {run_id[:8]} is not a sweep's parent "
                          f"run; {fix}"]
    capsys.readouterr()
    assert runs.main(["--tracking-uri", uri, "--sweep", sweep[:8]]) == 0  # the parent: its job
    assert f"1 run in sweep {sweep[:8]}" in capsys.readouterr().out


@pytest.mark.parametrize(("module", "arguments", "said"), [
    ("params", ["items=smoke", "--output", "d/"],
     "argument --output: d/ ends in a slash, which names a folder: pass a file's path, such as "
     "d/params.yaml"),
    ("runs", ["params", "abcd1234", "--output", "d/"], "argument --output: d/ ends in a slash"),
    ("runs", ["--csv", "d/"], "argument --csv: d/ ends in a slash"),
    ("runs", ["--csv", ""], "argument --csv: is empty: give it a path"),
    ("stages", ["design", "--dir", ""], "argument --dir: is empty: give it a path"),
    ("stages", ["design", "--params", " "], "argument --params: is empty: give it a path"),
    ("dif_compare", [""], "argument directory: is empty: give it a path"),
])
def test_an_empty_path_or_a_file_path_ending_in_a_slash_is_one_line(no_store, tmp_path, capsys,
                                                                   module, arguments, said):
    """Bugs caught (bad-input review 2026-12-06): argparse's type=Path dropped the slash, so
    `audit.params --output d/` wrote a file named d, and read '' as the current folder, so
    `audit.stages design --dir ''` wrote its stage folder there. Nothing is written."""
    command = importlib.import_module(f"audit.cli.{module}")
    with pytest.raises(SystemExit) as exited:
        command.main(arguments)
    assert exited.value.code == 2
    (printed,) = capsys.readouterr().err.splitlines()
    assert said in printed, printed
    assert list(tmp_path.iterdir()) == []
