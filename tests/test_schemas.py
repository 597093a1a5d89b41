"""The shared tables' schemas (audit.schemas): what each accepts, what it refuses, and the one
line a refusal reads as."""

from __future__ import annotations

import polars as pl
import pytest

from audit.errors import AuditError
from audit.methods.rasch.schemas import VoteSchema
from audit.schemas import (
    ItemSchema,
    PersonaFileSchema,
    PersonaSchema,
    PersonaTableSchema,
    PromptSchema,
    ResponseSchema,
    validate,
)

PROMPT = {"prompt_id": "p1", "respondent_id": "m__a", "model_name": "m", "persona_id": "a",
          "persona_kind": "explicit", "gender": None, "race": None, "item_id": "lending_01",
          "domain": "lending", "replicate": 0, "seed": 0, "question": "Approve?",
          "favourable_option": "APPROVE", "unfavourable_option": "DENY", "system_prompt": "",
          "user_prompt": "Approve?"}
RESPONSE = {"prompt_id": "p1", "request_key": "k1", "status": "error", "response_text": None,
            "error_kind": None, "error_message": None, "completion_tokens": None,
            "latency_s": None, "from_cache": False}


@pytest.fixture
def tables(items: pl.DataFrame, explicit_profiles: pl.DataFrame) -> dict:
    """A valid table of each shared schema, two rows or more, with the edge values it allows."""
    personas = explicit_profiles.with_columns(gender=None, race=None)
    return {ItemSchema: items, PersonaSchema: personas,
            PromptSchema: pl.DataFrame([PROMPT, {**PROMPT, "prompt_id": "p2"}]),
            ResponseSchema: pl.DataFrame([RESPONSE, {**RESPONSE, "prompt_id": "p2"}])}


def test_each_shared_table_takes_its_empty_cells_and_zero_counts(tables: dict):
    """Guards nullable gender/race/response cells and ge=0 replicate/seed (0 is the first)."""
    for schema, frame in tables.items():
        assert validate(frame, schema, "table").height == frame.height


@pytest.mark.parametrize(("schema", "column", "value", "rule"), [
    (ItemSchema, "item_id", "Lending_01", "str_matches"),
    (ItemSchema, "item_id", "lending 01", "str_matches"),
    (PersonaSchema, "persona_id", "black-woman", "str_matches"),
    (PersonaSchema, "persona_id", "white_man", "repeats"),
    (PromptSchema, "prompt_id", "p2", "repeats"),
    (PromptSchema, "persona_kind", "robot", "isin"),
    (PromptSchema, "replicate", -1, "greater_than_or_equal_to"),
    (PromptSchema, "seed", -1, "greater_than_or_equal_to"),
    (ResponseSchema, "prompt_id", "p2", "repeats"),
    (ResponseSchema, "status", "timeout", "isin"),
])
def test_a_shared_table_with_a_bad_cell_is_refused_naming_its_column(tables: dict, schema,
                                                                      column, value, rule):
    """Catches a loosened id pattern, a dropped unique/isin/ge check on a shared table."""
    frame = tables[schema]
    frame = frame.with_columns(pl.Series(column, [value, *frame[column][1:]]))
    with pytest.raises(AuditError, match=rf"^table does not match {schema.__name__}: "
                                         rf"column '{column}' .*{rule}"):
        validate(frame, schema, "table")


def test_run_tables_refuse_an_extra_column_and_users_tables_drop_it(tables: dict):
    """Catches strict=True turned "filter" (or back) on the shared tables."""
    for schema, frame in tables.items():
        extra = frame.with_columns(note=pl.lit("x"))
        if schema in (PromptSchema, ResponseSchema):
            with pytest.raises(AuditError, match="note"):
                validate(extra, schema, "table")
        else:
            assert "note" not in validate(extra, schema, "table").columns


def test_persona_files_may_leave_kind_out_and_imported_personas_their_descriptor(
        explicit_profiles: pl.DataFrame):
    """Catches PersonaFileSchema.kind or PersonaTableSchema.descriptor made required."""
    assert validate(explicit_profiles.drop("kind"), PersonaFileSchema, "file").height == 2
    assert validate(explicit_profiles.drop("descriptor"), PersonaTableSchema, "t").height == 2
    empty = explicit_profiles.with_columns(descriptor=None)
    assert validate(empty, PersonaTableSchema, "table")["descriptor"].null_count() == 2
    with pytest.raises(AuditError, match="column 'descriptor' is empty in row 1"):
        validate(empty, PersonaSchema, "table")


