"""`python -m audit.compare A B [max_worsening=DELTA]`: the change in each gap between two runs.

A and B are run directories or MLflow run ids (or their 8-character prefixes, as
`python -m audit.runs` shows them); `python -m audit.compare RUN model_a=X model_b=Y` compares two
audited models of one run. Both sides go into ONE joint fit (methods/rasch/comparison.py): the
population-contrast model with item difficulties shared (on the items both runs asked, unless
items=all), and, when both runs asked the same prompts, a prompt effect shared by both. Where the
sides differ beyond the change (items, run B's fit settings, judges read as truth) the summary
says how (methods/rasch/comparison_sides.py). Per contrast between levels labelled on
both sides it prints one line (the gap on each side, the change B - A with its HDI, P(worse), the
ROPE decision and the gate) and names each level or attribute not compared, writes the
change table, a forest plot, an HTML report and a JUnit file, logs its own MLflow run tagged with
both sources, and exits 1 when a contrast worsens beyond `max_worsening` (logits, or `5pp` for
percentage points) with probability `worsening_prob` or the fit did not converge, 0 otherwise,
2 on bad input (checked before the fit).
"""

from __future__ import annotations

import logging
import math
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import polars as pl

from audit.cli.compare_sources import fetch_run, read_side
from audit.cli.verdict import junit_xml, write_junit
from audit.methods.verdict import verdict_text
from audit.config import TrackingConfig
from audit.errors import AuditError, did_you_mean
from audit.logs import configure_cli_logging
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
from audit.tables import check_output, write_frame
from audit.tracking import mlflow as tracking
from audit.tracking import ui
from audit.cli import check_given_once, printed_help

log = logging.getLogger("audit.compare")


USAGE = ("usage: python -m audit.compare A [B] [model_a=NAME] [model_b=NAME] [max_worsening=DELTA|"
         "DELTApp] [worsening_prob=0.95] [items=shared|all] [output=DIR] [junit=PATH] [draws=N] "
         "[tune=N] [chains=N] [target_accept=P] [tracking_uri=URI] [tracking=false] "
         "[judge_error=false]")
OPTIONS = ("model_a", "model_b", "max_worsening", "worsening_prob", "items", "output", "junit",
           "draws", "tune", "chains", "target_accept", "tracking_uri", "tracking", "judge_error")
NO_GATE = (" (no max_worsening given: no contrast was gated, only the fit's convergence; pass "
           "max_worsening=DELTA to fail on a worsening)")
# The shared view (experiment tag) the printed MLflow link opens; log_comparison writes it.
COMPARE_VIEW = "compare"


def boolean_option(options: dict[str, str], key: str) -> bool | None:
    """key=true|false in any case; None when not given. `tracking=False` logged a run: only
    the lowercase `false` turned it off (compare review 2026-12-02)."""
    if key not in options:
        return None
    choice = {"false": False, "true": True}.get(options[key].lower())
    if choice is None:
        raise AuditError(f"{key}={options[key]} must be true or false; {USAGE}")
    return choice


def items_option(options: dict[str, str]) -> str:
    choice = options.get("items", "shared")
    if choice not in ("shared", "all"):
        raise AuditError(f"items={choice} must be shared (the items both runs asked) or all; "
                         f"{USAGE}")
    return choice


def _is_option(argument: str) -> bool:
    """key=value, unless the key is no option and the whole names a path: a run written to
    paths.output_dir=runs/temperature=0.7 was refused as "unknown option runs/temperature"."""
    key, separator, _ = argument.partition("=")
    return bool(separator) and (key in OPTIONS or not Path(argument).exists())


