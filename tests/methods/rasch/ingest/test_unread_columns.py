"""An answers file that gives no value of an attribute the fit contrasts, while a column it does
not read holds values like levels: refused in one line naming that column and both fixes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from audit.config_ranges import check_config
from audit.errors import AuditError
from audit.methods.configs import AuditConfig
from audit.methods.rasch.ingest.formats import level_like, numbers_only
from audit.methods.rasch.ingest.stages import imported_answers

ROOT = Path(__file__).resolve().parents[4]


def _rows(**extra) -> list[dict]:
    rows = []
    for number, (gender, race) in enumerate([(g, r) for g in ("woman", "man")
                                             for r in ("Black", "White")]):
        for item in ("hiring_01", "hiring_02"):
            rows.append({"model": "m", "gender": gender, "ethnicity": race, "item": item,
                         "decision": "HIRE" if number % 2 else "REJECT",
                         "request_id": f"r{len(rows)}", **extra})
    return rows


def _config(path: Path, attributes: list[str] | None = None) -> AuditConfig:
    defaults = AuditConfig()
    fit = defaults.fit if attributes is None else replace(defaults.fit, attributes=attributes)
    return replace(defaults, ingest=replace(defaults.ingest, input=str(path)), fit=fit,
                   items=replace(defaults.items,
                                 bank=str(ROOT / "data" / "items" / "decision_items.csv")))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_race_column_under_another_name_is_refused_naming_it(tmp_path, suffix):
    """Bug caught: `ethnicity` beside `gender` passed (every row had a gender), and the run went
    on without race, its contrasts gone behind one warning at the fit."""
    path = tmp_path / f"answers{suffix}"
    if suffix == ".csv":
        pl.DataFrame(_rows()).write_csv(path)
    else:
        path.write_text("".join(json.dumps({**row, "meta": {"latency": 1.5}}) + "\n"
                                for row in _rows()))
    with pytest.raises(AuditError, match=r"gives no 'race', which fit.attributes contrasts, and "
                                         r"does not read its column\(s\) 'ethnicity' \(Black, "
                                         r"White\): name the column that holds it 'race' \(any "
                                         r"case\), or set fit.attributes=\[gender\]") as error:
        imported_answers(_config(path))
    assert "\n" not in str(error.value) and "request_id" not in str(error.value)


def test_a_file_that_compares_gender_alone_says_so_with_fit_attributes(tmp_path):
    path = tmp_path / "answers.csv"
    pl.DataFrame(_rows()).write_csv(path)
    answers = imported_answers(_config(path, ["gender"]))
    assert answers["race"].null_count() == answers.height
    assert sorted(answers["gender"].unique().to_list()) == ["man", "woman"]


def test_columns_unlike_levels_do_not_stop_a_file_without_race(tmp_path):
    """Ids, numbers and a value on one row only are not read as a misnamed attribute: such a
    file goes on without race, as before."""
    rows = [{key: value for key, value in row.items() if key != "ethnicity"}
            | {"latency": 0.5 + index, "note": "late" if index == 0 else None}
            for index, row in enumerate(_rows())]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).write_csv(path)
    assert imported_answers(_config(path))["race"].null_count() == len(rows)


def test_an_item_bank_whose_ids_look_like_numbers_joins_the_answers_as_written(tmp_path):
    """Review 2026-12-04: audit.ingest read items.bank with types inferred, so a bank's "001"
    became "1" and answers naming item "001" were refused as unknown items."""
    shipped = pl.read_csv(ROOT / "data" / "items" / "decision_items.csv", infer_schema=False)
    bank = shipped.filter(pl.col("item_id").is_in(["hiring_01", "hiring_02"])).with_columns(
        item_id=pl.Series(["001", "002"]))
    bank.write_csv(tmp_path / "bank.csv")
    rows = [{**row, "race": row.pop("ethnicity"),
             "item": {"hiring_01": "001", "hiring_02": "002"}[row["item"]]} for row in _rows()]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).with_columns(pl.col("item").cast(pl.String)).write_csv(path)
    config = _config(path)
    config = replace(config, items=replace(config.items, bank=str(tmp_path / "bank.csv")))
    assert sorted(imported_answers(config)["item_id"].unique().to_list()) == ["001", "002"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_column_named_one_letter_off_an_attribute_is_refused_on_a_short_file(tmp_path, suffix):
    """Bug caught (bad-input review 2026-12-05): `gendr` was refused on an 8-row file but on a
    2-row one its values repeat on no row, so they looked like no levels and the run went on
    without gender behind one warning."""
    rows = [{"model": "m", "gendr": gender, "race": "Black", "item": "hiring_01",
             "decision": "HIRE", "request_id": f"r{index}"}
            for index, gender in enumerate(("woman", "man"))]
    path = tmp_path / f"answers{suffix}"
    if suffix == ".csv":
        pl.DataFrame(rows).write_csv(path)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(AuditError, match=r"gives no 'gender', which fit.attributes contrasts, "
                                         r"and does not read its column\(s\) 'gendr' \(man, "
                                         r"woman\): name the column that holds it 'gender'"):
        imported_answers(_config(path))


def test_a_column_of_numbers_one_letter_off_an_attribute_does_not_stop_the_file(tmp_path):
    """Bug caught: `rate` is one edit from `race`, so a file of rates without race was refused
    as if its rates were race levels ("'rate' (0.25, 0.5, ...)"); such a file goes on without
    race, as a file without the column does."""
    rows = [{key: value for key, value in row.items() if key != "ethnicity"}
            | {"rate": 0.25 * (index % 3 + 1)} for index, row in enumerate(_rows())]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).write_csv(path)
    assert imported_answers(_config(path))["race"].null_count() == len(rows)


@pytest.mark.parametrize("model", ["", "  "])
def test_an_empty_model_setting_is_refused_not_replaced_by_the_default(tmp_path, model):
    """Bug caught: `ingest.model=` (Hydra reads it as "") named the rows 'imported' without a
    word, as if the setting were left out. Refused with the config's other values, before any
    stage (audit.config_ranges)."""
    config = _config(tmp_path / "answers.csv")  # refused before the file is read
    config = replace(config, ingest=replace(config.ingest, model=model))
    with pytest.raises(AuditError, match=r"^ingest.model is empty: write ingest.model=NAME"):
        check_config(config)


def test_a_csv_column_of_repeated_numbers_is_not_read_as_levels(tmp_path):
    """Bug caught: a CSV is read as text, so a 0/1 `score` column arrived as the strings "0" and
    "1", each on several rows, and a file without race was refused as if 'score' held race."""
    rows = [{key: value for key, value in row.items() if key != "ethnicity"}
            | {"score": index % 2} for index, row in enumerate(_rows())]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).write_csv(path)
    assert imported_answers(_config(path))["race"].null_count() == len(rows)


def test_numbers_only_needs_every_value_to_be_a_number():
    """Catches numbers_only true when any one value is a number: a column of levels with one
    stray "1" was let through as a column of numbers."""
    assert numbers_only(["0", " 1 ", "2.5"])
    assert not numbers_only(["Black", "1"])
    assert not numbers_only(["Black", "White"])


@pytest.mark.parametrize(("values", "levels"), [
    (["Black", "White", "Black", "White", "", None], ["Black", "White"]),  # blanks are no level
    (["x", "x", "x"], None),  # one value: a constant, no attribute
    ([f"v{n:02d}" for n in range(21)] * 2, None),  # 21 values: ids, not levels
    ([f"v{n:02d}" for n in range(20)] * 2, [f"v{n:02d}" for n in range(20)]),
    (["Black", "White", "White"], None),  # a value on one row only
])
def test_a_column_looks_like_levels_with_2_to_20_repeated_texts(values, levels):
    """Catches level_like's bounds moved (one value, more than 20) and a blank cell counted as
    a level of its own (which, on one row, hid the column's real levels)."""
    assert level_like(values) == levels


def test_a_race_given_on_some_rows_is_no_missing_race(tmp_path):
    """Catches an attribute empty on some rows (the baseline's) read as absent from the file:
    a column of batch labels beside it was then taken for the race."""
    rows = [{**row, "race": row.pop("ethnicity") if index % 4 else None,
             "batch": "A" if index % 2 else "B"} for index, row in enumerate(_rows())]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).write_csv(path)
    assert imported_answers(_config(path))["race"].null_count() == 2


