"""A PyMC model compiled for nutpie with its two C callbacks cached on disk.

Why: ``nutpie.compile_pymc_model`` wraps PyTensor's numba function of the log density in two
``numba.cfunc`` closures that capture the model's data, so numba recompiles them (and every numpy
overload they use) in each new process: 5.4-6 s of a 50,000-response Rasch fit whose sampling
takes 4.4 s (FACTS.md; benchmarks/bench_fit.py). PyTensor already caches its own numba function
on disk under a key of the graph. Here the callbacks are generated as source that reads the data
through a pointer table instead of a closure, and registered with PyTensor's cache locator under
a key of that graph, the generated source and the library versions, so a second process with a
model of the same structure loads them instead of compiling them (1.1 s instead of 7.1 s for
the whole compile, 50,000 responses).

The sampled model, the initial points (nutpie's defaults: support point, jittered) and the
draws for a given seed are nutpie's own: the same seed gives the same draws as
``nutpie.compile_pymc_model`` (tests/methods/rasch/irt/test_compiled.py).

Private APIs, guarded. This module uses nutpie's internal helpers (``_make_functions``,
``_wrap_with_lock``, ``_prepare_dims_and_coords``, the fields of ``CompiledPyMCModel``) and
PyTensor's numba cache (``CACHED_SRC_FUNCTIONS``, ``compile_numba_function_src``). It is only
reached through ``engines.py``, which imports it lazily and runs ``internals_problem`` first:
``fit.engine=auto`` falls back to the public ``nutpie.compile_pymc_model`` with one warning when
the nutpie version is not one this was tested on or an internal moved, so a change upstream costs
speed, never a fit. What would retire the module: nutpie callbacks that numba can cache on disk
(pymc-devs/nutpie#334, "Make the numba wrapper functions disk-cacheable"; not in nutpie 0.16.11).
When PyTensor cannot cache the log density (an Op without a cache key, or
``PYTENSOR_FLAGS=numba__cache=False``), it falls back to ``nutpie.compile_pymc_model``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numba
import numpy as np
import nutpie
import pymc as pm
import pytensor
from nutpie import compile_pymc as nutpie_pymc
from pymc.initial_point import make_initial_point_fn
from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, compile_numba_function_src

logger = logging.getLogger(__name__)

# This module's own source, in the callbacks' cache key: a change here (a signature, the
# environment the generated source runs in, the code that writes it) compiles them afresh. It
# replaces a hand-bumped CALLBACK_VERSION, which a change that forgot the bump left serving the
# old callbacks from ~/.pytensor (as logit_ops.kernel_cache_key did for the kernels).
CALLBACK_MODULE_SOURCE = Path(__file__).read_bytes()
# nutpie releases whose internals this module was written against and tested on
# (tests/methods/rasch/irt/test_compiled.py). Another version takes the public path under
# fit.engine=auto: its private helpers may have moved even where the names below still exist.
TESTED_NUTPIE_VERSIONS = ("0.16.11",)
# What the module reads of nutpie's CompiledPyMCModel and its helpers.
_NUTPIE_HELPERS = ("_make_functions", "_wrap_with_lock", "_prepare_dims_and_coords",
                   "address_as_void_pointer", "CompiledPyMCModel")
_MODEL_FIELDS = {"shared_data", "shared_var_keys", "user_data", "n_expanded", "shape_info",
                 "logp_func", "expand_func", "reparameterized_names", "compiled_logp_func",
                 "compiled_expand_func", "initial_point_func"}


def internals_problem() -> str | None:
    """Why the cached path cannot run with the installed nutpie, or None when it can."""
    if nutpie.__version__ not in TESTED_NUTPIE_VERSIONS:
        return (f"nutpie {nutpie.__version__} is not a version the cached fit path was tested on "
                f"({', '.join(TESTED_NUTPIE_VERSIONS)})")
    missing = [name for name in _NUTPIE_HELPERS if not hasattr(nutpie_pymc, name)]
    fields = {field.name for field in dataclasses.fields(nutpie_pymc.CompiledPyMCModel)}
    missing += sorted(_MODEL_FIELDS - fields)
    if missing:
        return f"nutpie {nutpie.__version__} lacks {', '.join(missing)}"
    return None

# nuts-rs's C signatures (nutpie/compile_pymc.py): logp(dim, x, gradient out, logp out, data)
# and expand(dim, expanded dim, x, draws out, data); 0 means success.
LOGP_SIGNATURE = numba.types.int64(
    numba.types.uint64, numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double), numba.types.CPointer(numba.types.double),
    numba.types.voidptr)
EXPAND_SIGNATURE = numba.types.int64(
    numba.types.uint64, numba.types.uint64, numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double), numba.types.voidptr)
# Return codes of nutpie's own callbacks, which nuts-rs reads.
NONFINITE_GRADIENT, NONFINITE_LOGP, WRONG_DIMENSION, FAILED = 3, 4, -1, 1


def pointer_table(n_dim: int, n_expanded: int, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The callbacks' data argument: n_dim, n_expanded, then per array its address and shape.

    The arrays must stay alive as long as the table is used: ``CachedPyMCModel`` keeps them.
    """
    words = [n_dim, n_expanded]
    for array in arrays:
        words += [array.ctypes.data, *array.shape]
    return np.array(words, dtype=np.uint64)


