"""audit.llm.heap: the garbage collector's heap frozen while requests are in flight and handed
back however the sending ends (tests/llm/test_engine.py checks it around a real send)."""

from __future__ import annotations

import gc

import pytest

from audit.llm.heap import heap_frozen


def test_an_error_while_sending_still_hands_the_heap_back():
    """A run that stops on an error (a backend that cannot be reached) leaves the with block by
    an exception. Bug caught: the unfreeze only on a normal exit, which kept every object alive
    before the run uncollectable for the rest of the process."""
    gc.unfreeze()  # nobody's freeze in place (Python 3.12 starts with some objects frozen)
    with pytest.raises(RuntimeError, match="unreachable"), heap_frozen():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("backend unreachable")
    assert gc.get_freeze_count() == 0
