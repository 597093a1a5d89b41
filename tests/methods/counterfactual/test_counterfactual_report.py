"""The counterfactual report: its figures, headlines, logged metrics and printed findings."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from verdict_fixtures import counterfactual_run

from audit.methods.configs import AuditConfig
from audit.methods.counterfactual.config import CounterfactualConfig
from audit.methods.counterfactual.report import (
    distribution_figure,
    findings,
    gap_matrix_figure,
    headlines,
    pair_decision,
    print_findings,
    run_metrics,
)


def _pair(model: str, group_b: str, rank_biserial: float | None, flagged: bool) -> dict:
    """A design-test row; one with no rank-biserial is a pair no template holds."""
    row = _design(group_b, flagged, 0.01 if flagged else 0.5, 0.001, model=model,
                  rank_biserial=rank_biserial)
    if rank_biserial is None:
        row |= {"n_units_a": 0, "n_units_b": 0, "n_templates": 0, "mean_difference": None,
                "difference_ci_low": None, "difference_ci_high": None, "p_value": None,
                "p_bh": None, "min_p": 1.0}
    return row | {"truncated_share_a": None if rank_biserial is None else 0.0,
                  "truncated_share_b": None if rank_biserial is None else 0.0,
                  "meaningful": flagged}


def test_the_gap_matrix_is_antisymmetric_starred_and_of_its_own_model_only():
    """Mutation review 2026-12-06: the column-vs-row cell is the negated effect, a flagged pair
    is starred in both cells, another model's pair stays out, and the colour scale reaches the
    largest effect shown. Bug caught (review 2026-12-06): the figure drew the per-answer pairwise
    table, so its stars marked pairs the design tests (and the verdict) did not flag; it now
    draws the design tests, and a pair no template holds reads "n/a", not 0."""
    design = pl.DataFrame([_pair("m", "B", 0.5, True), _pair("m", "C", None, False),
                           _pair("n", "B", -0.9, False)], infer_schema_length=None)
    figure = gap_matrix_figure(design, "m")
    axis = figure.axes[0]
    cells = sorted((text.get_position(), text.get_text()) for text in axis.texts)
    assert cells == [((0, 1), "-0.50*"), ((0, 2), "n/a"), ((1, 0), "+0.50*"), ((1, 2), "n/a"),
                     ((2, 0), "n/a"), ((2, 1), "n/a")]
    assert axis.images[0].get_clim() == pytest.approx((-0.5, 0.5))
    assert [label.get_text() for label in axis.get_yticklabels()] == ["A", "B", "C"]


def test_the_distribution_figure_draws_only_its_models_groups():
    """Mutation review 2026-12-06: another model's answers are not drawn beside this one's."""
    long = pl.DataFrame({"model_name": ["m", "m", "m", "m", "n", "n"],
                         "metric": ["sentiment"] * 6, "factor": ["race"] * 6,
                         "group": ["A", "A", "B", "B", "C", "C"],
                         "template_id": ["t0"] * 6, "value": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    figure = distribution_figure(long, "m")
    assert figure.axes[0].get_legend_handles_labels()[1] == ["A", "B"]


def _design(group_b: str, flagged: bool, p_bh: float | None, min_p: float, model: str = "m",
            mean_difference: float = 1.234, rank_biserial: float = 0.5) -> dict:
    return {"model_name": model, "metric": "sentiment", "factor": "race", "group_a": "A",
            "group_b": group_b, "unit": "name", "n_units_a": 6, "n_units_b": 6,
            "n_templates": 3, "mean_difference": mean_difference, "difference_ci_low": 0.5,
            "difference_ci_high": 2.0, "rank_biserial": rank_biserial, "p_value": p_bh,
            "min_p": min_p, "p_bh": p_bh, "practical_threshold": 0.147, "flagged": flagged}


def test_headlines_put_flagged_pairs_first_then_by_adjusted_p_and_untestable_last():
    """Mutation review 2026-12-06: order, the model named only when there are several, the
    interval's bounds in order and its level from the confidence level."""
    design = pl.DataFrame([_design("E", False, None, 0.2), _design("B", False, 0.01, 0.001),
                           _design("C", True, 0.03, 0.001), _design("D", True, 0.02, 0.001)],
                          schema_overrides={"p_bh": pl.Float64, "p_value": pl.Float64})
    found = headlines(design, CounterfactualConfig(confidence_level=0.9))
    assert [headline.compared for headline in found] == [
        f"sentiment by race: A vs {group}" for group in "DCBE"]
    # Bug caught: the interval, Student's t over the test's units, was called a bootstrap CI.
    assert (found[0].low, found[0].high, found[0].interval) == (0.5, 2.0, "90% Student-t CI")
    two_models = pl.concat([design, pl.DataFrame([_design("B", False, 0.5, 0.001, model="n")])])
    assert headlines(two_models, CounterfactualConfig())[0].compared.endswith(" (m)")


