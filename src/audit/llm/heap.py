"""Keeping the garbage collector out of the way while requests are in flight."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Python 3.12 starts with a few hundred objects in the permanent generation (3.13 with none); only
# a freeze beyond that is a caller's own, which heap_frozen must leave in place.
_FROZEN_AT_IMPORT = gc.get_freeze_count()


@contextmanager
def heap_frozen() -> Iterator[None]:
    """Hide the objects that exist before sending from the garbage collector while requests are
    in flight. A full collection walks every object in the process (the imported libraries:
    about 180,000 objects, 80 ms here; 125 ms with PyMC loaded), holds the GIL all that time,
    and so stalls every request thread at once: one such pause cost 3% of the throughput of a
    400-prompt run (benchmarks/bench_requests.py). Frozen objects are handed back afterwards,
    so garbage that was already there is still collected, just not mid-run."""
    already_frozen = gc.get_freeze_count() > _FROZEN_AT_IMPORT
    gc.freeze()
    try:
        yield
    finally:
        if not already_frozen:  # someone else's freeze is theirs to undo
            gc.unfreeze()
