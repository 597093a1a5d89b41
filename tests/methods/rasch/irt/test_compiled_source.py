"""The cached callbacks' parts that need no numba compile or nutpie sampling (irt/compiled.py):
the internals check, the pointer table, the generated callback source (run as plain Python on
ctypes pointers), ``with_data`` and the cache key. test_compiled.py runs the whole (slow)."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numba
import numpy as np
import pymc as pm
import pytensor
import pytest

from audit.methods.rasch.irt import compiled
from audit.methods.rasch.irt.compiled import (
    FAILED,
    NONFINITE_GRADIENT,
    NONFINITE_LOGP,
    WRONG_DIMENSION,
    CachedPyMCModel,
    cached_callback,
    compile_model,
    expand_source,
    logp_source,
    pointer_table,
)

DOUBLES = ctypes.POINTER(ctypes.c_double)


def _arrays() -> list[np.ndarray]:
    """Three dtypes and three ranks, so a wrong offset, shape or dtype reads other numbers."""
    return [np.arange(6.0).reshape(2, 3), np.array([7, 8, 9], dtype=np.int32),
            np.array(0.25)]


def _callbacks(arrays: list[np.ndarray], n_dim: int, n_expanded: int, inner):
    """The generated logp and expand callbacks as Python functions, with their pointer table."""
    table = pointer_table(n_dim, n_expanded, arrays)
    layout = list(zip(compiled._offsets(arrays), arrays, strict=True))
    namespace = {"numba": numba, "np": np, "log_density": inner, "expand": inner,
                 "as_pointer": lambda address: ctypes.c_void_p(int(address))}
    exec(logp_source(len(table), layout), namespace)  # noqa: S102 (the module's own source)
    exec(expand_source(len(table), layout), namespace)  # noqa: S102
    return namespace["logp_callback"], namespace["expand_callback"], table


def _call_logp(callback, table, x: np.ndarray, dim: int | None = None):
    gradient, logp = np.zeros(x.size), np.zeros(1)
    code = callback(x.size if dim is None else dim, x.ctypes.data_as(DOUBLES),
                    gradient.ctypes.data_as(DOUBLES), logp.ctypes.data_as(DOUBLES),
                    table.ctypes.data_as(ctypes.c_void_p))
    return code, float(logp[0]), gradient


def test_the_internals_check_passes_here_and_names_what_moved(monkeypatch) -> None:
    """Catches the check inverted (the tested nutpie refused, so auto never takes the cached
    path) and a moved helper or CompiledPyMCModel field left out of the reason."""
    assert compiled.internals_problem() is None
    monkeypatch.setattr(compiled, "_NUTPIE_HELPERS", (*compiled._NUTPIE_HELPERS, "_gone"))
    monkeypatch.setattr(compiled, "_MODEL_FIELDS", {*compiled._MODEL_FIELDS, "gone_field"})
    assert compiled.internals_problem().endswith("lacks _gone, gone_field")
    monkeypatch.setattr(compiled, "TESTED_NUTPIE_VERSIONS", ("0.0.0",))
    assert "is not a version the cached fit path was tested on (0.0.0)" in \
        compiled.internals_problem()


def test_pointer_table_holds_the_dimensions_then_each_arrays_address_and_shape() -> None:
    """Catches n_dim and n_expanded swapped, a shape left out or an offset that does not point
    at its array's address (an array's shape words counted wrong)."""
    arrays = _arrays()
    table = pointer_table(5, 4, arrays)
    assert table.tolist() == [5, 4, arrays[0].ctypes.data, 2, 3, arrays[1].ctypes.data, 3,
                              arrays[2].ctypes.data]
    assert [int(table[offset]) for offset in compiled._offsets(arrays)] == \
        [array.ctypes.data for array in arrays]


def test_generated_callbacks_see_the_data_and_copy_out_logp_gradient_and_draws() -> None:
    """Catches a wrong table offset, shape word or dtype in the data views, the gradient or
    draws not copied out, and the dimension guards checking the wrong word or only one
    dimension. The generated source runs as Python on ctypes pointers, as nuts-rs calls it."""
    arrays = _arrays()
    seen = []

    def inner(x, matrix, groups, scalar):
        seen.append((x.copy(), matrix.copy(), groups.copy(), scalar.copy()))
        total = float(x.sum() + matrix.sum() + groups.sum() + scalar)
        return total, 2.0 * x

    logp, expand, table = _callbacks(arrays, 2, 3, inner)
    x = np.array([1.0, -2.0])
    code, value, gradient = _call_logp(logp, table, x)
    assert code == 0 and value == pytest.approx(-1.0 + 15.0 + 24 + 0.25)
    assert gradient.tolist() == [2.0, -4.0]
    for got, expected in zip(seen[0], [x, *arrays], strict=True):
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype and got.shape == expected.shape

    def call_expand(dim: int, expanded: int) -> tuple[int, list[float]]:
        draws = np.zeros(3)
        code = expand(dim, expanded, x.ctypes.data_as(DOUBLES), draws.ctypes.data_as(DOUBLES),
                      table.ctypes.data_as(ctypes.c_void_p))
        return code, draws.tolist()

    def expand_inner(x, matrix, groups, scalar):
        return (np.array([x[0], matrix[1, 2], groups[2] + scalar]),)

    _, expand, _ = _callbacks(arrays, 2, 3, expand_inner)
    assert call_expand(2, 3) == (0, [1.0, 5.0, 9.25])
    assert call_expand(3, 3)[0] == WRONG_DIMENSION
    assert call_expand(2, 2)[0] == WRONG_DIMENSION
    assert _call_logp(logp, table, x, dim=1)[0] == WRONG_DIMENSION


# nutpie's own logp callback's codes (nutpie/compile_pymc.py), which nuts-rs reads.
@pytest.mark.parametrize(("returned", "code"), [
    ((1.0, np.array([np.nan, 0.0])), 3),
    ((1.0, np.array([0.0, np.inf])), 3),
    ((np.inf, np.zeros(2)), 4),
    ((np.nan, np.array([np.nan, 0.0])), 3),
    (None, 1),
])
def test_the_logp_callback_reports_what_nuts_rs_reads(returned, code) -> None:
    """Catches a non-finite gradient element missed (only the last one checked, or `or` for
    `and`), a non-finite log density passed as success, the two codes swapped, or an exception
    escaping the callback instead of its failure code."""
    assert (NONFINITE_GRADIENT, NONFINITE_LOGP, FAILED) == (3, 4, 1)

    def inner(*_):
        if returned is None:
            raise FloatingPointError("boom")
        return returned

    logp, expand, table = _callbacks(_arrays(), 2, 3, inner)
    assert _call_logp(logp, table, np.zeros(2))[0] == code
    if returned is None:
        x, draws = np.zeros(2), np.zeros(3)
        assert expand(2, 3, x.ctypes.data_as(DOUBLES), draws.ctypes.data_as(DOUBLES),
                      table.ctypes.data_as(ctypes.c_void_p)) == FAILED


def _cached_model(arrays: list[np.ndarray]) -> CachedPyMCModel:
    """A CachedPyMCModel holding only what with_data reads (no compiled callbacks)."""
    shared = dict(zip(("matrix", "groups", "scalar"), arrays, strict=True))
    return CachedPyMCModel(
        dims=None, reparameterized_names=None, compiled_logp_func=None,
        compiled_expand_func=None, initial_point_func=None, shared_data=shared,
        shared_var_keys={}, user_data=pointer_table(2, 3, arrays), n_expanded=3,
        shape_info=None, logp_func=None, expand_func=None, _n_dim=2, _shapes={}, _coords=None)


def test_with_data_swaps_a_private_read_only_copy_into_the_pointer_table() -> None:
    """Catches the table left pointing at the old arrays (the sampler would read the first
    data set), the new values kept in their own dtype (int64 read as int32), the caller's
    array used in place (then frozen under the caller, and changed under the sampler when the
    caller writes to it), a writeable copy, and the name and rank checks dropped."""
    arrays = _arrays()
    model = _cached_model(arrays)
    groups = np.array([4, 5, 6, 7, 8], dtype=np.int32)
    swapped = model.with_data(groups=groups)
    new = swapped.shared_data["groups"]
    assert new.dtype == np.int32 and new.tolist() == [4, 5, 6, 7, 8]
    assert not new.flags.writeable and groups.flags.writeable
    groups[0] = 99
    assert new[0] == 4
    assert swapped.user_data.tolist() == pointer_table(2, 3, [arrays[0], new, arrays[2]]).tolist()
    assert model.shared_data["groups"] is arrays[1]  # the original model is untouched
    assert swapped.with_data(groups=[1, 2]).shared_data["groups"].dtype == np.int32
    with pytest.raises(KeyError, match="unknown data variable 'other'; the model has"):
        model.with_data(other=np.zeros(3))
    with pytest.raises(ValueError, match="data variable 'matrix' must have rank 2, got 1"):
        model.with_data(matrix=np.zeros(3))


def test_the_cache_key_covers_the_inner_graph_the_source_and_the_switch(monkeypatch) -> None:
    """Catches a key that leaves out the generated source (two data layouts of one graph would
    share a compiled callback and read each other's pointer tables) or PyTensor's key of the
    graph, and a callback compiled when PyTensor cannot cache the inner function or caching
    is off."""
    keys = []

    def compile_source(source, name, environment, cache_key):
        keys.append(cache_key)
        return environment[name] if name in environment else (lambda: None)

    monkeypatch.setattr(compiled, "compile_numba_function_src", compile_source)
    monkeypatch.setattr(compiled.numba, "cfunc", lambda signature, cache: lambda function: function)

    def inner():
        return None

    holder = SimpleNamespace(py_func=inner)  # what numba.njit returns, as far as read
    signature = compiled.LOGP_SIGNATURE
    assert cached_callback("a", "cb", "f", holder, signature) is None  # inner has no key
    monkeypatch.setitem(compiled.CACHED_SRC_FUNCTIONS, inner, "graph-1")
    for source in ("a", "b", "a"):
        assert cached_callback(source, "cb", "f", holder, signature) is not None
    monkeypatch.setitem(compiled.CACHED_SRC_FUNCTIONS, inner, "graph-2")
    cached_callback("a", "cb", "f", holder, signature)
    assert keys[0] != keys[1] and keys[0] == keys[2] and keys[3] not in keys[:3]
    with pytensor.config.change_flags(numba__cache=False):
        assert cached_callback("a", "cb", "f", holder, signature) is None
    assert len(keys) == 4


def test_shared_variables_with_one_name_are_refused_before_any_callback() -> None:
    """Catches the uniqueness check inverted or dropped: with_data and shared_data key the
    data by name, so two shared variables named alike would overwrite each other."""
    with pm.Model() as model:
        first = pytensor.shared(np.zeros(3), name="d")
        second = pytensor.shared(np.ones(2), name="d")
        mu = pm.Normal("mu")
        pm.Normal("y", mu + first.sum() + second.sum(), 1.0, observed=np.zeros(4))
    with pytest.raises(ValueError, match=r"need unique names: \['d', 'd'\]"):
        compile_model(model)


def test_the_start_is_nutpies_jittered_support_point() -> None:
    """Catches the jitter dropped (every chain would start at one point, and the draws for a
    seed would differ from nutpie's own) or the start on the constrained scale."""
    with pm.Model() as model:
        pm.HalfNormal("sigma", 1.0)
        pm.Normal("mu", 0.0, 1.0, shape=2)
    start = compiled._initial_point_function(model)
    first, again, other = start(1), start(1), start(2)
    assert set(first) == {"sigma_log__", "mu"}  # the sampler's (unconstrained) space
    for name, value in first.items():
        np.testing.assert_array_equal(value, again[name])
        assert not np.allclose(value, other[name]) and np.all(np.abs(value) <= 1.0), name
