"""When a stage stops for its failed requests: too many failed, each kind named with one of its
messages, and whether a plain rerun resumes (engine.py sends; this judges what came back)."""

from __future__ import annotations

import polars as pl

from audit.errors import AuditError
from audit.llm.engine import TRANSIENT_KINDS

# The longest error message check_failures quotes for a kind.
MESSAGE_CHARS = 400


class TooManyFailures(AuditError):
    """More requests failed than `engine.max_failed_share` allows. Raised only after the
    finished responses were stored (and written by the caller), so a rerun resumes."""


def check_failures(responses: pl.DataFrame, max_failed_share: float, store_path: str,
                   what: str = "requests") -> None:
    """Stop a method when too many requests failed, naming each kind with one of its messages
    (the kind alone rarely says which server or setting to look at) and how to resume."""
    failed = responses.filter(pl.col("status") == "error")
    if failed.height and failed.height / max(responses.height, 1) > max_failed_share:
        by_kind = (failed.group_by("error_kind")
                   .agg(pl.len(), pl.col("error_message").drop_nulls().first())
                   .sort("error_kind"))
        # Messages are bounded where they are made (a server's own words at 200 characters,
        # then its URL and the setting to check): cut at 120 here, they lost that setting.
        kinds = "; ".join(f"{kind} x{count}" + (f": {example[:MESSAGE_CHARS]}" if example else "")
                          for kind, count, example in by_kind.iter_rows())
        # A request refused for its content or settings (an HTTP 4xx) fails the same way again:
        # a plain rerun resumes only after the cause is fixed.
        retry = ("fix what the message names, then rerun to send only the missing prompts"
                 if set(by_kind["error_kind"].drop_nulls()) - TRANSIENT_KINDS
                 else "rerun the same command to resume")
        raise TooManyFailures(
            f"{failed.height} of {responses.height} {what} failed ({kinds}); finished responses "
            f"are kept in {store_path}: {retry}, or raise engine.max_failed_share to accept the "
            "gaps")
