"""The comparison `python -m audit.compare` runs once its arguments are good
(audit.cli.compare_arguments): fetch both runs, fit them jointly, gate, write and log.

Apart from the arguments so that a refused argument is said before the sampler and MLflow load
(about 6 s of imports, 2026-12-07), not after.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import replace
from pathlib import Path

import polars as pl

from audit.cli.compare_sources import fetch_run, read_side
from audit.cli.verdict import junit_xml, write_junit
from audit.methods.verdict import verdict_text
from audit.config import TrackingConfig
from audit.cli.compare_arguments import OUTPUT_FILES, CompareArguments, output_paths
from audit.errors import AuditError
from audit.methods.configs import VerdictConfig
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch import comparison
from audit.methods.rasch.report.changes import (change_forest_plot, change_report,
                                                 comparison_name)
from audit.methods.rasch.comparison_sides import (
    attributes_note,
    check_one_judge,
    judges_note,
    settings_note,
    shared_items,
)
from audit.methods.rasch.irt.judge_error import resolve_confusion
from audit.methods.summary import mlflow_lines
from audit.tables import write_frame
from audit.tracking import mlflow as tracking
from audit.tracking import ui

log = logging.getLogger("audit.compare")


NO_GATE = (" (no max_worsening given: no contrast was gated, only the fit's convergence; pass "
           "max_worsening=DELTA to fail on a worsening)")
# The shared view (experiment tag) the printed MLflow link opens; log_comparison writes it.
COMPARE_VIEW = "compare"


def comparable_or_refuse(outcomes: pl.DataFrame, attributes: list[str]) -> comparison.Comparable:
    """The levels both sides labelled, each one left out logged; before the fit, so a comparison
    with nothing to contrast is one line instead of a crash after sampling."""
    comparable = comparison.comparable_levels(outcomes, attributes)
    for reason in comparable.left_out:
        log.warning("not compared: %s", reason)
    if not comparable.levels and not attributes:
        raise AuditError("nothing to compare: run A's fit.attributes is empty (a run that "
                         "contrasted no groups): compare runs fitted with attributes such as "
                         "gender, race")
    if not comparable.levels:
        raise AuditError(f"nothing to compare: {'; '.join(comparable.left_out)}. A contrast "
                         "needs two levels of one of run A's fit.attributes "
                         f"({', '.join(attributes)}) labelled on both sides: compare runs whose "
                         "personas share them")
    return comparable


def run(arguments: CompareArguments) -> int:
    sources, options = arguments.sources, arguments.options
    limit, unit, worsening_prob = arguments.limit, arguments.unit, arguments.worsening_prob
    judge_error, items, tracked = arguments.judge_error, arguments.items, arguments.tracked
    sampling = arguments.sampling
    with tempfile.TemporaryDirectory() as scratch:
        default = TrackingConfig()
        uri = options.get("tracking_uri", tracking.default_tracking_uri())
        fetched = [fetch_run(source, uri, default.experiment, Path(scratch)) for source in sources]
        sources = [name for _, name in fetched]
        side_a, cfg, gold_a = read_side("A", sources[0], fetched[0][0], options.get("model_a"))
        side_b, cfg_b, gold_b = read_side("B", sources[-1], fetched[-1][0],
                                          options.get("model_b"))
    if sources[0] == sources[-1] and side_a.model == side_b.model:
        raise AuditError(f"A and B are the same run and model ({side_a.model} of {sources[0]}): "
                         "a run compared with itself passes whatever it holds; give two runs, or "
                         "one run with model_a= and model_b= naming two of its models")
    if side_a.prompts.equals(side_b.prompts) and side_a.labels.equals(side_b.labels):
        log.warning("A and B hold the same prompts and labels (one run given twice, by id and "
                    "by folder?): the comparison can only find no change")
    out, junit = output_paths(options, sources)
    if judge_error is None:
        judge_error = cfg.fit.judge_error
    judges = (cfg.judge, cfg_b.judge)
    if judge_error is not False:  # labels read as truth need no judge in common
        check_one_judge(gold_a, gold_b, judges)
    side_a, side_b, items_note = shared_items(side_a, side_b, items)
    notes = [note for note in (items_note, settings_note(cfg.fit, cfg_b.fit),
                               None if judge_error is not False else judges_note(judges))
             if note]
    for note in notes:
        log.warning("%s", note)
    if cfg.fit.response != "decision":
        # P(favourable) carries each model's calibration (docs/statistics.md): across runs the
        # decisions are the like-for-like reading.
        log.info("run A fitted fit.response=%s; the comparison fits both runs' decisions, the "
                 "reading comparable across models", cfg.fit.response)
    fit = replace(cfg.fit, model="population", response="decision", **sampling)
    confusion = resolve_confusion(judge_error, fit.model, fit.outcome,
                                  gold_a if gold_a is not None else gold_b, fit.drop_labels,
                                  option="judge_error")
    pairing = comparison.pairing(side_a.prompts, side_b.prompts)
    log.info("%s", pairing.reason)
    outcomes = comparison.joint_outcomes((side_a, side_b), fit.attributes, fit.outcome,
                                         fit.drop_labels)
    comparable = comparable_or_refuse(outcomes, fit.attributes)
    left_out = (*comparable.left_out, *attributes_note(cfg.fit, cfg_b.fit))
    settings = replace(cfg.tracking, tracking_uri=uri, run_name=None)
    if tracked and settings.enabled:  # before the fit: failing after it replaced the gate's code
        tracking.check_store(settings, without_store="pass tracking=false",
                             setting="tracking_uri")
    idata, diagnostics = comparison.fit_joint(outcomes, fit, pairing.paired, confusion)
    changes = comparison.change_table(
        idata["posterior"].to_dataset(), comparable.levels, rope=fit.rope, hdi_prob=fit.hdi_prob,
        familywise_alpha=fit.familywise_alpha, max_worsening=limit,
        worsening_prob=worsening_prob, unit=unit)
    checks = comparison.gate_checks(changes, diagnostics)
    verdict = verdict_text(checks) + ("" if limit is not None else NO_GATE)
    out.mkdir(parents=True, exist_ok=True)
    table = write_frame(changes.with_columns(pl.lit(pairing.paired).alias("paired")),
                        out / OUTPUT_FILES[0])
    plot = change_forest_plot(changes, fit.hdi_prob, out / OUTPUT_FILES[1])
    lines = [comparison.change_line(row) for row in changes.iter_rows(named=True)]
    # Provenance as every run records it (the tool's version, git commit, packages), so a gate's
    # verdict can be traced to the code and the settings that gave it.
    provenance = tracking.provenance(Path("."))
    report = out / OUTPUT_FILES[2]
    report.write_text(change_report(
        changes, (side_a, side_b), pairing=pairing.reason, verdict=verdict,
        failed=any(check.failed for check in checks), converged=diagnostics.converged,
        figure=plot, lines=lines,
        left_out=left_out, notes=notes, provenance=provenance), encoding="utf-8")
    idata.to_netcdf(str(out / OUTPUT_FILES[3]))
    write_junit(junit_xml(checks, out, VerdictConfig()), junit)
    run_info = None
    if tracked and settings.enabled:
        tags = {**provenance, "method": "compare",
                "compare.run_a": sources[0], "compare.run_b": sources[-1],
                "compare.model_a": side_a.model, "compare.model_b": side_b.model,
                "compare.paired": str(pairing.paired).lower(),
                "converged": str(diagnostics.converged).lower()}
        run_info = log_comparison(
            settings, f"compare {comparison_name((side_a, side_b))}", tags,
            {**gate_params(fit, limit, unit, worsening_prob, confusion), "items": items},
            {"n_worsens": float(changes["worsens"].sum()), "n_contrasts": float(changes.height),
             "max_abs_change": float(changes["change"].abs().max())},
            [("", report), ("", plot), ("tables", table), ("tables", junit)])
    for line in lines:
        print(line)
    for reason in left_out:
        print(f"not compared: {reason}")
    for note in notes:
        print(note)
    converged = ("" if diagnostics.converged
                 else f" (not converged: {'; '.join(diagnostics.problems())})")
    print("\n".join([f"Result: compare {side_a.model} ({sources[0]}) -> {side_b.model} "
                     f"({sources[-1]}), {pairing.reason}{converged}",
                     f"verdict: {verdict}", f"Report: {report}",
                     *mlflow_lines(run_info, COMPARE_VIEW,
                                   "tracking=false" if not tracked
                                   else "tracking.enabled=false in run A's config")]))
    return 1 if any(check.failed for check in checks) else 0


def log_comparison(settings: TrackingConfig, run_name: str, tags: dict[str, str],
                   params: dict[str, str], metrics: dict[str, float],
                   artifacts: list[tuple[str, Path]]) -> tracking.RunInfo:
    """The comparison's MLflow run, and the shared view its printed link names (COMPARE_VIEW):
    the experiment's runs with the gate's figures as columns."""
    with tracking.mlflow_run(settings, run_name, tags) as run_info:
        tracking.log_params(params)
        tracking.log_metrics(metrics)
        tracking.log_artifacts(artifacts)
    ui.set_runs_view(settings.tracking_uri, run_info.experiment_id, COMPARE_VIEW,
                     list(metrics))
    return run_info


def gate_params(fit: FitConfig, limit: float | None, unit: str, worsening_prob: float,
                confusion: object) -> dict[str, str]:
    """The comparison's settings as MLflow params: the gate's and the sampler's."""
    return {"max_worsening": "none" if limit is None else f"{limit:g}", "unit": unit,
            "worsening_prob": f"{worsening_prob:g}", "draws": str(fit.draws),
            "tune": str(fit.tune), "chains": str(fit.chains),
            "target_accept": f"{fit.target_accept:g}", "rope": f"{fit.rope:g}",
            "familywise_alpha": str(fit.familywise_alpha), "hdi_prob": f"{fit.hdi_prob:g}",
            # whether the labels were read through the judge's measured errors
            "judge_error": str(confusion is not None).lower()}
