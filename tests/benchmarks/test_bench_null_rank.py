"""benchmarks/bench_null_rank.py's unbalanced designs (--drop-texts): which texts are left out and
which cells are lost."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from audit.methods.rasch.simulation import default_shaped_prompts


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_null_rank")


@pytest.fixture(scope="module")
def design() -> pl.DataFrame:
    return default_shaped_prompts(texts_per_cell=2, null_count=4, items=12, replicates=1)


def personas(prompts: pl.DataFrame, kind: str) -> set[str]:
    return set(prompts.filter(pl.col("persona_kind") == kind).get_column("persona_id"))


def test_only_explicit_texts_are_left_out_and_as_many_as_asked(bench, design):
    """Bug caught: a draw over every persona (a null or the baseline left out, which changes the
    reference the rank is read against) or over prompt rows instead of texts (a persona kept
    with some of its items), or a text left out at --drop-texts 0."""
    left = bench.drop_texts(design, 5, np.random.default_rng(3))
    assert personas(left, "explicit") < personas(design, "explicit")
    assert len(personas(design, "explicit") - personas(left, "explicit")) == 5
    assert personas(left, "null") == personas(design, "null") and personas(left, "baseline")
    kept = left.group_by("persona_id").len()
    assert (kept["len"] == 12).all()
    assert bench.drop_texts(design, 0, np.random.default_rng(3)).equals(design)


def test_a_lost_cell_is_counted_and_too_many_left_out_is_refused(bench, design):
    """Bug caught: counting cells from the texts left instead of the default design's eight, so
    an audit that lost a whole cell reads as balanced."""
    assert bench.empty_cells(design) == 0
    one_cell = ["Black_woman_0", "Black_woman_1"]
    assert bench.empty_cells(design.filter(~pl.col("persona_id").is_in(one_cell))) == 1
    with pytest.raises(ValueError, match="--drop-texts 16: the design has 16 explicit texts"):
        bench.drop_texts(design, 16, np.random.default_rng(0))
