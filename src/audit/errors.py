"""The error family users see as one line: a problem they can fix, naming the problem and the fix.

A programming error (a bug) is never one of these: it keeps its traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence


class AuditError(Exception):
    """A problem the user can fix; shown as one line naming the problem and the fix."""


def first_line(error: BaseException) -> str:
    """An exception's first non-empty line, else its type's name: the phrase a one-line message
    quotes of a library's error, whose later lines are tables or tracebacks."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()),
                type(error).__name__)


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """` (did you mean 'x'?)` for the option closest to a mistyped word, else empty: the hint
    every one-line refusal of an unknown key, option or name ends with."""
    # A word that begins exactly one option (`openai` for openai_compatible) is that one: too
    # short for difflib's similarity cut.
    begun = [option for option in sorted(options) if word and option.startswith(word)]
    close = begun if len(begun) == 1 else difflib.get_close_matches(word, list(options), n=1,
                                                                     cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# What YAML makes of an unquoted id that looks like a number or a yes/no: `[001, no]` in a
# config file reached the id check as ['1', 'False'], values the user never typed.
_YAML_COERCED = re.compile(r"[-+]?[\d_]*\.?[\d_]+([eE][-+]?\d+)?|True|False|None|nan|inf")


def unknown_ids(unknown: Sequence[str], valid: Sequence[str], setting: str,
                what: str = "ids") -> str:
    """The line refusing ids a list setting names that do not exist: the valid ids (the first 30
    of a long bank), a near miss, and for an id YAML turned into a number or a truth value, to
    quote it."""
    shown = ", ".join(valid[:30]) + (f", ... ({len(valid)} in all)" if len(valid) > 30 else "")
    near = did_you_mean(unknown[0], valid) if len(unknown) == 1 else ""
    coerced = [name for name in unknown if _YAML_COERCED.fullmatch(name)]
    quote = (f"; {', '.join(map(repr, coerced))} {'is' if len(coerced) == 1 else 'are'} what "
             f"YAML reads from unquoted ids like 010 or no: quote ids in config files ('010', "
             f"'no')" if coerced else "")
    return f"unknown {what} {list(unknown)} in {setting}{near}; valid: {shown}{quote}"


def _as_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number else None  # NaN matches nothing


def rewritten_number(unknown: Sequence[str], valid: Sequence[str]) -> str:
    """For an unknown id that is a valid one written as another number ("0.0" for "0", "1" for
    "001", as a spreadsheet or pandas rewrites an id column), the clause that says so; else
    empty. Bug caught (bad-input probe 2026-12-07): the line sent a user whose item ids had
    become floats to choose the item bank they had chosen."""
    numbers = {}
    for name in valid:
        number = _as_number(str(name))
        if number is not None:
            numbers.setdefault(number, str(name))
    for name in unknown:
        number = _as_number(str(name))
        if number is not None and number in numbers:
            return (f"; {str(name)!r} is the id {numbers[number]!r} rewritten as a number (a "
                    f"spreadsheet or pandas drops leading zeros and writes 0 as 0.0): keep the "
                    f"ids as text")
    return ""
