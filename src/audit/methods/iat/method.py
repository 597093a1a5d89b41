"""`method=iat`: the IAT word-association audit, end to end, and the files it writes.

The edge of the method: it reads the stimuli, sends the prompts through the engine and the
response store (one independent request each, cached and resumable), writes every table as soon
as it exists, and logs one MLflow run. The logic it calls is pure (iat.py, iat_parse.py,
iat_stats.py, iat_plots.py). `python -m audit.iat import_dir=...` reuses the analysis half.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from audit.config import ModelConfig

from audit.methods.configs import AuditConfig
from audit.methods.iat.config import IATConfig
from audit.methods.iat.design import (
    Stimuli,
    design_prompts,
    load_stimuli,
)
from audit.methods.iat.score import answers_from_responses, score_answers
from audit.methods.iat.report import (
    d_by_dataset_plot,
    d_by_variation_plot,
    findings,
    print_iat_table,
)
from audit.methods.iat.schemas import STATS_COLUMNS, IATPromptSchema, IATScoreSchema
from audit.methods.iat.analyse import (
    check_statistics_config,
    iat_metrics,
    iat_statistics,
    log_left_out,
)
from audit.data_files import data_file
from audit.schemas import ResponseSchema
from audit.tables import read_frame, read_table, save_figure, write_frame, write_table
from audit.llm.engine import summarise_responses
from audit.llm.model_sources import check_request_models, models_by_key
from audit.logs import counted
from audit.methods.run import (
    CONFIG_FILE,
    RunClock,
    RunFiles,
    Stage,
    logged_report,
    run_stages,
    send_prompts,
    write_metrics,
)

log = logging.getLogger(__name__)

PROMPTS, RESPONSES, SCORES = "iat_prompts.parquet", "iat_responses.parquet", "iat_scores.parquet"
STATS, STATS_BY_VARIATION = "iat_stats.csv", "iat_stats_by_variation.csv"
METRICS = "iat_metrics.json"


def read_stimuli(config: IATConfig) -> Stimuli:
    """The stimuli files from the user's path, else the copies shipped with audit (any folder)."""
    fix = "point stimuli_file, synonym_file and aliases_file (iat.* in an audit) at your CSV files"
    original = read_frame(data_file(config.stimuli_file, "IAT stimuli",
                                    "stimuli_file (iat.stimuli_file in an audit)"),
                          "IAT stimuli", fix, as_text=True)
    synonym = read_frame(data_file(config.synonym_file, "IAT synonym stimuli",
                                   "synonym_file (iat.synonym_file in an audit)"),
                         "IAT synonym stimuli", fix, as_text=True)
    aliases = (read_frame(data_file(config.aliases_file, "IAT group aliases",
                                    "aliases_file (iat.aliases_file in an audit; empty for "
                                    "none)"), "IAT group aliases", fix, as_text=True)
               if config.aliases_file else None)
    return load_stimuli(original, synonym, aliases, (config.stimuli_file, config.synonym_file,
                                                     config.aliases_file or "aliases"))


@dataclass(frozen=True)
class Analysis:
    """What the scores turn into, and where it was written."""

    stats: pl.DataFrame
    by_variation: pl.DataFrame
    files: dict[str, Path]


def analyse(scores: pl.DataFrame, config: IATConfig, output_dir: Path) -> Analysis:
    """Scores -> iat_scores.parquet, iat_stats.csv, iat_stats_by_variation.csv and the plots."""
    output_dir = Path(output_dir)
    write_table(scores, output_dir / SCORES, IATScoreSchema, "IAT scores")
    analysis = analyse_scores(scores, config, lambda name: output_dir / name)
    return Analysis(analysis.stats, analysis.by_variation,
                    {"scores": output_dir / SCORES, **analysis.files})