def test_a_file_without_either_attribute_names_the_first_and_its_columns_sorted(tmp_path):
    """Catches the refusal naming the last attribute missing rather than the first, and the
    unread columns listed in the file's order rather than sorted."""
    rows = [{"sex": row["gender"], **row} for row in _rows()]
    for row in rows:
        del row["gender"]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).write_csv(path)
    with pytest.raises(AuditError, match=r"gives no 'gender', which fit.attributes contrasts, "
                                         r"and does not read its column\(s\) 'ethnicity' "
                                         r"\(Black, White\); 'sex' \(man, woman\): name the "
                                         r"column that holds it 'gender' \(any case\), or set "
                                         r"fit.attributes=\[race\] to compare without it$"):
        imported_answers(_config(path))


def test_an_unread_column_of_many_levels_is_named_by_its_first_four(tmp_path):
    """Catches the levels shown cut at another count than four, or "..." for four levels."""
    races = ("Asian", "Black", "Hispanic", "Native", "White")
    rows = [{**row, "ethnicity": races[index % 5]} for index, row in enumerate(_rows() * 2)]
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows[:10]).write_csv(path)
    with pytest.raises(AuditError, match=r"'ethnicity' \(Asian, Black, Hispanic, Native, \.\.\.\)"):
        imported_answers(_config(path))
    pl.DataFrame([row for row in rows if row["ethnicity"] != "White"]).write_csv(path)
    with pytest.raises(AuditError, match=r"'ethnicity' \(Asian, Black, Hispanic, Native\):"):
        imported_answers(_config(path))


