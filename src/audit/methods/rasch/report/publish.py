"""The last stage: write the report files and report.html, log one MLflow run, print the ranking.

The Rasch method's report stage (method.py runs it); like the other stages it is an edge that
touches files, while the figures, numbers and sentences it writes come from pure functions
(plots.py, metrics.py, summary.py, reading.py, html.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl

from audit.methods.configs import AuditConfig
from audit.data_files import read_users_table
from audit.llm.backends import create_backend
from audit.methods.rasch.adaptive_run import adaptive_report
from audit.methods.rasch.analyse import read_fit
from audit.methods.rasch.irt import Diagnostics, RaschFit
from audit.methods.rasch.irt.explanatory import design_aliasing
from audit.methods.rasch.irt.judge_error import unmeasured_lines
from audit.methods.rasch.irt.rasch import posterior_draws
from audit.methods.rasch.irt.noise_floor import (
    floor_from_prior,
    noise_floor_plot,
    noise_floor_table,
)
from audit.methods.rasch.ingest.stages import source_caveat, source_tags
from audit.methods.rasch.judge.gold import gold_figures, gold_line
from audit.methods.rasch.judge.rule_check import agreement_warnings, rule_agreement
from audit.methods.rasch.report.plots import (
    contrast_forest_plot,
    favourable_heatmap,
    favourable_rates,
    label_distribution_plot,
    sampling_plots,
    wright_map,
)
from audit.methods.rasch.no_signal import judge_quality, no_signal_headline, run_no_signal
from audit.methods.rasch.report.reading import (
    caveats,
    plain_language_reading,
    quality_warnings,
    response_caveat,
)
from audit.methods.rasch.report.summary import (
    RATE_KEYS,
    forest_plot,
    item_difficulty_plot,
    label_rate_tests,
    label_rates,
    print_ranking,
    theta_table,
)
from audit.methods.rasch.report.html import ReportInputs, build_context, render_report
from audit.methods.rasch.report.metrics import (
    agreement_by_item,
    audit_metrics,
    contrast_metrics,
    gold_alias_metrics,
    judge_metrics,
    rate_metrics,
)
from audit.schemas import ItemSchema, PromptSchema, ResponseSchema
from audit.methods.rasch.schemas import ContrastSchema, GoldResultSchema, LabelSchema, VoteSchema

from audit.tables import read_table, save_figure, write_frame, write_json
from audit.tracking import mlflow as tracking
from audit.methods.run import method_run, provenance_files, write_config
from audit.methods.run_identity import flat_config, run_tags

log = logging.getLogger(__name__)

RESPONDENT_COLUMNS = ["respondent_id", "model_name", "persona_id", "persona_kind", "gender", "race"]
# Figure file -> its key in the HTML template.
FIGURE_KEYS = {"forest_theta.png": "forest_theta", "item_difficulty.png": "item_difficulty",
               "contrasts_forest.png": "contrasts", "wright_map.png": "wright",
               "favourable_heatmap.png": "heatmap", "label_distribution.png": "labels",
               "trace_plot.png": "trace", "rank_plot.png": "rank",
               "noise_floor.png": "noise_floor", "adaptive_trajectory.png": "adaptive"}


def read_contrasts(path: Path) -> pl.DataFrame | None:
    """The fit's demographic contrasts when the fit wrote them (every fit on persona columns)."""
    if not path.is_file():
        return None
    # A second outcome (fit.second_outcome) adds rows with its own `outcome`; the schema keeps it.
    return read_table(path, ContrastSchema, "fit contrasts")


def recorded_diagnostics(diagnostics_file: Path) -> dict:
    """What the fit wrote into fit/diagnostics.json (empty when it wrote none), read once for
    the report's advice and its judge warnings."""
    return json.loads(diagnostics_file.read_text()) if diagnostics_file.is_file() else {}


def fit_advice(diagnostics: Diagnostics, recorded: dict) -> list[str]:
    """The fit's own advice (recorded_diagnostics) when it wrote one, else each failed check."""
    advice = recorded.get("advice") or ""
    if advice and not diagnostics.converged:
        return [advice]
    return diagnostics.problems()


