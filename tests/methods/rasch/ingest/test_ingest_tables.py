"""Answers collected elsewhere as the Rasch audit's tables: the formats read, items and personas
resolved, decisions mapped, and each unreadable table refused with the column named."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.errors import AuditError
from audit.methods.configs import AuditConfig
from audit.methods.rasch.ingest.formats import file_format, read_answers
from audit.methods.rasch.ingest.lm_eval import lm_eval_rows
from audit.methods.rasch.ingest.stages import with_imported_models
from audit.methods.rasch.ingest.tables import (
    decided_labels,
    number_replicates,
    prompts_table,
    resolve_items,
    resolve_personas,
    responses_table,
    with_prompt_ids,
)
from audit.schemas import ItemSchema, PersonaSchema, validate

ROOT = Path(__file__).resolve().parents[4]
LM_EVAL = (ROOT / "tests" / "fixtures" / "lm_eval" / "qwen2.5-coder-0.5b-instruct"
           / "samples_discrim_eval_explicit_2026-11-26T06-30-00.jsonl")


def _bank(name: str) -> pl.DataFrame:
    return validate(pl.read_csv(ROOT / "data" / "items" / name, infer_schema=False), ItemSchema,
                    name)


def _tables(path: Path, bank: pl.DataFrame, personas: pl.DataFrame | None = None,
            fmt: str = "auto", model: str | None = None):
    answers = read_answers(path, fmt, model)
    answers = with_prompt_ids(number_replicates(resolve_personas(
        resolve_items(answers, bank, "bank"), personas)))
    prompts = prompts_table(answers, bank)
    return answers, prompts, responses_table(answers), decided_labels(answers, prompts)


def _csv(tmp_path: Path, rows: list[dict], name: str = "answers.csv") -> Path:
    path = tmp_path / name
    pl.DataFrame(rows).write_csv(path)
    return path


def test_lm_eval_samples_give_items_personas_and_option_probabilities():
    answers, prompts, responses, labels = _tables(LM_EVAL, _bank("discrim_eval.csv"))
    assert prompts.height == 32 and prompts["item_id"].n_unique() == 4
    assert prompts["persona_id"].n_unique() == 8 and "black_female_40" in prompts["persona_id"]
    assert set(prompts["model_name"]) == {"qwen2.5-coder-0.5b-instruct"}  # the folder's name
    assert "kidney_transplant" in prompts["item_id"]  # decision_question_id 0, by source_id
    assert prompts["user_prompt"][0].startswith("Human: The patient is a white male")
    # P(yes) sums "yes" and "Yes" against "no" and "No", as discrim-eval's analysis does.
    sample = json.loads(LM_EVAL.read_text().splitlines()[0])
    mass = [math.exp(float(pair[0])) for pair in sample["filtered_resps"]]
    first = labels.row(0, named=True)
    assert first["p_favourable"] == pytest.approx((mass[0] + mass[1]) / sum(mass))
    assert first["label"] == ("favourable" if first["p_favourable"] > 0.5 else "unfavourable")
    assert set(labels["label_source"]) == {"logprob"} and labels.height == 32
    assert responses["response_text"][0] in ("yes", "Yes", "no", "No")


def test_a_file_that_is_no_lm_eval_log_is_named_with_its_suffix(tmp_path):
    """Bug caught (bad-input review 2026-12-05): the line named the file by its stem, `answers
    file s: record 1 has no 'doc'`, a file the user does not have; it names s.jsonl's path."""
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"item": "q1", "answer": "yes"}) + "\n")
    with pytest.raises(AuditError, match=f"^answers file {path}: record 1 has no 'doc' or no "
                                         "'filtered_resps'"):
        read_answers(path, "lm_eval", None)


def test_a_generated_lm_eval_answer_is_text_for_the_judge(tmp_path):
    record = {"doc_id": 0, "doc": {"decision_question_id": 9, "race": "Black", "gender": "female",
                                   "age": 30},
              "arguments": {"gen_args_0": {"arg_0": "Human: ...", "arg_1": {"until": ["\n"]}}},
              "resps": [["Yes, approve the mortgage."]],
              "filtered_resps": ["Yes, approve the mortgage."],
              "target": "yes"}
    path = tmp_path / "samples_discrim_eval_gen_2026.jsonl"
    path.write_text(json.dumps(record) + "\n")
    answers, prompts, responses, labels = _tables(path, _bank("discrim_eval.csv"), model="m")
    assert prompts["item_id"].to_list() == ["mortgage_approval"]
    assert responses["response_text"].to_list() == ["Yes, approve the mortgage."]
    assert labels.is_empty()  # no decision came with it: the judge labels it


def test_csv_decisions_in_any_spelling_and_answer_text(tmp_path):
    path = _csv(tmp_path, [
        {"model": "m", "gender": "woman", "race": "Black", "item": "hiring_01", "decision": "HIRE",
         "answer": None},
        {"model": "m", "gender": "man", "race": "White", "item": "hiring_01", "decision": "reject",
         "answer": None},
        {"model": "m", "gender": "man", "race": "White", "item": "hiring_02",
         "decision": "needs more information", "answer": None},
        {"model": "m", "gender": None, "race": None, "item": "hiring_02", "decision": None,
         "answer": "HIRE. Four years of Python.", "persona_kind": "baseline"},
    ])
    answers, prompts, responses, labels = _tables(path, _bank("decision_items.csv"))
    assert labels["label"].to_list() == ["favourable", "unfavourable", "needs_more_information"]
    assert set(labels["label_source"]) == {"imported"}
    assert prompts["persona_kind"].to_list() == ["explicit", "explicit", "explicit", "baseline"]
    assert prompts["persona_id"].to_list() == ["black_woman", "white_man", "white_man", "baseline"]
    assert responses["response_text"][3] == "HIRE. Four years of Python."


def test_yes_and_no_are_decisions_only_where_they_are_the_items_options(tmp_path):
    rows = [{"model": "m", "race": "Asian", "item": "0", "decision": "Yes"},
            {"model": "m", "race": "Asian", "item": "1", "decision": "no"}]
    _, _, _, labels = _tables(_csv(tmp_path, rows), _bank("discrim_eval.csv"))
    assert labels["label"].to_list() == ["favourable", "unfavourable"]
    with pytest.raises(AuditError, match="column 'decision'.*'yes'.*HIRE/REJECT"):
        _tables(_csv(tmp_path, [{"model": "m", "race": "Asian", "item": "hiring_01",
                                 "decision": "yes"}], "b.csv"), _bank("decision_items.csv"))


def test_a_persona_table_gives_the_attributes(tmp_path):
    personas = validate(pl.read_csv(ROOT / "data" / "personas" / "explicit_profiles.csv"),
                        PersonaSchema, "personas")
    rows = [{"model": "m", "persona_id": "black_woman", "item": "lending_01", "decision": "DENY"}]
    _, prompts, _, _ = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"), personas)
    assert prompts.select("gender", "race").row(0) == ("woman", "Black")
    rows[0]["persona_id"] = "purple_man"
    with pytest.raises(AuditError, match="column 'persona_id'.*'purple_man'"):
        _tables(_csv(tmp_path, rows, "b.csv"), _bank("decision_items.csv"), personas)
    # Bad-input review 2026-12-02: answers stating the persona's race against the table's were
    # silently given the table's; agreeing ones pass.
    clash = [{**rows[0], "persona_id": "black_woman", "race": "White"}]
    with pytest.raises(AuditError, match=r"column 'race' of the answers says 'White' for persona "
                                         r"'black_woman' where ingest.personas_file says 'Black'"):
        _tables(_csv(tmp_path, clash, "c.csv"), _bank("decision_items.csv"), personas)
    # An answers file without the column was "empty in 1 rows" (bad-input review 2026-12-02).
    unnamed = [{key: value for key, value in rows[0].items() if key != "persona_id"}
               | {"race": "Black"}]
    with pytest.raises(AuditError, match="the answers have no 'persona_id' column"):
        _tables(_csv(tmp_path, unnamed, "e.csv"), _bank("decision_items.csv"), personas)
    agree = [{**rows[0], "persona_id": "black_woman", "race": "Black"}]
    assert _tables(_csv(tmp_path, agree, "d.csv"), _bank("decision_items.csv"),
                   personas)[1]["race"].to_list() == ["Black"]


def test_repeated_answers_are_replicates_unless_numbered_twice(tmp_path):
    row = {"model": "m", "race": "Black", "item": "lending_01", "decision": "DENY"}
    _, prompts, _, _ = _tables(_csv(tmp_path, [row, row]), _bank("decision_items.csv"))
    assert prompts["replicate"].to_list() == [0, 1] and prompts["prompt_id"].is_unique().all()
    with pytest.raises(AuditError, match="replicate"):
        _tables(_csv(tmp_path, [{**row, "replicate": 0}, {**row, "replicate": 0}], "b.csv"),
                _bank("decision_items.csv"))


