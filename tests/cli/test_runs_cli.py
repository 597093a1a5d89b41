"""`python -m audit.runs`: its bad arguments are one line and exit 2, before the store is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.cli import runs


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


@pytest.mark.parametrize("limit", ["0", "-3", "many"])
def test_a_limit_that_is_not_a_positive_integer_is_refused(no_store, capsys, limit: str):
    """Bugs caught: --limit 0 or --limit -3 reached MLflow, whose MlflowException was a 29-line
    traceback (exit 1); then argparse's refusal printed its five-line usage block above the
    line that says what to fix. One line, naming --help; a subcommand's refusal too."""
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


def test_a_params_output_that_is_a_folder_is_one_line(no_store, tmp_path, caplog):
    """Bug caught: `params RUN --output FOLDER` downloaded the run's config, then raised
    IsADirectoryError (exit 1)."""
    assert runs.main(["params", "abcd1234", "--output", str(tmp_path)]) == 2
    assert f"--output {tmp_path} is a folder" in caplog.text
