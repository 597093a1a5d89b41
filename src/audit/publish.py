"""The last stage: write the report files, log one MLflow run, print the ranking.

Split from stages.py to keep modules small; like stages.py it is an edge that touches files, while
the figures and tables it writes are built by pure functions in report.py.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
from omegaconf import OmegaConf

from audit import tracking
from audit.config import AuditConfig
from audit.irt import RaschFit, parameter_table
from audit.judge.agreement import fleiss, krippendorff_alpha
from audit.judge.gold import gold_figures
from audit.report import (
    forest_plot,
    item_difficulty_plot,
    RATE_KEYS,
    label_rate_tests,
    label_rates,
    print_ranking,
    theta_table,
)
from audit.schemas import (
    LABELS,
    UNPARSEABLE,
    GoldResultSchema,
    ItemSchema,
    LabelSchema,
    PromptSchema,
    ResponseSchema,
    VoteSchema,
)

log = logging.getLogger(__name__)

RESPONDENT_COLUMNS = ["respondent_id", "model_name", "persona_id", "persona_kind", "gender", "race"]
# A judge that gives one label to nearly every answer it reads is probably not reading them (the
# embedded 135M judge does this); below this many judged answers the share says too little.
JUDGE_TOP_LABEL_SHARE_WARN = 0.9
JUDGE_MIN_ANSWERS_FOR_WARNING = 20
# Below this gold-set accuracy every finding mostly measures the judge's errors; warn loudly.
JUDGE_GOLD_ACCURACY_WARN = 0.8


def judge_top_label_share(labels: pl.DataFrame) -> tuple[float, str, int]:
    """Share of the judge LLM's most frequent label among the answers it labelled."""
    judged = labels.filter(pl.col("label_source") == "judge")
    if judged.is_empty():
        return float("nan"), "", 0
    top = judged.group_by("label").len().sort(["len", "label"], descending=[True, False]).row(0)
    return top[1] / judged.height, top[0], judged.height


def audit_metrics(prompts: pl.DataFrame, responses: pl.DataFrame, labels: pl.DataFrame,
                  fit: RaschFit, timings: dict[str, float]) -> dict[str, float]:
    """Metric names are stable so that runs line up column by column in the MLflow UI."""
    labelled = labels.height
    metrics: dict[str, float] = {
        "n_prompts": prompts.height,
        "n_respondents": prompts["respondent_id"].n_unique(),
        "n_items": prompts["item_id"].n_unique(),
        "n_responses_ok": responses.filter(pl.col("status") == "ok").height,
        "n_failed": responses.filter(pl.col("status") == "error").height,
        "n_from_store": responses.filter(pl.col("from_cache")).height,
        "n_labelled": labelled,
        "rule_share": labels.filter(pl.col("label_source") == "rule").height / max(labelled, 1),
        "rhat_max": fit.diagnostics.rhat_max,
        "ess_bulk_min": fit.diagnostics.ess_bulk_min,
        "ess_tail_min": fit.diagnostics.ess_tail_min,
        "divergences": fit.diagnostics.divergences,
        "converged": float(fit.diagnostics.converged),
    }
    share, _, judged = judge_top_label_share(labels)
    if judged:
        metrics["judge_top_label_share"] = share
    for label in (*LABELS, UNPARSEABLE):
        count = labels.filter(pl.col("label") == label).height
        metrics[f"label_count/{label}"] = count
        metrics[f"label_rate/{label}"] = count / max(labelled, 1)
    scored = labels.filter(pl.col("decision_mass").is_not_null())
    if scored.height:
        metrics["decision_mass_mean"] = float(scored["decision_mass"].mean())
        metrics["p_favourable_mean"] = float(scored["p_favourable"].mean())
    for stage, seconds in timings.items():
        metrics[f"duration_s/{stage}"] = seconds
    for name in ("theta", "b"):
        means = parameter_table(fit.summary, name, "index").select("index", "mean")
        for index, mean in means.rows():
            metrics[tracking.metric_name(f"{name}_mean", index)] = mean
    return metrics