def _offsets(arrays: Sequence[np.ndarray]) -> list[int]:
    """Where each array's address sits in ``pointer_table``."""
    offsets, offset = [], 2
    for array in arrays:
        offsets.append(offset)
        offset += 1 + array.ndim
    return offsets


def _read_arrays(arrays: Sequence[tuple[int, np.ndarray]]) -> tuple[list[str], list[str]]:
    """Source lines that view the (offset in the table, array) pairs without copying."""
    names, lines = [], []
    for position, (offset, array) in enumerate(arrays):
        shape = "".join(f"words[{offset + 1 + axis}], " for axis in range(array.ndim))
        names.append(f"data_{position}")
        lines.append(f"        data_{position} = numba.carray(as_pointer(words[{offset}]), "
                     f"({shape}), np.{array.dtype.name})")
    return names, lines


def _callback_source(header: str, n_words: int, guard: str,
                     arrays: Sequence[tuple[int, np.ndarray]], call: str,
                     body: Sequence[str]) -> str:
    """A callback: check the dimensions, view the data, call the PyTensor function, copy out."""
    names, lines = _read_arrays(arrays)
    return "\n".join([
        header,
        f"    words = numba.carray(table_, ({n_words},), np.uint64)",
        f"    if {guard}:",
        f"        return {WRONG_DIMENSION}",
        "    try:",
        *lines,
        "        x = numba.carray(x_, (dim,))",
        f"        {call}({', '.join(['x', *names])})",
        *body,
        "    except Exception:",
        f"        return {FAILED}",
        "    return 0",
    ])


def logp_source(n_words: int, arrays: Sequence[tuple[int, np.ndarray]]) -> str:
    return _callback_source(
        "def logp_callback(dim, x_, gradient_, logp_, table_):", n_words, "dim != words[0]",
        arrays, "logp, grad = log_density", [
            "        logp_[0] = logp",
            "        gradient = numba.carray(gradient_, (dim,))",
            "        finite = True",
            "        for i in range(dim):",
            "            gradient[i] = grad[i]",
            "            finite = finite and np.isfinite(grad[i])",
            "        if not finite:",
            f"            return {NONFINITE_GRADIENT}",
            "        if not np.isfinite(logp):",
            f"            return {NONFINITE_LOGP}",
        ])


def expand_source(n_words: int, arrays: Sequence[tuple[int, np.ndarray]]) -> str:
    return _callback_source(
        "def expand_callback(dim, expanded, x_, draws_, table_):", n_words,
        "dim != words[0] or expanded != words[1]", arrays, "(values,) = expand", [
            "        draws = numba.carray(draws_, (expanded,))",
            "        for i in range(expanded):",
            "            draws[i] = values[i]",
        ])


def callback_cache_key(inner_key: str, source: str) -> str:
    """The key of one callback: this module's source, the library versions, PyTensor's key of
    the inner function (its graph) and the generated source (the data layout)."""
    digest = hashlib.sha256(CALLBACK_MODULE_SOURCE)
    digest.update("\n".join([numba.__version__, nutpie.__version__, pytensor.__version__,
                             inner_key, source]).encode())
    return digest.hexdigest()


