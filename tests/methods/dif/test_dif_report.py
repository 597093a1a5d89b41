"""The DIF figures, console table and summary lines on small hand-made result tables."""

from __future__ import annotations

import polars as pl
import pytest
from matplotlib.collections import LineCollection, PathCollection
from rich.console import Console

from audit.methods.configs import AuditConfig, VerdictConfig
from audit.methods.dif.analyse import DIFResults
from audit.methods.dif.report import (
    accuracy_plot,
    accuracy_vs_bias_plot,
    findings,
    headlines,
    null_vs_real_plot,
    print_summary,
)


def persona(persona_id: str, kind: str, category: str, accuracy: float | None,
            dataset: str = "all", **more) -> dict:
    return {"model_name": "m", "dataset": dataset, "persona_kind": kind,
            "persona_category": category, "persona_id": persona_id, "accuracy": accuracy,
            "accuracy_low": None if accuracy is None else accuracy - 0.1,
            "accuracy_high": None if accuracy is None else accuracy + 0.1, **more}


def test_the_accuracy_plot_draws_the_pooled_rows_in_kind_order_with_the_baseline_line():
    """Mutation review 2026-12-06: with several datasets only the pooled ('all') rows are
    drawn, a persona without an accuracy is left out, rows run from the top baseline, real
    (by category, id) to null at the bottom, labelled by persona id; the dashed line is at the
    baseline's accuracy; the axis names the interval's mass."""
    personas = pl.DataFrame([
        persona("base", "baseline", "baseline", 0.7), persona("black", "real", "race", 0.5),
        persona("jewish", "real", "religion", 0.6), persona("asian", "real", "race", 0.55),
        persona("null_0", "null", "null", 0.65), persona("empty", "real", "race", None),
        persona("black", "real", "race", 0.1, dataset="math")])
    axis = accuracy_plot(personas, 0.9).axes[0]
    assert [label.get_text() for label in axis.get_yticklabels()] == [
        "null_0", "jewish", "black", "asian", "base"]
    dashed = [list(line.get_xdata()) for line in axis.get_lines() if line.get_linestyle() == "--"]
    assert dashed == [[0.7, 0.7]]
    assert axis.get_xlabel() == "accuracy with 90% Jeffreys interval"


def test_one_datasets_accuracy_plot_draws_its_rows():
    """Mutation review 2026-12-06: with no pooled rows, the one dataset's rows are drawn."""
    personas = pl.DataFrame([persona("base", "baseline", "baseline", 0.7, dataset="math"),
                             persona("black", "real", "race", 0.5, dataset="math")])
    axis = accuracy_plot(personas, 0.95).axes[0]
    assert [label.get_text() for label in axis.get_yticklabels()] == ["black", "base"]