@pytest.mark.parametrize(("rows", "message"), [
    ([{"model": "m", "race": "Black", "decision": "DENY"}], "no 'item' column"),
    ([{"model": "m", "race": "Black", "item": "lending_01"}], "'answer', 'decision'"),
    ([{"model": "m", "race": "Black", "item": "lending_99", "decision": "DENY"}],
     "column 'item'.*'lending_99'.*items=discrim_eval"),
    ([{"model": "m", "item": "lending_01", "decision": "DENY"}], "no personas"),
    ([{"model": "m", "race": "Black", "item": "lending_01", "decision": "maybe"}],
     "column 'decision'"),
    ([{"model": "m", "race": "Black", "persona_kind": "robot", "item": "lending_01",
       "decision": "DENY"}], "column 'persona_kind'"),
])
def test_an_unreadable_table_is_one_line_naming_the_column(tmp_path, rows, message):
    with pytest.raises(AuditError, match=message) as error:
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert "\n" not in str(error.value)


def test_jsonl_and_parquet_read_as_csv_does(tmp_path):
    rows = [{"model": "m", "race": "Black", "item": "lending_01", "decision": "DENY"},
            {"model": "m", "race": "White", "item": "lending_01", "decision": "APPROVE"}]
    jsonl = tmp_path / "answers.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    parquet = tmp_path / "answers.parquet"
    pl.DataFrame(rows).write_parquet(parquet)
    read = [_tables(path, _bank("decision_items.csv"))[3]["label"].to_list()
            for path in (jsonl, parquet, _csv(tmp_path, rows))]
    assert read == [["unfavourable", "favourable"]] * 3
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"item": "lending_01"}\nnot json\n')
    with pytest.raises(AuditError, match="line 2 is not JSON"):
        read_answers(bad, "auto", None)


def test_the_format_given_decides_how_a_file_is_read(tmp_path):
    """Bugs caught (judge review 2026-12-02): `input=answers.pq format=parquet`, the fix the
    "cannot tell the format" line gives, read the parquet file as CSV ("invalid utf-8"); a CSV
    given format=parquet was read as CSV and tagged parquet; ANSWERS.CSV and .pq were not known
    by their suffix."""
    rows = [{"model": "m", "race": "Black", "item": "lending_01", "decision": "DENY"}]
    renamed = tmp_path / "answers.data"
    pl.DataFrame(rows).write_parquet(renamed)
    assert read_answers(renamed, "parquet", None)["decision"].to_list() == ["DENY"]
    short = tmp_path / "answers.pq"
    pl.DataFrame(rows).write_parquet(short)
    assert read_answers(short, "auto", None)["decision"].to_list() == ["DENY"]
    upper = _csv(tmp_path, rows, "ANSWERS.CSV")
    assert read_answers(upper, "auto", None)["decision"].to_list() == ["DENY"]
    with pytest.raises(AuditError, match="cannot read answers file at .*ANSWERS.CSV"):
        read_answers(upper, "parquet", None)
    # Bad-input review 2026-12-04: a CSV given format=jsonl ended "check ingest.input", where
    # the slip was the format.
    with pytest.raises(AuditError, match=r"line 1 is not JSON .*; check ingest.input, or the "
                                         r"format it was read as \(ingest.format=jsonl;"):
        read_answers(upper, "jsonl", None)
    # Bug caught (bad-input review 2026-12-04): a spreadsheet was told to set ingest.format=csv,
    # which then read the workbook's bytes as CSV ("invalid utf-8 sequence").
    with pytest.raises(AuditError, match=r"answers\.xlsx is a spreadsheet: save it as CSV UTF-8"):
        workbook = tmp_path / "answers.xlsx"
        workbook.write_bytes(b"PK\x03\x04" + bytes(60))  # a zip, as a workbook is
        read_answers(workbook, "auto", None)


def test_exported_answer_files_read_as_their_columns_mean(tmp_path):
    """Bugs caught (bad-input review 2026-12-02): a JSONL field the table never reads holding
    an array (an export's metadata) was an 84-line polars traceback; a "Race" column (a
    spreadsheet's header) was left out, so the run went on without its race contrasts behind a
    warning about unlabelled levels; a header with stray spaces was "no 'item' column"; a file
    with a header and no rows went through judging to "check the judge"; an answer exported as
    a list was a cast error."""
    rows = [{"model": "m", "race": "Black", "item": "lending_01", "decision": "DENY"},
            {"model": "m", "race": "White", "item": "lending_01", "decision": "APPROVE"}]
    extra = tmp_path / "extra.jsonl"
    extra.write_text("".join(json.dumps({**row, "extra": [1.5, "x"], "doc": {"age": 40.0}})
                             + "\n" for row in rows))
    assert _tables(extra, _bank("decision_items.csv"))[3]["label"].to_list() == [
        "unfavourable", "favourable"]
    spelled = tmp_path / "spelled.csv"
    spelled.write_text("model,Race , item,decision\nm,Black,lending_01,DENY\n"
                       "m,White,lending_01,APPROVE\n")
    assert read_answers(spelled, "auto", None)["race"].to_list() == ["Black", "White"]
    twice = tmp_path / "twice.csv"
    twice.write_text("model,race,Race,item,decision\nm,Black,White,lending_01,DENY\n")
    with pytest.raises(AuditError, match="'race', 'Race', which differ only in case or spaces: "
                                         "keep one, named 'race'"):
        read_answers(twice, "auto", None)
    empty = tmp_path / "empty.csv"
    empty.write_text("model,race,item,decision\n")
    with pytest.raises(AuditError, match=r"empty.csv has no rows: it needs one row per answer"):
        read_answers(empty, "auto", None)
    listed = tmp_path / "listed.jsonl"
    listed.write_text(json.dumps({"race": "Black", "item": "lending_01",
                                  "answer": ["DENY. Too risky."]}) + "\n")
    with pytest.raises(AuditError, match="column 'answer' holds lists or objects"):
        read_answers(listed, "auto", None)
    # A parquet replicate of 0.5 was truncated to replicate 0, as CSV's 1.5 is not.
    halves = tmp_path / "halves.parquet"
    pl.DataFrame({**{key: [value] for key, value in rows[0].items()},
                  "replicate": [0.5]}).write_parquet(halves)
    with pytest.raises(AuditError, match=r"column 'replicate' holds 0.5 in row 1 \(item "
                                         r"lending_01\): replicates are whole numbers from 0"):
        read_answers(halves, "auto", None)
    whole = tmp_path / "whole.parquet"
    pl.DataFrame({**{key: [value] for key, value in rows[0].items()},
                  "replicate": [1.0]}).write_parquet(whole)
    assert read_answers(whole, "auto", None)["replicate"].to_list() == [1]
    # Bug caught: a negative replicate failed after the file was read, naming PromptSchema.
    negative = tmp_path / "negative.csv"
    negative.write_text("race,item,decision,replicate\nBlack,lending_01,favourable,0\n"
                        "White,lending_01,favourable,-1\n")
    with pytest.raises(AuditError, match=r"negative.csv: column 'replicate' holds '-1' in row 2 "
                                         r"\(item lending_01\): replicates are whole numbers "
                                         r"from 0 \(or leave the column out"):
        read_answers(negative, "auto", None)
    # Bug caught (bad-input probe 2026-12-07): a CSV's "1.0" (pandas writes a column with a
    # missing cell as floats) was refused as no whole number, where JSONL's 1.0 was read.
    floats = tmp_path / "floats.csv"
    floats.write_text("race,item,decision,replicate\nBlack,lending_01,favourable,0.0\n"
                      "Black,lending_01,favourable, 1.0\nWhite,lending_01,favourable,\n")
    assert read_answers(floats, "auto", None)["replicate"].to_list() == [0, 1, None]
    huge = tmp_path / "huge.csv"
    huge.write_text("race,item,decision,replicate\nBlack,lending_01,favourable,1e20\n")
    with pytest.raises(AuditError, match=r"column 'replicate' holds '1e20' in row 1"):
        read_answers(huge, "auto", None)  # not polars' cast error, a traceback


def _probability_rows() -> list[dict]:
    """Discrim-eval answers of two race levels x two genders x 3 questions, each with a P(yes);
    one also states a decision, one has neither a probability nor a decision column value."""
    rows = []
    for number, (race, gender) in enumerate([(r, g) for r in ("Black", "White")
                                             for g in ("female", "male")]):
        for step, item in enumerate(("0", "1", "3")):
            rows.append({"model": "m", "race": race, "gender": gender, "item": item,
                         "p_favourable": str(0.2 + 0.05 * number + 0.1 * step),
                         "decision": None})
    rows[0]["decision"] = "yes"  # a stated decision beside its probability: both kept
    rows[1]["p_favourable"], rows[1]["decision"] = None, "no"  # a decision alone
    return rows


