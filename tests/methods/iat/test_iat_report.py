"""The IAT figures, console table and summary lines on small hand-made statistics tables."""

from __future__ import annotations

import polars as pl
import pytest
from matplotlib.colors import to_rgba
from rich.console import Console

from audit.methods.configs import AuditConfig
from audit.methods.iat.config import IATConfig
from audit.methods.iat.report import (
    d_by_dataset_plot,
    d_by_variation_plot,
    findings,
    headlines,
    iat_decision,
    print_iat_table,
)
from verdict_fixtures import iat_run

WHITE = (1.0, 1.0, 1.0, 1.0)


def stats_table(*changes: dict) -> pl.DataFrame:
    """One row per dict: a significant stereotype-consistent row of 40 answers, changed."""
    base = {"model": "m", "category": "race", "dataset": "names", "variation": "replication",
            "n": 40, "n_left_out_strict": 0, "n_left_out_lenient": 0, "n_one_group": 0,
            "parse_rate": 1.0, "mean_d": 0.3, "ci_low": 0.2, "ci_high": 0.4,
            "mean_d_test": 0.3, "p_value": 0.001, "min_p": 0.0002, "p_adjusted": 0.002}
    schema = {key: pl.Float64 for key in ("parse_rate", "mean_d", "ci_low", "ci_high",
                                          "mean_d_test", "p_value", "min_p", "p_adjusted")}
    return pl.DataFrame([{**base, **change} for change in changes],
                        schema_overrides=schema)


def lines(axis, marker: str) -> list:
    return [line for line in axis.get_lines() if line.get_marker() == marker]


def test_the_dataset_plot_lists_datasets_grouped_by_category_with_their_category():
    """Mutation review 2026-12-06: rows top to bottom by category, then dataset, each labelled
    'dataset (category)'; the tick of each dataset sits on its own row."""
    stats = stats_table({"dataset": "words", "category": "age", "mean_d": 0.1},
                        {"dataset": "arms", "mean_d": 0.2}, {"dataset": "names", "mean_d": 0.3})
    axis = d_by_dataset_plot(stats, 0.95, 0.05).axes[0]
    labels = [label.get_text() for label in axis.get_yticklabels()]
    assert labels == ["names (race)", "arms (race)", "words (age)"]
    ticks = {float(line.get_xdata()[0]): float(line.get_ydata()[0]) for line in lines(axis, "|")}
    assert ticks == {0.3: 0.0, 0.2: 1.0, 0.1: 2.0}


def test_a_dataset_dot_is_filled_only_when_the_bh_adjusted_p_is_below_alpha():
    """Mutation review 2026-12-06: filled at adjusted p 0.01; hollow at exactly alpha and where
    only the raw p (0.01) is below alpha but the adjusted one (0.2) is not."""
    stats = stats_table({"dataset": "a", "p_value": 0.01, "p_adjusted": 0.01},
                        {"dataset": "b", "p_value": 0.01, "p_adjusted": 0.05},
                        {"dataset": "c", "p_value": 0.01, "p_adjusted": 0.2})
    axis = d_by_dataset_plot(stats, 0.95, 0.05).axes[0]
    faces = {labels: dot.get_markerfacecolor() for labels, dot in
             zip(("c", "b", "a"), sorted(lines(axis, "o"), key=lambda d: d.get_ydata()[0]))}
    assert faces["a"] == to_rgba(faces["a"]) != WHITE
    assert to_rgba(faces["b"]) == WHITE and to_rgba(faces["c"]) == WHITE


def test_the_dataset_plot_draws_each_interval_and_skips_a_row_without_a_mean():
    """Mutation review 2026-12-06: the interval is a line from ci_low to ci_high; a row with one
    bound missing has none drawn, a row with no mean D (nothing parsed) is not drawn at all."""
    stats = stats_table({"dataset": "a"}, {"dataset": "b", "ci_high": None},
                        {"dataset": "c", "mean_d": None, "mean_d_test": None, "ci_low": None,
                         "ci_high": None, "p_value": None, "p_adjusted": None})
    figure = d_by_dataset_plot(stats, 0.9, 0.1)
    axis = figure.axes[0]
    intervals = [list(line.get_xdata()) for line in axis.get_lines()
                 if line.get_marker() == "None" and len(line.get_xdata()) == 2
                 and line.get_linestyle() == "-"]
    assert intervals == [[0.2, 0.4]]
    assert len(lines(axis, "|")) == 2 and len(lines(axis, "o")) == 2
    assert axis.get_xlabel() == "mean D, 90% bootstrap CI"
    assert "filled when BH-adjusted p < 0.1" in figure.texts[0].get_text()


