"""audit.tables: a table missing a column its schema requires is one line naming the file, the
columns and the fix (pandera's coercion used to surface it as a 70-line polars traceback); a table
built in code that lacks a column is a bug and keeps its traceback."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.schemas import ItemSchema, PersonaSchema
from audit.tables import (
    finite_json,
    read_frame,
    read_json_lines,
    read_table,
    required_columns,
    save_figure,
    write_atomically,
    write_frame,
    write_json,
    write_table,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def test_required_columns_leave_the_optional_ones_out():
    assert required_columns(ItemSchema) == ["item_id", "domain", "role", "scenario", "question",
                                            "favourable_option", "unfavourable_option"]
    assert required_columns(PersonaSchema) == ["persona_id", "kind", "descriptor", "gender",
                                               "race"]


def test_an_item_bank_without_a_column_is_one_line(items: pl.DataFrame, tmp_path: Path):
    path = tmp_path / "bank.csv"
    items.drop("question").write_csv(path)
    with pytest.raises(AuditError) as raised:
        read_table(path, ItemSchema, "item bank")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"item bank at {path} lacks the column(s) 'question' (its columns: "
                              "item_id, domain, role, scenario, favourable_option")
    assert "add the missing columns to the file" in message and "ItemSchema" in message
    # extra columns are fine (the schema filters them), so a complete bank still reads
    items.with_columns(note=pl.lit("x")).write_csv(path)
    assert read_table(path, ItemSchema, "item bank").columns == required_columns(ItemSchema)


def test_a_personas_file_names_every_missing_column(explicit_profiles: pl.DataFrame,
                                                   tmp_path: Path):
    path = tmp_path / "personas.parquet"
    explicit_profiles.drop("kind", "race").write_parquet(path)
    with pytest.raises(AuditError, match=r"lacks the column\(s\) 'kind', 'race' \(its columns: "
                                         r"persona_id, descriptor, gender\)"):
        read_table(path, PersonaSchema, "explicit personas")


def test_a_table_built_in_code_without_a_column_keeps_its_traceback(items: pl.DataFrame,
                                                                     tmp_path: Path):
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        write_table(items.drop("question"), tmp_path / "items.parquet", ItemSchema, "items")


def test_the_command_line_reports_a_bank_without_a_column_in_one_line(items: pl.DataFrame,
                                                                      tmp_path: Path):
    items.drop("question", "role").write_csv(tmp_path / "bank.csv")
    done = subprocess.run([sys.executable, "-m", "audit.plan", "items.bank=bank.csv"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "ColumnNotFoundError" not in done.stderr
    (error,) = [line for line in done.stderr.splitlines() if "ERROR" in line]
    assert "item bank at bank.csv lacks the column(s) 'role', 'question'" in error


def test_write_frame_writes_by_suffix_and_leaves_no_partial_file(items: pl.DataFrame,
                                                                 tmp_path: Path):
    """One writer for every table: CSV or parquet by the suffix, in a folder it creates, and a
    failed write leaves neither a half file nor its `.partial` behind (a writer that wrote in
    place, or kept the suffix's format wrong, fails here)."""
    csv, parquet = tmp_path / "out" / "items.csv", tmp_path / "out" / "items.parquet"
    write_frame(items, csv)
    write_frame(items, parquet)
    assert csv.read_text().startswith("item_id,")
    assert pl.read_parquet(parquet).equals(items)
    with pytest.raises(pl.exceptions.PolarsError):  # a nested column cannot be written as CSV
        write_frame(pl.DataFrame({"nested": [[1, 2]]}), csv)
    assert read_frame(csv, "items").height == items.height  # the old file survives whole
    assert sorted(path.name for path in csv.parent.iterdir()) == ["items.csv", "items.parquet"]


def test_read_frame_names_the_file_and_the_fix(tmp_path: Path):
    """A missing or unreadable input is one line with the caller's fix; `as_text` keeps ids such
    as `007` as written (inference would read them as the number 7)."""
    with pytest.raises(AuditError, match=r"^lexicon not found at .*: set counterfactual\.lexicon"):
        read_frame(tmp_path / "absent.csv", "lexicon", "set counterfactual.lexicon")
    path = tmp_path / "ids.csv"
    path.write_text("persona_id,age\n007,31\n")
    assert read_frame(path, "ids", as_text=True).row(0) == ("007", "31")
    assert read_frame(path, "ids").row(0) == (7, 31)
    path.write_text("a,b\n1,2,3\n")  # more fields than the header names
    with pytest.raises(AuditError, match=r"^cannot read ids at .*; fix it"):
        read_frame(path, "ids", "fix it")


@pytest.mark.parametrize("as_text", [True, False])
def test_a_csv_naming_one_column_twice_is_one_line(tmp_path: Path, as_text: bool):
    """Bug caught (bad-input review 2026-12-04): a header such as `...,decision,decision` read as
    `decision` and `decision_duplicated_0`, and ingest and fit used the first without a word,
    whatever the second held. A quoted header cell with a comma is one column, not two."""
    path = tmp_path / "answers.csv"
    path.write_text("respondent,decision,item,decision\na,approve,i1,deny\n")
    with pytest.raises(AuditError) as refused:
        read_frame(path, "answers", "fix it", as_text=as_text)
    assert str(refused.value) == (f"cannot read answers at {path}: column 'decision' appears "
                                  "2 times in the header; keep one; fix it")
    path.write_text('"decision, final",decision\napprove,deny\n')
    assert read_frame(path, "answers", as_text=as_text).columns == ["decision, final", "decision"]


def test_a_csv_that_is_not_utf8_says_to_save_it_as_utf8(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): a CSV saved as Latin-1 (Excel's plain "CSV" on
    Windows) was "invalid utf-8 sequence", which does not say what to do."""
    path = tmp_path / "answers.csv"
    path.write_bytes("respondent,item,y\nJos\u00e9,i1,1\n".encode("latin-1"))
    with pytest.raises(AuditError, match=r"^cannot read answers at .*: invalid utf-8 sequence "
                                         r"\(save it as CSV UTF-8 \(Excel: File, Save As, "
                                         r"'CSV UTF-8'\)\); fix it$"):
        read_frame(path, "answers", "fix it", as_text=True)


@pytest.mark.parametrize("as_text", [True, False])
def test_a_header_that_is_not_utf8_is_the_same_line_not_a_traceback(tmp_path: Path,
                                                                   as_text: bool):
    """Bug caught (bad-input review 2026-12-04): polars reads a Latin-1 byte in the header line
    without a word, and the repeated-column check that reads the header after it raised
    UnicodeDecodeError as a traceback in audit.fit, audit.ingest, the persona and gold files."""
    path = tmp_path / "answers.csv"
    path.write_bytes("respondent,item,y,not\u00e9\na,i1,1,x\nb,i1,0,y\n".encode("latin-1"))
    with pytest.raises(AuditError, match=r"^cannot read answers at .*: invalid utf-8 sequence "
                                         r"in its header line \(save it as CSV UTF-8 .*; fix it$"):
        read_frame(path, "answers", "fix it", as_text=as_text)


PERSONAS_CSV = ("persona_id,descriptor,kind,gender,race\n"
                "w1,a woman named Jos\u00e9,explicit,woman,\nm1,\"a man, 40\",explicit,man,\n")


@pytest.mark.parametrize(("content", "problem"), [
    (PERSONAS_CSV.encode("utf-16"), "it is UTF-16 text, as PowerShell's `>` and Excel's "
                                    "'Unicode Text' write"),
    (PERSONAS_CSV.encode("utf-16-le"), r"it is not text \(it holds NUL bytes: UTF-16 without a "
                                       r"byte-order mark, or a binary file\)"),
    (b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 64, "it is a spreadsheet workbook or another "
                                                   "zip file, not CSV"),
], ids=["utf16", "utf16-no-bom", "xlsx"])
def test_a_csv_that_is_utf16_or_a_workbook_says_to_save_it_as_csv_utf8(
        tmp_path: Path, content: bytes, problem: str):
    """Bugs caught (bad-input review 2026-12-04): a UTF-16 persona or item file (PowerShell's
    `>`) of plain text escaped the header check as a UnicodeDecodeError traceback, exit 1; with
    a quoted field it read "found more fields than defined in 'Schema'" and the fix "run the
    stage that writes it first"; a workbook named .csv "lacked" every column."""
    path = tmp_path / "personas.csv"
    path.write_bytes(content)
    for as_text in (True, False):
        with pytest.raises(AuditError, match=rf"^cannot read personas at {path}: {problem}; save "
                                             r"it as CSV UTF-8 \(Excel: File, Save As, 'CSV "
                                             r"UTF-8'\)$"):
            read_frame(path, "personas", as_text=as_text)


def test_a_json_file_where_a_csv_goes_says_so(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): an item bank in JSON Lines was read as a CSV
    of one column named by its first record, and refused as lacking every column."""
    path = tmp_path / "bank.jsonl"
    path.write_text('{"item_id": "hiring_01", "domain": "hiring"}\n')
    with pytest.raises(AuditError, match=r"^cannot read item bank at .*bank.jsonl: it is JSON, "
                                         r"and this file is read as CSV or parquet; save it as "
                                         r"CSV UTF-8"):
        read_frame(path, "item bank", as_text=True)


def test_rows_a_spreadsheet_left_empty_are_not_read_from_a_users_file(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): Excel saves formatted empty rows as `,,,`, and
    a persona file ending in them was refused as "column 'persona_id' holds None", naming no
    row. Only trailing ones go: a row with any value, or an empty one before it, is kept (so
    rows keep their numbers in the file), to be checked by the file's schema."""
    path = tmp_path / "personas.csv"
    path.write_text(PERSONAS_CSV + ",,,,\n,,,,\n")
    frame = read_table(path, PersonaSchema, "personas", as_text=True)
    assert frame["persona_id"].to_list() == ["w1", "m1"]
    path.write_text(PERSONAS_CSV + ",,,woman,\n,,,,\n")
    with pytest.raises(AuditError, match="persona_id"):
        read_table(path, PersonaSchema, "personas", as_text=True)
    path.write_text(PERSONAS_CSV.replace("\nm1", "\n,,,,\nm1") + ",,,,\n")
    assert read_frame(path, "personas", as_text=True)["persona_id"].to_list() == ["w1", None, "m1"]


def test_a_parquet_file_reads_by_any_of_its_suffixes_and_is_named_when_called_csv(
        tmp_path: Path):
    """Review 2026-12-04: `.pq` and `.PARQUET` (ingest's names for parquet) were read as CSV,
    and said to hold NUL bytes; a parquet file named .csv is said to be parquet. A file named
    .json read as CSV because the user chose CSV is taken at their word."""
    table = pl.DataFrame({"respondent": ["a"], "item": ["i"], "y": [1]})
    for name in ("long.pq", "LONG.PARQUET"):
        table.write_parquet(tmp_path / name)
        assert read_frame(tmp_path / name, "labels").equals(table)
    table.write_parquet(tmp_path / "long.csv")
    with pytest.raises(AuditError, match=r"it is a parquet file, not CSV: name it \.parquet"):
        read_frame(tmp_path / "long.csv", "labels")
    (tmp_path / "answers.json").write_text("respondent,item,y\na,i,1\n")
    assert read_frame(tmp_path / "answers.json", "answers", parquet=False).height == 1


@pytest.mark.parametrize("separator", [",", ";", "\t"])
def test_a_csv_separated_by_semicolons_or_tabs_reads_as_its_columns(tmp_path: Path,
                                                                    separator: str):
    """Bug caught: Excel's CSV where the decimal mark is a comma is separated by semicolons, and
    read with commas it was one column named 'respondent;item;y', refused as lacking all three.
    A comma in the header keeps the comma, whatever the values hold."""
    path = tmp_path / "answers.csv"
    path.write_text(separator.join(["respondent", "item", "y"]) + "\n"
                    + separator.join(["a", "i1", "1"]) + "\n")
    assert read_frame(path, "answers", as_text=True).rows(named=True) == [
        {"respondent": "a", "item": "i1", "y": "1"}]
    path.write_text("respondent,note\na,approve; then review\n")
    assert read_frame(path, "answers").columns == ["respondent", "note"]


def test_a_json_lines_file_that_is_not_utf8_is_one_line_naming_the_line(tmp_path: Path):
    """Design review, defect 6: a cp1252 byte (0x92, a curly apostrophe) in a JSONL file escaped
    read_json_lines as a UnicodeDecodeError traceback (exit 1) for every caller (JSONL and
    lm-evaluation-harness answers); it is one line naming the line, the byte and the fix."""
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"item": "hiring_01"}\n\n'  # a BOM is read as UTF-8 is
                     + '{"answer": "it\u2019s a HIRE"}\n'.encode("cp1252"))
    with pytest.raises(AuditError, match=r"^cannot read answers file at .*answers\.jsonl: "
                                         r"line 3 is not UTF-8 \(byte 0x92 in column 15\); "
                                         r"save it as UTF-8$"):
        read_json_lines(path, "answers file", "check ingest.input")
    path.write_bytes(b'\xef\xbb\xbf{"item": "hiring_01"}\n\n{"answer": "fine"}\n')
    assert read_json_lines(path, "answers file") == [{"item": "hiring_01"}, {"answer": "fine"}]