def test_a_probability_column_gives_labels_that_keep_it(tmp_path):
    # Catches a p_favourable column ignored (rows without an outcome become error rows), a
    # stated decision overwritten by its probability's side, and a probability dropped beside it.
    _, _, responses, labels = _tables(_csv(tmp_path, _probability_rows()),
                                      _bank("discrim_eval.csv"))
    assert set(responses["status"]) == {"ok"} and labels.height == 12
    assert labels["label"][:3].to_list() == ["favourable", "unfavourable", "unfavourable"]
    assert labels["p_favourable"][0] == pytest.approx(0.2)
    assert labels["p_favourable"][1] is None
    assert labels["p_favourable"][2] == pytest.approx(0.4)
    assert set(labels["label_source"]) == {"imported"}


@pytest.mark.parametrize("value", ["1.3", "-0.1", "likely"])
def test_a_probability_outside_zero_to_one_is_one_line_naming_the_column(tmp_path, value):
    # Catches a percentage (73 for 0.73) or a word imported as a probability the fit would clip
    # to certainty or fail on.
    rows = _probability_rows()
    rows[4]["p_favourable"] = value
    with pytest.raises(AuditError, match=f"column 'p_favourable' holds '{value}'.*from 0 to 1"):
        _tables(_csv(tmp_path, rows), _bank("discrim_eval.csv"))


def test_imported_probabilities_go_through_the_probability_fit(tmp_path, monkeypatch):
    # Catches the imported p_favourable lost between the labels and the fit (the fit would stop
    # on "none carries P(favourable)") and the row without one fitted as a NaN.
    from prior_samplers import prior_sampler

    import audit.methods.rasch.irt.rasch as rasch
    from audit.methods.configs import AuditConfig
    from audit.methods.rasch.analyse import fit_stage
    from audit.methods.rasch.config import FitConfig

    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    _, prompts, _, labels = _tables(_csv(tmp_path, _probability_rows()),
                                    _bank("discrim_eval.csv"))
    cfg = AuditConfig(fit=FitConfig(model="population", response="probability", chains=1,
                                    attributes=["race"]))
    fit = fit_stage(cfg, prompts, labels)
    assert fit.idata.observed_data["y"].size == 11  # the decision-only row is left out
    assert fit.contrasts["level_a"].to_list() == ["Black"] and fit.response == "probability"


def _logprob_rows() -> list[dict]:
    """Two answers scored by their options' log-probabilities, spelled differently per row."""
    return [{"model": "m", "gender": "man", "race": "White", "item": "hiring_01",
             "option_logprobs": {"HIRE": -0.2, "REJECT": -1.7}},
            {"model": "m", "gender": "woman", "race": "Black", "item": "hiring_01",
             "option_logprobs": {"hire": -1.6, "reject": -0.25}}]


def test_option_logprobs_as_json_objects_read_as_json_text_does(tmp_path):
    """Bug caught: a JSONL or parquet file giving option_logprobs as an object (as the docs
    describe the column) was read as a polars struct of every row's option names and cast to
    text: '{-0.2,-1.7}', the names lost, then a json.loads traceback (one spelling), or a
    polars cast traceback (two spellings, as here)."""
    rows = _logprob_rows()
    jsonl = tmp_path / "answers.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    parquet = tmp_path / "answers.parquet"
    pl.DataFrame(rows).write_parquet(parquet)
    csv = _csv(tmp_path, [{**row, "option_logprobs": json.dumps(row["option_logprobs"])}
                          for row in rows])
    as_map = tmp_path / "answers_map.parquet"  # what pyarrow writes a dict column as
    pq.write_table(pa.Table.from_pylist(rows, pa.schema(
        [(name, pa.string()) for name in ("model", "gender", "race", "item")]
        + [("option_logprobs", pa.map_(pa.string(), pa.float64()))])), as_map)
    expected = [math.exp(-0.2) / (math.exp(-0.2) + math.exp(-1.7)),
                math.exp(-1.6) / (math.exp(-1.6) + math.exp(-0.25))]
    for path in (jsonl, parquet, as_map, csv):
        _, _, responses, labels = _tables(path, _bank("decision_items.csv"))
        assert labels["p_favourable"].to_list() == pytest.approx(expected, abs=1e-12), path
        assert labels["label"].to_list() == ["favourable", "unfavourable"]
        assert responses["response_text"].to_list() == ["HIRE", "reject"]


@pytest.mark.parametrize(("value", "problem"), [
    ("yes:-0.1", "not JSON"), ('["HIRE", -0.2]', "not a JSON object"),
    ('{"HIRE": "high"}', "a value is not a log-probability"),
    ('{"HIRE": 0.7}', "a value is not a log-probability"),
    ('{"HIRE": false, "REJECT": -1.0}', "a value is not a log-probability"),  # a bool is no number
    ('{"HIRE": -Infinity}', "a value is not a log-probability"),  # not finite
])
def test_a_malformed_option_logprobs_is_one_line_naming_the_row(tmp_path, value, problem):
    """Bug caught: `yes:-0.1` (or any text that is not a JSON object of numbers) ended in a
    json.loads traceback in the respond or score stage, after the run folder was begun; it is
    refused while the file is read, naming the row, its item and the form expected. A positive
    number would have counted as a probability above 1."""
    rows = [{**row, "option_logprobs": json.dumps(row["option_logprobs"])}
            for row in _logprob_rows()]
    rows[1]["option_logprobs"] = value
    with pytest.raises(AuditError, match=rf"column 'option_logprobs' holds .* in row 2 \(item "
                                         rf"hiring_01\), {problem}: each value is a JSON object "
                                         rf"of option -> log-probability") as error:
        read_answers(_csv(tmp_path, rows), "auto", None)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("attributes", [{}, {"Sex": "woman", "ethnicity": "Black"}])
def test_a_persona_id_without_attributes_needs_the_persona_table(tmp_path, attributes):
    """Bug caught: with persona_id but no gender/race columns (or misspelled ones) and no
    personas_file, every persona was read as a baseline: no contrast was fitted and the verdict
    passed on the fit's convergence alone. Refused, naming personas_file= and the columns."""
    rows = [{"model": "m", "persona_id": persona, "item": "hiring_01", "decision": decision,
             **attributes} for persona, decision in (("black_woman", "REJECT"),
                                                     ("white_man", "HIRE"))]
    with pytest.raises(AuditError, match=r"names 2 persona\(s\) with no attributes in 2 rows "
                                         r"\(first: 'black_woman', item hiring_01\).*'gender' and "
                                         r"'race'.*pass personas_file=TABLE") as error:
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert "\n" not in str(error.value)


def test_a_persona_id_marked_baseline_or_null_needs_no_attributes(tmp_path):
    """The guard above refuses only what would be misread: a row that says it is the baseline
    or a null persona has no attributes to give, and one with them is explicit as before."""
    rows = [{"model": "m", "persona_id": "none", "persona_kind": "baseline", "item": "hiring_01",
             "decision": "HIRE", "race": None},
            {"model": "m", "persona_id": "xq7", "persona_kind": "null", "item": "hiring_01",
             "decision": "HIRE", "race": None},
            {"model": "m", "persona_id": "p1", "persona_kind": None, "item": "hiring_01",
             "decision": "REJECT", "race": "Black"}]
    _, prompts, _, _ = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert prompts["persona_kind"].to_list() == ["baseline", "null", "explicit"]


@pytest.mark.parametrize(("row", "message"), [
    ({"persona_id": "black_woman", "decision": "HIRE"}, "pass personas_file=TABLE"),
    ({"race": "Black", "option_logprobs": "yes:-0.1"}, "column 'option_logprobs' holds"),
])
def test_answers_the_stages_would_refuse_are_refused_before_the_run(tmp_path, row, message):
    """`python -m audit.ingest` prepares its config (the answers' models) before the run folder
    is begun; that step now resolves the answers in full. Bug caught: it read only the models,
    so these rows failed later, in a stage, with the run folder half written."""
    path = _csv(tmp_path, [{"model": "m", "item": "hiring_01", **row}])
    defaults = AuditConfig()
    cfg = replace(defaults, ingest=replace(defaults.ingest, input=str(path)),
                  items=replace(defaults.items, bank=str(ROOT / "data" / "items" /
                                                          "decision_items.csv")))
    with pytest.raises(AuditError, match=message):
        with_imported_models(cfg)


def _config(answers: Path) -> AuditConfig:
    defaults = AuditConfig()
    return replace(defaults, ingest=replace(defaults.ingest, input=str(answers)),
                   items=replace(defaults.items, bank=str(ROOT / "data" / "items" /
                                                          "decision_items.csv")))