def test_the_variation_plot_spreads_each_wording_on_its_own_row_and_colour():
    """Mutation review 2026-12-06: two wordings of one dataset sit 0.2 either side of its row,
    in two colours named in the legend, each with its interval and its mean D (not the
    tested mean)."""
    stats = stats_table({"variation": "replication", "mean_d": 0.3, "mean_d_test": 0.5},
                        {"variation": "synonym", "mean_d": 0.1, "mean_d_test": 0.5,
                         "ci_low": 0.0, "ci_high": 0.2})
    figure = d_by_variation_plot(stats, 0.95)
    axis = figure.axes[0]
    dots = {float(dot.get_xdata()[0]): (float(dot.get_ydata()[0]), dot.get_color())
            for dot in lines(axis, "o")}
    assert set(dots) == {0.3, 0.1}
    assert dots[0.3][0] == pytest.approx(-0.2) and dots[0.1][0] == pytest.approx(0.2)
    assert dots[0.3][1] != dots[0.1][1]
    intervals = sorted(list(line.get_xdata()) for line in axis.get_lines()
                       if line.get_marker() == "None" and line.get_linestyle() == "-")
    assert intervals == [[0.0, 0.2], [0.2, 0.4]]
    assert [text.get_text() for text in figure.legends[0].get_texts()] == ["replication",
                                                                           "synonym"]


def printed(stats: pl.DataFrame, alpha: float = 0.05, styles: bool = False) -> list[str]:
    console = Console(record=True, width=250, force_terminal=styles)
    print_iat_table(stats, 0.95, alpha, console)
    return console.export_text(styles=styles).splitlines()


def test_the_console_table_prints_each_column_from_its_own_field_in_order():
    """Mutation review 2026-12-06: rows sorted by model, category, dataset; the interval low to
    high; left out strict/lenient; one-group count; parse rate in percent; raw p apart from
    the adjusted one."""
    stats = stats_table({"dataset": "arms", "category": "race"},
                        {"dataset": "words", "category": "age", "n_left_out_strict": 7,
                         "n_left_out_lenient": 3, "n_one_group": 5, "parse_rate": 0.825,
                         "mean_d": -0.25, "ci_low": -0.41, "ci_high": -0.12,
                         "mean_d_test": 0.06, "p_value": 0.0123, "p_adjusted": 0.0456})
    rows = [line for line in printed(stats) if "│ m " in line]
    assert [("words" in row, "arms" in row) for row in rows] == [(True, False), (False, True)]
    cells = [cell.strip() for cell in rows[0].split("│")[1:-1]]
    assert cells == ["m", "age", "words", "40", "7/3", "5", "82%", "-0.25", "[-0.41, -0.12]",
                     "+0.06", "0.012", "0.046"]


def test_the_console_table_marks_in_bold_only_an_adjusted_p_below_alpha():
    """Mutation review 2026-12-06: bold at adjusted p 0.01; not at exactly alpha, nor where
    only the raw p is below it."""
    stats = stats_table({"dataset": "a", "p_value": 0.011, "p_adjusted": 0.013},
                        {"dataset": "b", "p_value": 0.011, "p_adjusted": 0.05},
                        {"dataset": "c", "p_value": 0.011, "p_adjusted": 0.2})
    bold = "\x1b[1m"
    rows = {line.split("│")[3].strip(): line for line in printed(stats, styles=True)
            if "0.011" in line}
    assert bold + "0.013" in rows["a"]
    assert bold not in rows["b"] and bold not in rows["c"]


