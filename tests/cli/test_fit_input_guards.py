"""`python -m audit.fit`'s refusals of bad input, each one line before anything is read or sampled:
an output folder that would overwrite an input, one column in two roles, and the outcome column's
offending values, empty cells and empty table named as they are."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import polars as pl
import pytest

import audit.cli.fit as fit_cli
import audit.cli.fit_run as fit_run
from audit.cli.fit import FitInputError, parse_arguments
from audit.cli.fit_run import read_long_table
from audit.methods.rasch.analyse import write_fit
from audit.methods.rasch.config import FIT_FILES
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.methods.rasch.irt.judge_error import ANY_PATH


class Sampled(Exception):
    """Raised where the fit would sample: what came before it is what a user sees first."""


def stop_at_sampling(*args, **kwargs):
    raise Sampled


def write_table(path: Path, **columns) -> Path:
    pl.DataFrame(columns).write_csv(path)
    return path


ANSWERS = {"respondent": ["a", "b", "a", "b"], "item": ["i", "i", "j", "j"], "y": [0, 1, 1, 0]}
COUNTS = {"true_1_judged_1": [9], "true_1_judged_0": [1], "true_0_judged_0": [8],
          "true_0_judged_1": [2]}


@pytest.mark.parametrize(("option", "name", "output"), [
    ("input", "summary.csv", "ow"),
    ("input", "contrasts.csv", "ow"),
    ("input", "item_gaps.csv", "ow"),
    ("input", "summary.csv", "ow/../ow/"),  # the same folder spelt another way
    ("gold", "summary.csv", "ow"),
    ("confusion", "item_gaps.csv", "ow"),
])
def test_an_output_that_would_overwrite_an_input_is_refused(tmp_path: Path, monkeypatch,
                                                            option, name, output) -> None:
    """Bug caught: `input=ow/summary.csv output=ow` exited 0 with the input table overwritten by
    the fit's summary.csv (likewise a gold= or confusion= file named as a file the fit writes)."""
    monkeypatch.chdir(tmp_path)
    Path("ow").mkdir()
    write_table(Path("answers.csv"), **ANSWERS)
    columns = {"input": ANSWERS, "gold": {"truth": [1, 0], "judged": [1, 0]},
               "confusion": COUNTS}[option]
    write_table(Path("ow") / name, **columns)
    inputs = {"input": "answers.csv", option: f"ow/{name}"}
    arguments = [f"{key}={value}" for key, value in inputs.items()] + [f"output={output}"]
    with pytest.raises(FitInputError) as refused:
        parse_arguments(arguments)
    message = str(refused.value)
    assert f"output={output} would overwrite the {option} ow/{name}" in message, message
    assert f"with the fit's {name}: choose another output folder" in message and "\n" not in message


