"""nutpie's draws as a posterior and the divergence flags, without its full ArviZ conversion.

Why: a simulated audit (the planner, the calibration benchmarks) fits 4 judge imputations and
reads only their posterior draws. nutpie turns every sampled column into ArviZ groups through
``arviz.from_dict``: the posterior, about 20 sampler statistics and empty warm-up groups, with
xarray's per-variable overhead. On a simulated audit of the default design (300 draws after 300
tuning steps on 2 chains, median of 30 fits, 2026-12-01) ``nutpie.sample`` took 0.157 s, of
which the sampling was 0.094 s; reading the raw trace here takes 0.007 s (benchmarks/RESULTS.md,
"Planner speed", for the whole planner). Here the posterior variables and the
``diverging`` flag (irt/diagnostics.py counts it) are read from the trace's Arrow columns into one
Dataset each. The draws are nutpie's own: the same seed gives the same values as
``nutpie.sample`` (tests/methods/rasch/irt/test_raw_trace.py).

Private API, guarded: ``nutpie.sample(return_raw_trace=True)`` is public, but the trace's
``get_arrow_trace()`` and the columns' ``dims`` and ``shape`` metadata are what nutpie's own
conversion (``nutpie.sample._arrow_to_arviz``) reads, not documented. ``sample_draws`` takes this
path only with a nutpie version it was tested on (``TESTED_NUTPIE_VERSIONS``) and otherwise,
or when the trace is not what it expects, uses ``sample_compiled`` (nutpie's conversion) with one
warning: a change upstream costs speed, never a fit. What would retire the module: a nutpie option
to convert only the posterior, or one to leave out the sampler statistics.
"""

from __future__ import annotations

import logging

import numpy as np
import nutpie
import pyarrow
import xarray as xr
from xarray import DataTree

from audit.methods.rasch.irt.engines import nutpie_sample, sample_compiled, warn_once

logger = logging.getLogger(__name__)

# nutpie releases whose raw trace this module was written against and tested on
# (tests/methods/rasch/irt/test_raw_trace.py); compiled.py keeps its own list for its helpers.
TESTED_NUTPIE_VERSIONS = ("0.16.11",)
# Errors that mean "the raw trace is not laid out as this module expects".
_LAYOUT_ERRORS = (AttributeError, KeyError, TypeError, ValueError, IndexError)


def _column_array(batch, name: str, rows: slice) -> np.ndarray:
    """One Arrow column's rows as (rows, *its shape): nutpie stores a draw of a vector as a
    list, of a matrix as a flat list with its shape in the column's metadata."""
    column = batch.column(name)
    metadata = column.field.metadata or {}
    shape = tuple(int(size) for size in metadata.get(b"shape", b"").decode().split(",") if size)
    values = pyarrow.array(column).slice(rows.start, rows.stop - rows.start)
    if values.null_count:
        raise ValueError(f"column {name!r} has missing values")
    if hasattr(values, "flatten"):  # a list column: one list per draw
        values = values.flatten()
    return values.to_numpy(zero_copy_only=False).reshape((rows.stop - rows.start, *shape))


def _dims(batch, name: str) -> list[str]:
    metadata = batch.column(name).field.metadata or {}
    dims = metadata.get(b"dims", b"").decode()
    return dims.split(",") if dims else []


def _posterior_rows(stat_batch) -> slice:
    """The rows after tuning: nutpie keeps its tuning draws first in every chain's batch."""
    tuning = np.asarray(pyarrow.array(stat_batch.column("tuning")).to_numpy(zero_copy_only=False),
                        dtype=bool)
    tuned = int(tuning.sum())
    if tuning[:tuned].sum() != tuned:
        raise ValueError("tuning draws are not first in the trace")
    return slice(tuned, stat_batch.num_rows)


def trace_to_datatree(trace, compiled) -> DataTree:
    """The raw trace's posterior (the model's variables, not their unconstrained forms) and
    ``sample_stats.diverging``, each (chain, draw, ...), coordinates from the compiled model."""
    draw_batches, stat_batches = trace.get_arrow_trace()
    if len(draw_batches) != len(stat_batches) or not draw_batches:
        raise ValueError("the trace has no chains, or not one statistics batch per chain")
    rows = [_posterior_rows(stats) for stats in stat_batches]
    if len({part.stop - part.start for part in rows}) != 1:
        raise ValueError("the chains have different numbers of draws")
    skipped = set(compiled.reparameterized_names)
    names = [name for name in draw_batches[0].column_names if name not in skipped]
    coords = {name: np.asarray(values) for name, values in compiled.coords.items()}
    variables, used = {}, {}
    for name in names:
        dims = ["chain", "draw", *_dims(draw_batches[0], name)]
        data = np.stack([_column_array(batch, name, part)
                         for batch, part in zip(draw_batches, rows, strict=True)])
        variables[name] = (dims, data)
        for dim, size in zip(dims[2:], data.shape[2:], strict=True):
            used[dim] = coords[dim] if dim in coords else np.arange(size)
    draws = rows[0].stop - rows[0].start
    index = {"chain": np.arange(len(draw_batches)), "draw": np.arange(draws)}
    diverging = np.stack([_column_array(stats, "diverging", part)
                          for stats, part in zip(stat_batches, rows, strict=True)])
    return DataTree.from_dict({
        "posterior": xr.Dataset(variables, coords={**index, **used}),
        "sample_stats": xr.Dataset({"diverging": (("chain", "draw"), diverging)}, coords=index),
    })


def sample_draws(compiled, model, *, draws: int, tune: int, chains: int, cores: int,
                 target_accept: float, seed: int) -> DataTree:
    """nutpie's draws of ``compiled`` as the posterior and the divergence flags alone.

    For fits whose posterior is read and dropped (simulated audits): no observed or constant
    data groups, no other sampler statistics, no warm-up. ``model`` (the PyMC model compiled) is
    read only by the fallback, ``sample_compiled``, which adds PyMC's groups from it.
    """
    settings = dict(draws=draws, tune=tune, chains=chains, cores=cores,
                    target_accept=target_accept, seed=seed)
    if nutpie.__version__ in TESTED_NUTPIE_VERSIONS:
        trace = nutpie_sample(compiled, progress_bar=False, save_warmup=False,
                              return_raw_trace=True, **settings)
        try:
            return trace_to_datatree(trace, compiled)
        except _LAYOUT_ERRORS as error:
            reason = (f"nutpie's raw trace is not laid out as expected "
                      f"({type(error).__name__}: {error})")
    else:
        reason = (f"nutpie {nutpie.__version__} is not a version whose raw trace this was "
                  f"tested on ({', '.join(TESTED_NUTPIE_VERSIONS)})")
    warn_once(logger, f"simulated fits: {reason}; converting their draws with nutpie's own "
                      "ArviZ conversion instead (the same draws, slower)")
    return sample_compiled(compiled, model, save_warmup=False, **settings)
