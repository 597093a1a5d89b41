"""`method=counterfactual`: paired open-ended prompts, compared on what users see in the answers.

Templates (a reference letter, a landlord's reference, ...) are filled with every combination of
demographic levels (names, pronouns, ages); each filled prompt is one independent request through
the engine and the response store. Each answer is scored (sentiment, length, competence and
warmth words, refusal), groups are compared per metric (Kruskal-Wallis, pairwise Mann-Whitney U
with Bonferroni and Benjamini-Hochberg corrections, effect sizes), and the tables, figures and
one MLflow run are written. `python -m audit.verdict run_dir=DIR` turns the design tests (the
pairs tested over names or templates, analyse_units.py) into a pass or fail for CI.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.methods.configs import AuditConfig
from audit.data_files import data_file
from audit.llm.model_sources import check_request_models, models_by_key
from audit.methods.counterfactual.config import CounterfactualConfig
from audit.methods.counterfactual.schemas import (
    CounterfactualGroupSchema,
    CounterfactualMetricSchema,
    DesignTestSchema,
    GroupTestSchema,
    PairwiseSchema,
)
from audit.methods.counterfactual.analyse import (
    StatsSettings,
    comparisons,
    group_summary,
    group_tests,
    observations,
    pairwise_tests,
)
from audit.methods.counterfactual.analyse_units import design_tests
from audit.methods.counterfactual.design import build_design, expand_variants, request_models
from audit.methods.counterfactual.score import (
    TransformerSentiment,
    check_metrics,
    load_lexicon,
    metric_table,
    score_texts,
)
from audit.schemas import PromptSchema, ResponseSchema, validate
from audit.tables import read_table, save_figure, write_frame
from audit.methods.run import (
    CONFIG_FILE,
    RunClock,
    RunFiles,
    Stage,
    logged_report,
    read_metrics,
    run_stages,
    send_prompts,
    write_metrics,
)
from audit.methods.counterfactual.report import (
    distribution_figure,
    findings,
    gap_matrix_figure,
    print_findings,
    run_metrics,
)

log = logging.getLogger(__name__)

# Above this share of answers cut off at max_tokens, word counts measure the cap, not the model.
TRUNCATED_SHARE_WARN = 0.5


# File names (flat in a run directory; in stage folders under `dvc repro`, see RunFiles).
PROMPTS, GROUPS = "prompts.parquet", "counterfactual_groups.parquet"
RESPONSES, METRICS_TABLE = "responses.parquet", "counterfactual_metrics.parquet"
GROUP_TESTS, PAIRWISE = "counterfactual_group_tests.csv", "counterfactual_pairwise.csv"
SUMMARY = "counterfactual_group_summary.csv"
# Group claims tested on their sampled units (names; templates, replicates nested): CI's table.
DESIGN_TESTS = "counterfactual_design_tests.csv"
PLOTS, RUN_METRICS = "plots", "metrics.json"


def check_settings(config: CounterfactualConfig) -> list[str]:
    """Fail before any request is sent; returns the metrics to test."""
    if not 0 < config.alpha < 1:
        raise AuditError(f"counterfactual.alpha={config.alpha} must lie in (0, 1)")
    if not 0 <= config.min_rank_biserial <= 1:
        raise AuditError(f"counterfactual.min_rank_biserial={config.min_rank_biserial} must lie "
                         f"in [0, 1] (it bounds |rank-biserial|)")
    if config.max_tokens is not None and config.max_tokens < 1:
        raise AuditError(f"counterfactual.max_tokens={config.max_tokens} must be at least 1")
    if config.bootstrap_resamples < 1 or not 0 < config.confidence_level < 1:
        raise AuditError("counterfactual.bootstrap_resamples must be >= 1 and "
                         "counterfactual.confidence_level in (0, 1)")
    return check_metrics(config.metrics, config.transformer_model)


# --- the stages (audit.methods.run runs them) -------------------------------------------------

def _design(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    config = cfg.counterfactual
    check_settings(config)
    check_request_models(models_by_key(cfg.model))
    # a missing lexicon stops the run before any request
    load_lexicon(data_file(config.lexicon, "lexicon", "counterfactual.lexicon"))
    variants = expand_variants(config)
    design = build_design(variants, request_models(cfg.model, config), cfg.design)
    write_frame(design.prompts, files.path(PROMPTS))
    write_frame(validate(design.groups, CounterfactualGroupSchema, "counterfactual groups"),
                   files.path(GROUPS))
    log.info("counterfactual design: %d templates, %d variants, %d prompts",
             len(config.templates), len({v.variant_id for v in variants}), design.prompts.height)


def _respond(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    prompts = read_table(files.path(PROMPTS), PromptSchema, "counterfactual prompts")
    models = request_models(cfg.model, cfg.counterfactual)
    send_prompts(cfg, prompts, models, files.path(RESPONSES), "counterfactual")


def _score(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    config = cfg.counterfactual
    prompts = read_table(files.path(PROMPTS), PromptSchema, "counterfactual prompts")
    responses = read_table(files.path(RESPONSES), ResponseSchema, "responses")
    groups = read_table(files.path(GROUPS), CounterfactualGroupSchema, "counterfactual groups")
    transformer = (TransformerSentiment(config.transformer_model) if config.transformer_model
                   else None)
    answered = responses.filter(pl.col("status") == "ok").sort("prompt_id")
    lexicon = load_lexicon(data_file(config.lexicon, "lexicon", "counterfactual.lexicon"))
    scores = score_texts(answered["response_text"].to_list(), lexicon, transformer)
    caps = {name: model.sampling.max_tokens
            for name, model in request_models(cfg.model, config).items()}
    metrics = metric_table(prompts, responses, groups, scores, caps)
    write_frame(metrics, files.path(METRICS_TABLE))
    truncated = float(metrics["truncated"].mean() or 0.0)
    if truncated > TRUNCATED_SHARE_WARN:
        log.warning("%.0f%% of answers stopped at max_tokens: word counts are censored at the "
                    "cap; raise counterfactual.max_tokens", 100 * truncated)


def _analyse(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> dict[str, object]:
    config = cfg.counterfactual
    tested = check_settings(config)
    prompts = read_table(files.path(PROMPTS), PromptSchema, "counterfactual prompts")
    responses = read_table(files.path(RESPONSES), ResponseSchema, "responses")
    groups = read_table(files.path(GROUPS), CounterfactualGroupSchema, "counterfactual groups")
    metrics = read_table(files.path(METRICS_TABLE), CounterfactualMetricSchema,
                         "counterfactual metrics")
    settings = StatsSettings(alpha=config.alpha, min_rank_biserial=config.min_rank_biserial,
                             bootstrap_resamples=config.bootstrap_resamples,
                             confidence_level=config.confidence_level, seed=cfg.design.seed,
                             by_template=config.by_template)
    long = observations(metrics, groups, tested)
    overall, pairs = comparisons(long, config.by_template)
    tests = validate(group_tests(overall), GroupTestSchema, "counterfactual group tests")
    pairwise = validate(pairwise_tests(pairs, settings), PairwiseSchema,
                        "counterfactual pairwise tests")
    summary = group_summary(long, settings)
    design = validate(design_tests(metrics, groups, tested, settings), DesignTestSchema,
                      "counterfactual design tests")
    write_frame(design, files.path(DESIGN_TESTS))
    write_frame(tests, files.path(GROUP_TESTS))
    write_frame(pairwise, files.path(PAIRWISE))
    write_frame(summary, files.path(SUMMARY))
    for model_name in sorted(prompts["model_name"].unique().to_list()):
        save_figure(distribution_figure(long, model_name),
                    files.path(f"{PLOTS}/counterfactual_distributions_{model_name}.png"))
        save_figure(gap_matrix_figure(design, model_name),
                    files.path(f"{PLOTS}/counterfactual_gaps_{model_name}.png"))
    values = run_metrics(prompts, responses, metrics, tests, pairwise, summary, design, {},
                         config.alpha)
    write_metrics(values, files.path(RUN_METRICS))
    print_findings(tests, design, config.alpha)
    return {"pairwise": pairwise, "design_tests": design, "tests": tests, "metrics": values}


def _report(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> dict[str, object]:
    plots = sorted(path.name for path in files.path(PLOTS).glob("*.png"))
    values = read_metrics(files.path(RUN_METRICS))
    result = logged_report(cfg, files, clock, RUN_METRICS, [
        ("tables", PAIRWISE), ("tables", GROUP_TESTS), ("tables", SUMMARY),
        ("tables", DESIGN_TESTS), ("data", METRICS_TABLE), ("data", GROUPS),
        ("data", PROMPTS), ("data", RESPONSES),  # what was asked and what the model said
        *(("plots", f"{PLOTS}/{name}") for name in plots),
    ], tags={"pairs_flagged": str(int(values["n_pairs_flagged"]))})
    log.info("tables and plots are in %s; judge the run with: python -m audit.verdict run_dir=%s",
             files.path(PAIRWISE).parent, files.path(PAIRWISE).parent)
    return result


class CounterfactualMethod:
    name = "counterfactual"
    findings = staticmethod(findings)  # each pair of groups in words, for the run's summary
    stages = (
        Stage("design", _design, (PROMPTS, GROUPS)),
        Stage("respond", _respond, (RESPONSES,)),
        Stage("score", _score, (METRICS_TABLE,)),
        Stage("analyse", _analyse, (DESIGN_TESTS, GROUP_TESTS, PAIRWISE, SUMMARY, PLOTS,
                                    RUN_METRICS)),
        Stage("report", _report, (CONFIG_FILE,)),
    )

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        return run_stages(self.stages, cfg, output_dir)
