"""The report's figures (report/plots.py) read back from their artists, from small hand-made
tables. Mutation review 2026-12-06: each test fails under a change the other tests let pass."""

from __future__ import annotations

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
from xarray import DataTree

from audit.methods.rasch.report.plots import (
    _draws_of,
    contrast_forest_plot,
    diagnosed_draws,
    favourable_heatmap,
    label_distribution_plot,
    sampling_plots,
    worst_parameters,
)

CONTRAST = {"model_name": "m", "attribute": "race", "level_a": "Black", "level_b": "White",
            "mean": -0.6, "hdi_low": -0.9, "hdi_high": -0.2, "rope_low": -0.1,
            "rope_high": 0.1, "decision": "different"}
FAMILYWISE = {**CONTRAST, "familywise_alpha": 0.05, "family_size": 7.0,
              "decision_prob": 1 - 0.05 / 7, "decision_low": -1.1, "decision_high": 0.05,
              "decision": "undecided"}


def _legend_texts(figure) -> list[str]:
    return [text.get_text() for legend in figure.legends for text in legend.get_texts()]


def test_a_contrast_of_several_models_is_named_with_its_model():
    rows = pl.DataFrame([CONTRAST, {**CONTRAST, "model_name": "n"}])
    figure = contrast_forest_plot(rows, 0.94)
    assert [tick.get_text() for tick in figure.axes[0].get_yticklabels()] == [
        "n | race: Black vs White", "m | race: Black vs White"]
    plt.close(figure)


def test_a_second_outcome_names_its_contrasts_and_a_single_outcome_does_not():
    two = pl.DataFrame([{**CONTRAST, "outcome": "favourable"},
                        {**CONTRAST, "outcome": "refusal"}])
    figure = contrast_forest_plot(two, 0.94)
    assert [tick.get_text() for tick in figure.axes[0].get_yticklabels()] == [
        "race: Black vs White (refusal)", "race: Black vs White (favourable)"]
    one = contrast_forest_plot(pl.DataFrame([{**CONTRAST, "outcome": "favourable"}]), 0.94)
    assert [tick.get_text() for tick in one.axes[0].get_yticklabels()] == [
        "race: Black vs White"]
    plt.close(figure)
    plt.close(one)


def test_each_contrast_is_drawn_on_its_own_row_with_its_mean_as_the_point():
    rows = pl.DataFrame([CONTRAST, {**CONTRAST, "attribute": "gender", "level_a": "woman",
                                    "level_b": "man", "mean": 0.4, "hdi_low": 0.3,
                                    "hdi_high": 0.5}])
    figure = contrast_forest_plot(rows, 0.94)
    axis = figure.axes[0]
    row_of = {tick.get_text(): tick.get_position()[1] for tick in axis.get_yticklabels()}
    intervals = {tuple(line.get_xdata()): line.get_ydata()[0] for line in axis.lines
                 if len(line.get_xdata()) == 2}
    assert intervals[(-0.9, -0.2)] == row_of["race: Black vs White"]
    assert intervals[(0.3, 0.5)] == row_of["gender: woman vs man"]
    points = {(float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in axis.lines
              if line.get_marker() == "o"}
    assert points == {(-0.6, row_of["race: Black vs White"]),
                      (0.4, row_of["gender: woman vs man"])}
    plt.close(figure)


def test_the_legend_names_the_mass_of_the_interval_decided_on():
    figure = contrast_forest_plot(pl.DataFrame([FAMILYWISE]), 0.94)
    assert any(text.startswith("decided on: 99.29% ") for text in _legend_texts(figure))
    plain = contrast_forest_plot(pl.DataFrame([CONTRAST]), 0.94)
    assert not any(text.startswith("decided on") for text in _legend_texts(plain))
    plt.close(figure)
    plt.close(plain)


def test_the_heatmap_shows_each_rate_in_its_sorted_row_and_column_on_a_zero_to_one_scale():
    rates = pl.DataFrame({"respondent_id": ["m/c", "m/b", "m/a"], "item_id": ["i2", "i1", "i1"],
                          "rate": [0.2, 0.7, 1.0]})
    figure = favourable_heatmap(rates)
    axis = figure.axes[0]
    assert [tick.get_text() for tick in axis.get_yticklabels()] == ["m/a", "m/b", "m/c"]
    assert [tick.get_text() for tick in axis.get_xticklabels()] == ["i1", "i2"]
    image = axis.images[0]
    grid = image.get_array()
    assert grid[0, 0] == 1.0 and grid[1, 0] == 0.7 and grid[2, 1] == 0.2
    assert grid.mask[0, 1] and image.get_clim() == (0, 1)
    plt.close(figure)


def test_the_label_distribution_stacks_shares_unparseable_included_and_judge_failures_out():
    prompts = pl.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4", "p5"],
                            "respondent_id": ["m/a"] * 5})
    labels = pl.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4", "p5"],
                           "label": ["favourable", "favourable", "unfavourable", "unparseable",
                                     "judge_failed"]})
    figure = label_distribution_plot(prompts, labels)
    bars = {container.get_label(): (container[0].get_x(), container[0].get_width())
            for container in figure.axes[0].containers}
    assert bars["favourable"] == pytest.approx((0.0, 0.5))
    assert bars["unfavourable"] == pytest.approx((0.5, 0.25))
    assert bars["unparseable"] == pytest.approx((0.75, 0.25))
    plt.close(figure)