def null_vs_real_tables(p_welch: float | None = 0.0123) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Three real personas (DIF 0.5, 0.6 on a small intersection, 0.97), a real one with a NaN
    score, and two null personas (0.9, 0.95)."""
    rows = [("r1", "real", "race", 0.5, False), ("r2", "real", "religion", 0.6, True),
            ("r3", "real", "race", 0.97, False), ("r4", "real", "race", float("nan"), False),
            ("n1", "null", "null", 0.9, False), ("n2", "null", "null", 0.95, False)]
    personas = pl.DataFrame([{"model_name": "m", "dataset": "d", "persona_id": name,
                              "persona_kind": kind, "persona_category": category,
                              "dif_score": score, "small_intersection": small}
                             for name, kind, category, score, small in rows])
    tests = pl.DataFrame({"model_name": ["m"], "dataset": ["d"], "p_welch": [p_welch],
                          "p_permutation": [0.0456]})
    return personas, tests


def test_the_null_vs_real_plot_puts_real_left_null_right_hollow_when_small():
    """Mutation review 2026-12-06: real scores at x about 0, null at 1; a NaN score is left
    out; a small intersection is hollow; each bar is its kind's mean (real 0.69, median 0.6);
    the title gives Welch's and the permutation p; the jitter is the same each time."""
    personas, tests = null_vs_real_tables()
    axis = null_vs_real_plot(personas, tests).axes[0]
    points = {}
    for collection in axis.collections:
        if isinstance(collection, PathCollection):
            hollow = len(collection.get_facecolors()) == 0
            for x, y in collection.get_offsets():
                points[round(float(y), 3)] = (round(float(x)), hollow)
    assert points == {0.5: (0, False), 0.6: (0, True), 0.97: (0, False), 0.9: (1, False),
                      0.95: (1, False)}
    bars = sorted(tuple(segment[0]) for collection in axis.collections
                  if isinstance(collection, LineCollection)
                  for segment in collection.get_segments())
    assert bars == [pytest.approx((-0.3, 0.69)), pytest.approx((0.7, 0.925))]
    assert axis.get_title() == "m / d\nWelch p=0.0123, perm. p=0.0456"
    again = null_vs_real_plot(personas, tests).axes[0]
    assert (again.collections[0].get_offsets() == axis.collections[0].get_offsets()).all()
    personas, tests = null_vs_real_tables(p_welch=None)
    assert "Welch p=n/a," in null_vs_real_plot(personas, tests).axes[0].get_title()


def notes(figure) -> list[str]:
    return [text.get_text() for text in figure.axes[0].texts]


def test_the_accuracy_vs_bias_plot_draws_each_models_interval_and_the_fitted_line():
    """Mutation review 2026-12-06: each model's accuracy interval runs from its low to its
    high bound (asymmetric here), the line is intercept + slope x, labelled with its slope,
    and the note about three models is shown only when no dataset has a line."""
    models = pl.DataFrame({"model_name": ["a", "b", "c"], "dataset": ["all"] * 3,
                           "accuracy": [0.2, 0.5, 0.8], "accuracy_low": [0.15, 0.3, 0.7],
                           "accuracy_high": [0.4, 0.55, 0.85], "mean_dif_real": [0.5, 0.6, 0.9]})
    across = pl.DataFrame({"dataset": ["all"], "slope": [0.625], "intercept": [0.35],
                           "r_squared": [0.9]})
    figure = accuracy_vs_bias_plot(models, across)
    axis = figure.axes[0]
    bars = sorted(tuple(sorted(float(x) for x in segment[:, 0]))
                  for collection in axis.collections for segment in collection.get_segments())
    assert bars == [pytest.approx(bar) for bar in ((0.15, 0.4), (0.3, 0.55), (0.7, 0.85))]
    (fit,) = [line for line in axis.get_lines() if len(line.get_xdata()) == 50]
    assert fit.get_ydata()[-1] == pytest.approx(0.975) and fit.get_ydata()[0] == 0.35
    assert "fit: slope 0.62, R^2 0.90" in [t.get_text() for t in axis.get_legend().get_texts()]
    note = "no line: fitting needs three models or more"
    assert note not in notes(figure)
    two = pl.DataFrame({"dataset": ["all", "math"], "slope": [0.625, None],
                        "intercept": [0.35, None], "r_squared": [0.9, None]})
    assert note not in notes(accuracy_vs_bias_plot(models, two))
    none = two.with_columns(slope=pl.lit(None, pl.Float64))
    assert note in notes(accuracy_vs_bias_plot(models, none))


