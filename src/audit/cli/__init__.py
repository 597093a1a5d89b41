"""The commands other than `python -m audit`; their old module names forward here."""

from __future__ import annotations

import difflib
import inspect
import sys
from collections.abc import Sequence

from omegaconf.errors import (ConfigKeyError, MissingMandatoryValue, OmegaConfBaseException,
                              ValidationError)

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


def argument_problem(error: OmegaConfBaseException, options: Sequence[str],
                     nested: Sequence[str] = ()) -> str:
    """One phrase for an argument a key=value command's structured config refused, naming the
    option as it is typed (`draws`, not the `sampler.draws` it is stored under: ``nested``
    lists such prefixes) and, for an unknown one, the closest option. OmegaConf's own first
    line named the command's internal class (`Key 'foo' not in 'FitCommand'`) and no option."""
    key = str(getattr(error, "full_key", None) or getattr(error, "key", None) or "")
    for prefix in nested:
        key = key.removeprefix(f"{prefix}.")
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, MissingMandatoryValue) and key:
        return f"{key}= is missing"
    if isinstance(error, ConfigKeyError) and key:
        close = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
        return f"unknown option {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    if isinstance(error, ValidationError) and key:
        return f"invalid value for {key!r}: {first_line}"
    return first_line
