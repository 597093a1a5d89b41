"""The IAT method's table schemas: the bounds each column keeps and the rows each key refuses."""

from __future__ import annotations

import polars as pl
import pytest

from audit.errors import AuditError
from audit.methods.iat.schemas import IATPromptSchema, IATScoreSchema, IATStatsSchema
from audit.schemas import validate
from schema_checks import assert_value_refused

PROMPT = {"prompt_id": "p1", "model_name": "m", "category": "race", "dataset": "d",
          "variation": "v", "iteration": 0, "seed": 0, "default_word": "white",
          "stigma_word": "black", "default_first": True, "attributes": "[]",
          "system_prompt": "", "user_prompt": "u"}
SCORE = {"model": "m", "category": "race", "dataset": "d", "variation": "v",
         "response_id": "r1", "iteration": None, "response_text": None, "parsed": True,
         "n_expected": 1, "n_assigned": 0, "n_conflicting": 0, "n_missing": 0,
         "default_positive": 0, "default_negative": 0, "stigma_positive": 0,
         "stigma_negative": 0, "one_group": False, "d_score": None}
STATS = {"model": "m", "category": "race", "dataset": "d", "n": 0, "n_left_out_strict": 0,
         "n_left_out_lenient": 0, "n_one_group": 0, "parse_rate": None, "mean_d": None,
         "ci_low": None, "ci_high": None, "mean_d_test": None, "p_value": None, "min_p": 1.0,
         "p_adjusted": None}
ROWS = {IATPromptSchema: PROMPT, IATScoreSchema: SCORE, IATStatsSchema: STATS}


def test_each_iat_table_takes_its_edge_values_and_empty_cells():
    """Guards the nullable statistics and D, and the bounds' own ends (0 counts, D of -1)."""
    second = {"prompt_id": "p2", "response_id": "r2", "dataset": "e", "d_score": -1.0,
              "min_p": 0.0}
    for schema, row in ROWS.items():
        other = {**row, **{key: value for key, value in second.items() if key in row}}
        assert validate(pl.DataFrame([row, other]), schema, "table").height == 2


@pytest.mark.parametrize(("schema", "column", "value"), [
    (IATPromptSchema, "iteration", -1), (IATPromptSchema, "seed", -1),
    (IATScoreSchema, "iteration", -1), (IATScoreSchema, "n_expected", 0),
    *((IATScoreSchema, count, -1) for count in (
        "n_assigned", "n_conflicting", "n_missing", "default_positive", "default_negative",
        "stigma_positive", "stigma_negative")),
    (IATScoreSchema, "d_score", 1.01), (IATScoreSchema, "d_score", -1.01),
    *((IATStatsSchema, count, -1) for count in (
        "n", "n_left_out_strict", "n_left_out_lenient", "n_one_group")),
    *((IATStatsSchema, share, bad) for share in ("parse_rate", "p_value", "min_p", "p_adjusted")
      for bad in (1.01, -0.01)),
    (IATStatsSchema, "min_p", None),
])
def test_an_iat_table_with_a_value_out_of_its_bounds_is_refused(schema, column: str, value):
    """Catches a dropped or loosened ge/le/nullable check on an IAT table's column."""
    assert_value_refused(schema, ROWS[schema], column, value)


def test_an_iat_answer_is_one_row_per_variation_and_a_prompt_has_no_extra_column():
    """Catches a unique key that drops a column (variation) and strict loosened on the
    prompts; the stats table takes the by-variation table's extra column."""
    other = {**SCORE, "variation": "w"}
    assert validate(pl.DataFrame([SCORE, other]), IATScoreSchema, "scores").height == 2
    with pytest.raises(AuditError, match="IATScoreSchema"):
        validate(pl.DataFrame([SCORE, {**SCORE, "category": "age"}]), IATScoreSchema, "scores")
    with pytest.raises(AuditError, match="prompt_id"):
        validate(pl.DataFrame([PROMPT, PROMPT]), IATPromptSchema, "prompts")
    with pytest.raises(AuditError, match="note"):
        validate(pl.DataFrame([{**PROMPT, "note": "x"}]), IATPromptSchema, "prompts")
    with_variation = validate(pl.DataFrame([{**STATS, "variation": "v"}]), IATStatsSchema, "s")
    assert with_variation["variation"].to_list() == ["v"]