def judge_gaps(recorded: dict) -> list[str]:
    """The labelling paths the judge correction could not measure, as the fit recorded them
    (recorded_diagnostics): read as truth for want of gold answers, or barely measured. The
    report's judge section said every label was corrected, which these paths' labels were not;
    the fit only logged them."""
    corrections = recorded.get("judge_error") or {}
    gaps = []
    for outcome, correction in sorted(corrections.items()):
        if not correction:
            continue
        where = f" ({outcome})" if len(corrections) > 1 else ""
        gaps += unmeasured_lines(correction.get("labels_as_truth") or [], where)
        for path, reasons in sorted((correction.get("weak_gold") or {}).items()):
            gaps.append(f"labelling path {path}{where} is barely measured: "
                        f"{'; '.join(reasons)}; its rates are drawn assuming it is better than "
                        "a coin (more gold answers measure it)")
    return gaps


def as_truth_rows(recorded: dict) -> list[str]:
    """The summary's rate rows of the paths whose labels the fit read as truth (any outcome)."""
    paths = {path for correction in (recorded.get("judge_error") or {}).values() if correction
             for path in correction.get("labels_as_truth") or []}
    return [f"{rate}[{path}]" for path in sorted(paths)
            for rate in ("judge_sensitivity", "judge_specificity")]


def model_identities(cfg: AuditConfig) -> dict[str, dict[str, str]]:
    """What each audited and judge model is (backend, model file or tag, digest), as its backend
    reports it: the same identity that keys the response store."""
    identities: dict[str, dict[str, str]] = {}
    for prefix, models in (("model", cfg.model), ("judge_model", cfg.judge.models)):
        for name, model in sorted(models.items()):
            try:
                identities[f"{prefix}.{name}"] = create_backend(model).identity()
            except Exception as error:  # a server that is down must not lose the finished run
                identities[f"{prefix}.{name}"] = {"backend": model.backend, "model": model.model,
                                                  "digest": f"unavailable ({type(error).__name__})"}
    return identities


def identity_tags(identities: dict[str, dict[str, str]]) -> dict[str, str]:
    tags = {}
    for key, identity in identities.items():
        tags[key] = " ".join(f"{field}={identity.get(field, '')}"
                             for field in ("backend", "model", "digest"))
        tags[f"{key}.digest"] = identity.get("digest", "")
    return tags