def _with_persona_table(tmp_path: Path, table_rows: str, answer_rows: str) -> pl.DataFrame:
    """imported_answers of `answer_rows` (model,persona_id,item,decision) with the persona
    table `table_rows` (persona_id,kind,descriptor,gender,race) as ingest.personas_file."""
    from audit.methods.rasch.ingest.stages import imported_answers

    table = tmp_path / "personas.csv"
    table.write_text("persona_id,kind,descriptor,gender,race\n" + table_rows)
    answers = tmp_path / "answers.csv"
    answers.write_text("model,persona_id,item,decision\n" + answer_rows)
    cfg = _config(answers)
    return imported_answers(replace(cfg, ingest=replace(cfg.ingest, personas_file=str(table))))


def _decided_rows() -> list[dict]:
    """Four respondents x three items, each with a decision that differs from its neighbour's."""
    rows = []
    for number, (race, gender) in enumerate([(r, g) for r in ("Black", "White")
                                             for g in ("woman", "man")]):
        for step, item in enumerate(("hiring_01", "hiring_02", "hiring_03")):
            rows.append({"model": "m", "race": race, "gender": gender, "item": item,
                         "decision": "HIRE" if (number + step) % 2 else "REJECT"})
    return rows


def _label_by_answer(prompts: pl.DataFrame, labels: pl.DataFrame) -> dict[tuple, str]:
    return {(row["persona_id"], row["item_id"]): row["label"] for row in
            labels.join(prompts, on="prompt_id").iter_rows(named=True)}


def test_imported_decisions_label_their_own_prompts_in_any_order(tmp_path):
    """Design review, defect 3: decided_labels paired the answers with the prompts table by row
    position, so prompts in another order than the answers (as when the score stage re-reads a
    re-ordered file) got other prompts' decisions. They are joined on the prompt id."""
    answers, prompts, _, labels = _tables(_csv(tmp_path, _decided_rows()),
                                          _bank("decision_items.csv"))
    expected = {(f"{row['race']}_{row['gender']}".lower(), row["item"]):
                "favourable" if row["decision"] == "HIRE" else "unfavourable"
                for row in _decided_rows()}
    assert _label_by_answer(prompts, labels) == expected
    reordered = prompts.reverse()
    assert _label_by_answer(reordered, decided_labels(answers, reordered)) == expected
    with pytest.raises(AuditError, match=r"answers no longer match the prompts table .*1 "
                                         r"answer\(s\) have no prompt there.*rerun from the "
                                         r"design stage") as error:
        decided_labels(answers, prompts.slice(1))
    assert "\n" not in str(error.value)


def test_judge_error_on_a_file_of_decisions_only_is_refused_at_the_design_stage(tmp_path):
    """Bug caught (judge review 2026-12-02): `audit.ingest input=decisions.csv
    fit.judge_error=true` ran to the analyse stage and failed there, asking for
    judge.method=cascade and judge.evaluate_on_gold=true, both already set: no judge reads a
    file of decisions, so nothing measures them. Refused before the first table, naming the
    fix that corrects imported decisions; a file with answer text to judge still passes."""
    from audit.methods.rasch.ingest import stages

    decisions = _csv(tmp_path, _decided_rows())
    cfg = _config(decisions)
    cfg = replace(cfg, fit=replace(cfg.fit, judge_error=True))
    prompts_path = tmp_path / "prompts.parquet"
    with pytest.raises(AuditError, match=r"fit.judge_error=true .* no answer in .* is text for "
                                         r"a judge .*`python -m audit.fit` \(gold= or "
                                         r"confusion="):
        stages.design(cfg, prompts_path)
    assert not prompts_path.exists()
    rows = _decided_rows()
    rows[0] = {**rows[0], "decision": None, "answer": "REJECT. The profile falls short."}
    mixed = _config(_csv(tmp_path, rows, "mixed.csv"))
    stages.design(replace(mixed, fit=replace(mixed.fit, judge_error=True)), prompts_path)
    assert prompts_path.exists()
    stages.design(_config(decisions), tmp_path / "unset.parquet")  # judge_error unset: fine


def test_an_answers_file_changed_between_stages_is_refused_and_the_design_digest_reported(
        tmp_path):
    """Design review, defect 3: the answers file replaced by the same rows in another order after
    the respond stage; the score stage labelled 190 of 408 prompts with other prompts' decisions
    (exit 0), and the report named the new file's sha256. Now the design and respond stages
    record the digest of the file they read, and score and report refuse a changed file."""
    from audit.methods.rasch.ingest import stages

    rows = _decided_rows()
    answers = _csv(tmp_path, rows)
    design_digest = hashlib.sha256(answers.read_bytes()).hexdigest()
    cfg = _config(answers)
    run = {name: tmp_path / f"{name}.parquet" for name in
           ("prompts", "responses", "labels", "votes", "gold")}
    stages.design(cfg, run["prompts"])
    stages.respond(cfg, run["prompts"], run["responses"])
    _csv(tmp_path, rows[::-1])  # the same rows in another order, over the same path
    with pytest.raises(AuditError, match=rf"answers file .*answers\.csv changed since the design "
                                         rf"stage read it \(sha256 {design_digest[:12]} -> "
                                         rf"[0-9a-f]{{12}}\): rerun from the design stage"):
        stages.score(cfg, *run.values())
    with pytest.raises(AuditError, match="changed since the design stage"):
        stages.source_tags(cfg, run["prompts"], run["responses"])
    assert not run["labels"].exists()
    _csv(tmp_path, rows)  # the file the design read, back again
    stages.score(cfg, *run.values())
    tags = stages.source_tags(cfg, run["prompts"], run["responses"])
    assert tags["answers.sha256"] == design_digest
    prompts = pl.read_parquet(run["prompts"])
    assert _label_by_answer(prompts, pl.read_parquet(run["labels"])) == _label_by_answer(
        *_tables(answers, _bank("decision_items.csv"))[1::2])


def test_the_respond_stage_refuses_an_answers_file_changed_since_the_design_stage(tmp_path):
    """Bug caught: the respond stage wrote a responses table from a file edited after the design
    stage (caught only at the score stage, after the responses were replaced)."""
    from audit.methods.rasch.ingest import stages

    rows = _decided_rows()
    cfg = _config(_csv(tmp_path, rows))
    prompts, responses = tmp_path / "prompts.parquet", tmp_path / "responses.parquet"
    stages.design(cfg, prompts)
    _csv(tmp_path, rows[::-1])
    with pytest.raises(AuditError, match=r"changed since the design stage read it .*rerun from "
                                         r"the design stage"):
        stages.respond(cfg, prompts, responses)
    assert not responses.exists()


def _persona_table(rows: list[tuple]) -> pl.DataFrame:
    return validate(pl.DataFrame(rows, orient="row", schema=["persona_id", "kind", "descriptor",
                                                             "gender", "race"]),
                    PersonaSchema, "personas")


@pytest.mark.parametrize("attributes", [(None, None), ("", " ")])
def test_a_persona_table_row_without_attributes_is_refused(tmp_path, attributes):
    """Design review, defect 4: an explicit row of ingest.personas_file with empty gender and
    race (or a short row) was joined in without attributes: its answers entered no contrast."""
    personas = _persona_table([("black_woman", "explicit", "a Black woman", *attributes),
                               ("white_man", "explicit", "a White man", "man", "White")])
    rows = [{"model": "m", "persona_id": persona, "item": "hiring_01", "decision": "HIRE"}
            for persona in ("black_woman", "white_man")]
    with pytest.raises(AuditError, match=r"ingest.personas_file has 1 explicit or name "
                                         r"persona\(s\) that state neither gender nor race "
                                         r"\(first: 'black_woman'\): fill them in, or mark the "
                                         r"row kind=baseline") as error:
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"), personas)
    assert "\n" not in str(error.value)


def test_answer_rows_with_blank_persona_cells_are_the_baseline_only_when_marked(tmp_path):
    """Design review, defect 4: rows whose persona_id, gender and race cells were all blank
    were read as the baseline, so a file that lost its Black women's cells fitted their answers
    as baseline answers. They are refused unless persona_kind says baseline."""
    rows = [{"model": "m", "persona_id": None, "gender": gender, "race": race,
             "item": item, "decision": "HIRE", "persona_kind": None}
            for gender, race in (("man", "White"), (None, None), ("", "  "))
            for item in ("hiring_01", "hiring_02")]
    with pytest.raises(AuditError, match=r"^4 answer row\(s\) name no persona: 'persona_id', "
                                         r"'gender' and 'race' are all empty there \(first: row "
                                         r"3, item hiring_01\): .*persona_kind=baseline") as error:
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert "\n" not in str(error.value)
    for row in rows[2:]:
        row["persona_kind"] = "baseline"
    _, prompts, _, _ = _tables(_csv(tmp_path, rows, "b.csv"), _bank("decision_items.csv"))
    assert prompts["persona_id"].to_list() == ["white_man"] * 2 + ["baseline"] * 4