def test_with_a_persona_table_unread_columns_are_not_taken_for_attributes(tmp_path):
    """Catches the answers' own attribute columns required beside ingest.personas_file, which
    gives the attributes: a column of batch labels was refused as the missing race."""
    table = tmp_path / "personas.csv"
    table.write_text("persona_id,kind,descriptor,gender,race\nbw,explicit,a Black woman,woman,"
                     "Black\nwm,explicit,a White man,man,White\n")
    path = tmp_path / "answers.csv"
    pl.DataFrame([{"model": "m", "persona_id": persona, "item": item, "decision": "HIRE",
                   "batch": batch}
                  for persona, batch in (("bw", "A"), ("wm", "B"))
                  for item in ("hiring_01", "hiring_02")]).write_csv(path)
    config = _config(path)
    config = replace(config, ingest=replace(config.ingest, personas_file=str(table)))
    assert imported_answers(config)["race"].to_list() == ["Black", "Black", "White", "White"]


def test_model_and_item_cells_are_read_trimmed_and_a_blank_model_is_the_default(tmp_path):
    """Bug caught (bad-input review 2026-12-06): the model and item cells were read as written,
    so "m " beside "m" was a second model, an all-space model cell a model named " ", and
    " hiring_01" an item "not in the bank" that sent the user to choose another bank."""
    rows = [{("race" if key == "ethnicity" else key): value for key, value in row.items()}
            for row in _rows()]
    rows[0] |= {"model": "m "}
    rows[1] |= {"model": "   ", "item": " hiring_02 "}
    path = tmp_path / "answers.csv"
    pl.DataFrame(rows).write_csv(path)
    config = _config(path)
    answers = imported_answers(replace(config, ingest=replace(config.ingest, model="m")))
    assert answers["model"].unique().to_list() == ["m"]
    assert sorted(set(answers["item_id"].to_list())) == ["hiring_01", "hiring_02"]
