"""The commands other than `python -m audit`; their old module names forward here."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence

HELP_FLAGS = frozenset({"-h", "--help"})


def printed_help(arguments: Sequence[str], doc: str | None, usage: str) -> bool:
    """For the commands that take ``key=value`` arguments (fit, iat, verdict, compare): with
    ``-h`` or ``--help`` among them, the usage line and the command's description on stdout,
    and True (the command then exits 0). They refused `--help` as an argument that is not
    key=value, and compare took it for a run to compare."""
    if not HELP_FLAGS & set(arguments):
        return False
    sys.stdout.write(f"{usage}\n\n{inspect.cleandoc(doc or '')}\n")
    return True
