"""The error family users see as one line: a problem they can fix, naming the problem and the fix.

A programming error (a bug) is never one of these: it keeps its traceback.
"""

from __future__ import annotations


class AuditError(Exception):
    """A problem the user can fix; shown as one line naming the problem and the fix."""
