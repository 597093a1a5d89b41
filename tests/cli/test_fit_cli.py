"""`python -m audit.fit`: the command-line contract of DESIGN.md, and its one-line errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import arviz as az
import numpy as np
import polars as pl
import pytest
from scipy import stats

from audit.methods.rasch.config import FitConfig
import audit.cli.fit_run as fit_run
from audit.cli.fit import FitInputError, main, parse_arguments
from audit.cli.fit_run import read_long_table


def write_responses(path: Path, columns=("respondent", "item", "y")) -> Path:
    rng = np.random.default_rng(0)
    rows = [(f"p{i}", f"q{j}", int(rng.random() < 0.3 + 0.1 * i)) for i in range(4)
            for j in range(6) for _ in range(3)]
    table = pl.DataFrame(rows, schema=list(columns), orient="row")
    if path.suffix == ".parquet":
        table.write_parquet(path)
    else:
        table.write_csv(path)
    return path


def test_arguments_are_typed_and_defaulted() -> None:
    command = parse_arguments(["input=a.csv", "output=out", "prior=seed", "draws=200"])
    assert (command.input, command.output, command.prior) == ("a.csv", "out", "seed")
    assert command.sampler.draws == 200 and command.sampler.tune == FitConfig().tune
    assert (command.respondent, command.item, command.outcome) == ("respondent", "item", "y")
    # Bug caught: the fit's advice says "raise fit.tune and fit.draws", and `fit.tune=...` was
    # refused as an unknown option 'fit'.
    named = parse_arguments(["input=a.csv", "output=out", "fit.tune=700", "fit.draws=300"])
    assert (named.sampler.tune, named.sampler.draws) == (700, 300)


@pytest.mark.parametrize(("arguments", "message"), [
    (["input=a.csv"], "output"),
    (["input=a.csv", "output=o", "draws=many"], "draws"),
    (["input=a.csv", "output=o", "colour=red"], "colour"),
    (["input=a.csv", "output=o", "prior=flat"], "prior=seed"),
    (["a.csv"], "key=value"),
    (["input=a.csv", "output=o", "sampler.model=rasch_seed"], "not an option"),
    # Bugs caught: each of these sampled first and then crashed with a traceback (exit 1).
    (["input=a.csv", "output=o", "hdi_prob=1.5"], r"hdi_prob=1.5 must lie in \(0, 1\)"),
    (["input=a.csv", "output=o", "draws=0"], r"draws=0 must lie in \[1, inf\)"),
    (["input=a.csv", "output=o", "judge_imputations=0"], r"judge_imputations=0 must lie in"),
    (["input=a.csv", "output=o", "judge_imputations=-3"], r"judge_imputations=-3 must lie in"),
    # An OverflowError traceback from nutpie, after the table was read (review 2026-12-04).
    (["input=a.csv", "output=o", "seed=-1"], r"seed=-1 must lie in \[0, 4294967294\]"),
    # Bad-input review 2026-12-04: both were "unknown option 'fit'", and an empty value was
    # "Incompatible value 'None' for field of type 'str'".
    (["input=a.csv", "output=o", "fit.model=twopl"],
     r"^fit.model is not an audit.fit option: of the audit's fit.\* settings it takes draws, "
     r".*prior=rasch\|seed chooses the model; usage"),
    (["input=a.csv", "output=o", "fit.drows=5"],
     r"^fit.drows is not an audit.fit option \(did you mean 'draws'\?\)"),
    (["input=", "output=o"], r"^input= is empty: give it a value; usage"),
    # Bug caught: one setting under its two names, the last one won without a word.
    (["input=a.csv", "output=o", "draws=500", "fit.draws=300"],
     r"^draws is given more than once \(draws=500 and fit.draws=300\): give it once; usage"),
    (["input=a.csv", "output=o", "draws=500", "draws=300"], r"^draws is given more than once"),
])
def test_bad_arguments_are_named(arguments: list[str], message: str) -> None:
    with pytest.raises(FitInputError, match=message):
        parse_arguments(arguments)


def test_columns_are_renamed_and_outcomes_checked(tmp_path: Path) -> None:
    path = write_responses(tmp_path / "r.csv", columns=("persona", "question", "approved"))
    table = read_long_table(path, "persona", "question", "approved")
    assert table.columns == ["respondent", "item", "y"] and table.height == 72
    with pytest.raises(FitInputError, match="pass respondent=COLUMN"):
        read_long_table(path, "respondent", "question", "approved")
    # Bug caught: a spreadsheet's 'Respondent', 'Item', 'Y ' were refused as lacking the
    # columns the message listed beside them; semicolons (Excel where the decimal mark is a
    # comma) read as one column.
    (tmp_path / "excel.csv").write_text("Respondent;Item;Y \na;q1;1\nb;q1;0\n")
    assert read_long_table(tmp_path / "excel.csv", "respondent", "item", "y").rows() == [
        ("a", "q1", 1), ("b", "q1", 0)]
    pl.DataFrame({"respondent": ["a"], "item": ["b"], "y": [2]}).write_csv(tmp_path / "bad.csv")
    with pytest.raises(FitInputError, match="only 0 or 1"):
        read_long_table(tmp_path / "bad.csv", "respondent", "item", "y")
    # Bug caught: a probability column was truncated to labels (0.6 and 0.2 both became 0).
    pl.DataFrame({"respondent": ["a", "b"], "item": ["b", "b"], "y": [0.6, 0.2]}).write_csv(
        tmp_path / "probabilities.csv")
    with pytest.raises(FitInputError, match="must hold 0 or 1"):
        read_long_table(tmp_path / "probabilities.csv", "respondent", "item", "y")
    pl.DataFrame({"respondent": ["a", "b"], "item": ["b", "b"], "y": [1.0, 0.0]}).write_csv(
        tmp_path / "whole.csv")
    assert read_long_table(tmp_path / "whole.csv", "respondent", "item", "y")["y"].to_list() \
        == [1, 0]
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(FitInputError, match="cannot read"):
        read_long_table(tmp_path / "broken.parquet", "respondent", "item", "y")


def test_an_output_that_names_a_file_is_refused_before_fitting(tmp_path: Path) -> None:
    """Bug caught: output=FILE sampled the whole fit, then raised FileExistsError (exit 1)."""
    existing = tmp_path / "fit.parquet"
    existing.write_text("")
    with pytest.raises(FitInputError, match="output=.*fit.parquet is a file"):
        parse_arguments(["input=a.csv", f"output={existing}"])
    assert parse_arguments(["input=a.csv", f"output={tmp_path}"]).output == str(tmp_path)


class Sampled(Exception):
    """Raised where the fit would sample: what came before it is what a user sees first."""


def stop_at_sampling(*args, **kwargs):
    raise Sampled


@pytest.mark.parametrize(("rows", "warning"), [
    ({"respondent": ["a", "a"], "item": ["i", "j"], "y": [0, 1]}, "has 1 respondent"),
    ({"respondent": ["a", "b"], "item": ["i", "i"], "y": [1, 1]},
     "every outcome in the input is 1"),
    (None, None),  # several respondents, varied outcomes: no warning
])
def test_degenerate_input_is_warned_of_before_sampling(tmp_path: Path, caplog, monkeypatch,
                                                       rows, warning) -> None:
    """Bug caught: one respondent, or an outcome that never varies, printed an ordinary ranking
    with no warning."""
    monkeypatch.setattr(fit_run, "fit_rasch", stop_at_sampling)
    path = tmp_path / "r.csv"
    if rows is None:
        write_responses(path)
    else:
        pl.DataFrame(rows).write_csv(path)
    with pytest.raises(Sampled):
        fit_run.run(parse_arguments([f"input={path}", f"output={tmp_path / 'o'}"]))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [warning in message for message in warnings] == ([True] if warning else [])


def test_errors_exit_2_with_one_line(tmp_path: Path, caplog) -> None:
    assert main([f"input={tmp_path / 'missing.csv'}", f"output={tmp_path}"]) == 2
    errors = [record for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "does not exist" in errors[0].getMessage()
    assert "\n" not in errors[0].getMessage()


@pytest.mark.parametrize("stopped_in", ["parse_arguments", "run"])
def test_ctrl_c_is_one_line_and_exit_130_wherever_it_comes(tmp_path: Path, caplog, monkeypatch,
                                                          stopped_in: str) -> None:
    """Bugs caught: Ctrl-C in audit.fit was a KeyboardInterrupt traceback; and, with the line
    naming the output folder, Ctrl-C before the arguments were read was an UnboundLocalError."""
    import audit.cli.fit as fit_cli

    def interrupted(*arguments):
        raise KeyboardInterrupt

    path = write_responses(tmp_path / "responses.csv")
    monkeypatch.setattr(fit_run if stopped_in == "run" else fit_cli, stopped_in, interrupted)
    assert main([f"input={path}", f"output={tmp_path / 'fit'}"]) == 130
    where = f" to {tmp_path / 'fit'}" if stopped_in == "run" else ""
    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == [
        f"interrupted before the fit was written{where}; rerun the same command to fit"]


@pytest.mark.parametrize("name, said", [
    # Bugs caught: a folder was said not to exist; an empty file's fix named a stage to run,
    # which audit.fit does not have.
    ("folder", "is a folder, not a file; pass input=PATH"),
    ("empty.csv", "empty CSV; pass input=PATH to a CSV or parquet long table"),
    # Bad-input review 2026-12-02: a JSON Lines file was read as CSV, its braces and quotes
    # listed as "its columns".
    ("answers.jsonl", "is JSON: audit.fit reads a CSV or parquet long table; answers in JSON "
                      "Lines import with python -m audit.ingest"),
])
def test_an_input_that_is_no_table_says_what_it_is(tmp_path: Path, caplog, name, said) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "answers.jsonl").write_text('{"item": "hiring_01", "decision": "HIRE"}\n')
    assert main([f"input={tmp_path / name}", f"output={tmp_path / 'out'}"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert said in error and "stage" not in error, error


def test_missing_columns_are_one_line_naming_the_file_each_column_and_the_option(
        tmp_path: Path, caplog) -> None:
    path = write_responses(tmp_path / "r.parquet", columns=("respondent", "question", "approved"))
    assert main([f"input={path}", f"output={tmp_path / 'out'}"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert "\n" not in error and str(path) in error
    assert "'item', 'y'" in error and "respondent, question, approved" in error
    # Was "pass item=COLUMN and pass outcome=COLUMN to name the column that holds it".
    assert "pass item=COLUMN outcome=COLUMN to name the columns that hold them" in error
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("prior", ["seed", "rasch"])
def test_the_command_writes_summary_and_posterior(tmp_path: Path, prior: str) -> None:
    path = write_responses(tmp_path / "responses.parquet", ("respondent", "item", "approved"))
    output = tmp_path / "fit"
    result = subprocess.run(
        [sys.executable, "-m", "audit.fit", f"input={path}", f"output={output}", f"prior={prior}",
         "outcome=approved", "draws=300", "tune=300", "chains=2"],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = pl.read_csv(output / "summary.csv")
    assert summary.columns[:7] == ["parameter", "mean", "sd", "hdi_low", "hdi_high", "r_hat",
                                   "ess_bulk"]
    names = set(summary["parameter"])
    assert {f"theta[p{i}]" for i in range(4)} | {f"b[q{j}]" for j in range(6)} <= names
    idata = az.from_netcdf(output / "posterior.nc")
    assert idata.posterior["theta"].sizes == {"chain": 2, "draw": 300, "respondent": 4}
    # The respondent with the highest true rate must rank first: the mapping survived the CLI.
    assert "p3" in result.stdout.splitlines()[4]  # after the title, the border and the header
    # Bug caught: the fit was named after the audit's label coding ("favourable") whatever
    # the input's column meant, in diagnostics.json and in its advice.
    diagnostics = json.loads((output / "diagnostics.json").read_text())
    assert diagnostics["outcomes"] == ["approved"] and "favourable" not in json.dumps(diagnostics)


@pytest.mark.slow
def test_sigterm_while_sampling_stops_the_fit_with_one_line_and_writes_nothing(
        tmp_path: Path) -> None:
    """Bugs caught: SIGTERM (a CI job's timeout) ending the command with no line (status -15),
    and nutpie's blocking call catching the interrupt and returning the draws so far, which the
    command then wrote and ranked as its fit (exit 0). 3,000,000 draws take about a minute to
    sample and summarise here, so the signal, 4 s after the fit starts, comes while sampling."""
    path = write_responses(tmp_path / "responses.csv")
    output = tmp_path / "fit"
    run = subprocess.Popen(
        [sys.executable, "-m", "audit.fit", f"input={path}", f"output={output}",
         "draws=3000000", "tune=100", "chains=1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = []
    for line in run.stderr:
        said.append(line)
        if "fitting rasch" in line:
            break
    time.sleep(4)
    assert run.poll() is None, "".join(said)
    run.send_signal(signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 143, stderr[-3000:]
    assert stderr.strip().splitlines() == [
        f"ERROR audit.fit: terminated (SIGTERM) before the fit was written to {output}; rerun "
        f"the same command to fit"], stderr[-3000:]
    assert not stdout and not output.exists()


def write_gold(path: Path, truth: list, judged: list, **extra) -> Path:
    pl.DataFrame({"truth": truth, "judged": judged, **extra}).write_csv(path)
    return path


def test_gold_and_confusion_files_become_per_path_counts(tmp_path: Path) -> None:
    from audit.cli.fit_correction import confusion_correction, gold_correction

    gold = gold_correction(write_gold(tmp_path / "gold.csv", [1, 1, 1, 0, 0, 1],
                                      ["true", "false", "true", "false", "true", "true"],
                                      label_source=["rule", "rule", "judge", "judge", "judge",
                                                    "rule"]))
    rule, judge = gold.by_path["rule"], gold.by_path["judge"]
    assert (rule.true_1_judged_1, rule.true_1_judged_0, rule.n) == (2, 1, 3)
    assert (judge.true_1_judged_1, judge.true_0_judged_0, judge.true_0_judged_1) == (1, 1, 1)
    pl.DataFrame({"true_1_judged_1": [9], "true_1_judged_0": [1], "true_0_judged_0": [8],
                  "true_0_judged_1": [2]}).write_csv(tmp_path / "counts.csv")
    counts = confusion_correction(tmp_path / "counts.csv").by_path["any"]
    assert (counts.true_1_judged_1, counts.true_0_judged_1, counts.n) == (9, 2, 20)
    # Bug caught: integer path names were a polars ComputeError traceback; they are text, as
    # the input's source column is.
    numbered = gold_correction(write_gold(tmp_path / "numbered.csv", [1, 0, 1], [1, 0, 0],
                                          label_source=[1, 1, 2]))
    assert numbered.by_path["2"].true_1_judged_0 == 1 and set(numbered.by_path) == {"1", "2"}
    # Bug caught: a spreadsheet's headers ('Truth', 'Judged ', 'Label_Source') were refused as
    # lacking the columns the message listed beside them.
    pl.DataFrame({"Truth": [1, 0, 1], "Judged ": [1, 0, 0], "Label_Source": ["a", "a", "b"]}
                 ).write_csv(tmp_path / "headed.csv")
    headed = gold_correction(tmp_path / "headed.csv")
    assert set(headed.by_path) == {"a", "b"} and headed.by_path["b"].true_1_judged_0 == 1


@pytest.mark.parametrize(("files", "extra", "message"), [
    ({"gold.csv": {"truth": [1, 2], "judged": [1, 0]}}, [], "only 0 or 1"),
    ({"gold.csv": {"truth": [1, 0], "judge": [1, 0]}}, [], "'judged'"),
    ({"confusion.csv": {"true_1_judged_1": [3], "true_1_judged_0": [-1],
                        "true_0_judged_0": [3], "true_0_judged_1": [0]}}, [], ">= 0"),
    ({"gold.csv": {"truth": [1, 0], "judged": [1, 0], "label_source": ["rule", "judge"]}}, [],
     "pass source=COLUMN"),
    ({}, ["source=path"], "pass gold=PATH or confusion=PATH"),
    # Bugs caught (each was accepted before): an empty gold file or all-zero counts measure
    # nothing, leaving flat Beta(1, 1) rates; 0.5 was truncated to 0 and 1.5 to 1; an empty
    # label_source cell was a TypeError traceback.
    ({"gold.csv": {"truth": [], "judged": []}}, [], "has no rows"),
    ({"confusion.csv": {"true_1_judged_1": [0], "true_1_judged_0": [0],
                        "true_0_judged_0": [0], "true_0_judged_1": [0]}}, [],
     "confusion.csv: the counts are all 0, which measures nothing"),
    # Bug caught: a file without label_source was said to hold the labelling path 'any', a name
    # the user never wrote, and two rows of it were told "one row of counts per path".
    ({"confusion.csv": {"true_1_judged_1": [3, 4], "true_1_judged_0": [1, 1],
                        "true_0_judged_0": [3, 4], "true_0_judged_1": [1, 1]}}, [],
     "has 2 rows: give one row of counts (or a label_source column naming each row's"),
    ({"gold.csv": {"truth": [1.0, 0.0], "judged": [1.0, 0.5]}}, [], "only 0 or 1"),
    ({"confusion.csv": {"true_1_judged_1": [1.5], "true_1_judged_0": [1],
                        "true_0_judged_0": [3], "true_0_judged_1": [0]}}, [], "whole numbers"),
    # Judge review 2026-12-02: rates in place of counts were "the counts must be whole numbers
    # >= 0", naming no column and not that rates are not taken.
    ({"confusion.csv": {"true_1_judged_1": [0.9], "true_1_judged_0": [0.1],
                        "true_0_judged_0": [0.95], "true_0_judged_1": [0.05]}}, [],
     "true_1_judged_1 is 0.9, and the file takes counts (whole numbers >= 0 of hand-checked "
     "answers); for a judge measured only as rates"),
    # Bug caught (bad-input probe 2026-12-07): a negative count was given the advice for rates.
    ({"confusion.csv": {"true_1_judged_1": [18], "true_1_judged_0": [-2],
                        "true_0_judged_0": [17], "true_0_judged_1": [3]}}, [],
     "true_1_judged_0 is -2, and the file takes counts (whole numbers >= 0 of hand-checked "
     "answers): correct the count"),
    ({"gold.csv": {"truth": [1, 0], "judged": [1, 0], "label_source": ["rule", None]}}, [],
     "empty label_source"),
    ({"gold.csv": {"truth": [1, 0], "Judged": [1, 0], "JUDGED": [0, 1]}}, [],
     "'Judged', 'JUDGED', which differ only in case or spaces: keep one, named 'judged'"),
    # Bug caught: a column spelt exactly won over its case variant, so a file with 'truth' and
    # 'Truth' was corrected by one of the two silently (the answers file refused the same).
    ({"gold.csv": {"truth": [1, 0], "Truth": [0, 1], "judged": [1, 0]}}, [],
     "'truth', 'Truth', which differ only in case or spaces: keep one, named 'truth'"),
    # Bug caught: counts of an inverted labeller (2 of 52 right) were fitted, their draws
    # round-off on the coin line (kept mass -2e-8), the gaps meaningless.
    ({"confusion.csv": {"true_1_judged_1": [1], "true_1_judged_0": [25],
                        "true_0_judged_0": [1], "true_0_judged_1": [25]}}, [],
     "the gold answers say the labeller is no better than a coin"),  # not "the 'any' labeller"
])
def test_a_wrong_gold_or_confusion_file_is_one_line(tmp_path: Path, caplog, files, extra,
                                                    message) -> None:
    responses = write_responses(tmp_path / "r.csv")
    arguments = [f"input={responses}", f"output={tmp_path / 'out'}", *extra]
    for name, columns in files.items():
        pl.DataFrame(columns).write_csv(tmp_path / name)
        arguments.append(f"{name.removesuffix('.csv')}={tmp_path / name}")
    assert main(arguments) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert message in error and "\n" not in error
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_imported_labels_are_corrected_through_a_gold_file(tmp_path: Path) -> None:
    responses = write_responses(tmp_path / "responses.csv")
    gold = write_gold(tmp_path / "gold.csv", [1] * 10 + [0] * 10, [1] * 8 + [0] * 2 + [0] * 9 + [1])
    output = tmp_path / "fit"
    result = subprocess.run(
        [sys.executable, "-m", "audit.fit", f"input={responses}", f"output={output}",
         f"gold={gold}", "draws=200", "tune=300", "chains=2", "judge_imputations=3"],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = pl.read_csv(output / "summary.csv")
    rates = summary.filter(pl.col("parameter").str.starts_with("judge_"))
    assert set(rates["parameter"]) == {"judge_sensitivity[any]", "judge_specificity[any]"}
    # Beta(9, 3) and Beta(10, 2): the gold alone sets the rates, and the summary gives their
    # gold posterior (here hardly touched by the better-than-coin condition), not the mean of
    # the three imputations' draws.
    sensitivity = rates.filter(pl.col("parameter") == "judge_sensitivity[any]").row(0, named=True)
    assert abs(sensitivity["mean"] - 9 / 12) < 1e-3
    assert abs(sensitivity["sd"] - stats.beta.std(9, 3)) < 1e-3
    recorded = json.loads((output / "diagnostics.json").read_text())["judge_error"]
    assert recorded["y"]["paths"]["any"]["true_1_judged_1"] == 8  # named after the column


@pytest.mark.parametrize("output", [
    "good.csv/out",
    pytest.param("/proc/fo18", marks=pytest.mark.skipif(not Path("/proc").is_dir(),
                                                         reason="no /proc here")),
])
def test_an_output_that_cannot_be_created_is_refused_before_sampling(tmp_path: Path, monkeypatch,
                                                                     caplog, output) -> None:
    """Bug caught: output=FILE/out (a folder inside a file) or output=/proc/fo18 sampled the
    whole fit, then write_fit raised NotADirectoryError (exit 1), the fit lost."""
    import audit.cli.fit as fit_cli

    monkeypatch.setattr(fit_run, "fit_rasch", stop_at_sampling)
    monkeypatch.chdir(tmp_path)
    write_responses(tmp_path / "good.csv")
    assert fit_cli.main(["input=good.csv", f"output={output}"]) == 2
    assert f"output={output}" in caplog.text and "pass output=DIR" in caplog.text


def test_the_fit_is_named_after_the_column_and_the_ranking_shows_30(tmp_path: Path, monkeypatch,
                                                                    capsys) -> None:
    """Catches the fit written under the audit's outcome name ("favourable") rather than the
    input's column (outcome=approved), and the printed ranking cut short of its 30 rows."""
    from audit.methods.rasch.irt.rasch import RaschFit

    count = 40
    summary = pl.DataFrame({"parameter": [f"theta[r{i:02d}]" for i in range(count)],
                            "mean": [-i / 10 - 0.001 for i in range(count)], "sd": [0.1] * count,
                            "hdi_low": [-i / 10 - 0.2 for i in range(count)],
                            "hdi_high": [-i / 10 + 0.2 for i in range(count)]})
    fitted = RaschFit(idata=None, summary=summary,  # type: ignore[arg-type]
                      diagnostics=SimpleNamespace(problems=list))  # type: ignore[arg-type]
    written: dict = {}
    monkeypatch.setattr(fit_run, "fit_rasch", lambda *args, **kwargs: fitted)
    monkeypatch.setattr(fit_run, "write_fit", lambda fit, output: written.update(fit=fit))
    path = write_responses(tmp_path / "r.csv", columns=("respondent", "item", "approved"))
    fit_run.run(parse_arguments([f"input={path}", f"output={tmp_path / 'o'}",
                                 "outcome=approved", "hdi_prob=0.9"]))
    assert written["fit"].outcome == "approved"
    shown = capsys.readouterr().out
    assert "r00" in shown and "r29" in shown and "r30" not in shown, shown
    # Bugs caught: bare mean/hdi_low/hdi_high with six decimals, no word of the interval's
    # level or of the cut at 30, and -0.001 printed as "-0.00".
    assert ("log-odds scale of approved=1 (0 is the average respondent): posterior mean and "
            "90% HDI, highest first; the first 30 of 40, all in summary.csv") in shown, shown
    assert "-0.00" not in shown and "-0.20" in shown and "-0.201" not in shown, shown


def test_a_refusal_from_the_model_is_logged_as_its_first_line(tmp_path: Path, monkeypatch,
                                                              caplog) -> None:
    """Catches main logging an AuditError whole: a refusal from the model with detail on later
    lines must still be the one line the command's errors are."""
    from audit.errors import AuditError

    def refuse(*args, **kwargs):
        raise AuditError("the model refuses this table\nwith detail on a second line")

    monkeypatch.setattr(fit_run, "fit_rasch", refuse)
    path = write_responses(tmp_path / "r.csv")
    assert main([f"input={path}", f"output={tmp_path / 'o'}"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert error == "the model refuses this table"