def parse_arguments(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    flag = next((argument for argument in argv if argument.startswith("--")), None)
    if flag is not None:  # it counted as a third run: "give one or two runs"
        key = flag[2:].split("=", 1)[0].replace("-", "_")
        hint = f" (write {key}=VALUE)" if key in OPTIONS else ""
        raise AuditError(f"{flag} is not an option: options are key=value{hint}; {USAGE}")
    sources = [argument for argument in argv if not _is_option(argument)]
    options = dict(argument.split("=", 1) for argument in argv if _is_option(argument))
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown or not 1 <= len(sources) <= 2:
        problem = (f"unknown option {unknown[0]}{did_you_mean(unknown[0], list(OPTIONS))}"
                   if unknown else "give one or two runs")
        raise AuditError(f"{problem}; {USAGE}")
    # `output=` was the current folder, `draws=` "is not an integer" (review 12-04); a key given
    # twice let the last value win without a word.
    check_given_once([argument for argument in argv if _is_option(argument)], AuditError, USAGE)
    if len(sources) == 1 and not ("model_a" in options and "model_b" in options):
        raise AuditError("one run needs model_a=NAME and model_b=NAME (two of its models); "
                         f"{USAGE}")
    return sources, options


def number(options: dict[str, str], key: str, kind: type, default: float | None = None):
    try:
        return kind(options[key]) if key in options else default
    except ValueError:
        raise AuditError(f"{key}={options[key]} is not a{'n integer' if kind is int else ' number'}"
                         f"; {USAGE}") from None


def sampling_options(options: dict[str, str]) -> dict[str, int | float]:
    """draws=, tune=, chains=, target_accept=: checked here, since the sampler would only refuse
    a draws=0 after tuning (35 s), with a ValueError and exit 1."""
    sampling = {key: number(options, key, float if key == "target_accept" else int)
                for key in ("draws", "tune", "chains", "target_accept") if key in options}
    for key in ("draws", "tune", "chains"):
        if sampling.get(key, 1) < 1:
            raise AuditError(f"{key}={sampling[key]} must be at least 1")
    if not 0.0 < sampling.get("target_accept", 0.8) < 1.0:
        raise AuditError(f"target_accept={sampling['target_accept']} must lie between 0 and 1 "
                         "(0.8; 0.95 for a fit with divergences)")
    return sampling


def worsening_limit(text: str | None) -> tuple[float | None, str]:
    if text is None:
        return None, "logit"
    unit = "pp" if text.endswith("pp") else "logit"
    try:
        value = float(text.removesuffix("pp"))
    except ValueError:
        raise AuditError(f"max_worsening={text} is not a number: give logits (0.3) or "
                         "percentage points (5pp)") from None
    if not math.isfinite(value):  # nan never compared true: a gate that could not fail
        raise AuditError(f"max_worsening={text} must be a finite number: give logits (0.3) or "
                         "percentage points (5pp)")
    if value < 0:
        raise AuditError(f"max_worsening={text} must be >= 0")
    if unit == "pp" and value >= 100:  # |gap_B| - |gap_A| of two probabilities is below 100pp
        raise AuditError(f"max_worsening={text} can never be exceeded, so it gates nothing: a "
                         "gap in percentage points grows by less than 100pp; give less")
    return value, unit


# What a comparison writes in its output folder.
OUTPUT_FILES = ("changes.csv", "changes_forest.png", "report.html", "posterior.nc")


def output_paths(options: dict[str, str], sources: list[str]) -> tuple[Path, Path]:
    """The output folder and the JUnit file (given, or named after the two runs), checked before
    the fit: a path that cannot be written was a traceback after it, with exit 1, the code of a
    failed gate, so CI could not tell a crash from a worsening."""
    # One run's two models: the models name the folder, or the next pair overwrote it.
    models = ("" if len(set(sources)) > 1 else
              f"_{options.get('model_a', '')}_vs_{options.get('model_b', '')}")
    out = Path(options.get("output", f"compare/{Path(sources[0]).name[:8]}_vs_"
                                     f"{Path(sources[-1]).name[:8]}{models}"))
    junit = Path(options.get("junit", out / "compare_junit.xml"))
    check_output(out, "output=", folder=True)
    for name in OUTPUT_FILES:  # a folder already there under a file's name
        check_output(out / name, "output=")
    return out, check_output(junit, "junit=")


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


def run(argv: list[str]) -> int:
    sources, options = parse_arguments(argv)
    limit, unit = worsening_limit(options.get("max_worsening"))
    sampling = sampling_options(options)
    if "junit" in options:  # a bad path is the one line, not after this warning (review 12-04)
        check_output(Path(options["junit"]), "junit=")
    if limit is None and "junit" in options:  # a CI gate that cannot fail on a worsening
        log.warning("junit= without max_worsening: no contrast can fail the gate, only a fit "
                    "that did not converge; pass max_worsening=DELTA (logits, or DELTApp)")
    worsening_prob = number(options, "worsening_prob", float, 0.95)
    if not 0.0 < worsening_prob < 1.0:  # checked before the fit, not after it
        raise AuditError(f"worsening_prob={worsening_prob} must lie between 0 and 1 (0.95)")
    judge_error = boolean_option(options, "judge_error")  # None: run A's fit.judge_error
    items = items_option(options)
    tracked = boolean_option(options, "tracking") is not False
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


def main(argv: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if argv is None else argv
    if printed_help(arguments, __doc__, USAGE):
        return 0
    try:
        return run(arguments)
    except AuditError as error:
        log.error("%s", error)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
