"""The DIF method's table schemas: the bounds each column keeps and the rows each key refuses."""

from __future__ import annotations

import polars as pl
import pytest

from audit.methods.dif.schemas import (
    DIFAnswerSchema,
    DIFItemSchema,
    DIFModelSchema,
    DIFPersonaSchema,
    DIFPersonaScoreSchema,
    DIFPromptSchema,
    DIFTestSchema,
)
from audit.schemas import validate
from schema_checks import (assert_rows_repeat_only_under_another_key, assert_value_refused,
                           extra_column_outcome)

ITEM = {"item_id": "gsm8k.1-a_B", "dataset": "gsm8k-x_1", "form": "free", "difficulty": 0,
        "template": "", "question": "q", "answer": "4", "answer_type": "number",
        "answer_text": "", "options": "[]", "candidates": "[]"}
PERSONA = {"persona_id": "baseline", "persona_kind": "baseline", "persona_category": "none",
           "descriptor": ""}
REQUEST = {"prompt_id": "p1", "model_name": "m", "persona_id": "a", "persona_kind": "real",
           "persona_category": "job", "item_id": "i", "dataset": "d", "form": "choice",
           "difficulty": 0}
PROMPT = {**REQUEST, "seed": 0, "system_prompt": "", "user_prompt": "u"}
ANSWER = {**REQUEST, "status": "error", "response_text": None, "answer": "4",
          "extracted": None, "extract_method": None, "correct": None, "from_cache": False}
PERSONA_SCORE = {"model_name": "m", "dataset": "d", "persona_id": "baseline",
                 "persona_kind": "baseline", "persona_category": None, "n_answered": 0,
                 "n_correct": 0, "accuracy": None, "n_compared": None, "n_gained": None,
                 "n_lost": None, "p_mcnemar": None, "p_mcnemar_bh": None}
TEST = {"model_name": "m", "dataset": "d", "n_real": 0, "n_null": 0, "mean_dif_real": None,
        "mean_dif_null": None, "difference": None, "p_welch": None, "p_permutation": None,
        "p_claim_holm": None, "claim": False}
MODEL = {"model_name": "m", "dataset": "d", "accuracy": None, "accuracy_low": None,
         "accuracy_high": None, "mean_dif_real": None}
ROWS = {DIFItemSchema: ITEM, DIFPersonaSchema: PERSONA, DIFPromptSchema: PROMPT,
        DIFAnswerSchema: ANSWER, DIFPersonaScoreSchema: PERSONA_SCORE, DIFTestSchema: TEST,
        DIFModelSchema: MODEL}


def test_each_dif_table_takes_its_edge_values_and_empty_cells():
    """Guards the id patterns' characters, 0 counts and the statistics a row may leave empty."""
    for schema, row in ROWS.items():
        assert validate(pl.DataFrame([row]), schema, "table").height == 1


@pytest.mark.parametrize(("schema", "column", "value"), [
    (DIFItemSchema, "item_id", "gsm8k 1"), (DIFItemSchema, "item_id", "gsm8k/1"),
    (DIFItemSchema, "dataset", "gsm8k.1"), (DIFItemSchema, "form", "open"),
    (DIFItemSchema, "difficulty", -1), (DIFItemSchema, "question", ""),
    (DIFItemSchema, "answer", ""), (DIFItemSchema, "answer_type", "float"),
    (DIFItemSchema, "options", "a, b"), (DIFItemSchema, "candidates", "a"),
    (DIFPersonaSchema, "persona_id", "Nurse"), (DIFPersonaSchema, "persona_kind", "explicit"),
    (DIFPromptSchema, "persona_kind", "explicit"), (DIFPromptSchema, "form", "open"),
    (DIFPromptSchema, "difficulty", -1), (DIFPromptSchema, "seed", -1),
    (DIFAnswerSchema, "status", "timeout"), (DIFAnswerSchema, "persona_kind", "name"),
    (DIFPersonaScoreSchema, "persona_kind", "explicit"),
    *((DIFPersonaScoreSchema, count, -1) for count in (
        "n_answered", "n_correct", "n_compared", "n_gained", "n_lost")),
    *((DIFPersonaScoreSchema, share, 1.01) for share in (
        "accuracy", "p_mcnemar", "p_mcnemar_bh")),
    (DIFTestSchema, "n_real", -1), (DIFTestSchema, "n_null", -1),
    *((DIFTestSchema, p, 1.01) for p in ("p_welch", "p_permutation", "p_claim_holm")),
    *((DIFModelSchema, share, 1.01) for share in ("accuracy", "accuracy_low", "accuracy_high")),
    (DIFModelSchema, "accuracy_low", -0.01),
])
def test_a_dif_table_with_a_value_out_of_its_bounds_is_refused(schema, column: str, value):
    """Catches a dropped or loosened pattern/isin/ge/le/length check on a DIF column."""
    assert_value_refused(schema, ROWS[schema], column, value)


@pytest.mark.parametrize(("schema", "other"), [
    (DIFItemSchema, {"item_id": "i2"}), (DIFPersonaSchema, {"persona_id": "b"}),
    (DIFPromptSchema, {"prompt_id": "p2"}), (DIFAnswerSchema, {"prompt_id": "p2"}),
    (DIFPersonaScoreSchema, {"dataset": "e"}), (DIFPersonaScoreSchema, {"model_name": "n"}),
])
def test_dif_rows_repeat_only_under_another_key(schema, other: dict):
    """Catches a unique key that drops one of its columns, or that is dropped."""
    assert_rows_repeat_only_under_another_key(schema, ROWS[schema], other)


def test_dif_run_tables_refuse_an_extra_column_and_read_tables_drop_or_keep_it():
    """Catches strict changed on a DIF table: its own run tables refuse a column they do not
    name, the personas and the verdict's persona scores drop it, the tests and models keep it."""
    assert {schema: extra_column_outcome(schema, row) for schema, row in ROWS.items()} == {
        DIFItemSchema: "refused", DIFPromptSchema: "refused", DIFAnswerSchema: "refused",
        DIFPersonaSchema: "dropped", DIFPersonaScoreSchema: "dropped", DIFTestSchema: "kept",
        DIFModelSchema: "kept"}