def analyse_scores(scores: pl.DataFrame, config: IATConfig,
                   place: Callable[[str], Path]) -> Analysis:
    """Scores -> the statistics tables and plots, each written where `place` puts its name."""
    log_left_out(scores, config.scoring)
    stats = iat_statistics(scores, config).select(STATS_COLUMNS)
    by_variation = iat_statistics(scores, config,
                                  ("model", "category", "dataset", "variation"))
    files = {"stats": place(STATS), "stats_by_variation": place(STATS_BY_VARIATION)}
    write_frame(stats, files["stats"])
    write_frame(by_variation, files["stats_by_variation"])
    if stats.height:
        for name, figure in (
                ("plot_by_dataset", d_by_dataset_plot(stats, config.confidence_level,
                                                      config.alpha)),
                ("plot_by_variation", d_by_variation_plot(by_variation,
                                                          config.confidence_level))):
            files[name] = save_figure(figure, place(f"iat_d_{name.removeprefix('plot_')}.png"),
                                      dpi=120)
    return Analysis(stats, by_variation, files)


def _iat_models(cfg: AuditConfig) -> dict[str, ModelConfig]:
    """The audited models with the method's token budget (a list of pairs is long)."""
    if cfg.iat.max_tokens is None:
        return dict(cfg.model)
    return {name: replace(model, sampling=replace(model.sampling, max_tokens=cfg.iat.max_tokens))
            for name, model in cfg.model.items()}


# --- the stages (audit.methods.run runs them) -------------------------------------------------

def _design(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    check_statistics_config(cfg.iat)
    check_request_models(models_by_key(cfg.model))
    models = _iat_models(cfg)
    prompts = design_prompts(read_stimuli(cfg.iat), cfg.iat, models)
    write_table(prompts, files.path(PROMPTS), IATPromptSchema, "IAT prompts")
    log.info("iat design: %d prompts (%s x %s x %s x %s)", prompts.height,
             counted(len(models), "model"), counted(prompts["dataset"].n_unique(), "dataset"),
             counted(len(cfg.iat.variations), "variation"),
             counted(cfg.iat.iterations, "iteration"))


def _respond(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    prompts = read_table(files.path(PROMPTS), IATPromptSchema, "IAT prompts")
    models = _iat_models(cfg)
    send_prompts(cfg, prompts, models, files.path(RESPONSES), "IAT")


def _score(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    prompts = read_table(files.path(PROMPTS), IATPromptSchema, "IAT prompts")
    responses = read_table(files.path(RESPONSES), ResponseSchema, "IAT responses")
    scores = score_answers(answers_from_responses(prompts, responses), read_stimuli(cfg.iat))
    write_table(scores, files.path(SCORES), IATScoreSchema, "IAT scores")


def _analyse(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> dict[str, object]:
    scores = read_table(files.path(SCORES), IATScoreSchema, "IAT scores")
    responses = read_table(files.path(RESPONSES), ResponseSchema, "IAT responses")
    analysis = analyse_scores(scores, cfg.iat, files.path)
    counts = summarise_responses(responses)
    metrics = {**iat_metrics(scores, analysis.stats), "n_prompts": float(responses.height),
               "n_failed": float(counts["failed"]), "n_from_store": float(counts["cached"])}
    write_metrics(metrics, files.path(METRICS))
    print_iat_table(analysis.stats, cfg.iat.confidence_level, cfg.iat.alpha)
    return {"stats": analysis.stats, "metrics": metrics}


def _report(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> dict[str, object]:
    result = logged_report(cfg, files, clock, METRICS, [
        ("tables", STATS), ("tables", STATS_BY_VARIATION),
        ("plots", "iat_d_by_dataset.png"), ("plots", "iat_d_by_variation.png"),
        ("data", SCORES), ("data", PROMPTS), ("data", RESPONSES)])
    log.info("IAT tables and plots are in %s", files.directory)
    return result


class IATMethod:
    name = "iat"
    findings = staticmethod(findings)  # each mean D in words, for the run's summary
    stages = (
        Stage("design", _design, (PROMPTS,)),
        Stage("respond", _respond, (RESPONSES,)),
        Stage("score", _score, (SCORES,)),
        Stage("analyse", _analyse, (STATS, STATS_BY_VARIATION, "iat_d_by_dataset.png",
                                    "iat_d_by_variation.png", METRICS)),
        Stage("report", _report, (CONFIG_FILE,)),
    )

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        return run_stages(self.stages, cfg, output_dir)