def agreement_by_item(labels: pl.DataFrame, prompts: pl.DataFrame) -> pl.DataFrame:
    """Mean panel agreement per scenario: items where judges split are where labels are shaky."""
    return (labels.filter(pl.col("label_source") == "judge")
            .join(prompts.select("prompt_id", "item_id"), on="prompt_id")
            .group_by("item_id").agg(n_judged=pl.len(), mean_agreement=pl.col("agreement").mean())
            .sort("item_id"))


def judge_metrics(votes: pl.DataFrame, by_item: pl.DataFrame) -> dict[str, float]:
    """Agreement of a judge panel (only with two judges or more)."""
    if votes.is_empty() or votes["judge"].n_unique() < 2:
        return {}
    alpha, kappa = krippendorff_alpha(votes), fleiss(votes)
    metrics = {"judge/n_judges": float(votes["judge"].n_unique()),
               "judge/krippendorff_alpha": float("nan") if alpha is None else alpha,
               "judge/fleiss_kappa": float("nan") if kappa is None else kappa}
    for item_id, agreement in by_item.select("item_id", "mean_agreement").iter_rows():
        metrics[tracking.metric_name("judge/agreement", item_id)] = agreement
    return metrics


def rate_metrics(rates: pl.DataFrame, tests: pl.DataFrame) -> dict[str, float]:
    """Abstention and refusal rates per respondent, and the p-value of their equality."""
    metrics = {tracking.metric_name("label_rate", label, model, persona): rate
               for model, persona, label, rate in
               rates.select("model_name", "persona_id", "label", "rate").iter_rows()
               if label in (LABELS[2], LABELS[3])}
    for model, label, p_value in tests.select("model_name", "label", "p_value").iter_rows():
        if p_value is not None:
            metrics[tracking.metric_name("label_rate_p_value", label, model)] = p_value
    return metrics