def test_save_figure_writes_the_format_of_its_suffix_and_closes_the_figure(tmp_path: Path):
    """The partial file's name ends in `.partial`, so a saver that let matplotlib infer the
    format from it would fail; a saver that kept figures open would leak one per plot."""
    import matplotlib.pyplot as plt

    figure, _ = plt.subplots()
    path = save_figure(figure, tmp_path / "plots" / "gap.png")
    assert path.read_bytes().startswith(b"\x89PNG")
    assert not plt.fignum_exists(figure.number)
    assert [p.name for p in path.parent.iterdir()] == ["gap.png"]


def test_two_writers_of_one_file_never_rename_each_others_partial_file(tmp_path: Path):
    """A second writer that finishes while the first is still writing (two sweep jobs marking the
    same packaged model verified) leaves the first writer's partial file alone, and the last
    whole file wins. With one shared partial name the first writer's rename found its file
    taken (FileNotFoundError) after the second had renamed the first's half-written bytes."""
    path = tmp_path / "model.gguf.verified.json"

    def slow_writer(partial: Path) -> None:
        partial.write_text("first")
        write_atomically(path, lambda other: other.write_text("second"))

    write_atomically(path, slow_writer)
    assert path.read_text() == "first"
    assert [entry.name for entry in tmp_path.iterdir()] == [path.name]


