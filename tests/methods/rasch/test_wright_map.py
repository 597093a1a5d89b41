"""The Wright map: names clear of each other, near their points, the one model named once; its
scale, order and histogram (mutation review 2026-12-06)."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.methods.rasch.report.plots import spread_labels, wright_map


def _summary(thetas: dict[str, float], items: dict[str, float]) -> pl.DataFrame:
    names = [f"theta[{name}]" for name in thetas] + [f"b[{name}]" for name in items]
    means = list(thetas.values()) + list(items.values())
    return pl.DataFrame({"parameter": names, "mean": means, "sd": [0.3] * len(names),
                         "hdi_low": [m - 0.5 for m in means], "hdi_high": [m + 0.5 for m in means],
                         "r_hat": [1.0] * len(names), "ess_bulk": [500.0] * len(names)},
                        schema_overrides={"mean": pl.Float64})


def test_crowded_respondents_get_names_that_do_not_overlap():
    """Bug caught: names sat at their own thetas in two columns, so the default audit's 21
    respondents, most within half a logit, printed on top of each other."""
    rng = np.random.default_rng(0)
    model = "qwen2.5-0.5b-instruct-q4_k_m"
    personas = ["baseline"] + [f"{gender}_{race}_{text}" for gender, race, text in
                               itertools.product(["man", "woman"],
                                                 ["asian", "black", "hispanic", "white"],
                                                 ["explicit", "identifying"])]
    personas += [f"null_{index}" for index in range(4)]
    thetas = {f"{model}/{name}": float(value)
              for name, value in zip(personas, rng.normal(0.0, 0.15, len(personas)))}
    items = {f"item_{index:02d}": float(value) for index, value in enumerate(rng.normal(0, 2, 12))}
    figure = wright_map(_summary(thetas, items))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axis in figure.axes:
        boxes = [text.get_window_extent(renderer) for text in axis.texts]
        assert len(boxes) in (len(personas), len(items))
        for first, second in itertools.combinations(boxes, 2):
            assert not first.overlaps(second)
    left = figure.axes[0]
    assert {text.get_text() for text in left.texts} == set(personas)
    assert model in left.get_xlabel()
    plt.close(figure)


def test_respondents_of_several_models_keep_their_model_in_the_name():
    figure = wright_map(_summary({"org/m1/a": 0.0, "org/m2/a": 0.5}, {"i1": 1.0}))
    assert {text.get_text() for text in figure.axes[0].texts} == {"org/m1/a", "org/m2/a"}
    assert figure.axes[0].get_xlabel() == "respondents (posterior mean theta)"
    plt.close(figure)


def test_two_equal_values_are_spread_evenly_about_them():
    assert np.allclose(spread_labels(np.array([0.0, 0.0]), 1.0, -10.0, 10.0), [-0.5, 0.5])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=40), st.floats(0.01, 0.2))
def test_spread_labels_keep_their_spacing_and_bounds_and_move_no_name_that_is_clear(values,
                                                                                   spacing):
    values = np.sort(np.array(values))
    low, high = -6.0, 6.0
    heights = spread_labels(values, spacing, low, high)
    assert np.all(np.diff(heights) >= spacing - 1e-9)
    assert heights[0] >= low - 1e-9 and heights[-1] <= high + 1e-9
    # Closest heights: names already clear of each other stay at their values.
    if np.all(np.diff(values) >= spacing):
        assert np.allclose(heights, values)


def test_a_mean_that_is_not_a_number_leaves_the_map_drawn_without_it():
    """The scale is set from the means: one NaN made the axis limits NaN, a ValueError from
    matplotlib in the report stage."""
    figure = wright_map(_summary({"m/a": 0.0, "m/b": float("nan"), "m/c": 0.5}, {"i1": 1.0}))
    assert {text.get_text() for text in figure.axes[0].texts} == {"a", "c"}
    plt.close(figure)


def test_spread_labels_stay_inside_both_bounds_when_they_crowd_an_end():
    top = spread_labels(np.full(10, 5.0), 0.5, -6.0, 6.0)
    assert np.isclose(top[-1], 6.0) and np.allclose(np.diff(top), 0.5)
    bottom = spread_labels(np.full(10, -5.0), 0.5, -6.0, 6.0)
    assert np.isclose(bottom[0], -6.0) and np.allclose(np.diff(bottom), 0.5)


def test_names_that_cannot_fit_start_at_the_lower_bound():
    assert np.allclose(spread_labels(np.zeros(5), 1.0, 0.0, 2.0), [0, 1, 2, 3, 4])


def test_no_values_give_no_heights():
    assert spread_labels(np.array([]), 1.0, 0.0, 2.0).size == 0


def test_a_wright_map_places_names_in_the_order_of_their_means():
    figure = wright_map(_summary({"m/a": 1.0, "m/b": -1.0, "m/c": 0.0}, {"i1": 0.5}))
    heights = {text.get_text(): text.xy[1] for text in figure.axes[0].texts}
    assert heights["b"] < heights["c"] < heights["a"]
    plt.close(figure)


def test_respondents_without_a_model_prefix_keep_their_names():
    figure = wright_map(_summary({"a": 0.0, "b": 0.5}, {"i1": 1.0}))
    assert {text.get_text() for text in figure.axes[0].texts} == {"a", "b"}
    assert figure.axes[0].get_xlabel() == "respondents (posterior mean theta)"
    plt.close(figure)


def test_the_wright_maps_scale_has_a_margin_of_five_percent_of_at_least_one_logit():
    figure = wright_map(_summary({"m/a": 0.0}, {"i1": 0.5}))
    assert figure.axes[0].get_ylim() == pytest.approx((-0.05, 0.55))
    wide = wright_map(_summary({"m/a": -2.0}, {"i1": 2.0}))
    assert wide.axes[0].get_ylim() == pytest.approx((-2.2, 2.2))
    plt.close(figure)
    plt.close(wide)


def test_a_wright_map_with_no_items_or_respondents_is_drawn_on_a_unit_scale():
    figure = wright_map(_summary({}, {"i1": 1.0}).filter(pl.col("parameter") == "sigma"))
    assert figure.axes[0].get_ylim() == (-1.0, 1.0)
    assert not figure.axes[0].texts and not figure.axes[1].texts
    plt.close(figure)


def test_forty_respondents_and_items_are_named_and_forty_one_are_a_histogram():
    names = {f"m/p{index}": index / 10 for index in range(40)}
    items = {f"i{index}": index / 10 for index in range(40)}
    named = wright_map(_summary(names, items))
    assert [len(axis.texts) for axis in named.axes] == [40, 40]
    names["m/p40"], items["i40"] = 4.0, 4.0
    counted = wright_map(_summary(names, items))
    assert [len(axis.texts) for axis in counted.axes] == [0, 0]
    low, high = counted.axes[0].get_xlim()
    assert low > high  # the respondents' histogram grows to the left, towards its axis
    plt.close(named)
    plt.close(counted)
