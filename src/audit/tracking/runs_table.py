"""The runs table: one row per MLflow run with its identity, provenance, the params that vary and
the chosen metrics. `python -m audit.runs` prints it and a sweep's parent run logs it."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import polars as pl

from audit.tracking import mlflow as tracking

# The tag in which each run records its method's headline metrics (shell-style patterns, comma
# separated; HEADLINE_METRICS in methods/NAME/config.py): a table of IAT runs shows D and the parse
# rate, not the Rasch sampler's diagnostics, and this module names no method.
HEADLINE_TAG = "headline_metrics"


def commit_text(commit: str, dirty: str) -> str:
    return commit[:10] + ("+dirty" if dirty == "true" else "")


def short_id(run_id: str) -> str:
    return run_id[:8]


def started_text(milliseconds: int | None) -> str:
    """A run's start in the local time of the machine that prints it, with its UTC offset: a
    sweep_runs.csv written on one machine and read on another names the same moment."""
    if not milliseconds:
        return ""
    moment = datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M %:z")


def varying_params(runs: list[dict[str, Any]]) -> list[str]:
    """Params every audit run has whose values differ between them: what a sweep swept, in a
    readable order. Keys only some runs have (another model's settings) are left to the
    `models` column; sweep parents carry no params and are left out of the comparison. Where
    runs' files and records went (tracking.PLACE_KEYS) differs without meaning anything."""
    audits = [run["params"] for run in runs if run["params"]]
    if len(audits) < 2:
        return []
    shared = set.intersection(*(set(params) for params in audits))
    varying = [key for key in shared if not tracking.is_place_key(key)
               and len({params[key] for params in audits}) > 1]
    return sorted(varying, key=lambda key: (key.count("."), key))


def metric_columns(runs: list[dict[str, Any]], patterns: list[str],
                   headline: Callable[[str], Sequence[str]] | None = None) -> list[str]:
    """The runs' headline metrics (their tag; for a run logged before runs carried it,
    `headline(method)` when given), then those matching `patterns`, as present in the runs."""
    present = sorted({name for run in runs for name in run["metrics"]})
    chosen: list[str] = []

    def declared_by(run: dict[str, Any]) -> str:
        if HEADLINE_TAG in run["tags"] or headline is None:
            return run["tags"].get(HEADLINE_TAG, "")
        return ",".join(headline(run["tags"].get("method", "")))

    declared = sorted({declared_by(run) for run in runs if run["metrics"]})
    defaults = [pattern for patterns in declared for pattern in patterns.split(",") if pattern]
    for pattern in [*defaults, *patterns]:
        for name in present:
            if fnmatch.fnmatchcase(name, pattern) and name not in chosen:
                chosen.append(name)
    return chosen


def unmatched_patterns(runs: list[dict[str, Any]], patterns: list[str]) -> list[str]:
    """A line for each `--metric` pattern that matches no metric of `runs`, naming the closest
    families of names they have (`contrast/*`): a mistyped `--metric 'contrst/*'` added no
    column and said nothing (bad-input review 2026-12-04)."""
    present = sorted({name for run in runs for name in run["metrics"]})
    families = sorted({name.split("/")[0] + ("/*" if "/" in name else "") for name in present})
    lines = []
    for pattern in patterns:
        if any(fnmatch.fnmatchcase(name, pattern) for name in present):
            continue
        head = pattern.split("/")[0].strip("*?[]")
        close = difflib.get_close_matches(head, [family.removesuffix("/*") for family in families],
                                          n=3, cutoff=0.6)
        if close:
            hint = "closest: " + ", ".join(family for family in families
                                           if family.removesuffix("/*") in close)
        elif families:
            hint = "they have: " + ", ".join(families[:4]) + (", ..." if len(families) > 4 else "")
        else:
            hint = "they logged none"
        lines.append(f"--metric {pattern!r} matches no metric of these runs ({hint}); a pattern "
                     f"is matched against whole names, case-sensitive")
    return lines


def runs_frame(runs: list[dict[str, Any]], metric_patterns: list[str] | None = None,
               headline: Callable[[str], Sequence[str]] | None = None) -> pl.DataFrame:
    """One row per run: identity, provenance, the params that vary, and the chosen metrics."""
    params = varying_params(runs)
    metrics = metric_columns(runs, metric_patterns or [], headline)
    rows = []
    for run in runs:
        tags = run["tags"]
        row: dict[str, Any] = {
            "run_id": run["run_id"], "name": run["name"],
            "started": started_text(run["start_time"]), "status": run["status"],
            "parent": short_id(tags.get(tracking.PARENT_RUN_TAG, "")),
            "models": tags.get("models", ""),
            "converged": tags.get("converged", ""),
            "commit": commit_text(*tracking.code_state(tags)),
        }
        row.update({f"param:{key}": run["params"].get(key, "") for key in params})
        row.update({f"metric:{name}": run["metrics"].get(name) for name in metrics})
        rows.append(row)
    schema = {"run_id": pl.Utf8, "name": pl.Utf8, "started": pl.Utf8, "status": pl.Utf8,
              "parent": pl.Utf8, "models": pl.Utf8, "converged": pl.Utf8, "commit": pl.Utf8,
              **{f"param:{key}": pl.Utf8 for key in params},
              **{f"metric:{name}": pl.Float64 for name in metrics}}
    return pl.DataFrame(rows, schema=schema)