def test_check_output_names_a_path_that_cannot_be_written(tmp_path: Path) -> None:
    """The one check of an output path (cli: fit, compare, verdict, iat, runs, stages): a file
    where a folder goes, a folder where a file goes, a path through a file; a new path passes."""
    from audit.outputs import check_output

    (tmp_path / "good.csv").write_text("a\n")
    for path, folder, message in [(tmp_path / "good.csv", True, "is a file, not a folder"),
                                  (tmp_path, False, "is a folder, not a file"),
                                  (tmp_path / "good.csv" / "out", True, "good.csv is a file"),
                                  (tmp_path / "good.csv" / "x.xml", False, "good.csv is a file")]:
        with pytest.raises(AuditError, match=message):
            check_output(path, "output=", folder=folder)
    assert check_output(tmp_path / "new" / "deeper", "output=", folder=True).parent.name == "new"
    assert check_output(tmp_path / "good.csv", "output=") == tmp_path / "good.csv"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["good.csv"]  # nothing left


def test_a_table_that_fails_its_schema_names_the_values_that_failed(items: pl.DataFrame):
    """Bug caught (bad-input review 2026-12-02): a repeated id was reported as "column
    'item_id' not unique:" (the repeated value sat in a table on the lines the one-line error
    cuts off), and a failed check as "failed validator number 0: <Check ...>"."""
    from audit.schemas import validate

    repeated = pl.concat([items.head(2), items.head(1)])
    with pytest.raises(AuditError, match=rf"item bank \(bank.csv\) does not match ItemSchema: "
                                         rf"column 'item_id' repeats '{items['item_id'][0]}': "
                                         rf"give each row its own item_id$"):
        validate(repeated, ItemSchema, "item bank (bank.csv)")
    kinds = pl.DataFrame({"persona_id": ["a", "b"], "kind": ["explicit", "robot"],
                          "descriptor": ["x", "y"], "gender": ["woman", "man"],
                          "race": ["Black", "White"]})
    with pytest.raises(AuditError, match=r"column 'kind' holds 'robot', which fails isin"):
        validate(kinds, PersonaSchema, "persona file")
    # Bad-input review 2026-12-04: a scenario without its {persona} slot (`{ persona }`) was
    # shown whole, hundreds of characters, with the check's regex as the rule.
    spaced = items.head(1).with_columns(
        pl.col("scenario").str.replace("{persona}", "{ persona }", literal=True))
    with pytest.raises(AuditError, match=r"column 'scenario' holds '.{57}\.\.\.', which fails "
                                         r"the slot rule: a scenario holds \{persona\}, spelt so"):
        validate(spaced, ItemSchema, "item bank (bank.csv)")