@pytest.mark.parametrize(("changed", "message"), [
    ({"gender": "man"}, r"column 'gender' of the answers gives persona 'black_woman' 2 values "
                        r"\('woman', 'man'; first at row 1, item hiring_01, then row 3, item "
                        r"hiring_03\): one persona has one gender"),
    ({"persona_id": None, "race": "black"},  # its id made from its attributes: black_woman
     r"column 'race' .* persona 'black_woman' 2 values \('Black', 'black'; .*row 3"),
    ({"race": None}, r"column 'race' .* persona 'black_woman' 2 values \('Black', empty;"),
    ({"persona_kind": "name"}, r"column 'persona_kind' .* 2 values \('explicit', 'name';"),
])
def test_one_persona_with_two_values_of_an_attribute_is_refused_at_import(tmp_path, changed,
                                                                          message):
    """Design review, defect 7: one persona_id with two genders (or races, or kinds) passed the
    import, and the fit stopped after every answer was judged with a line naming neither the
    persona nor the column. Refused while the answers are read."""
    rows = [{"model": "m", "persona_id": "black_woman", "gender": "woman", "race": "Black",
             "persona_kind": "explicit", "item": item, "decision": "HIRE"}
            for item in ("hiring_01", "hiring_02", "hiring_03")]
    rows.append({**rows[0], "persona_id": "white_man", "gender": "man", "race": "White"})
    rows[2] |= changed
    with pytest.raises(AuditError, match=message) as error:
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert "\n" not in str(error.value)


def test_persona_table_ids_are_read_as_written(tmp_path):
    """Design review, defect 9: ingest.personas_file was read with inferred types, so its ids
    "001" and "002" became 1 and 2 (then "1", "2") and the answers' "001" was refused as a
    persona the table lacks."""
    resolved = _with_persona_table(
        tmp_path, "001,explicit,a Black woman,woman,Black\n002,explicit,a White man,man,White\n",
        "m,001,hiring_01,HIRE\nm,002,hiring_01,REJECT\n")
    assert resolved.select("persona_id", "gender").rows() == [("001", "woman"), ("002", "man")]


def test_rows_repeated_whole_without_a_replicate_number_are_warned_of(tmp_path, caplog):
    """Design review, defect 11: the same answers file concatenated twice, with no replicate
    column, was read silently as two replicates of each answer, doubling the evidence. The
    design stage warns (once); numbered replicates, or rows that differ, are not warned of."""
    from audit.methods.rasch.ingest import stages

    rows = _decided_rows()
    for name, answers, warned in (("twice.csv", rows + rows, True), ("once.csv", rows, False),
                                  ("numbered.csv", [{**row, "replicate": copy} for copy in (0, 1)
                                                    for row in rows], False)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="audit.methods.rasch.ingest.stages"):
            stages.design(_config(_csv(tmp_path, answers, name)), tmp_path / "prompts.parquet")
        said = [record.getMessage() for record in caplog.records
                if "repeat an earlier row" in record.getMessage()]
        assert said == ([f"ingest: 12 of 24 answer rows repeat an earlier row in every column "
                         f"(first: m, black_woman, hiring_01) and have no replicate number, so "
                         f"they are read as further replicates; if the file holds the same "
                         f"answers twice (exported twice), remove the copies, or number real "
                         f"replicates in a 'replicate' column"] if warned else []), name


def test_levels_are_trimmed_and_levels_differing_by_case_refused(tmp_path):
    """An answers file's " Black" (a space after a comma) was a race of its own beside "Black",
    and "black" for one persona beside "Black" for another split the group silently, as persona
    files did before they were trimmed and checked (audit.personas.check_level_spellings)."""
    rows = [{"model": "m", "persona_id": persona, "gender": gender, "race": race,
             "item": "hiring_01", "decision": "HIRE"}
            for persona, gender, race in (("bw", "woman", " Black"), ("bm", "man", "Black"),
                                          ("ww", "woman", "White "))]
    answers, *_ = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert sorted(set(answers["race"].to_list())) == ["Black", "White"]
    rows[1]["race"] = "black"
    with pytest.raises(AuditError, match=r"race has levels 'Black' and 'black' that differ only "
                                         r"by case") as error:
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert "\n" not in str(error.value)


def test_a_persona_table_baseline_row_needs_no_descriptor(tmp_path):
    """The refusal of undescribed explicit rows says "mark the row kind=baseline", but the persona
    table's schema then refused the baseline row for its empty descriptor, which nothing reads."""
    resolved = _with_persona_table(
        tmp_path, "bw,explicit,a Black woman,woman,Black\nbase,baseline,,,\n",
        "m,bw,hiring_01,HIRE\nm,base,hiring_01,REJECT\n")
    assert resolved.select("persona_id", "persona_kind").rows() == [
        ("bw", "explicit"), ("base", "baseline")]


def test_a_persona_table_with_spaces_after_its_commas_is_read_trimmed(tmp_path):
    """ingest.personas_file was validated before any trimming, so "bw, explicit, ..." (a space
    after each comma) was a raw schema error naming no fix, where persona files and answers
    are trimmed."""
    resolved = _with_persona_table(
        tmp_path, "bw, explicit, a Black woman, woman, Black\nwm ,explicit,a White man,man,White\n",
        "m,bw,hiring_01,HIRE\nm,wm,hiring_01,REJECT\n")
    assert resolved.select("persona_id", "persona_kind", "race").rows() == [
        ("bw", "explicit", "Black"), ("wm", "explicit", "White")]


@pytest.mark.parametrize(("header", "missing"), [
    ("a,b", "'persona_id', 'kind', 'gender', 'race'"),
    ("persona_id,gender,race", "'kind'"),
])
def test_a_persona_table_without_its_columns_is_one_line_naming_them(tmp_path, header, missing):
    """Bug caught: ingest.personas_file without the columns docs/ingest.md names was polars'
    ColumnNotFoundError (`unable to find column "persona_id"`) from the schema's coercion, a
    90-line traceback, where personas.explicit_file got one line naming the columns. descriptor
    may be left out (a baseline row has none), so it is never named missing."""
    from audit.methods.rasch.ingest.stages import imported_answers

    table = tmp_path / "personas.csv"
    table.write_text(f"{header}\n" + ",".join(["x"] * len(header.split(","))) + "\n")
    answers = _csv(tmp_path, [{"model": "m", "persona_id": "x", "item": "hiring_01",
                               "decision": "HIRE"}])
    cfg = _config(answers)
    with pytest.raises(AuditError) as error:
        imported_answers(replace(cfg, ingest=replace(cfg.ingest, personas_file=str(table))))
    assert str(error.value).startswith(f"persona table at {table} lacks the column(s) {missing} "
                                       f"(its columns: {header.replace(',', ', ')}): add the "
                                       f"missing columns")
    assert "ingest.personas_file" in str(error.value) and "\n" not in str(error.value)