def test_of_parameters_with_equal_r_hat_the_lowest_ess_is_the_worst():
    summary = pl.DataFrame({"parameter": ["a", "b", "c"], "r_hat": [1.2, 1.2, 1.1],
                            "ess_bulk": [300.0, 50.0, 10.0]})
    assert worst_parameters(summary, 2) == ["b", "a"]


def _posterior() -> DataTree:
    rng = np.random.default_rng(1)
    return az.from_dict({"posterior": {"theta": rng.normal(size=(2, 30, 2)),
                                       "beta": rng.normal(size=(2, 30, 2, 2))}},
                        coords={"respondent": ["m/a", "m/b"], "attribute": ["race", "gender"],
                                "level": ["x", "y"]},
                        dims={"theta": ["respondent"], "beta": ["attribute", "level"]})


def test_a_summary_row_maps_to_draws_only_with_one_label_per_dimension():
    posterior = _posterior()["posterior"].to_dataset()
    assert _draws_of(posterior, "beta[gender, y]").shape == (2, 30)
    assert _draws_of(posterior, "theta") is None  # no labels for its respondent dimension
    assert _draws_of(posterior, "theta[m/a, x]") is None
    assert _draws_of(posterior, "beta[gender]") is None


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_an_imputation_whose_chains_do_not_move_is_the_one_shown():
    """Its R-hat is NaN (0/0), counted as the worst: ArviZ's NaN compared as never higher, so
    the first imputation was shown."""
    from audit.methods.rasch.irt.judge_cut import pool_imputations

    moving = np.random.default_rng(0).normal(size=(2, 50, 1))
    stuck = np.full((2, 50, 1), 3.0)
    pooled = pool_imputations([
        az.from_dict({"posterior": {"theta": draws}}, coords={"respondent": ["m/a"]},
                     dims={"theta": ["respondent"]}) for draws in (moving, stuck)])
    summary = pl.DataFrame({"parameter": ["theta[m/a]"], "r_hat": [1.3], "ess_bulk": [50.0]})
    shown = diagnosed_draws(pooled["posterior"].to_dataset(), summary)["theta[m\u2215a]"]
    assert float(shown.std()) == 0.0 and float(shown.mean()) == 3.0


def test_the_sampling_plots_of_one_run_are_two_sized_figures_without_imputations():
    summary = pl.DataFrame({"parameter": ["theta[m/a]", "theta[m/b]", "beta[race, x]"],
                            "r_hat": [1.3, 1.2, 1.1], "ess_bulk": [50.0] * 3})
    figures = sampling_plots(_posterior(), summary)
    trace, rank = figures["trace_plot.png"], figures["rank_plot.png"]
    assert trace is not rank and "judge imputation" not in trace.get_suptitle()
    assert rank.get_suptitle().startswith("Rank ECDF")
    assert tuple(trace.get_size_inches()) == pytest.approx((9, 6.0))
    assert tuple(rank.get_size_inches()) == pytest.approx((9, 5.2))
    assert all(axis.title.get_fontsize() == 9 for axis in trace.axes)
    for figure in figures.values():
        plt.close(figure)
    unmapped = pl.DataFrame({"parameter": ["sigma"], "r_hat": [1.3], "ess_bulk": [50.0]})
    assert sampling_plots(_posterior(), unmapped) == {}