def test_a_folder_where_a_file_goes_is_named_a_folder(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-02): a folder given where a file is read (an
    answers file, a persona table, a gold file) was reported "not found", sending the user
    looking for a path that exists."""
    from audit.data_files import data_file
    from audit.tables import read_frame

    with pytest.raises(AuditError, match=rf"answers file at {tmp_path} is a folder, not a file: "
                                         r"check it"):
        read_frame(tmp_path, "answers file", "check it")
    with pytest.raises(AuditError, match=r"persona table at .* is a folder, not a file: set "
                                         r"ingest.personas_file to a file"):
        data_file(tmp_path, "persona table", "ingest.personas_file")
    (tmp_path / "here").mkdir()
    with pytest.raises(AuditError, match=r"persona table at here is a folder, not a file"):
        data_file("here", "persona table", "ingest.personas_file", cwd=tmp_path)
    with pytest.raises(AuditError, match=r"persona table not found at gone"):
        data_file("gone", "persona table", "ingest.personas_file", cwd=tmp_path)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: (st.lists(children, max_size=4)
                      | st.dictionaries(st.text(max_size=5), children, max_size=4)),
    max_leaves=20)


@given(JSON_VALUES)
def test_write_json_is_strict_json_with_every_finite_value_kept(value) -> None:
    """Bug caught: Python's json writes NaN and Infinity bare, so a run's metrics.json and
    diagnostics.json were refused whole by jq and JavaScript's JSON.parse. Every non-finite
    float becomes null; every other value, finite floats included, is kept exactly."""
    text = json.dumps(finite_json(value), allow_nan=False)
    parsed = json.loads(text, parse_constant=_refuse_constant)

    def expected(item):
        if isinstance(item, float):
            return item if math.isfinite(item) else None
        if isinstance(item, list):
            return [expected(element) for element in item]
        if isinstance(item, dict):
            return {key: expected(element) for key, element in item.items()}
        return item
    assert parsed == expected(value)


def test_metrics_with_no_value_are_null_on_disk_and_nan_for_mlflow(tmp_path: Path) -> None:
    """The writer and the reader of a method's metrics file change together. Bug caught: a
    reader that handed null on to MLflow, whose log_metric refuses None, so a method with an
    undefined figure (an accuracy over no answers) lost its report stage."""
    from audit.methods.run import read_metrics, write_metrics

    path = write_metrics({"accuracy": math.nan, "gap": -0.25, "worst": math.inf},
                         tmp_path / "metrics.json")
    on_disk = json.loads(path.read_text(), parse_constant=_refuse_constant)
    assert on_disk == {"accuracy": None, "gap": -0.25, "worst": None}
    metrics = read_metrics(path)
    assert math.isnan(metrics["accuracy"]) and math.isnan(metrics["worst"])
    assert metrics["gap"] == -0.25
    assert write_json({"n": 3}, tmp_path / "n.json").read_text() == '{\n  "n": 3\n}\n'



def test_a_csv_whose_lines_end_in_cr_alone_is_one_line(tmp_path: Path):
    """Review 2026-12-04: Excel for Mac's "Macintosh CSV" ends lines in CR alone; polars read
    it as one header line ('y\ra', 'i1_duplicated_0', ...), and the header check raised
    csv.Error as a traceback."""
    path = tmp_path / "answers.csv"
    path.write_bytes(b"respondent,item,y\ra,i1,1\rb,i1,0\r")
    with pytest.raises(AuditError, match=r"^cannot read answers at .*: its lines end in a "
                                         r"carriage return alone .*save it as CSV UTF-8"):
        read_frame(path, "answers", "fix it", as_text=True)
    path.write_bytes(b"respondent,item,y\r\na,i1,1\r\n")  # CRLF stays readable
    assert read_frame(path, "answers", "fix it", as_text=True).columns == ["respondent", "item",
                                                                           "y"]


def test_a_repeated_column_after_a_quoted_name_over_two_lines_is_refused(tmp_path: Path):
    """Review 2026-12-04: reading only the first physical line lost the header's second
    record half, so `c` named twice passed and a reader of `c` took the first."""
    path = tmp_path / "answers.csv"
    path.write_bytes(b'"a\nb",c,c\n1,2,3\n')
    with pytest.raises(AuditError, match="column 'c' appears 2 times in the header"):
        read_frame(path, "answers", "fix it", as_text=True)


def test_an_empty_required_cell_names_its_row_whatever_the_file_names_its_columns(
        tmp_path: Path):
    """Review 2026-12-04: the row index was a column named "row", so a file with its own `row`
    column was "column with name 'row' has more than one occurrence"; and a run's own table
    with an empty cell was told "fill it in", where the caller's fix (rerun) applies."""
    from audit.schemas import PersonaFileSchema

    path = tmp_path / "people.csv"
    path.write_text("persona_id,kind,descriptor,gender,race,row\n"
                    "a,explicit,a woman,woman,White,1\nb,explicit,,man,White,2\n")
    with pytest.raises(AuditError) as refused:
        read_table(path, PersonaFileSchema, "personas", "fix it", as_text=True)
    assert str(refused.value).endswith("column 'descriptor' is empty in row 2 (persona_id 'b'): "
                                       "fill it in, or drop those rows"), refused.value
    with pytest.raises(AuditError) as refused:
        read_table(path, PersonaFileSchema, "personas", "rerun the run")
    assert str(refused.value).endswith("is empty in row 2 (persona_id 'b'): rerun the run")


