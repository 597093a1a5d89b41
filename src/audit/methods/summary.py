"""The end of every run: its answer in a few plain lines, for any method.

`python -m audit` runs a method's stages (audit.methods.run), then prints on stdout, and records as
the MLflow run's description, the same short text (so does a `dvc repro` pipeline's report stage,
`python -m audit.stages report`, for the pipeline's folder):

- each headline comparison the method reports (`AuditMethod.findings`: what is compared, the
  decision in words, the estimate and its interval), after any note that qualifies them all
  (a Rasch run without signal says so first);
- the verdict `python -m audit.verdict run_dir=DIR` gives the run under its default rules (the
  same code: audit.methods.verdict.judge_run);
- where the report (or the tables) are, and the URL of the experiment's runs table in the MLflow
  UI, whose shared view shows the headline metrics as columns (audit.tracking.mlflow).

The frame names no method: each method supplies its findings from its own tables.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from audit.errors import AuditError
from audit.interrupts import interrupted_by
from audit.methods.configs import AuditConfig, VerdictConfig
# Headline too: method plugins written before findings.py import both from here.
from audit.methods.findings import Findings, Headline  # noqa: F401
from audit.methods.checks import Check
from audit.methods.verdict import judge_run, verdict_outcome, verdict_text
from audit.tracking import mlflow as tracking
from audit.tracking import ui

if TYPE_CHECKING:
    from audit.methods import AuditMethod

# More comparisons than this are counted, not listed: the summary stays a few lines; the table
# the method names holds every one.
MAX_HEADLINES = 12
MAX_FLAGGED_NAMED = 3
# The run's tag holding its verdict under the default rules: PASS, FAIL, NOT TESTED or none.
VERDICT_TAG = "audit.verdict"


def default_checks(run_dir: Path) -> list[Check] | AuditError:
    """The checks `python -m audit.verdict` makes of the run under its default rules, or why it
    cannot (VerdictError, or a run table that cannot be read)."""
    try:
        return judge_run(run_dir, VerdictConfig())
    except AuditError as error:
        return error


def verdict_line(run_dir: Path, checks: list[Check] | AuditError | None = None) -> str:
    """What CI would say, by `python -m audit.verdict`'s own code and default rules."""
    # Quoted as a shell reads it: a run under "My Audits/" split into two arguments.
    command = f"python -m audit.verdict {shlex.quote(f'run_dir={run_dir}')}"
    checks = default_checks(run_dir) if checks is None else checks
    if isinstance(checks, AuditError):
        return f"CI verdict: none ({checks}); {command}"
    flagged = [check.title_when_failed() for check in checks if check.failed]
    named = "; ".join(flagged[:MAX_FLAGGED_NAMED]) + ("; ..." if len(flagged) >
                                                      MAX_FLAGGED_NAMED else "")
    # A pass under undecided contrasts read as "no bias found" to a reviewer of the summary:
    # it says only that no check failed (the decisions above say what was shown). The verdict's
    # phrase counts the undecided comparisons itself when there are any.
    passed = (" (no check found a gap; not by itself evidence that groups are treated alike)"
              if verdict_outcome(checks) == "PASS"
              and not any(check.undecided for check in checks) else "")
    return (f"CI verdict: {verdict_text(checks)}{f': {named}' if named else ''}{passed} "
            f"(default rules; {command})")


def findings_lines(findings: Findings) -> list[str]:
    lines = [f"  {note}" for note in findings.notes]
    lines += [f"  {headline.line()}" for headline in findings.headlines[:MAX_HEADLINES]]
    hidden = len(findings.headlines) - MAX_HEADLINES
    if hidden > 0:
        lines.append(f"  ... and {hidden} more"
                     f"{f' in {findings.source}' if findings.source else ''}")
    if not findings.headlines:
        lines.append(f"  {findings.empty}")
    return lines


def mlflow_lines(run_info: tracking.RunInfo | None, view_key: str,
                 off_by: str = "tracking.enabled=false") -> list[str]:
    """The MLflow link; without a run, the setting that turned tracking off (`off_by`, as the
    command takes it: audit.compare's `tracking=false`)."""
    if run_info is None:
        return [f"MLflow: off ({off_by})"]
    url = ui.runs_page_url(run_info.tracking_uri, run_info.experiment_id, view_key)
    command = ui.ui_command(run_info.tracking_uri)
    return [f"MLflow runs: {url}", *([f"  (serve it first: {command})"] if command else [])]


