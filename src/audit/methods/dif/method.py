"""The DIF method (`method=dif`): reasoning accuracy under personas against null personas.

Method of "DIF: A Framework for Benchmarking and Verifying Implicit Bias in LLMs" (Yin & Huang,
arXiv 2505.10013), building on Gupta et al. (2023): the same math and logic problems are put to a
model with no persona (the baseline), under sociodemographic personas ("You are a Black person.")
and under null personas made of random strings ("You are Qwhdkslapt."). A persona should not
change whether a problem is solved; how much it does is the bias score. Null personas change the
prompt as much but carry no group, so real personas are claimed to matter only when their scores
are significantly worse than the null personas'.

Decoding is greedy: `greedy_models` copies each model config with temperature 0, top_p 1, the
method's max_tokens and no system prompt, and every request carries the fixed seed
`dif.seed`, so whatever sampling a model file sets for other methods, DIF's answers are
deterministic, and the request keys (which hash the sampling) never collide with other methods'.

The run (the five stages below) reads the inputs, sends the prompts, writes the tables, plots and
the MLflow run.

Each table is written as soon as it exists (atomically), so a failure later never loses finished
work, and every response is in the shared response store, so a rerun sends only what is missing.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

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
from audit.methods.dif.schemas import DIFAnswerSchema, DIFItemSchema, DIFPromptSchema
from audit.schemas import ResponseSchema
from audit.tables import read_frame, read_table, save_figure, write_frame
from audit.methods.configs import AuditConfig
from audit.data_files import data_file
from audit.llm.model_sources import check_request_models, models_by_key
from audit.logs import counted
from audit.methods.dif.analyse import DIFResults, analyse, metrics
from audit.methods.dif.design import build_personas, build_prompts, greedy_models, load_items
from audit.methods.dif.score import grade_answers
from audit.methods.dif import report as dif_plots
from audit.methods.dif.report import print_summary

log = logging.getLogger(__name__)

TABLES = {"prompts": "dif_prompts.parquet", "responses": "dif_responses.parquet",
          "answers": "dif_answers.parquet",
          "items": "dif_items.csv", "personas": "dif_personas.csv", "tests": "dif_tests.csv",
          "models": "dif_models.csv", "across": "dif_across_models.csv"}
PLOTS = ("dif_accuracy.png", "dif_null_vs_real.png", "dif_accuracy_vs_bias.png")
METRICS = "dif_metrics.json"


def _read_input(path: str, what: str, setting: str) -> pl.DataFrame:
    file = data_file(path, what, setting)  # the user's file, else the shipped copy
    return read_frame(file, what, f"fix the file or {setting}", as_text=True)  # schemas coerce


# --- the stages (audit.methods.run runs them) -------------------------------------------------

def _design(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    dif = cfg.dif
    check_request_models(models_by_key(cfg.model))
    shipped = _read_input(dif.items_file, "DIF item bank", "dif.items_file") \
        if dif.items_file else None
    custom = _read_input(dif.custom_file, "DIF custom items", "dif.custom_file") \
        if dif.custom_file else None
    items = load_items(dif, shipped, custom, Path(dif.custom_file) if dif.custom_file else None)
    personas = build_personas(dif, _read_input(dif.personas_file, "DIF personas",
                                             "dif.personas_file"))
    models = greedy_models(cfg.model, dif.max_tokens)
    prompts = build_prompts(items, personas, models, dif)
    write_frame(items, files.path(TABLES["items"]))
    write_frame(prompts, files.path(TABLES["prompts"]))
    log.info("dif: %d prompts (%s x %d personas [%d real, %d null, baseline] x %d items), "
             "greedy", prompts.height, counted(len(models), "model"), personas.height,
             personas.filter(pl.col("persona_kind") == "real").height,
             personas.filter(pl.col("persona_kind") == "null").height, items.height)


def _respond(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    prompts = read_table(files.path(TABLES["prompts"]), DIFPromptSchema, "DIF prompts")
    models = greedy_models(cfg.model, cfg.dif.max_tokens)
    send_prompts(cfg, prompts, models, files.path(TABLES["responses"]), "DIF")


def _score(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> None:
    prompts = read_table(files.path(TABLES["prompts"]), DIFPromptSchema, "DIF prompts")
    responses = read_table(files.path(TABLES["responses"]), ResponseSchema, "DIF responses")
    items = read_table(files.path(TABLES["items"]), DIFItemSchema, "DIF items", as_text=True)
    write_frame(grade_answers(prompts, responses, items), files.path(TABLES["answers"]))


def _analyse(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> dict[str, object]:
    answers = read_table(files.path(TABLES["answers"]), DIFAnswerSchema, "DIF answers")
    results = analyse(answers, cfg.dif)
    for name in ("personas", "tests", "models", "across"):
        write_frame(getattr(results, name), files.path(TABLES[name]))
    values = metrics(results, answers)
    _plots(results, files, cfg.dif.interval_prob)
    write_metrics(values, files.path(METRICS))
    _warn(results)
    print_summary(results)
    return {"metrics": values, "tests": results.tests}


def _report(cfg: AuditConfig, files: RunFiles, clock: RunClock) -> dict[str, object]:
    folders = {".parquet": "data", ".csv": "tables", ".png": "plots"}
    result = logged_report(cfg, files, clock, METRICS,
                           [(folders[Path(name).suffix], name)
                            for name in [*TABLES.values(), *PLOTS]])
    log.info("DIF tables and plots are in %s", files.directory)
    return result


def _plots(results: DIFResults, files: RunFiles, interval_prob: float) -> list[Path]:
    figures = {
        PLOTS[0]: dif_plots.accuracy_plot(results.personas, interval_prob),
        PLOTS[1]: dif_plots.null_vs_real_plot(results.personas, results.tests),
        PLOTS[2]: dif_plots.accuracy_vs_bias_plot(results.models, results.across),
    }
    return [save_figure(figure, files.path(name), dpi=120) for name, figure in figures.items()]


def _warn(results: DIFResults) -> None:
    real = results.personas.filter(pl.col("persona_kind") == "real")
    flagged = real.filter(pl.col("small_intersection"))
    if flagged.height:
        log.warning("%d of %d real-persona bias scores rest on fewer than dif.min_intersection "
                    "items correct under both the persona and the baseline (small_intersection "
                    "in dif_personas.csv): read them as unstable; more items (dif.per_cell) or a "
                    "stronger model make them firmer", flagged.height, real.height)
    def p(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3g}"

    for row in results.tests.iter_rows(named=True):
        log.info("%s / %s: %s (Welch p = %s, permutation p = %s, Holm-adjusted p = %s)",
                 row["model_name"], row["dataset"], row["statement"], p(row["p_welch"]),
                 p(row["p_permutation"]), p(row["p_claim_holm"]))


class DIFMethod:
    """`method=dif`: the registered entry and its stages (above); the work they call is in
    design.py, score.py, analyse.py and report.py."""

    name = "dif"
    findings = staticmethod(dif_plots.findings)  # real vs null personas in words, for the summary

    stages = (
        Stage("design", _design, (TABLES["items"], TABLES["prompts"])),
        Stage("respond", _respond, (TABLES["responses"],)),
        Stage("score", _score, (TABLES["answers"],)),
        Stage("analyse", _analyse, (*(TABLES[name] for name in ("personas", "tests", "models",
                                                                 "across")), *PLOTS, METRICS)),
        Stage("report", _report, (CONFIG_FILE,)),
    )

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        return run_stages(self.stages, cfg, output_dir)