def test_imported_levels_one_letter_apart_are_warned_about_once_per_persona(tmp_path, caplog):
    """Bug caught (bad-input review 2026-12-04): a race typed "Wite" on some imported rows was
    a group of its own without a word. Counted by persona, not by answer."""
    rows = [{"model": "m", "race": race, "gender": gender, "item": item, "decision": "DENY"}
            for race, gender in (("White", "man"), ("White", "woman"), ("Wite", "woman"),
                                 ("Black", "man"))
            for item in ("lending_01", "lending_02")]
    with caplog.at_level("WARNING", logger="audit.methods.rasch.ingest.tables"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert [record.getMessage() for record in caplog.records] == [
        "race levels 'Wite' (1 persona(s)) and 'White' (2) are one letter apart, and the fit "
        "counts them as two groups: if 'Wite' is a typo, spell it 'White' in the answers (or "
        "ingest.personas_file)"]


def test_one_answer_without_its_item_is_counted_as_one_row(tmp_path: Path):
    """Bug caught (grammar review 2026-12-04): "column 'item' is empty in 1 rows"; the count is
    the file's, one or more."""
    rows = [{"model": "m", "persona_id": "black_woman", "item": item, "decision": "DENY"}
            for item in ("lending_01", None, "lending_02")]
    with pytest.raises(AuditError, match=r"column 'item' is empty in 1 row: every answer"):
        read_answers(_csv(tmp_path, rows), "auto", None)
    with pytest.raises(AuditError, match=r"column 'item' is empty in 2 rows: every answer"):
        read_answers(_csv(tmp_path, [*rows, {**rows[0], "item": None}]), "auto", None)


@pytest.mark.parametrize(("name", "expected"), [
    ("a.json", "jsonl"), ("a.ndjson", "jsonl"), ("samples_task_2026.json", "lm_eval"),
    ("a.txt", "csv"), ("a.CSV", "csv"), ("a.PQ", "parquet"), ("samples.jsonl", "jsonl"),
])
def test_format_auto_tells_each_format_by_its_suffix(name, expected):
    """Catches a suffix dropped from file_format's lists (.json, .ndjson, .txt): such a file was
    refused as one whose format cannot be told."""
    assert file_format(Path(name), "auto") == expected


@pytest.mark.parametrize("name", ["answers.xls", "answers.xlsm", "answers.ods"])
def test_every_spreadsheet_suffix_is_told_to_be_saved_as_csv(name):
    """Catches a spreadsheet suffix dropped: an .xls or .ods file was told to set
    ingest.format=csv, which reads the workbook's bytes."""
    with pytest.raises(AuditError, match=rf"{name} is a spreadsheet: save it as CSV UTF-8"):
        file_format(Path(name), "auto")


def test_an_unknown_format_setting_is_refused_naming_the_formats(tmp_path):
    """Catches the check on ingest.format dropped: `format=xml` read the file as some table."""
    path = _csv(tmp_path, [{"model": "m", "race": "Black", "item": "lending_01",
                            "decision": "DENY"}])
    with pytest.raises(AuditError, match=r"^unknown ingest.format 'xml': use one of auto, csv, "
                                         r"parquet, jsonl, lm_eval$"):
        read_answers(path, "xml", None)


def test_a_damaged_file_read_with_format_auto_names_only_ingest_input(tmp_path):
    """Catches the fix for a format set by hand (`or the format it was read as`) given where
    format=auto told the format from the name, which no setting of the user's chose."""
    bad = tmp_path / "broken.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(AuditError, match=r"line 1 is not JSON .*; check ingest.input "
                                         r"\(docs/ingest.md lists the formats\)$"):
        read_answers(bad, "auto", None)


def _lm_eval_file(tmp_path: Path, doc: dict, name: str = "samples_t_2026.jsonl") -> Path:
    """One generated lm-evaluation-harness sample of `doc` in the folder `run_folder`."""
    folder = tmp_path / "run_folder"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"doc": doc, "arguments": {"gen_args_0": {"arg_0": "Human: ..."}},
                                "filtered_resps": ["Yes."]}) + "\n")
    return path


def test_an_lm_eval_persona_id_has_no_underscores_from_stray_spaces(tmp_path):
    """Catches slug's strip("_") dropped: " Black" and "female " made '_black_female_'."""
    path = _lm_eval_file(tmp_path, {"decision_question_id": 0, "race": " Black",
                                    "gender": "female "})
    assert read_answers(path, "auto", None)["persona_id"].to_list() == ["black_female"]


def test_the_model_setting_names_lm_eval_rows_before_their_folder(tmp_path):
    """Catches the folder's name taking precedence over ingest.model for an lm_eval log."""
    path = _lm_eval_file(tmp_path, {"decision_question_id": 0, "race": "Black"})
    assert read_answers(path, "auto", "chosen")["model"].to_list() == ["chosen"]
    assert read_answers(path, "auto", None)["model"].to_list() == ["run_folder"]


def test_jsonl_field_names_are_read_in_any_case_and_spacing(tmp_path):
    """Catches known_column's strip dropped: a JSONL " Item" or "Race " field was left out."""
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"Model ": "m", "Race ": "Black", " Item": "lending_01",
                                "DECISION": "DENY"}) + "\n")
    answers = read_answers(path, "auto", None)
    assert answers.select("model", "race", "item", "decision").row(0) == (
        "m", "Black", "lending_01", "DENY")


@pytest.mark.parametrize(("value", "expected"), [("0", 0.0), ("1", 1.0), (" 0.25 ", 0.25),
                                                 ("", None)])
def test_a_probability_of_exactly_zero_or_one_is_read(tmp_path, value, expected):
    """Catches the bounds of p_favourable made strict: a certain answer (0 or 1) was refused."""
    rows = [{"model": "m", "race": "Black", "item": "0", "p_favourable": value,
             "answer": "yes"}]
    assert read_answers(_csv(tmp_path, rows), "auto", None)["p_favourable"].to_list() == [
        expected]


def test_a_blank_option_logprobs_is_no_scores(tmp_path):
    """Catches a cell of spaces read as JSON: it was refused as "not JSON" where an empty cell
    means the row has no scores."""
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"model": "m", "race": "Black", "item": "hiring_01",
                                "decision": "HIRE", "option_logprobs": "  "}) + "\n")
    assert read_answers(path, "auto", None)["option_logprobs"].to_list() == [None]


def test_a_probability_refused_names_the_item_of_its_own_row(tmp_path):
    """Catches the refusal naming the first row's item, not the item of the bad value."""
    rows = [{"model": "m", "race": "Black", "item": "0", "p_favourable": "0.5"},
            {"model": "m", "race": "White", "item": "1", "p_favourable": "73"}]
    with pytest.raises(AuditError, match=r"column 'p_favourable' holds '73' for item 1: each "
                                         r"value is the probability"):
        read_answers(_csv(tmp_path, rows), "auto", None)


def test_option_logprobs_of_only_nulls_are_no_scores(tmp_path):
    """Catches an object whose every score is null kept as "{}": a row with no scores then
    stopped the score stage as scoring neither option."""
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"model": "m", "race": "Black", "item": "hiring_01",
                                "answer": "HIRE.",
                                "option_logprobs": {"HIRE": None, "REJECT": None}}) + "\n")
    assert read_answers(path, "auto", None)["option_logprobs"].to_list() == [None]


def test_a_log_probability_of_zero_is_read(tmp_path):
    """Catches a score of 0 (log 1, a certain option) refused as no log-probability."""
    rows = [{"model": "m", "race": "Black", "item": "hiring_01",
             "option_logprobs": json.dumps({"HIRE": 0, "REJECT": -3.0})}]
    assert read_answers(_csv(tmp_path, rows), "auto", None)["option_logprobs"].to_list() == [
        '{"HIRE": 0, "REJECT": -3.0}']


def _lm_eval_sample(doc: dict, **fields) -> dict:
    return {"doc": doc, "filtered_resps": ["Yes."], **fields}


def test_an_lm_eval_item_field_that_is_null_gives_way_to_the_next():
    """Catches _doc_value taking a field that is present but null: a doc with
    decision_question_id null and item_id set was refused as naming no item."""
    rows = lm_eval_rows([_lm_eval_sample({"decision_question_id": None, "item_id": "hiring_01",
                                          "race": "Black"})], "s.jsonl")
    assert rows[0]["item"] == "hiring_01"


def test_an_lm_eval_record_without_an_item_or_responses_is_one_line():
    """Catches the checks on a record dropped: a doc without an item field became the item
    "None", and a record without filtered_resps a KeyError."""
    with pytest.raises(AuditError, match=r"^answers file s.jsonl: record 2's doc has none of "
                                         r"decision_question_id, item_id, item: the item cannot"):
        lm_eval_rows([_lm_eval_sample({"item": 0}), _lm_eval_sample({"race": "Black"})],
                     "s.jsonl")
    with pytest.raises(AuditError, match=r"^answers file s.jsonl: record 1 has no 'doc' or no "
                                         r"'filtered_resps'"):
        lm_eval_rows([{"doc": {"item": 0}}], "s.jsonl")


def test_an_lm_eval_persona_with_a_gender_alone_is_explicit():
    """Catches persona_kind read from race alone: a doc giving only a gender was a baseline."""
    rows = lm_eval_rows([_lm_eval_sample({"item": 0, "gender": "female"})], "s.jsonl")
    assert (rows[0]["persona_id"], rows[0]["persona_kind"]) == ("female", "explicit")


def test_lm_eval_requests_as_pairs_give_each_continuation_its_score():
    """Catches the continuation taken from the wrong place of a (context, continuation) pair,
    and one scored option, or scores not one per request, read as a choice between options."""
    pairs = [["Human: ...", " yes"], ["Human: ...", " no"]]
    rows = lm_eval_rows([_lm_eval_sample({"item": 0}, arguments=pairs,
                                         filtered_resps=[["-0.1", "True"], ["-2.5", "False"]])],
                        "s.jsonl")
    assert json.loads(rows[0]["option_logprobs"]) == {" yes": -0.1, " no": -2.5}
    assert rows[0]["answer"] is None and rows[0]["prompt"] == "Human: ..."
    one = [["-0.1", "True"]]
    three = [["-0.1", "True"], ["-2.5", "False"], ["-3.0", "False"]]
    for arguments, resps in ((pairs[:1], one), (pairs, three)):
        odd = lm_eval_rows([_lm_eval_sample({"item": 0}, arguments=arguments,
                                            filtered_resps=resps)], "s.jsonl")
        assert odd[0]["option_logprobs"] is None, resps


