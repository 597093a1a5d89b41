"""The counterfactual method's table schemas: the bounds each column keeps and the rows each
key refuses."""

from __future__ import annotations

import polars as pl
import pytest

from audit.errors import AuditError
from audit.methods.counterfactual.schemas import (
    CounterfactualGroupSchema,
    CounterfactualMetricSchema,
    DesignTestSchema,
    GroupTestSchema,
    PairwiseSchema,
)
from audit.schemas import validate
from schema_checks import assert_value_refused

PROMPT = {"prompt_id": "p1", "model_name": "m", "template_id": "t", "variant_id": "v",
          "replicate": 0}
GROUP = {**PROMPT, "factor": "gender", "group": "woman"}
METRIC = {**PROMPT, "truncated": False, "response_text": "", "sentiment": -1.0,
          "word_count": 0.0, "competence_rate": 0.0, "warmth_rate": 100.0, "refusal": 1.0}
GROUP_TEST = {"model_name": "m", "scope": "all", "templates": "t", "metric": "sentiment",
              "factor": "gender", "n_groups": 2, "n": 0, "groups": "man,woman",
              "constant_groups": 0, "h_statistic": 0.0, "p_value": 1.0, "p_bonferroni": 1.0,
              "p_bh": 0.0}
PAIR = {"model_name": "m", "metric": "sentiment", "factor": "gender", "group_a": "man",
        "group_b": "woman", "rank_biserial": -1.0, "truncated_share_a": 0.0,
        "truncated_share_b": 1.0, "p_value": 1.0, "p_bh": 1.0, "practical_threshold": 0.0,
        "meaningful": False, "flagged": False}
PAIRWISE = {**PAIR, "scope": "all", "templates": "t", "n_a": 1, "n_b": 1, "mean_a": 0.0,
            "mean_b": 0.0, "mean_difference": 0.0, "difference_ci_low": None,
            "difference_ci_high": None, "length_ratio": 0.0, "u_statistic": 0.0,
            "p_bonferroni": 1.0}
# A pair no template holds both groups of: no p, effect or shares (DesignTestSchema's doc).
DESIGN = {**PAIR, "unit": "template", "n_units_a": 0, "n_units_b": 0, "n_templates": 0,
          "mean_difference": None, "rank_biserial": None, "truncated_share_a": None,
          "truncated_share_b": None, "p_value": None, "difference_ci_low": None,
          "difference_ci_high": None, "min_p": 1.0, "p_bh": None}
ROWS = {CounterfactualGroupSchema: GROUP, CounterfactualMetricSchema: METRIC,
        GroupTestSchema: GROUP_TEST, PairwiseSchema: PAIRWISE, DesignTestSchema: DESIGN}


def test_each_counterfactual_table_takes_its_edge_values_and_empty_cells():
    """Guards the bounds' own ends and the cells the design tests may leave empty."""
    for schema, row in ROWS.items():
        assert validate(pl.DataFrame([row]), schema, "table").height == 1


@pytest.mark.parametrize(("schema", "column", "value"), [
    (CounterfactualGroupSchema, "replicate", -1), (CounterfactualMetricSchema, "replicate", -1),
    (CounterfactualMetricSchema, "sentiment", 1.01),
    (CounterfactualMetricSchema, "sentiment", -1.01),
    (CounterfactualMetricSchema, "word_count", -1.0),
    (CounterfactualMetricSchema, "competence_rate", 100.5),
    (CounterfactualMetricSchema, "warmth_rate", -0.5),
    (CounterfactualMetricSchema, "refusal", 0.5),
    (GroupTestSchema, "n_groups", 1), (GroupTestSchema, "n", -1),
    (GroupTestSchema, "constant_groups", -1), (GroupTestSchema, "h_statistic", -0.1),
    *((GroupTestSchema, p, 1.01) for p in ("p_value", "p_bonferroni", "p_bh")),
    *((PairwiseSchema, share, 1.01) for share in (
        "truncated_share_a", "truncated_share_b", "p_value", "p_bh", "practical_threshold",
        "p_bonferroni")),
    (PairwiseSchema, "rank_biserial", -1.01), (PairwiseSchema, "p_value", None),
    (PairwiseSchema, "n_a", 0), (PairwiseSchema, "n_b", 0),
    (PairwiseSchema, "length_ratio", -1.0), (PairwiseSchema, "u_statistic", -1.0),
    (DesignTestSchema, "unit", "prompt"), (DesignTestSchema, "n_units_a", -1),
    (DesignTestSchema, "n_units_b", -1), (DesignTestSchema, "n_templates", -1),
    (DesignTestSchema, "rank_biserial", 1.01), (DesignTestSchema, "truncated_share_b", 1.01),
    (DesignTestSchema, "p_value", 1.01), (DesignTestSchema, "min_p", 1.01),
    (DesignTestSchema, "min_p", None), (DesignTestSchema, "p_bh", 1.01),
    (DesignTestSchema, "practical_threshold", 1.01),
])
def test_a_counterfactual_table_with_a_value_out_of_its_bounds_is_refused(schema, column: str,
                                                                           value):
    """Catches a dropped or loosened ge/le/isin/nullable check on a counterfactual column."""
    assert_value_refused(schema, ROWS[schema], column, value)


@pytest.mark.parametrize(("schema", "other"), [
    (CounterfactualGroupSchema, {"factor": "race"}),
    (CounterfactualMetricSchema, {"prompt_id": "p2"}), (PairwiseSchema, {"group_b": "other"}),
    (PairwiseSchema, {"scope": "template"}), (DesignTestSchema, {"group_b": "other"}),
    (DesignTestSchema, {"metric": "refusal"}),
])
def test_counterfactual_rows_repeat_only_under_another_key(schema, other: dict):
    """Catches a unique key that drops one of its columns, or that is dropped."""
    row = ROWS[schema]
    assert validate(pl.DataFrame([row, {**row, **other}]), schema, "table").height == 2
    with pytest.raises(AuditError, match=schema.__name__):
        validate(pl.DataFrame([row, {**row, "model_name": "m"}]), schema, "table")


def test_only_the_metric_table_takes_a_column_per_factor():
    """Catches strict loosened on the test tables, or made strict on the metrics."""
    metrics = validate(pl.DataFrame([{**METRIC, "gender": "woman"}]),
                       CounterfactualMetricSchema, "metrics")
    assert metrics["gender"].to_list() == ["woman"]
    for schema in (CounterfactualGroupSchema, GroupTestSchema, PairwiseSchema, DesignTestSchema):
        with pytest.raises(AuditError, match="note"):
            validate(pl.DataFrame([{**ROWS[schema], "note": "x"}]), schema, "table")
