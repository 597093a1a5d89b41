"""benchmarks/bench_adaptive.py: how it judges the fixed design's decisions against the truth."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_adaptive")


@pytest.mark.parametrize(("decision", "mean", "gap", "right"), [
    ("different", -0.8, 0.0, False),      # a false `different`: the gap is zero
    ("different", -0.8, -1.0, True),      # found, with the planted sign
    ("different", 0.8, -1.0, False),      # found, with the wrong sign
    ("equivalent", 0.05, 0.0, True),      # zero lies inside the ROPE
    ("equivalent", 0.05, 0.5, False),     # a planted 0.5 does not
    ("equivalent", 0.05, -0.15, True),    # inside the ROPE's lower half too
])
def test_a_fixed_decision_is_right_only_where_it_matches_the_planted_gap(bench, decision, mean,
                                                                        gap, right):
    """Bugs caught: a false `different` on a zero gap counted as right (the split would hide
    that the adaptive run's disagreements are the fixed design's errors), the sign ignored, or
    the ROPE read one-sided."""
    row = {"fixed": decision, "mean": mean, "rope_high": 0.1814}
    assert bench.fixed_was_right(row, gap) is right