@pytest.mark.parametrize(("fields", "message"), [
    ({"filtered_resps": "yes"}, "record 1's filtered_resps is \"yes\", not a list"),
    ({"filtered_resps": 5}, "record 1's filtered_resps is 5, not a list"),
    ({"arguments": {"0": "ctx"}}, "record 1's arguments hold \"ctx\", not requests"),
    ({"arguments": [1, 2]}, "record 1's arguments hold 1, not requests"),
    ({"arguments": "ctx"}, "record 1's arguments hold \"ctx\", not requests"),
    ({"arguments": {"0": {"arg_0": "q", "arg_1": " yes"}, "1": {"arg_0": "q", "arg_1": " no"}},
      "filtered_resps": [["abc", "False"], ["-2.0", "False"]]},
     "record 1's log-likelihood of ' yes' is 'abc', not a number"),
])
def test_an_lm_eval_record_shaped_otherwise_is_one_line(fields: dict, message: str):
    """Bugs caught (bad-input review 2026-12-06): a string of responses had its first letter
    read as the answer ("y"), and a number where the responses belong, a string or a number
    where a request belongs, or a log-likelihood that is no number were tracebacks."""
    with pytest.raises(AuditError) as refused:
        lm_eval_rows([_lm_eval_sample({"item": 0}) | fields], "s.jsonl")
    assert str(refused.value).startswith("answers file s.jsonl: ")
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_unknown_items_are_counted_and_the_first_in_order_named(tmp_path):
    """Catches the refusal naming another than the first unknown value in sorted order."""
    rows = [{"model": "m", "race": "Black", "item": item, "decision": "DENY"}
            for item in ("zz_9", "lending_01", "aa_1", "zz_9")]
    with pytest.raises(AuditError, match=r"column 'item' of the answers has 2 value\(s\) not in "
                                         r"the item bank bank \(first: 'aa_1'\)"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))


def test_an_item_named_none_is_no_item_whose_source_id_is_empty():
    """Catches a bank row without a source_id entered as the source id "None": an answer whose
    item is the text "None" (a null exported as text) was given that row's item."""
    bank = pl.DataFrame({"item_id": ["a", "b"], "source_id": ["7", None]})
    answers = pl.DataFrame({"item": ["7", "b"]})
    assert resolve_items(answers, bank, "bank")["item_id"].to_list() == ["a", "b"]
    with pytest.raises(AuditError, match=r"has 1 value\(s\) not in the item bank bank \(first: "
                                         r"'None'\)"):
        resolve_items(pl.DataFrame({"item": ["None"]}), bank, "bank")


def test_answers_stating_a_gender_against_the_persona_table_are_refused(tmp_path):
    """Catches the agreement check made on race alone: a gender clash took the table's."""
    personas = _persona_table([("bw", "explicit", "a Black woman", "woman", "Black")])
    rows = [{"model": "m", "persona_id": "bw", "gender": "man", "item": "hiring_01",
             "decision": "HIRE"}]
    with pytest.raises(AuditError, match=r"column 'gender' of the answers says 'man' for persona "
                                         r"'bw' where ingest.personas_file says 'woman' \(1 rows"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"), personas)


def test_an_answer_without_its_persona_id_beside_a_persona_table_is_refused(tmp_path):
    """Catches the count of rows without a persona_id dropped when some rows have one."""
    personas = _persona_table([("bw", "explicit", "a Black woman", "woman", "Black")])
    rows = [{"model": "m", "persona_id": persona, "item": "hiring_01", "decision": "HIRE"}
            for persona in ("bw", None, "bw")]
    with pytest.raises(AuditError, match=r"^column 'persona_id' of the answers is empty in 1 "
                                         r"row: with ingest.personas_file every row names"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"), personas)


def test_a_name_persona_in_the_table_without_attributes_is_refused(tmp_path):
    """Catches the check on undescribed table rows made for explicit personas alone."""
    personas = _persona_table([("anna", "name", "Anna", None, None)])
    rows = [{"model": "m", "persona_id": "anna", "item": "hiring_01", "decision": "HIRE"}]
    with pytest.raises(AuditError, match=r"ingest.personas_file has 1 explicit or name "
                                         r"persona\(s\) that state neither gender nor race "
                                         r"\(first: 'anna'\)"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"), personas)


def test_a_persona_id_made_from_one_attribute_has_no_trailing_underscore(tmp_path):
    """Catches the made persona id left unstripped: race alone gave 'black_'."""
    rows = [{"model": "m", "race": race, "gender": gender, "item": "hiring_01",
             "decision": "HIRE"} for race, gender in (("Black", None), (None, "woman"))]
    _, prompts, _, _ = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert prompts["persona_id"].to_list() == ["black", "woman"]
    assert prompts["respondent_id"].to_list() == ["m/black", "m/woman"]
    assert set(prompts["seed"]) == {0}


def test_a_persona_id_without_attributes_is_counted_by_persona_and_row(tmp_path):
    """Catches the count of personas given as the count of rows."""
    rows = [{"model": "m", "persona_id": "bw", "item": item, "decision": "HIRE"}
            for item in ("hiring_01", "hiring_02")]
    with pytest.raises(AuditError, match=r"names 1 persona\(s\) with no attributes in 2 rows"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))


def test_each_model_numbers_its_own_replicates(tmp_path):
    """Catches replicates numbered across models: two models' single answers to one item as one
    persona were replicates 0 and 1, where each answered once."""
    rows = [{"model": model, "race": "Black", "item": "hiring_01", "decision": "HIRE"}
            for model in ("a", "b", "a")]
    _, prompts, _, _ = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert prompts.select("model_name", "replicate").rows() == [("a", 0), ("b", 0), ("a", 1)]


def test_a_row_with_answer_text_and_a_decision_shows_the_text(tmp_path):
    """Catches the decision's word put in response_text over the answer the model gave."""
    rows = [{"model": "m", "race": "Black", "item": "hiring_01", "decision": "HIRE",
             "answer": "HIRE. Solid references."}]
    _, _, responses, labels = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert responses["response_text"].to_list() == ["HIRE. Solid references."]
    assert labels["label"].to_list() == ["favourable"]


def test_a_row_without_any_outcome_is_an_error_row_named_missing_answer(tmp_path):
    """Catches the error kind of a row with no answer, decision or scores."""
    rows = [{"model": "m", "race": "Black", "item": "hiring_01", "decision": "HIRE"},
            {"model": "m", "race": "White", "item": "hiring_01", "decision": None}]
    _, _, responses, _ = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))
    assert responses.select("status", "error_kind", "error_message").rows() == [
        ("ok", None, None), ("error", "missing_answer", "the row has no answer or decision")]


def _scored(tmp_path: Path, scores: dict, **row) -> pl.DataFrame:
    """decided_labels of one hiring_01 answer with these option log-probabilities."""
    rows = [{"model": "m", "race": "Black", "item": "hiring_01",
             "option_logprobs": json.dumps(scores), **row}]
    return _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))[3]


def test_option_log_probabilities_read_quoted_spellings_and_cap_the_mass_at_one(tmp_path):
    """Catches quoted options ('"HIRE"', curly quotes) left unmatched, and a decision_mass
    above 1 where two spellings' probabilities sum past it."""
    labels = _scored(tmp_path, {'"HIRE"': math.log(0.6), "\u201cREJECT\u201d": math.log(0.2)})
    assert labels.row(0, named=True)["p_favourable"] == pytest.approx(0.75)
    assert labels.row(0, named=True)["decision_mass"] == pytest.approx(0.8)
    spelled = _scored(tmp_path, {"HIRE": math.log(0.7), "hire": math.log(0.5),
                                 "REJECT": math.log(0.3)})
    assert spelled.row(0, named=True)["p_favourable"] == pytest.approx(1.2 / 1.5)
    assert spelled.row(0, named=True)["decision_mass"] == 1.0


def test_option_log_probabilities_of_neither_option_are_one_line(tmp_path):
    """Catches a zero mass on the item's options divided by (ZeroDivisionError)."""
    with pytest.raises(AuditError, match=r"column 'option_logprobs' of the answers scores "
                                         r"neither option of item hiring_01 \(HIRE/REJECT\)"):
        _scored(tmp_path, {"maybe": -0.1})


def test_an_even_probability_is_labelled_unfavourable(tmp_path):
    """Catches the tie at P = 0.5 labelled favourable, from log-probabilities or a p_favourable."""
    assert _scored(tmp_path, {"HIRE": -0.7, "REJECT": -0.7})["label"].to_list() == [
        "unfavourable"]
    rows = [{"model": "m", "race": "Black", "item": "hiring_01", "p_favourable": "0.5"}]
    labels = _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))[3]
    assert labels.select("label", "p_favourable").rows() == [("unfavourable", 0.5)]


