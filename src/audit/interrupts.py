"""Ctrl-C and SIGTERM end a command the same way: one line, no traceback, exit status 128 plus the
signal's number (130 and 143, as a shell reports them).

SIGTERM is what a CI job's timeout, `kill`, `docker stop` and a batch scheduler send. Left at its
default action it ends the process at once, with no line at all (the answers already received
were safe in the response store, but nothing said so). Within `termination_as_interrupt()` it is
handed to the current Ctrl-C handler instead: during requests that is asyncio's, which cancels
the requests in flight before the command says how many answers are saved.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

# The signals this process turned into an interrupt, the last one deciding the exit status.
_received: list[int] = []
# Interrupts Python dropped: raised while a garbage-collection callback ran (sqlalchemy's, a
# weakref's), KeyboardInterrupt is printed as "Exception ignored in ..." and discarded, and the
# run went on to the end and exited 0 (1 of 5 signals sent 0.5 s into a fit, probe 2026-12-07).
_dropped: list[BaseException] = []


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    on_ctrl_c = signal.getsignal(signal.SIGINT)
    if callable(on_ctrl_c):  # Python's KeyboardInterrupt, or asyncio's while requests run
        on_ctrl_c(signal.SIGINT, frame)
    else:  # Ctrl-C ignored or left to the OS: still end with the one line
        raise KeyboardInterrupt


class Interrupted(KeyboardInterrupt):
    """An interrupt while requests were in flight (llm/engine.py); its text is the one line a
    user sees: how many answers are saved and how to resume."""

    def __init__(self, saved: int, planned: int, description: str, store: object):
        super().__init__(f"{interrupted_by()}: {saved} of {planned} {description} are saved in "
                         f"{store}; rerun the same command to resume (what is saved is not sent "
                         f"again)")


@contextmanager
def termination_as_interrupt() -> Iterator[None]:
    """SIGTERM handled as Ctrl-C within, when SIGTERM still has its default action. A handler
    someone else installed is left alone (submitit's in a sweep's job, a host program's), and so
    is a thread other than the main one, where Python cannot install one. An interrupt Python
    drops within is kept, for raise_dropped_interrupt, instead of printed."""
    _received.clear()  # an earlier command's signal in this process (tests, a notebook)
    _dropped.clear()
    ours = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
    if ours:
        signal.signal(signal.SIGTERM, _interrupt)
    previous_hook = sys.unraisablehook

    def keep_dropped(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _dropped.append(unraisable.exc_value)  # raised again at the next check
        else:
            previous_hook(unraisable)

    sys.unraisablehook = keep_dropped
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        _dropped.clear()
        if ours:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def raise_dropped_interrupt() -> None:
    """Raise the interrupt Python dropped inside a garbage-collection callback, if any: called
    between stages and after each fit (an adaptive look's, a simulated audit's), so a stop asked
    for stops the work at the next of those instead of never."""
    if _dropped:
        _dropped.clear()  # raised now, and not again in a later command of this process
        raise KeyboardInterrupt


def interrupted_by() -> str:
    """The first word of the line a command ends with: `interrupted` for Ctrl-C, `terminated
    (SIGTERM)` when that came, so a CI log says the job was stopped from outside."""
    if _received and _received[-1] == signal.SIGTERM:
        return "terminated (SIGTERM)"
    return "interrupted"


def interrupted_status() -> int:
    """The exit status of a command the last interrupt ended: 143 after SIGTERM, else 130."""
    return 128 + (_received[-1] if _received else signal.SIGINT)


def interrupted_line(interrupted: KeyboardInterrupt, received: str, store: object) -> str:
    """The line an interrupt ends a command with: the engine's own, which counts what is saved,
    when the engine raised it; else where the `received` (answers, judge replies) are, each
    committed to the store as it arrived, so that the same command resumes."""
    return str(interrupted) or (f"{interrupted_by()}: the {received} received so far are saved "
                                f"in {store}; rerun the same command to resume")