def test_a_reading_takes_the_direction_of_the_tested_mean_and_names_one_group_answers():
    """Mutation review 2026-12-06: mean D -0.05 (one-group answers at -0.50) but a tested mean
    of +0.32 reads stereotype-consistent and says how it was tested; an adjusted p of exactly
    alpha shows no association; a p without a mean D is not testable."""
    row = stats_table({"mean_d": -0.05, "mean_d_test": 0.32, "n_one_group": 6}).row(
        0, named=True)
    assert iat_decision(row, 0.05, 1) == (
        "stereotype-consistent association (tested as D +0.32, its 6 one-group answers at 0; "
        "the interval is Bai et al.'s D)")
    assert iat_decision({**row, "n_one_group": 0, "mean_d_test": -0.32}, 0.05, 1) == \
        "counter-stereotypical association"
    assert iat_decision({**row, "n_one_group": 0, "p_adjusted": 0.05}, 0.05, 1) == \
        "no association shown"
    assert iat_decision({**row, "mean_d": None}, 0.05, 1) == \
        "not testable: too few parsed answers"


def test_headlines_rank_by_adjusted_p_and_say_each_rows_own_figures():
    """Mutation review 2026-12-06: smallest adjusted p first, rows without one last; the
    estimate is mean D (not the tested mean), the interval at the configured level, the
    detail the adjusted p, the metric the slugged dataset; one model is not named."""
    stats = stats_table(
        {"dataset": "a/b", "p_value": 0.02, "p_adjusted": 0.04, "mean_d": -0.05,
         "mean_d_test": 0.1, "n_one_group": 4},
        {"dataset": "none", "mean_d": None, "mean_d_test": None, "ci_low": None,
         "ci_high": None, "p_value": None, "p_adjusted": None},
        {"dataset": "first", "p_value": 0.001, "p_adjusted": 0.003})
    found = headlines(stats, IATConfig(confidence_level=0.9))
    assert [line.compared for line in found] == ["first (race)", "a/b (race)", "none (race)"]
    second = found[1]
    assert (second.estimate, second.low, second.high) == (-0.05, 0.2, 0.4)
    assert second.interval == "90% bootstrap CI"
    assert second.detail == "BH-adjusted p 0.04, n 40"
    assert second.metric == "iat/m/a_b/mean_d"
    assert found[2].detail == "n 40"


def test_a_row_is_read_against_the_tests_that_have_a_p_value():
    """Mutation review 2026-12-06: BH adjusts over the rows with a p-value. A row of 8 answers
    (smallest p 2/256) beside 7 rows without one is one test and can reach p < 0.05; counted
    as 8 tests it could not (8 x 2/256 = 0.0625) and would read not testable."""
    empty = {"mean_d": None, "mean_d_test": None, "ci_low": None, "ci_high": None,
             "p_value": None, "p_adjusted": None}
    stats = stats_table({"dataset": "small", "n": 8, "min_p": 2 / 256, "p_value": 0.3,
                         "p_adjusted": 0.3},
                        *({"dataset": f"empty{index}", **empty} for index in range(7)))
    (small,) = [line for line in headlines(stats, IATConfig()) if "small" in line.compared]
    assert small.decision == "no association shown"


def test_several_models_are_named_and_each_has_its_panel_in_order():
    """Mutation review 2026-12-06: with two models each headline names its model, and the
    dataset plot has one panel per model in name order."""
    stats = stats_table({"model": "b"}, {"model": "a"})
    assert sorted(line.compared for line in headlines(stats, IATConfig())) == [
        "names (race, a)", "names (race, b)"]
    figure = d_by_dataset_plot(stats, 0.95, 0.05)
    assert [axis.get_title() for axis in figure.axes] == ["a", "b"]


def test_the_findings_read_a_run_at_its_configured_alpha(tmp_path):
    """Mutation review 2026-12-06: an adjusted p of 0.07 is an association at iat.alpha 0.1."""
    run_dir = iat_run(tmp_path / "run", [("m", "race", "names", 40, 1.0, 0.3, 0.2, 0.4, 0.03,
                                          0.07)])
    cfg = AuditConfig(method="iat", iat=IATConfig(alpha=0.1))
    (line,) = findings(cfg, run_dir, {}).headlines
    assert line.decision == "stereotype-consistent association"