def test_a_run_table_that_is_there_but_damaged_is_told_to_rerun_its_stage(tmp_path: Path):
    """Bug caught (noted 2026-12-04): a run's labels.parquet cut short (a copy interrupted, a full
    disk) was told to "run the stage that writes it first", the fix for a file that is not
    there, so a user looked for a stage that had already run. A file that is missing keeps
    that fix, and a caller's own fix stands for a damaged file too."""
    damaged = tmp_path / "labels.parquet"
    write_frame(pl.DataFrame({"label": ["favourable"] * 50}), damaged)
    damaged.write_bytes(damaged.read_bytes()[:40])
    rerun = r"; rerun the stage that writes it \(or check the path in the config\)$"
    with pytest.raises(AuditError, match=rf"^cannot read labels at {damaged}: .*{rerun}"):
        read_frame(damaged, "labels")
    with pytest.raises(AuditError, match=rf"^cannot read labels at {damaged}: .*{rerun}"):
        read_table(damaged, ItemSchema, "labels")
    with pytest.raises(AuditError, match=r"; recopy the run$"):
        read_frame(damaged, "labels", "recopy the run")
    with pytest.raises(AuditError, match=r"^labels not found at .*: run the stage that writes "
                                         r"it first \(or check the path in the config\)$"):
        read_frame(tmp_path / "absent.parquet", "labels")
    lines = tmp_path / "requests.jsonl"
    lines.write_text('{"key": 1}\n{"key": \n')
    with pytest.raises(AuditError, match=rf"line 2 is not JSON .*{rerun}"):
        read_json_lines(lines, "requests")