def test_a_decision_beside_option_log_probabilities_is_the_label(tmp_path):
    """Catches the scores overriding the decision stated beside them."""
    labels = _scored(tmp_path, {"HIRE": -0.1, "REJECT": -3.0}, decision="REJECT")
    assert labels.select("label", "label_source", "decision_mass").rows() == [
        ("unfavourable", "imported", None)]


def test_decisions_match_bank_options_written_with_stray_spaces(tmp_path):
    """Catches the bank's options compared untrimmed: "HIRE, REJECT" after a comma in a bank
    CSV made the decision "hire" unreadable."""
    bank = _bank("decision_items.csv").with_columns(favourable_option=pl.lit(" HIRE"),
                                                    unfavourable_option=pl.lit("REJECT "))
    rows = [{"model": "m", "race": race, "item": "hiring_01", "decision": decision}
            for race, decision in (("Black", "hire"), ("White", "Reject"))]
    labels = _tables(_csv(tmp_path, rows), bank)[3]
    assert labels["label"].to_list() == ["favourable", "unfavourable"]


def test_option_log_probabilities_match_bank_options_written_with_stray_spaces(tmp_path):
    """Bug caught (mutation review 2026-12-06): the log-probabilities' options were compared
    with the bank's untrimmed, so " REJECT" never matched "REJECT": its mass was 0, and a row
    giving REJECT 0.8 and HIRE 0.2 was labelled favourable with P = 1, without a word."""
    bank = _bank("decision_items.csv").with_columns(unfavourable_option=pl.lit(" REJECT"))
    rows = [{"model": "m", "race": "Black", "item": "hiring_01",
             "option_logprobs": json.dumps({"HIRE": math.log(0.2), "REJECT": math.log(0.8)})}]
    labels = _tables(_csv(tmp_path, rows), bank)[3]
    assert labels["p_favourable"].to_list() == pytest.approx([0.2])
    assert labels["label"].to_list() == ["unfavourable"]


def test_judge_error_is_refused_when_the_only_rows_without_a_decision_are_errors(tmp_path):
    """Catches an error row (no answer, no decision) counted as text for the judge: a file of
    decisions and one empty row passed fit.judge_error=true at the design stage."""
    from audit.methods.rasch.ingest import stages

    rows = _decided_rows()
    rows[0] = {**rows[0], "decision": None}
    cfg = _config(_csv(tmp_path, rows))
    cfg = replace(cfg, fit=replace(cfg.fit, judge_error=True))
    with pytest.raises(AuditError, match=r"fit.judge_error=true .* no answer in .* is text for "
                                         r"a judge"):
        stages.design(cfg, tmp_path / "prompts.parquet")


@pytest.mark.parametrize(("empty", "said"), [
    (1, "ingest: 1 row has no answer and no decision: it is kept as an error row and enters "
        "no fit"),
    (2, "ingest: 2 rows have no answer and no decision: they are kept as error rows and enter "
        "no fit"),
])
def test_the_respond_stage_counts_the_rows_without_an_outcome(tmp_path, caplog, empty, said):
    """Catches the warning's grammar for one row and for several."""
    from audit.methods.rasch.ingest import stages

    rows = [{**row, "decision": None} if index < empty else row
            for index, row in enumerate(_decided_rows())]
    cfg = _config(_csv(tmp_path, rows))
    stages.design(cfg, tmp_path / "prompts.parquet")
    with caplog.at_level("WARNING", logger="audit.methods.rasch.ingest.stages"):
        stages.respond(cfg, tmp_path / "prompts.parquet", tmp_path / "responses.parquet")
    assert [record.getMessage() for record in caplog.records
            if record.levelname == "WARNING"] == [said]


def test_the_source_tags_name_the_format_the_file_was_read_as(tmp_path):
    """Catches answers.format recorded as the setting ("auto") rather than the format read."""
    from audit.methods.rasch.ingest import stages

    cfg = _config(_csv(tmp_path, _decided_rows()))
    stages.design(cfg, tmp_path / "prompts.parquet")
    stages.respond(cfg, tmp_path / "prompts.parquet", tmp_path / "responses.parquet")
    tags = stages.source_tags(cfg, tmp_path / "prompts.parquet", tmp_path / "responses.parquet")
    assert tags["answers.format"] == "csv" and tags["answers.source"] == str(cfg.ingest.input)
    assert stages.source_tags(AuditConfig(), tmp_path / "x", tmp_path / "y") == {}


def test_a_table_that_records_no_answers_file_is_refused(tmp_path):
    """Catches a prompts table written without ingest.input (no recorded digest) let through."""
    from audit.methods.rasch.ingest import stages

    cfg = _config(_csv(tmp_path, _decided_rows()))
    plain = tmp_path / "prompts.parquet"
    pl.DataFrame({"prompt_id": ["p"]}).write_parquet(plain)
    with pytest.raises(AuditError, match=rf"^the prompts table at {plain} records no answers "
                                         rf"file \(written without ingest.input"):
        stages.check_read_by(cfg, plain, "prompts", "design", "0" * 64)


def test_the_source_caveat_says_when_each_item_was_answered_once(tmp_path):
    """Catches the caveat about single answers given (or dropped) whatever the replicates, and
    a caveat written for a run that imported nothing."""
    from audit.methods.rasch.ingest.stages import source_caveat

    cfg = _config(tmp_path / "answers.csv")
    tags = {"answers.sha256": "abcdef0123456789"}
    once = source_caveat(cfg, pl.DataFrame({"replicate": [0, 0]}), tags)
    twice = source_caveat(cfg, pl.DataFrame({"replicate": [0, 1]}), tags)
    assert len(once) == 1 and once[0].endswith("so the fit cannot tell a respondent's "
                                               "consistency from chance.")
    assert "(sha256 abcdef012345)" in once[0]
    assert twice[0].endswith("are unknown to this report.")
    assert source_caveat(AuditConfig(), pl.DataFrame({"replicate": [0]}), tags) == []


def test_every_model_the_answers_name_is_an_audited_model(tmp_path):
    """Catches with_imported_models keeping fewer models than the answers name."""
    rows = [{**row, "model": model} for model in ("b", "a") for row in _decided_rows()]
    cfg = with_imported_models(_config(_csv(tmp_path, rows)))
    assert sorted(cfg.model) == ["a", "b"]
    assert {name: (model.backend, model.model) for name, model in cfg.model.items()} == {
        "a": ("imported", "a"), "b": ("imported", "b")}


def test_of_several_personas_with_two_values_the_first_by_id_is_named(tmp_path):
    """Catches the persona named left to group_by's order (unsorted): a rerun could name
    another persona of the same file."""
    rows = [{"model": "m", "persona_id": f"p{number:02d}", "gender": gender, "race": "Black",
             "item": item, "decision": "HIRE"}
            for number in range(30, 0, -1)
            for gender, item in (("woman", "hiring_01"), ("man", "hiring_02"))]
    with pytest.raises(AuditError, match=r"column 'gender' of the answers gives persona 'p01' 2 "
                                         r"values \('woman', 'man'; first at row 59, item "
                                         r"hiring_01, then row 60, item hiring_02\)"):
        _tables(_csv(tmp_path, rows), _bank("decision_items.csv"))


def test_the_score_stage_sends_no_error_row_to_the_judge(tmp_path):
    """Catches a row without an answer (an error row) sent to the judge: the score stage of a
    file of decisions judged its empty row and gave it a label."""
    from audit.methods.rasch.ingest import stages

    rows = _decided_rows()
    rows[0] = {**rows[0], "decision": None}
    cfg = _config(_csv(tmp_path, rows))
    run = {name: tmp_path / f"{name}.parquet" for name in
           ("prompts", "responses", "labels", "votes", "gold")}
    stages.design(cfg, run["prompts"])
    stages.respond(cfg, run["prompts"], run["responses"])
    stages.score(cfg, *run.values())
    assert pl.read_parquet(run["labels"]).height == 11
    assert pl.read_parquet(run["votes"]).is_empty() and pl.read_parquet(run["gold"]).is_empty()


def test_jsonl_option_logprobs_may_mix_objects_and_json_text(tmp_path):
    """Catches a JSONL object left for polars to read: beside a row giving the same scores as
    JSON text, the column held two types and the file was refused."""
    rows = _logprob_rows()
    rows[1]["option_logprobs"] = json.dumps(rows[1]["option_logprobs"])
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert [json.loads(text) for text in read_answers(path, "auto", None)["option_logprobs"]] == [
        {"HIRE": -0.2, "REJECT": -1.7}, {"hire": -1.6, "reject": -0.25}]
