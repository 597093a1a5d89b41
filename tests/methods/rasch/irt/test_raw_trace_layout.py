"""irt/raw_trace.py on hand-built Arrow batches laid out as nutpie 0.16.11's raw trace: the
tuning rows first in each chain's batch, a vector or matrix draw as a flat list with its dims and
shape in the column's metadata. No sampling: test_raw_trace.py compares with nutpie's own (slow).
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from arro3.core import RecordBatch  # nutpie 0.16.11 depends on it: its traces are arro3

from audit.methods.rasch.irt import engines, raw_trace

TUNE, DRAWS = 2, 3


def _batch(columns: dict[str, tuple[list, dict]]) -> RecordBatch:
    """An arro3 batch (what nutpie's get_arrow_trace returns) of name: (values, metadata)."""
    arrays = [pa.array(values) for values, _ in columns.values()]
    fields = [pa.field(name, array.type, metadata=metadata or None)
              for (name, (_, metadata)), array in zip(columns.items(), arrays, strict=True)]
    return RecordBatch.from_arrow(pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)))


def _chain(chain: int, tuning: list[bool] | None = None, sigma: list | None = None):
    """One chain's draw and statistics batches. Row r of chain c: effect = 100c + 10r + (0, 1,
    2), matrix = 100c + 10r + (0..5) flat, sigma = 100c + r; rows 0 and 3 diverge."""
    rows = range(TUNE + DRAWS)
    draws = _batch({
        "effect": ([[100.0 * chain + 10 * row + k for k in range(3)] for row in rows],
                   {b"dims": b"level", b"shape": b"3"}),
        "matrix": ([[100.0 * chain + 10 * row + k for k in range(6)] for row in rows],
                   {b"dims": b"matrix_dim_0,matrix_dim_1", b"shape": b"2,3"}),
        "sigma_log__": ([0.0 for _ in rows], {}),
        "sigma": (sigma or [100.0 * chain + row for row in rows], {}),
    })
    stats = _batch({"tuning": (tuning or [row < TUNE for row in rows], {}),
                    "diverging": ([row in (0, 3) for row in rows], {}),
                    "step_size": ([0.5 for _ in rows], {})})
    return draws, stats


def _trace(*chains):
    draws, stats = zip(*chains, strict=True)
    return SimpleNamespace(get_arrow_trace=lambda: (list(draws), list(stats)))


COMPILED = SimpleNamespace(reparameterized_names=["sigma_log__"],
                           coords={"level": ["a", "b", "c"]})


def test_the_posterior_is_the_rows_after_tuning_each_draw_in_its_shape():
    """Bugs caught: the tuning rows kept or the wrong rows sliced, a matrix reshaped in Fortran
    order, the unconstrained sigma_log__ in the posterior, a coordinate or the chain numbering
    lost, a scalar given a shape or a dim it has not, the divergence flags read from the tuning
    rows."""
    tree = raw_trace.trace_to_datatree(_trace(_chain(0), _chain(1)), COMPILED)
    posterior = tree["posterior"].to_dataset()
    assert set(posterior.data_vars) == {"effect", "matrix", "sigma"}
    assert posterior["effect"].dims == ("chain", "draw", "level")
    assert posterior["level"].values.tolist() == ["a", "b", "c"]
    assert posterior["chain"].values.tolist() == [0, 1]
    assert posterior["draw"].values.tolist() == [0, 1, 2]
    assert posterior["sigma"].dims == ("chain", "draw")
    np.testing.assert_array_equal(posterior["sigma"].values, [[2, 3, 4], [102, 103, 104]])
    np.testing.assert_array_equal(posterior["effect"].values[1, 0], [120, 121, 122])
    np.testing.assert_array_equal(posterior["matrix"].values[0, 2], [[40, 41, 42], [43, 44, 45]])
    diverging = tree["sample_stats"]["diverging"]
    assert diverging.dims == ("chain", "draw")
    assert diverging.values.tolist() == [[False, True, False]] * 2


@pytest.mark.parametrize("chain", [
    _chain(1, tuning=[True, False, True, False, False]),  # a tuning row after a draw
    _chain(1, sigma=[1.0, 2.0, 3.0, None, 5.0]),  # a missing draw
], ids=["tuning-not-first", "missing-value"])
def test_a_trace_it_cannot_place_is_a_layout_error(chain):
    """Bugs caught: tuning rows that are not all first read as if they were (draws from tuning
    in the posterior), and a missing draw read as NaN instead of refused."""
    with pytest.raises(ValueError, match="tuning draws are not first|missing values"):
        raw_trace.trace_to_datatree(_trace(_chain(0), chain), COMPILED)


SETTINGS = {"draws": DRAWS, "tune": TUNE, "chains": 2, "cores": 1, "target_accept": 0.8,
            "seed": 7}


@pytest.fixture()
def sampler(monkeypatch):
    """nutpie.sample returning a finished sampler whose wait gives a raw trace (the arguments
    recorded), and sample_compiled (the fallback) recording its arguments; warn_once's memory
    cleared."""
    calls = {"nutpie": [], "fallback": []}
    trace = {"value": _trace(_chain(0), _chain(1))}

    def sample(compiled, **kwargs):  # nutpie's background sampler, finished
        calls["nutpie"].append(kwargs)
        return SimpleNamespace(wait=lambda: trace["value"], cancel=lambda: None)

    def fallback(compiled, model, **kwargs):
        calls["fallback"].append(kwargs)
        return "converted by nutpie"

    monkeypatch.setattr(raw_trace.nutpie, "sample", sample)
    monkeypatch.setattr(raw_trace, "sample_compiled", fallback)
    monkeypatch.setattr(engines, "_warned", set())
    return SimpleNamespace(calls=calls, trace=trace)


def test_a_tested_nutpie_returns_the_raw_traces_draws(sampler):
    tree = raw_trace.sample_draws(COMPILED, None, **SETTINGS)
    assert tree["posterior"]["sigma"].values.tolist() == [[2, 3, 4], [102, 103, 104]]
    assert sampler.calls["nutpie"] == [{"blocking": False, "progress_bar": False,
                                        "save_warmup": False, "return_raw_trace": True,
                                        **SETTINGS}]
    assert sampler.calls["fallback"] == []


def test_an_untested_nutpie_or_an_unreadable_trace_converts_with_one_warning(
        sampler, monkeypatch, caplog):
    """Bugs caught: the raw trace read from a nutpie it was not tested on, a layout error that
    is a ValueError crashing the fit instead of falling back, a warning per fit of a plan loop,
    and the fallback converting the warm-up draws no simulated fit reads."""
    sampler.trace["value"] = _trace(_chain(0), _chain(1, tuning=[True, False, True, False,
                                                                 False]))
    with caplog.at_level(logging.WARNING, logger=raw_trace.__name__):
        for _ in range(2):
            assert raw_trace.sample_draws(COMPILED, None, **SETTINGS) == "converted by nutpie"
    assert [record.getMessage().split(" (")[0] for record in caplog.records] == [
        "simulated fits: nutpie's raw trace is not laid out as expected"]
    monkeypatch.setattr(raw_trace, "TESTED_NUTPIE_VERSIONS", ("0.0.0",))
    sampler.calls["nutpie"].clear()
    assert raw_trace.sample_draws(COMPILED, None, **SETTINGS) == "converted by nutpie"
    assert sampler.calls["nutpie"] == []
    assert "is not a version whose raw trace this was tested on (0.0.0)" in caplog.text
    assert sampler.calls["fallback"] == [{"save_warmup": False, **SETTINGS}] * 3