def test_the_overwrite_refusal_is_one_line_before_any_work_and_keeps_the_input(
        tmp_path: Path, monkeypatch, caplog) -> None:
    """Bug caught: the command ran to the end, exit 0, and the input table was gone (replaced by
    the fit's summary); a table beside the outputs, not named as one, is still accepted."""
    monkeypatch.setattr(fit_run, "fit_rasch", stop_at_sampling)
    (tmp_path / "ow").mkdir()
    table = write_table(tmp_path / "ow" / "summary.csv", **ANSWERS)
    before = table.read_bytes()
    assert fit_cli.main([f"input={table}", f"output={tmp_path / 'ow'}"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert "would overwrite the input" in error and table.read_bytes() == before
    beside = write_table(tmp_path / "ow" / "answers.csv", **ANSWERS)
    with pytest.raises(Sampled):
        fit_cli.main([f"input={beside}", f"output={tmp_path / 'ow'}"])


def test_the_files_checked_are_the_files_the_fit_writes() -> None:
    """Bug caught: a file write_fit writes but the overwrite check does not know (a new
    `directory / "ppc.csv"`) would let output= overwrite an input of that name again."""
    written = set(re.findall(r'directory / "([^"]+)"', inspect.getsource(write_fit)))
    assert written and written <= set(FIT_FILES), written - set(FIT_FILES)


@pytest.mark.parametrize(("arguments", "message"), [
    (["respondent=item"], "the column 'item' is both respondent= and item="),
    (["outcome=item"], "the column 'item' is both item= and outcome="),
    (["outcome=respondent"], "the column 'respondent' is both respondent= and outcome="),
    # The table's columns are matched ignoring case and stray spaces, so these are one column.
    (["respondent=Person", "item=person"], "the column 'Person' is both respondent= and item="),
])
def test_one_column_in_two_roles_is_refused(arguments: list[str], message: str) -> None:
    """Bug caught: respondent=item (or outcome= naming the item or respondent column) was
    accepted and fitted, every answer its own respondent's item."""
    with pytest.raises(FitInputError, match=re.escape(message)) as refused:
        parse_arguments(["input=a.csv", "output=o", *arguments])
    assert "each role needs its own column" in str(refused.value)


def test_source_may_share_the_respondent_column_but_not_the_outcome() -> None:
    """Bug caught: source=y (the outcome column as its own labelling path, a circular correction:
    each label picks the error rates of its own value) was accepted. A labeller per respondent
    (source= naming the respondent column) is a real design and stays accepted."""
    with pytest.raises(FitInputError, match="the column 'y' is both outcome= and source="):
        parse_arguments(["input=a.csv", "output=o", "source=y", "gold=g.csv"])
    assert parse_arguments(["input=a.csv", "output=o", "source=respondent",
                            "gold=g.csv"]).source == "respondent"


@pytest.mark.parametrize(("y", "found"), [
    # Not whole numbers: the offending values, not the column's first three (0.0, 0.0, 0.0).
    ([0.0, 0.0, 0.0, 1.0, 2.5, 0.5, 2.5], "must hold 0 or 1 (or true/false); found [0.5, 2.5] "
                                          "(first at row 5)"),
    (["0", "1", "yes", "no", "yes"], "found ['no', 'yes'] (first at row 3)"),
    # Whole numbers other than 0 and 1: a few, sorted, and how many more.
    ([0, 1, 7, 2, 3, 4, 5, 6, 0], "must hold only 0 or 1; found [2, 3, 4, 5, 6] and 1 more "
                                  "(first at row 3)"),
])
def test_the_outcomes_offending_values_are_shown(tmp_path: Path, y, found) -> None:
    """Bug caught: a non-0/1 outcome printed the first three values of the column
    (`found [0.0, 0.0, 0.0]`), all of them valid, instead of the values at fault."""
    path = write_table(tmp_path / "r.csv", respondent=[f"p{i}" for i in range(len(y))],
                       item=["q"] * len(y), y=y)
    with pytest.raises(FitInputError) as refused:
        read_long_table(path, "respondent", "item", "y")
    assert found in str(refused.value), str(refused.value)


def test_only_the_columns_with_empty_cells_are_named(tmp_path: Path) -> None:
    """Bug caught: one empty cell in y gave "has empty cells in respondent, item, y", sending
    the user to look for empty cells in all three columns."""
    path = write_table(tmp_path / "r.csv", persona=["a", "b", "c"], question=["i", "j", "k"],
                       approved=[0, None, 1])
    with pytest.raises(FitInputError) as refused:
        read_long_table(path, "persona", "question", "approved")
    message = str(refused.value)
    assert "has empty cells in approved (first at row 2); drop or fill" in message, message
    assert "persona" not in message and "question" not in message


def test_a_table_with_no_rows_is_one_line_before_any_warning(tmp_path: Path, monkeypatch,
                                                             caplog) -> None:
    """Bug caught: a header-only table first warned "the input has 0 respondent: a ranking needs
    at least 2" and went on towards the fit, instead of saying the table is empty."""
    monkeypatch.setattr(fit_run, "fit_rasch", stop_at_sampling)
    path = tmp_path / "header.csv"
    path.write_text("respondent,item,y\n")
    assert fit_cli.main([f"input={path}", f"output={tmp_path / 'out'}"]) == 2
    records = [record for record in caplog.records if record.levelno >= 30]
    assert [record.levelname for record in records] == ["ERROR"], caplog.text
    assert "has no rows" in records[0].getMessage() and "\n" not in records[0].getMessage()


def test_ids_keep_their_digits_and_outcomes_read_as_numbers(tmp_path: Path) -> None:
    """Bug caught (bad-input review 2026-12-05): the CSV's types were inferred, so respondents
    "001" and "1" became one respondent 1, and items "1E2" and "100" one item 100.0, with no
    word: the fit ran on merged data. Read as text, the ids stay four; the outcome still reads
    1, 1.0, " 1" and TRUE as 1."""
    path = tmp_path / "answers.csv"
    path.write_text("respondent,item,y\n001,1E2,1\n1,100,1\n001,100,0\n1,1E2,1\n")
    long = read_long_table(path, "respondent", "item", "y")
    assert long["respondent"].to_list() == ["001", "1", "001", "1"]
    assert long["item"].to_list() == ["1E2", "100", "100", "1E2"]
    path.write_text("respondent,item,y\na,i,1\nb,i,1.0\na,j, 1\nb,j,TRUE\nc,j,false\n")
    assert read_long_table(path, "respondent", "item", "y")["y"].to_list() == [1, 1, 1, 1, 0]


def test_a_gold_files_path_names_match_the_inputs_as_written(tmp_path: Path) -> None:
    """Bug caught with the one above: the gold file's labelling paths must be read as text like
    the input's source column, or a path named "01" in both would be "1" in one and "01" in the
    other, and the correction would find no gold for it."""
    from audit.cli.fit_correction import gold_correction

    gold = tmp_path / "gold.csv"
    gold.write_text("truth,judged,label_source\n1,1,01\n1,0,01\n0,0,01\n0,1,01\n1,1,2\n0,0,2\n")
    assert sorted(gold_correction(gold).by_path) == ["01", "2"]


def test_an_input_hard_linked_to_a_file_the_fit_writes_is_refused(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """Catches _same_file asking for equal resolved paths *and* one file (`or` made `and`): a
    hard link has a path of its own, so only the file system says the fit's summary.csv would
    be written into the input."""
    monkeypatch.chdir(tmp_path)
    Path("ow").mkdir()
    table = write_table(Path("answers.csv"), **ANSWERS)
    try:
        os.link(table, Path("ow") / "summary.csv")
    except OSError:
        pytest.skip("no hard links on this file system")
    with pytest.raises(FitInputError, match="would overwrite the input answers.csv"):
        parse_arguments(["input=answers.csv", "output=ow"])


def test_exactly_the_shown_number_of_offending_values_says_no_more(tmp_path: Path) -> None:
    """Catches `and 0 more` after exactly SHOWN_VALUES offending values (`>` made `>=`)."""
    y = [0, 2, 3, 4, 5, 6][: fit_run.SHOWN_VALUES + 1]
    path = write_table(tmp_path / "r.csv", respondent=[f"p{i}" for i in range(len(y))],
                       item=["q"] * len(y), y=y)
    with pytest.raises(FitInputError) as refused:
        read_long_table(path, "respondent", "item", "y")
    assert "found [2, 3, 4, 5, 6] (first at row 2)" in str(refused.value), str(refused.value)


def test_whole_outcomes_beyond_int64_are_one_line(tmp_path: Path) -> None:
    """Catches dropping the fallback for whole numbers no Int64 holds (1e20): no value is
    `not_whole`, so the first offending row was an IndexError traceback."""
    path = tmp_path / "r.csv"
    path.write_text("respondent,item,y\na,q,0\nb,q,1\nc,q,99999999999999999999\n")
    with pytest.raises(FitInputError, match=r"found \[0.0, 1.0, 1e\+20\] \(first at row 1\)"):
        read_long_table(path, "respondent", "item", "y")


def test_an_upper_case_json_suffix_is_refused_as_json(tmp_path: Path, caplog) -> None:
    """Catches the JSON check comparing the suffix as typed (`.lower()` dropped): answers.JSONL
    was read as CSV, its braces and quotes named as the table's columns."""
    path = tmp_path / "answers.JSONL"
    path.write_text('{"item": "hiring_01", "decision": "HIRE"}\n')
    assert fit_cli.main([f"input={path}", f"output={tmp_path / 'out'}"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert "is JSON: audit.fit reads a CSV or parquet long table" in error, error


def capture_fit(monkeypatch) -> dict:
    """What fit_rasch is given, then Sampled: the table and settings the fit would run on."""
    seen: dict = {}

    def fake_fit(outcomes, config, confusion=None):
        seen.update(outcomes=outcomes, config=config, confusion=confusion)
        raise Sampled

    monkeypatch.setattr(fit_run, "fit_rasch", fake_fit)
    return seen


def test_each_prior_fits_its_own_model(tmp_path: Path, monkeypatch) -> None:
    """Catches prior=seed fitting the identified model (PRIORS mapping both to rasch): the
    original audit's N(0, 1) model is what prior=seed promises."""
    seen = capture_fit(monkeypatch)
    table = write_table(tmp_path / "r.csv", **ANSWERS)
    for prior, model in [("seed", "rasch_seed"), ("rasch", "rasch")]:
        with pytest.raises(Sampled):
            fit_cli.main([f"input={table}", f"output={tmp_path / 'o'}", f"prior={prior}"])
        assert seen["config"].model == model, prior


def gold_and_answers(tmp_path: Path, answer_paths: list[str]) -> list[str]:
    """A gold file with the labelling paths rule and judge, and answers labelled along
    ``answer_paths`` (column `labeller`): audit.fit's arguments for them."""
    gold = write_table(tmp_path / "gold.csv", truth=[1, 0, 1, 0], judged=[1, 0, 1, 0],
                       label_source=["rule", "rule", "judge", "judge"])
    table = write_table(tmp_path / "r.csv", **ANSWERS, labeller=answer_paths)
    return [f"input={table}", f"output={tmp_path / 'o'}", f"gold={gold}", "source=labeller"]


def test_the_source_column_reaches_the_fit_and_a_subset_of_the_gold_paths_is_enough(
        tmp_path: Path, monkeypatch) -> None:
    """Catches source= dropped from the long table (then every run with it was refused as
    having no source column) and the missing paths taken the wrong way round (the gold's paths
    the input lacks: answers labelled by one of the gold's two paths were refused)."""
    seen = capture_fit(monkeypatch)
    with pytest.raises(Sampled):
        fit_cli.main(gold_and_answers(tmp_path, ["rule", "judge", "rule", "judge"]))
    assert seen["outcomes"][PATH_COLUMN].to_list() == ["rule", "judge", "rule", "judge"]
    with pytest.raises(Sampled):
        fit_cli.main(gold_and_answers(tmp_path, ["rule"] * 4))
    assert sorted(seen["confusion"].by_path) == ["judge", "rule"]


def test_a_labelling_path_without_counts_is_named(tmp_path: Path, monkeypatch, caplog) -> None:
    """Catches the missing paths taken the wrong way round (gold minus input): the input's
    path `other` went unnamed, the message naming the gold's own `judge` instead."""
    capture_fit(monkeypatch)
    assert fit_cli.main(gold_and_answers(tmp_path, ["rule", "other", "rule", "rule"])) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert "labelling path(s) other of the input have no counts" in error, error


def test_counts_for_any_path_need_no_source_column(tmp_path: Path, monkeypatch) -> None:
    """Catches the ANY_PATH shortcut dropped: a confusion file without label_source counts for
    every answer, and was refused as counts per path asking for source=COLUMN."""
    seen = capture_fit(monkeypatch)
    counts = write_table(tmp_path / "counts.csv", **COUNTS)
    table = write_table(tmp_path / "r.csv", **ANSWERS)
    with pytest.raises(Sampled):
        fit_cli.main([f"input={table}", f"output={tmp_path / 'o'}", f"confusion={counts}"])
    assert list(seen["confusion"].by_path) == [ANY_PATH]


def test_prior_seed_with_a_correction_is_refused(tmp_path: Path, monkeypatch, caplog) -> None:
    """Catches the prior=seed refusal dropped: the original audit's model reads labels as
    truth, so gold= was silently not applied to it."""
    capture_fit(monkeypatch)
    arguments = gold_and_answers(tmp_path, ["rule", "judge", "rule", "judge"])
    assert fit_cli.main([*arguments, "prior=seed"]) == 2
    (error,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert error.startswith("prior=seed reads labels as truth"), error


def test_ids_lose_their_surrounding_spaces_and_a_blank_id_is_an_empty_cell(tmp_path: Path) -> None:
    """Bugs caught (bad-input review 2026-12-06): "a " beside "a" fitted two respondents that
    printed alike, and a quoted "" (or all-space) id was fitted as a respondent named "theta",
    which the ranking left out."""
    path = tmp_path / "answers.csv"
    path.write_text('respondent,item,y\na ,i,1\na,j,0\n b,i,0\nb,j,1\n')
    assert read_long_table(path, "respondent", "item", "y")["respondent"].to_list() == [
        "a", "a", "b", "b"]
    for blank in ('""', '"   "'):
        path.write_text(f'respondent,item,y\na,i,1\n{blank},j,0\n')
        with pytest.raises(FitInputError, match=r"empty cells in respondent \(first at row 2\)"):
            read_long_table(path, "respondent", "item", "y")


def test_a_column_of_lists_as_ids_is_one_line(tmp_path: Path) -> None:
    """Bug caught (bad-input review 2026-12-06): a parquet list column as respondent was a polars
    cast traceback."""
    path = tmp_path / "answers.parquet"
    pl.DataFrame({"respondent": [[1], [1], [2], [2]], "item": ["i", "j", "i", "j"],
                  "y": [1, 0, 0, 1]}).write_parquet(path)
    with pytest.raises(FitInputError, match="column 'respondent' of .* holds lists or objects"):
        read_long_table(path, "respondent", "item", "y")


@pytest.mark.parametrize("name", ["summary.csv", "posterior.nc"])
def test_a_folder_named_like_a_fit_file_in_output_is_refused_before_sampling(
        tmp_path: Path, name: str) -> None:
    """Bug caught (bad-input review 2026-12-06): output=DIR holding a folder DIR/summary.csv (or
    posterior.nc) failed with IsADirectoryError after sampling, the fit lost, or half written."""
    write_table(tmp_path / "answers.csv", **ANSWERS)
    (tmp_path / "out" / name).mkdir(parents=True)
    with pytest.raises(FitInputError, match=f"holds a folder named {name}"):
        parse_arguments([f"input={tmp_path / 'answers.csv'}", f"output={tmp_path / 'out'}"])


def test_a_table_pasted_twice_is_said_and_replicates_are_not(tmp_path: Path, caplog) -> None:
    """Bug caught (bad-input probe 2026-12-07): a table pasted twice fitted without a word, each
    answer counted twice (the mean theta HDI 1.73 wide instead of 2.22). Replicates that
    answered alike, row by row, are no copy of the table and are not warned of."""
    twice = write_table(tmp_path / "twice.csv", **{key: values * 2
                                                    for key, values in ANSWERS.items()})
    with caplog.at_level("WARNING"):
        assert read_long_table(twice, "respondent", "item", "y").height == 8
    said = [record.getMessage() for record in caplog.records]
    assert any("is its first 4 rows repeated 2 times, row for row" in line for line in said), said
    caplog.clear()
    replicates = write_table(tmp_path / "replicates.csv",
                             **{key: [value for value in values for _ in range(2)]
                                for key, values in ANSWERS.items()})
    with caplog.at_level("WARNING"):
        read_long_table(replicates, "respondent", "item", "y")
    assert not caplog.records
