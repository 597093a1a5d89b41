"""The error family users see as one line: a problem they can fix, naming the problem and the fix.

A programming error (a bug) is never one of these: it keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class AuditError(Exception):
    """A problem the user can fix; shown as one line naming the problem and the fix."""


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """` (did you mean 'x'?)` for the option closest to a mistyped word, else empty: the hint
    every one-line refusal of an unknown key, option or name ends with."""
    # A word that begins exactly one option (`openai` for openai_compatible) is that one: too
    # short for difflib's similarity cut.
    begun = [option for option in sorted(options) if word and option.startswith(word)]
    close = begun if len(begun) == 1 else difflib.get_close_matches(word, list(options), n=1,
                                                                     cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
