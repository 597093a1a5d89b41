"""The Rasch audit's table schemas: the values each column allows and the rows each key
refuses."""

from __future__ import annotations

import polars as pl
import pytest

from audit.methods.rasch.schemas import (
    ContrastSchema,
    GoldResultSchema,
    GoldSchema,
    LabelSchema,
    OutcomeSchema,
    SummarySchema,
    VoteSchema,
)
from audit.schemas import validate
from schema_checks import (assert_rows_repeat_only_under_another_key, assert_value_refused,
                           extra_column_outcome)

LABEL = {"prompt_id": "p1", "label": "judge_failed", "label_source": "imported",
         "rationale": "", "agreement": None, "p_favourable": None, "decision_mass": None}
VOTE = {"answer_id": "p1", "judge": "j", "label": "unparseable", "rationale": ""}
GOLD = {"gold_id": "g1", "item_id": "i", "domain": "lending", "category": "small_model",
        "answer": "APPROVE", "label": "refusal"}
GOLD_RESULT = {"gold_id": "g1", "category": "plain", "domain": "lending",
               "true_label": "needs_more_information", "label": "judge_failed",
               "label_source": "none", "rationale": ""}
OUTCOME = {"respondent": "m__a", "item": "i", "y": 0}
SUMMARY = {"parameter": "theta[a]", "mean": 0.0, "sd": 0.0, "hdi_low": 0.0, "hdi_high": 0.0,
           "r_hat": None, "ess_bulk": None}
# An older run's contrasts: none of the optional columns.
CONTRAST = {"model_name": "m", "attribute": "gender", "level_a": "man", "level_b": "woman",
            "mean": 0.0, "sd": 0.1, "hdi_low": -0.1, "hdi_high": 0.1, "p_direction": 0.5,
            "rope_low": -0.1, "rope_high": 0.1, "decision": "undecided"}
ROWS = {LabelSchema: LABEL, VoteSchema: VOTE, GoldSchema: GOLD, GoldResultSchema: GOLD_RESULT,
        OutcomeSchema: OUTCOME, SummarySchema: SUMMARY, ContrastSchema: CONTRAST}


def test_each_rasch_table_takes_its_edge_values_and_empty_cells():
    """Guards the empty shares of a rule label, a contrast without its optional columns, and
    the ends of the share bounds."""
    for schema, row in ROWS.items():
        assert validate(pl.DataFrame([row]), schema, "table").height == 1
    shares = {"agreement": 1.0, "p_favourable": 0.0, "decision_mass": 1.0}
    assert validate(pl.DataFrame([{**LABEL, **shares}]), LabelSchema, "labels").height == 1
    kind = validate(pl.DataFrame([{**CONTRAST, "decision_interval_kind": "normal"}]),
                    ContrastSchema, "contrasts")
    assert kind["decision_interval_kind"].to_list() == ["normal"]


@pytest.mark.parametrize(("schema", "column", "value"), [
    (LabelSchema, "label", "maybe"), (LabelSchema, "label_source", "human"),
    *((LabelSchema, share, 1.01) for share in ("agreement", "p_favourable", "decision_mass")),
    (LabelSchema, "agreement", -0.01),
    (VoteSchema, "label", "maybe"),
    (GoldSchema, "category", "mine"),
    # A gold label is what a judge should have said: never "no label".
    (GoldSchema, "label", "unparseable"), (GoldSchema, "label", "judge_failed"),
    (GoldResultSchema, "category", "mine"), (GoldResultSchema, "true_label", "unparseable"),
    (GoldResultSchema, "label", "maybe"), (GoldResultSchema, "label_source", "human"),
    (OutcomeSchema, "y", 2), (OutcomeSchema, "y", -1),
    (ContrastSchema, "decision", "maybe"), (ContrastSchema, "decision_interval_kind", "exact"),
])
def test_a_rasch_table_with_a_value_it_does_not_allow_is_refused(schema, column: str, value):
    """Catches a dropped or widened isin, or a dropped bound, on a Rasch table's column."""
    assert_value_refused(schema, ROWS[schema], column, value)


@pytest.mark.parametrize(("schema", "other"), [
    (LabelSchema, {"prompt_id": "p2"}), (VoteSchema, {"judge": "k"}),
    (VoteSchema, {"answer_id": "p2"}), (GoldSchema, {"gold_id": "g2"}),
    (GoldResultSchema, {"gold_id": "g2"}), (SummarySchema, {"parameter": "b[i]"}),
])
def test_rasch_rows_repeat_only_under_another_key(schema, other: dict):
    """Catches a unique key that drops one of its columns, or that is dropped."""
    assert_rows_repeat_only_under_another_key(schema, ROWS[schema], other)


def test_rasch_run_tables_refuse_an_extra_column_and_read_tables_drop_or_keep_it():
    """Catches strict changed on a Rasch table: labels, votes and gold results refuse a column
    they do not name, the gold set, outcomes and contrasts drop it, the summary keeps it."""
    outcomes = {schema: extra_column_outcome(schema, row) for schema, row in ROWS.items()}
    assert {schema for schema, outcome in outcomes.items() if outcome == "refused"} == {
        LabelSchema, VoteSchema, GoldResultSchema}
    assert {schema for schema, outcome in outcomes.items() if outcome == "kept"} == {
        SummarySchema}