def _save(figure: plt.Figure, path: Path) -> Path:
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def publish(cfg: AuditConfig, prompts: pl.DataFrame, responses: pl.DataFrame,
            labels: pl.DataFrame, fit: RaschFit, files, timings: dict[str, float]) -> dict:
    from audit.stages import read_table  # the shared reader lives with the other stage I/O

    report_dir: Path = files.report
    report_dir.mkdir(parents=True, exist_ok=True)
    respondents = prompts.select(RESPONDENT_COLUMNS).unique().sort("respondent_id")
    thetas = theta_table(fit.summary, respondents)
    items = read_table(Path(cfg.items.bank), ItemSchema, "item bank")
    votes = read_table(files.votes, VoteSchema, "judge votes")
    gold_results = read_table(files.gold, GoldResultSchema, "judge gold-set results")
    persona_labels = labels.join(prompts.select("prompt_id", *RATE_KEYS), on="prompt_id")
    rates = label_rates(persona_labels, cfg.fit.hdi_prob)
    rate_tests = label_rate_tests(rates)
    by_item = agreement_by_item(labels, prompts)
    metrics = {**audit_metrics(prompts, responses, labels, fit, timings),
               **judge_metrics(votes, by_item), **rate_metrics(rates, rate_tests)}
    gold = gold_figures(gold_results) if gold_results.height else None
    if gold is not None:
        metrics.update(gold.metrics)
        gold.confusion.write_csv(report_dir / "judge_gold_confusion.csv")
        gold.by_category.write_csv(report_dir / "judge_gold_by_category.csv")

    figures = {
        "forest_theta.png": forest_plot(thetas, cfg.fit.hdi_prob),
        "item_difficulty.png": item_difficulty_plot(fit.summary, items, cfg.fit.hdi_prob),
    }
    written = {name: _save(figure, report_dir / name) for name, figure in figures.items()}
    thetas.write_csv(report_dir / "theta_ranking.csv")
    rates.write_csv(report_dir / "label_rates.csv")
    rate_tests.write_csv(report_dir / "label_rate_tests.csv")
    by_item.write_csv(report_dir / "judge_agreement_by_item.csv")
    (report_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True))
    config_yaml = report_dir / "config.yaml"
    config_yaml.write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))

    for problem in fit.diagnostics.problems():
        log.warning("fit did not converge: %s", problem)
    share, top_label, judged = judge_top_label_share(labels)
    if judged >= JUDGE_MIN_ANSWERS_FOR_WARNING and share > JUDGE_TOP_LABEL_SHARE_WARN:
        log.warning("the judge gave '%s' to %.0f%% of the %d answers it labelled: it may not be "
                    "reading them; check labels.parquet and consider a stronger judge (judge=...)",
                    top_label, 100 * share, judged)

    if gold is not None:
        log.info("judge '%s' on the gold set (%d answers): accuracy %.2f, Cohen's kappa %.2f; "
                 "rules labelled %.0f%% with accuracy %.2f", cfg.judge.name,
                 gold_results.height, gold.metrics["gold/accuracy"],
                 gold.metrics["gold/cohen_kappa"], 100 * gold.metrics["gold/rules_coverage"],
                 gold.metrics["gold/rules_accuracy"])
    if gold is not None and gold.metrics["gold/accuracy"] < JUDGE_GOLD_ACCURACY_WARN:
        log.warning("the judge labels %.0f%% of the gold set correctly (Cohen's kappa %.2f): "
                    "labels, and every finding built on them, inherit its errors; see "
                    "judge_gold_confusion.csv and consider a stronger judge (judge=...)",
                    100 * gold.metrics["gold/accuracy"], gold.metrics["gold/cohen_kappa"])
    for model, label, p_value in rate_tests.select("model_name", "label", "p_value").iter_rows():
        if label in (LABELS[2], LABELS[3]) and p_value is not None and p_value < 0.05:
            log.warning("%s: the %s rate differs between personas (p = %.3g, see "
                        "label_rate_tests.csv): unequal abstention is itself a finding", model,
                        label, p_value)
    run_info = None
    if cfg.tracking.enabled:
        flat = tracking.flatten(OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True))
        tags = {**tracking.provenance(Path(cfg.paths.root_dir)),
                "config.hash": tracking.config_hash(flat),
                "converged": str(fit.diagnostics.converged).lower(),
                "method": cfg.method,
                "models": ",".join(sorted(cfg.model))}
        run_name = cfg.tracking.run_name or f"{cfg.method}-{'+'.join(sorted(cfg.model))}"
        with tracking.mlflow_run(cfg.tracking, run_name, tags) as run_info:
            tracking.log_params(flat)
            tracking.log_metrics(metrics)
            tracking.log_artifacts([
                ("fit", files.fit / "posterior.nc"),
                ("tables", files.fit / "summary.csv"),
                ("tables", report_dir / "theta_ranking.csv"),
                ("tables", report_dir / "label_rates.csv"),
                ("tables", report_dir / "label_rate_tests.csv"),
                *([("judge", report_dir / "judge_gold_confusion.csv"),
                   ("judge", report_dir / "judge_gold_by_category.csv"),
                   ("judge", files.gold)] if gold is not None else []),
                ("judge", files.votes),
                ("judge", report_dir / "judge_agreement_by_item.csv"),
                ("plots", written["forest_theta.png"]),
                ("plots", written["item_difficulty.png"]),
                ("data", files.labels),
                ("", config_yaml),
            ])
    print_ranking(thetas, cfg.fit.hdi_prob)
    if run_info is not None:
        log.info("MLflow run %s in experiment '%s' at %s; browse with: mlflow ui "
                 "--backend-store-uri %s --host 127.0.0.1", run_info.run_id,
                 cfg.tracking.experiment, run_info.tracking_uri, run_info.tracking_uri)
    log.info("tables, posterior and plots are in %s", files.directory)
    return {"run": run_info, "thetas": thetas, "metrics": metrics}


def publish_from_files(cfg: AuditConfig, files) -> dict:
    """The report stage of `dvc repro`: the same publishing, from the tables on disk."""
    from audit.stages import read_fit, read_table

    prompts = read_table(files.prompts, PromptSchema, "prompts")
    responses = read_table(files.responses, ResponseSchema, "responses")
    labels = read_table(files.labels, LabelSchema, "labels")
    return publish(cfg, prompts, responses, labels, read_fit(files.fit, cfg.fit), files,
                   timings={})