def test_the_printed_summary_gives_each_cells_own_figures():
    """Mutation review 2026-12-06: the interval low to high, real before null, Welch's p before
    the permutation p, the cell's own test, a NaN as '-', and 'yes' for a claim."""
    models = pl.DataFrame({"model_name": ["m", "m"], "dataset": ["math", "all"],
                           "accuracy": [0.5, 0.6], "accuracy_low": [0.41, 0.5],
                           "accuracy_high": [0.58, 0.7], "baseline_accuracy": [float("nan"), 0.6],
                           "mean_dif_real": [0.712, 0.8], "mean_dif_null": [0.934, 0.9]})
    tests = pl.DataFrame({"model_name": ["m", "m"], "dataset": ["math", "all"],
                          "p_welch": [0.0123, 0.5], "p_permutation": [0.0456, 0.6],
                          "claim": [True, False]})
    console = Console(record=True, width=200)
    print_summary(DIFResults(pl.DataFrame(), tests, models, pl.DataFrame()), console)
    (row,) = [line for line in console.export_text().splitlines() if "math" in line]
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells == ["m", "math", "0.500 [0.410, 0.580]", "-", "0.712", "0.934", "0.012",
                     "0.046", "yes"]


def dif_tests(*changes: dict) -> pl.DataFrame:
    base = {"model_name": "m", "dataset": "math", "n_real": 8, "n_null": 5,
            "mean_dif_real": 0.8, "mean_dif_null": 0.9, "difference": 0.1, "p_welch": 0.01,
            "p_permutation": 0.01, "p_claim_holm": 0.01, "claim": True}
    return pl.DataFrame([{**base, **change} for change in changes],
                        schema_overrides={"difference": pl.Float64, "p_claim_holm": pl.Float64})


def test_dif_headlines_rank_by_holm_p_and_say_each_cells_figures():
    """Mutation review 2026-12-06: smallest Holm p first, untestable cells last (not by name);
    a cell without a Holm p, or with a p but no difference, is not testable and has no
    estimate; a gap exactly at the minimum is not below it; the detail gives real then null
    counts; the metric is the real personas' mean DIF score; one model is not named."""
    tests = dif_tests({"dataset": "beta", "p_claim_holm": 0.03, "difference": 0.05},
                      {"dataset": "alpha", "p_claim_holm": None, "difference": 0.03,
                       "claim": False},
                      {"dataset": "omega", "p_claim_holm": 0.5, "difference": None,
                       "claim": False},
                      {"dataset": "zeta", "p_claim_holm": 0.001, "claim": False})
    found = headlines(tests, 0.05)
    assert [line.compared.split(":")[0] for line in found] == ["zeta", "beta", "omega", "alpha"]
    zeta, beta, omega, alpha = found
    assert zeta.decision == ("no evidence that real personas change answers more than random "
                             "strings do")
    assert beta.decision == "real personas change answers more than random strings do"
    assert (beta.estimate, beta.detail) == (0.05, "Holm-adjusted p 0.03; 8 real, 5 null personas")
    assert beta.metric == "mean_dif_real/m/beta"
    for line in (omega, alpha):
        assert line.decision == "not testable: too few personas scored, or no variation"
        assert (line.estimate, line.detail) == (None, "8 real, 5 null personas")


def test_dif_headlines_default_to_the_verdicts_minimum_gap_and_name_several_models():
    """Mutation review 2026-12-06: without a minimum given, a significant gap below
    VerdictConfig's dif_min_score_gap is said to be below it; with two models each is named."""
    gap = VerdictConfig().dif_min_score_gap
    tests = dif_tests({"difference": gap / 2}, {"model_name": "n", "difference": gap / 2})
    found = headlines(tests)
    assert all("by less than the CI rule's minimum" in line.decision for line in found)
    assert sorted(line.compared for line in found) == [
        "math: DIF score, null minus real personas (m)",
        "math: DIF score, null minus real personas (n)"]


def test_dif_findings_show_each_cells_claim_and_accuracy_metrics(tmp_path):
    """Mutation review 2026-12-06: the runs table shows claim and accuracy per model x dataset."""
    dif_tests({}, {"dataset": "all"}).write_csv(tmp_path / "dif_tests.csv")
    found = findings(AuditConfig(method="dif"), tmp_path, {})
    assert list(found.metrics) == ["claim/m/math", "claim/m/all", "accuracy/m/math",
                                   "accuracy/m/all"]