def test_run_metrics_count_each_table_by_hand():
    """Mutation review 2026-12-06: every logged count against a hand count, the pooled means
    only, and stable names for the Kruskal-Wallis p and the timings."""
    prompts = pl.DataFrame({"item_id": ["t0", "t0", "t1", "t1", "t2", "t2"],
                            "persona_id": ["p0", "p1"] * 3})
    responses = pl.DataFrame({"status": ["ok"] * 4 + ["error"] * 2,
                              "from_cache": [True] + [False] * 5})
    metrics = pl.DataFrame({"truncated": [True, False, False, False]})
    design = pl.DataFrame({"p_bh": [0.01, 0.05, None], "flagged": [True, False, False],
                           "min_p": [0.001, 0.01, 0.05]}, schema_overrides={"p_bh": pl.Float64})
    pairwise = pl.DataFrame({"flagged": [True, True, False, False]})
    tests = pl.DataFrame({"model_name": ["m"], "scope": ["all"], "metric": ["sentiment"],
                          "factor": ["race"], "p_bh": [0.2]})
    summary = pl.DataFrame({"model_name": ["m", "m"], "scope": ["all", "t0"],
                            "metric": ["sentiment"] * 2, "factor": ["race"] * 2,
                            "group": ["A", "A"], "mean": [0.4, 0.9]})
    values = run_metrics(prompts, responses, metrics, tests, pairwise, summary, design,
                         {"generate": 1.5}, alpha=0.05)
    assert values == {
        "n_prompts": 6, "n_templates": 3, "n_variants": 2, "n_responses_ok": 4, "n_failed": 2,
        "n_from_store": 1, "truncated_share": 0.25, "n_pairs": 3, "n_pairs_p_bh_below_alpha": 1,
        "n_pairs_flagged": 1, "n_pairs_untestable": 1, "n_answer_pairs": 4,
        "n_answer_pairs_flagged": 2, "duration_s/generate": 1.5,
        "kruskal_p_bh/m/all/sentiment/race": 0.2, "mean/m/sentiment/race/A": 0.4}


def test_the_flagged_pairs_table_lists_flagged_rows_by_adjusted_p(capsys) -> None:
    """Mutation review 2026-12-06: the table is printed, counts flagged of all design tests,
    and shows each pair's own difference and rank-biserial, smallest p_bh first."""
    tests = pl.DataFrame(schema={"model_name": pl.String, "scope": pl.String,
                                 "metric": pl.String, "factor": pl.String})
    design = pl.DataFrame([_design("B", True, 0.03, 0.001, rank_biserial=0.61),
                           _design("C", True, 0.004, 0.001, mean_difference=-2.5,
                                   rank_biserial=-0.42),
                           _design("D", False, 0.6, 0.001)])
    print_findings(tests, design, 0.05)
    out = " ".join(capsys.readouterr().out.split())
    assert "Flagged pairs (2 of 3 design tests)" in out
    assert out.index("A vs C") < out.index("A vs B") and "A vs D" not in out
    assert "-2.500" in out and "-0.42" in out and "+0.61" in out and "+1.234" in out


def test_pair_decision_at_the_alpha_boundaries():
    """Mutation review 2026-12-06: a smallest attainable p equal to alpha is not testable, a
    significant pair below the practical threshold says so, and a p_bh equal to alpha shows no
    difference."""
    row = _design("B", False, 0.01, 0.001, rank_biserial=0.1)
    assert pair_decision({**row, "min_p": 0.05}, 0.05).startswith(
        "not testable with 6 names vs 6 names")
    assert pair_decision(row, 0.05) == ("a difference below the practical threshold "
                                        "(|rank-biserial| 0.10 < 0.15)")
    assert pair_decision({**row, "p_bh": 0.05}, 0.05) == "no difference shown"


def test_findings_head_every_design_test_and_show_the_flag_count(tmp_path: Path):
    """Mutation review 2026-12-06: the summary reads the run's design tests, one headline each,
    and shows the flagged count as a runs-table column."""
    run = counterfactual_run(tmp_path / "run", effect=2.0)
    found = findings(AuditConfig(method="counterfactual"), run, {})
    design = pl.read_csv(found.source)
    assert found.source.name == "counterfactual_design_tests.csv"
    assert len(found.headlines) == design.height > 0
    assert set(found.metrics) == {"n_pairs_flagged", "n_pairs", "truncated_share"}