def cached_callback(source: str, name: str, inner_name: str, inner: Callable,
                    signature: numba.core.typing.templates.Signature):
    """The callback compiled or loaded from PyTensor's numba cache; None if ``inner`` has no key.

    The key (callback_cache_key) covers everything the compiled code depends on.
    """
    inner_key = CACHED_SRC_FUNCTIONS.get(getattr(inner, "py_func", None))
    if inner_key is None or not pytensor.config.numba__cache:
        return None
    key = callback_cache_key(inner_key, source)
    environment = {"__name__": __name__, "numba": numba, "np": np, inner_name: inner,
                   "as_pointer": nutpie_pymc.address_as_void_pointer}
    function = compile_numba_function_src(source, name, environment, cache_key=key)
    return numba.cfunc(signature, cache=True)(function)


@dataclasses.dataclass(frozen=True)
class CachedPyMCModel(nutpie_pymc.CompiledPyMCModel):
    """nutpie's compiled PyMC model whose data live in ``shared_data`` behind ``pointer_table``.

    ``shared_data`` is keyed by the shared variables' names (``shared_var_keys`` maps each
    variable to its name), where nutpie keys it by a random uuid.
    """

    def with_data(self, **updates) -> CachedPyMCModel:
        """New data of the same rank and dtype (the callbacks are compiled for both)."""
        shared = dict(self.shared_data)
        for name, value in updates.items():
            if name not in shared:
                raise KeyError(f"unknown data variable {name!r}; the model has {sorted(shared)}")
            old = shared[name]
            new = np.array(value, dtype=old.dtype, order="C", copy=True)
            if new.ndim != old.ndim:
                raise ValueError(
                    f"data variable {name!r} must have rank {old.ndim}, got {new.ndim}")
            new.flags.writeable = False
            shared[name] = new
        table = pointer_table(self.n_dim, self.n_expanded, list(shared.values()))
        return dataclasses.replace(self, shared_data=shared, user_data=table)


def _initial_point_function(model: pm.Model):
    """nutpie's default start: the support point with every free variable jittered, thread-safe."""
    return nutpie_pymc._wrap_with_lock(make_initial_point_fn(
        model=model, default_strategy="support_point", jitter_rvs=set(model.free_RVs),
        return_transformed=True))


def compile_model(model: pm.Model) -> nutpie_pymc.CompiledPyMCModel:
    """What ``nutpie.compile_pymc_model(model)`` returns, with cached callbacks when possible."""
    initial_point = _initial_point_function(model)
    (n_dim, n_expanded, logp_function, expand_function, initial_point_function, shape_info,
     reparameterized) = nutpie_pymc._make_functions(
        model, mode="NUMBA", compute_grad=True, join_expanded=True,
        pymc_initial_point_fn=initial_point)
    variables = list(dict.fromkeys([*logp_function.get_shared(), *expand_function.get_shared()]))
    names = [variable.name for variable in variables]
    if len(set(names)) != len(names):
        raise ValueError(f"shared variables of the model need unique names: {names}")
    arrays = [np.array(variable.get_value(), order="C", copy=True) for variable in variables]
    for array in arrays:
        array.flags.writeable = False
    layout = dict(zip(variables, zip(_offsets(arrays), arrays, strict=True), strict=True))
    table = pointer_table(n_dim, n_expanded, arrays)
    n_words = len(table)
    logp = cached_callback(
        logp_source(n_words, [layout[v] for v in logp_function.get_shared()]), "logp_callback",
        "log_density", logp_function.vm.jit_fn, LOGP_SIGNATURE)
    expand = cached_callback(
        expand_source(n_words, [layout[v] for v in expand_function.get_shared()]),
        "expand_callback", "expand", expand_function.vm.jit_fn, EXPAND_SIGNATURE)
    if logp is None or expand is None:
        logger.debug("PyTensor cannot cache this model's numba functions; nutpie compiles them")
        return nutpie.compile_pymc_model(model)
    dims, coords = nutpie_pymc._prepare_dims_and_coords(model, shape_info, reparameterized)
    return CachedPyMCModel(
        _n_dim=n_dim, dims=dims, _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info, strict=True)},
        compiled_logp_func=logp, compiled_expand_func=expand,
        initial_point_func=initial_point_function,
        shared_data=dict(zip(names, arrays, strict=True)),
        shared_var_keys={variable: variable.name for variable in variables},
        user_data=table, n_expanded=n_expanded,
        shape_info=shape_info, logp_func=logp_function, expand_func=expand_function,
        reparameterized_names=reparameterized)