@pytest.mark.parametrize(("column", "values", "problem"), [
    ("descriptor", ["x", None, None, "y"],
     "column 'descriptor' is empty in row 2 (persona_id 'b') and 1 more: rerun"),
    ("persona_id", [None, "b", "c", "d"], "column 'persona_id' is empty in row 1: rerun"),
    ("kind", ["r1", "r2", "r3", "r1"], "column 'kind' holds 'r1', 'r2', 'r3', which fails isin"),
    ("kind", ["r1", "r2", "r3", "r4"], "column 'kind' holds 'r1', 'r2', 'r3', ..., which fails"),
    ("persona_id", ["a", "b", "a", "b"], "column 'persona_id' repeats 'a', 'b': give each row "
                                         "its own persona_id"),
])
def test_a_refusal_names_the_rows_or_the_first_three_values(column: str, values: list,
                                                            problem: str):
    """Catches an off-by-one in the row named, the count of rows more, or the values shown."""
    frame = pl.DataFrame({"persona_id": ["a", "b", "c", "d"], "kind": ["null"] * 4,
                          "descriptor": ["x"] * 4, "gender": [None] * 4, "race": [None] * 4})
    frame = frame.with_columns(pl.Series(column, values, dtype=pl.String))
    with pytest.raises(AuditError) as refused:
        validate(frame, PersonaSchema, "personas", "rerun")
    assert str(refused.value).startswith(f"personas does not match PersonaSchema: {problem}"), \
        refused.value


@pytest.mark.parametrize(("column", "value", "kind"), [
    ("replicate", "twice", "a whole number"),
    ("latency_s", "fast", "a number"),
    ("from_cache", "maybe", "true or false"),
])
def test_a_cell_that_cannot_be_coerced_names_its_column_value_and_kind(column, value, kind):
    """Bug caught (bad-input review 2026-12-07): a word in a number column gave pandera's
    "Could not coerce 'accuracy' in LazyFrame with schema Schema({...})", the whole frame's
    schema on one line and no value. Catches the kind read off the wrong column too."""
    schema, row = ((PromptSchema, PROMPT) if column == "replicate" else (ResponseSchema, RESPONSE))
    frame = pl.DataFrame([row]).with_columns(pl.lit(value).alias(column))
    with pytest.raises(AuditError) as refused:
        validate(frame, schema, "table")
    assert str(refused.value) == (f"table does not match {schema.__name__}: column '{column}' "
                                  f"holds {value!r}, which is not {kind}")


def test_a_repeated_key_of_several_columns_names_them_all():
    """Catches schema_problem reading a table-wide check (no column) as "column 'None' holds"."""
    vote = {"answer_id": "p1", "judge": "j", "label": "refusal", "rationale": ""}
    with pytest.raises(AuditError, match=r"^votes does not match VoteSchema: ") as refused:
        validate(pl.DataFrame([vote, vote]), VoteSchema, "votes")
    assert "'answer_id'" in str(refused.value) and "'judge'" in str(refused.value)
    assert "None" not in str(refused.value), refused.value


def test_a_repeated_key_of_several_columns_names_the_repeated_row(tmp_path):
    """Bug: a table whose key spans columns (dif_personas.csv, votes, design tests) repeated
    a row was refused with "columns '(...)' not unique:" and nothing after the colon, the
    values cut off as "column 'persona_id' not unique:" was before schema_problem."""
    from audit.methods.dif.schemas import DIFPersonaScoreSchema
    from audit.tables import read_table

    path = tmp_path / "dif_personas.csv"
    path.write_text("model_name,dataset,persona_id,persona_kind,persona_category,n_answered,"
                    "n_correct,accuracy,n_compared,n_gained,n_lost,p_mcnemar,p_mcnemar_bh\n"
                    + "m,gsm8k,nurse,real,job,10,5,0.5,10,1,1,1.0,1.0\n" * 2)
    with pytest.raises(AuditError) as refused:
        read_table(path, DIFPersonaScoreSchema, "DIF personas", as_text=True)
    assert str(refused.value).endswith(
        "columns 'model_name', 'dataset', 'persona_id' repeat ('m', 'gsm8k', 'nurse'): give each "
        "row its own combination of them"), refused.value