def summary_text(cfg: AuditConfig, findings: Findings, run_dir: Path,
                 result: Mapping[str, object],
                 checks: list[Check] | AuditError | None = None) -> str:
    run_info = result.get("run")
    report = result.get("report")
    lines = [f"Result: {cfg.method} audit of {', '.join(sorted(cfg.model)) or 'no model'}",
             *findings_lines(findings), verdict_line(run_dir, checks),
             f"Report: {report}" if report else f"Tables and plots: {run_dir}",
             *mlflow_lines(run_info if isinstance(run_info, tracking.RunInfo) else None,
                           view_key(cfg.method))]
    return "\n".join(lines)


def view_key(method: str) -> str:
    """The shared view of a method's runs (one per method: their headline metrics differ)."""
    return f"audit-{method}"


def view_metrics(findings: Findings, logged: Mapping[str, float]) -> list[str]:
    """The headline metrics this run logged, in the order the findings name them."""
    names = [headline.metric for headline in findings.headlines if headline.metric]
    return [name for name in dict.fromkeys([*names, *findings.metrics]) if name in logged]


def run_method(method: AuditMethod, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
    """The method's stages, then its answer: printed last, and the MLflow run's description."""
    result = method.run(cfg, output_dir)
    return {**result, "summary": state_summary(method, cfg, Path(output_dir), result)}


def state_summary(method: AuditMethod, cfg: AuditConfig, run_dir: Path,
                  result: Mapping[str, object]) -> str:
    """The summary of a finished run (a `python -m audit` run directory, or a `dvc repro`
    pipeline's after its report stage): printed on stdout, and the MLflow run's description.
    Findings and verdict read either layout (audit.methods.layout.run_file)."""
    try:
        findings = method.findings(cfg, run_dir, result)
        checks = default_checks(run_dir)
        text = summary_text(cfg, findings, run_dir, result, checks)
    except KeyboardInterrupt:
        raise finished_interrupt(run_dir, "its summary was not printed: `python -m audit.verdict "
                                 f"{shlex.quote(f'run_dir={run_dir}')}` gives its verdict")\
            from None
    run_info = result.get("run")
    print(text, flush=True)  # before the store is written to: a store that fails keeps it
    if isinstance(run_info, tracking.RunInfo):
        metrics = result.get("metrics")
        try:
            ui.set_runs_view(run_info.tracking_uri, run_info.experiment_id,
                             view_key(cfg.method),
                             view_metrics(findings, metrics if isinstance(metrics, Mapping)
                                          else {}))
            # Markdown, as the UI renders it: two spaces keep each line on its own.
            ui.set_run_description(run_info.tracking_uri, run_info.run_id,
                                   text.replace("\n", "  \n"))
            # A tag, so the runs table filters and sorts on it (`tags."audit.verdict" =
            # 'FAIL'`): the verdict was only in the description's text (review probe
            # 2026-12-07).
            ui.set_run_tag(run_info.tracking_uri, run_info.run_id, VERDICT_TAG,
                           "none" if isinstance(checks, AuditError)
                           else verdict_outcome(checks))
        except tracking.TrackingError as error:
            raise tracking.TrackingError(f"{error}; the run's tables and report are in "
                                         f"{run_dir}") from error
        except KeyboardInterrupt:
            raise finished_interrupt(run_dir, "the summary above is its answer; its MLflow run "
                                     "is FINISHED, without that summary as its description")\
                from None
    return text


def finished_interrupt(run_dir: Path, missing: str) -> KeyboardInterrupt:
    """A stop that came after the run's work was done: the command's line says so and what is
    missing, not that answers are saved and a rerun resumes (which read as if the run were
    unfinished, and a rerun of `python -m audit` fits a second run: interrupt probe,
    2026-12-07). The exit status still says the command was stopped."""
    return KeyboardInterrupt(f"{interrupted_by()} after the run finished: its tables and report "
                             f"are in {run_dir}; {missing}")