def publish(cfg: AuditConfig, prompts: pl.DataFrame, responses: pl.DataFrame,
            labels: pl.DataFrame, fit: RaschFit, files, timings: dict[str, float],
            started_at: float | None = None) -> dict:
    # First: an answers file changed since the design stage read it is refused before anything
    # is written, and the report names the digest of the file the design read.
    source = source_tags(cfg, files.prompts, files.responses)
    report_dir: Path = files.report
    report_dir.mkdir(parents=True, exist_ok=True)
    respondents = prompts.select(RESPONDENT_COLUMNS).unique().sort("respondent_id")
    thetas = theta_table(fit.summary, respondents)
    items = read_users_table(cfg.items.bank, ItemSchema, "item bank", "items.bank")
    votes = read_table(files.votes, VoteSchema, "judge votes")
    gold_results = read_table(files.gold, GoldResultSchema, "judge gold-set results")
    contrasts = read_contrasts(files.fit / "contrasts.csv")
    persona_labels = labels.join(prompts.select("prompt_id", *RATE_KEYS), on="prompt_id")
    rates = label_rates(persona_labels, cfg.fit.hdi_prob)
    rate_tests = label_rate_tests(rates)
    by_item = agreement_by_item(labels, prompts)
    # Panel agreement is about the answers the panel labelled; its re-reads of rule labels are
    # compared with the rules per group instead (judge/rule_check.py).
    ruled = labels.filter(pl.col("label_source") == "rule")["prompt_id"]
    panel = judge_metrics(votes.filter(~pl.col("answer_id").is_in(ruled)), by_item)
    rule_checks = rule_agreement(labels, votes, prompts, list(cfg.fit.attributes))
    metrics = {**audit_metrics(prompts, responses, labels, fit, timings), **panel,
               **rate_metrics(rates, rate_tests),
               **(contrast_metrics(contrasts) if contrasts is not None else {})}
    gold = gold_figures(gold_results) if gold_results.height else None
    if gold is not None:
        metrics.update({**gold.metrics, **gold_alias_metrics(gold.metrics)})
        write_frame(gold.confusion, report_dir / "judge_gold_confusion.csv")
        write_frame(gold.by_category, report_dir / "judge_gold_by_category.csv")
        log.info("%s", gold_line(cfg.judge.name, gold.metrics))

    floor = noise_floor_table(posterior_draws(fit.idata), cfg.fit.hdi_prob)
    recorded = recorded_diagnostics(files.fit / "diagnostics.json")
    # The judge's rates (fit.judge_error): the summary gives each its gold posterior's mean and
    # HDI (judge_cut.with_gold_rates), not the imputations' few draws; empty for labels as truth.
    # Not the paths read as truth: their rates are 1 by construction, and a row "1.00 [1.00,
    # 1.00]" under "gold posterior" read as a labeller measured perfect (judge review
    # 2026-12-02); the warnings say what they are.
    judge_rates = fit.summary.filter(pl.col("parameter").str.starts_with("judge_")
                                     & ~pl.col("parameter").is_in(as_truth_rows(recorded)))
    if floor.height:
        write_frame(floor, report_dir / "noise_floor.csv")
    figures = {
        "forest_theta.png": forest_plot(thetas, cfg.fit.hdi_prob),
        "item_difficulty.png": item_difficulty_plot(fit.summary, items, cfg.fit.hdi_prob),
        "wright_map.png": wright_map(fit.summary),
        "favourable_heatmap.png": favourable_heatmap(favourable_rates(prompts, labels)),
        "label_distribution.png": label_distribution_plot(prompts, labels),
        **sampling_plots(fit.idata, fit.summary),
        **({"contrasts_forest.png": contrast_forest_plot(contrasts, cfg.fit.hdi_prob)}
           if contrasts is not None and contrasts.height else {}),
        **({"noise_floor.png": noise_floor_plot(posterior_draws(fit.idata))}
           if floor.height else {}),
    }
    written = {name: save_figure(figure, report_dir / name) for name, figure in figures.items()}
    write_frame(thetas, report_dir / "theta_ranking.csv")
    write_frame(rates, report_dir / "label_rates.csv")
    write_frame(rate_tests, report_dir / "label_rate_tests.csv")
    write_frame(by_item, report_dir / "judge_agreement_by_item.csv")
    if rule_checks.height:
        write_frame(rule_checks, report_dir / "judge_rule_agreement.csv")
    judge = judge_quality(labels, gold.metrics if gold is not None else None)
    # The same reasons the analyse stage wrote into fit/diagnostics.json for the verdict.
    no_signal = run_no_signal(labels, prompts, sorted(cfg.model), cfg.fit,
                              gold.metrics if gold is not None else None)
    metrics["no_signal"] = float(bool(no_signal))
    # An adaptive run (design.adaptive): its prompts against the design's, and its trajectory.
    adaptive = adaptive_report(files.rounds, prompts.height)
    if adaptive is not None:
        metrics.update(adaptive.metrics)
        written["adaptive_trajectory.png"] = save_figure(adaptive.figure,
                                                          report_dir / "adaptive_trajectory.png")
        log.info("adaptive: %d of %d prompts asked (%.0f%% of the fixed design), stopped: %s",
                 adaptive.asked, adaptive.design, 100 * adaptive.share, adaptive.stop)
    write_json(metrics, report_dir / "metrics.json", sort_keys=True)
    config_yaml = write_config(cfg, report_dir)

    warnings = quality_warnings(judge, cfg.judge.name, rate_tests, fit.diagnostics.problems())
    for warning in warnings:
        log.warning("%s", warning)
    # The rule re-read warning and the design's aliasing are said in the summary the run ends
    # with too (findings.py); the fit logged the aliasing already.
    warnings = [*warnings, *design_aliasing(prompts, cfg.fit.attributes),
                *judge_gaps(recorded), *agreement_warnings(rule_checks)]
    # Said once, in the summary the run ends with (audit.methods.summary), not here as well.
    headline = no_signal_headline(no_signal) if no_signal else None

    identities = model_identities(cfg)
    own_tags = {"converged": str(fit.converged).lower(), **identity_tags(identities),
                **source, **({"adaptive.stop": adaptive.stop} if adaptive else {})}
    tags = run_tags(cfg, flat_config(cfg), own_tags)
    inputs = ReportInputs(
        cfg=cfg, prompts=prompts, responses=responses, labels=labels, thetas=thetas,
        contrasts=contrasts, noise_floor=floor if floor.height else None,
        judge_rates=judge_rates if judge_rates.height else None,
        rule_agreement=rule_checks if rule_checks.height else None,
        diagnostics=fit.diagnostics,
        advice=fit_advice(fit.diagnostics, recorded), judge=judge,
        gold_metrics=gold.metrics if gold is not None else None,
        gold_confusion=gold.confusion if gold is not None else None, panel_metrics=panel,
        figures={FIGURE_KEYS[name]: path for name, path in written.items()},
        model_identities={key.split(".", 1)[1]: value for key, value in identities.items()
                          if key.startswith("model.")},
        reading=plain_language_reading(contrasts, thetas, cfg.fit.hdi_prob, no_signal,
                                       floor_from_prior(floor)),
        no_signal=no_signal,
        caveats=[*source_caveat(cfg, prompts, source), *response_caveat(cfg.fit.response),
                 *caveats(labels, prompts, judge, fit.converged, int(metrics["n_failed"]),
                          cfg.judge.name)],
        warnings=warnings, provenance=tags,
        adaptive=adaptive.summary if adaptive is not None else None)
    report_html = report_dir / "report.html"
    # Written before the MLflow run opens, so a store that fails never costs the report; written
    # again inside it to name the run.
    report_html.write_text(render_report(build_context(inputs, None)), encoding="utf-8")

    with method_run(cfg, own_tags, started_at, files.directory) as run_info:
        if run_info is not None:
            report_html.write_text(render_report(build_context(inputs, run_info.run_id)),
                                   encoding="utf-8")
            tracking.log_metrics(metrics)
            if adaptive is not None:
                tracking.log_metric_steps(adaptive.steps)
                tracking.log_artifacts([("tables", files.rounds)])  # its plot: with the rest
            fit_extras = [files.fit / name for name in ("contrasts.csv", "diagnostics.json")]
            tracking.log_artifacts([
                ("", report_html),
                *provenance_files(cfg, config_yaml),
                ("fit", files.fit / "posterior.nc"),
                *[("fit", path) for path in fit_extras if path.is_file()],
                ("tables", files.fit / "summary.csv"),
                ("tables", report_dir / "theta_ranking.csv"),
                ("tables", report_dir / "label_rates.csv"),
                ("tables", report_dir / "label_rate_tests.csv"),
                ("tables", report_dir / "metrics.json"),
                *([("tables", report_dir / "noise_floor.csv")] if floor.height else []),
                *([("judge", report_dir / "judge_gold_confusion.csv"),
                   ("judge", report_dir / "judge_gold_by_category.csv"),
                   ("judge", files.gold)] if gold is not None else []),
                ("judge", files.votes),
                ("judge", report_dir / "judge_agreement_by_item.csv"),
                *([("judge", report_dir / "judge_rule_agreement.csv")]
                  if rule_checks.height else []),
                *[("plots", path) for path in written.values()],
                ("data", files.prompts),
                # The answers themselves: the run is the durable record a reviewer opens.
                ("data", files.responses),
                ("data", files.labels),
            ])
    print_ranking(thetas, cfg.fit.hdi_prob)
    # The report, the MLflow URL and the no-signal headline are in the summary that follows.
    log.info("tables, posterior and plots are in %s", files.directory)
    return {"run": run_info, "thetas": thetas, "metrics": metrics, "report": report_html,
            "no_signal": headline}


def publish_from_files(cfg: AuditConfig, files, timings: dict[str, float] | None = None,
                       started_at: float | None = None) -> dict:
    """The report stage: publishing from the tables and the fit the earlier stages wrote."""
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    responses = read_table(files.responses, ResponseSchema, "responses")
    labels = read_table(files.labels, LabelSchema, "labels")
    return publish(cfg, prompts, responses, labels, read_fit(files.fit, cfg.fit), files,
                   timings=dict(timings or {}), started_at=started_at)
