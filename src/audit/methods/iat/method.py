"""`method=iat`: the IAT word-association audit, end to end, and the files it writes.

The edge of the method: it reads the stimuli, sends the prompts through the engine and the
response store (one independent request each, cached and resumable), writes every table as soon
as it exists, and logs one MLflow run. The logic it calls is pure (iat.py, iat_parse.py,
iat_stats.py, iat_plots.py). `python -m audit.iat import_dir=...` reuses the analysis half.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib.pyplot as plt
import pandera.polars as pa
import polars as pl

from audit.config import AuditConfig, ModelConfig
from audit.methods.iat.config import IATConfig
from audit.methods.iat.design import (
    IATError,
    Stimuli,
    design_prompts,
    load_stimuli,
    score_answers,
    slug,
)
from audit.methods.iat.report import d_by_dataset_plot, d_by_variation_plot, print_iat_table
from audit.methods.iat.schemas import STATS_COLUMNS, IATPromptSchema, IATScoreSchema
from audit.methods.iat.analyse import check_statistics_config, iat_statistics
from audit.data_files import data_file
from audit.schemas import ResponseSchema, validate
from audit.tracking.mlflow import metric_name
from audit.llm.backends import create_backend
from audit.llm.engine import check_failures, collect_responses, summarise_responses
from audit.llm.store import ResponseStore
from audit.methods.run import log_run, write_config

log = logging.getLogger(__name__)


def read_csv(path: Path, what: str, fix: str) -> pl.DataFrame:
    """A CSV as strings, or one line naming the file, the problem and the fix."""
    if not path.is_file():
        raise IATError(f"{what} not found at {path}: {fix}")
    try:
        return pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise IATError(f"cannot read {what} {path}: {first}; {fix}") from None


def read_stimuli(config: IATConfig) -> Stimuli:
    """The stimuli files from the user's path, else the copies shipped with audit (any folder)."""
    fix = "point stimuli_file, synonym_file and aliases_file (iat.* in an audit) at your CSV files"
    original = read_csv(data_file(config.stimuli_file, "IAT stimuli", "stimuli_file (iat.*)"),
                        "IAT stimuli", fix)
    synonym = read_csv(data_file(config.synonym_file, "IAT synonym stimuli",
                                 "synonym_file (iat.*)"), "IAT synonym stimuli", fix)
    aliases = (read_csv(data_file(config.aliases_file, "IAT group aliases",
                                  "aliases_file (iat.*; empty for none)"), "IAT group aliases", fix)
               if config.aliases_file else None)
    return load_stimuli(original, synonym, aliases, (config.stimuli_file, config.synonym_file,
                                                     config.aliases_file or "aliases"))


def write_table(frame: pl.DataFrame, path: Path, schema: type[pa.DataFrameModel],
                what: str) -> Path:
    """stages.write_table's twin: importing stages would load the Rasch stack (PyMC, ArviZ),
    which this method never uses."""
    validate(frame, schema, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".partial")
    frame.write_parquet(partial)
    partial.replace(path)  # atomic: a crash never leaves a half-written table behind
    return path


@dataclass(frozen=True)
class Analysis:
    """What the scores turn into, and where it was written."""

    stats: pl.DataFrame
    by_variation: pl.DataFrame
    files: dict[str, Path]


def analyse(scores: pl.DataFrame, config: IATConfig, output_dir: Path) -> Analysis:
    """Scores -> iat_scores.parquet, iat_stats.csv, iat_stats_by_variation.csv and the plots."""
    output_dir.mkdir(parents=True, exist_ok=True)
    log_left_out(scores, config.scoring)
    files = {"scores": write_table(scores, output_dir / "iat_scores.parquet", IATScoreSchema,
                                   "IAT scores")}
    stats = iat_statistics(scores, config).select(STATS_COLUMNS)
    by_variation = iat_statistics(scores, config,
                                  ("model", "category", "dataset", "variation"))
    files["stats"] = output_dir / "iat_stats.csv"
    stats.write_csv(files["stats"])
    files["stats_by_variation"] = output_dir / "iat_stats_by_variation.csv"
    by_variation.write_csv(files["stats_by_variation"])
    if stats.height:
        for name, figure in (
                ("plot_by_dataset", d_by_dataset_plot(stats, config.confidence_level,
                                                      config.alpha)),
                ("plot_by_variation", d_by_variation_plot(by_variation,
                                                          config.confidence_level))):
            files[name] = output_dir / f"iat_d_{name.removeprefix('plot_')}.png"
            figure.savefig(files[name], dpi=120)
            plt.close(figure)
    return Analysis(stats, by_variation, files)


def left_out_counts(scores: pl.DataFrame) -> dict[str, int]:
    """How many answers each scoring mode leaves out of the means, and how many complete
    answers give every word to one group (D about -0.50 by the formula)."""
    lenient = scores.filter(pl.col("d_score").is_not_null())
    return {"answers": scores.height,
            "left_out_strict": scores.height - lenient.filter(pl.col("parsed")).height,
            "left_out_lenient": scores.height - lenient.height,
            "one_group": int(lenient.filter(pl.col("parsed"))["one_group"].sum())}


def log_left_out(scores: pl.DataFrame, scoring: str) -> None:
    counts = left_out_counts(scores)
    log.info("iat scoring=%s: strict scoring leaves out %d of %d answers, lenient %d; %d complete "
             "answers give every word to one group (flagged, D about -0.50)", scoring,
             counts["left_out_strict"], counts["answers"], counts["left_out_lenient"],
             counts["one_group"])


def iat_metrics(scores: pl.DataFrame, stats: pl.DataFrame) -> dict[str, float]:
    """Stable names (iat/MODEL/DATASET/mean_d, ...) so that runs line up in the MLflow UI."""
    metrics: dict[str, float] = {"iat/n_scored": float(scores.height),
                                 "iat/parse_rate": float(scores["parsed"].mean() or 0.0),
                                 **{f"iat/n_{name}": float(count) for name, count in
                                    left_out_counts(scores).items() if name != "answers"}}
    for model, group in scores.group_by("model"):
        metrics[metric_name("iat", str(model[0]), "parse_rate")] = float(group["parsed"].mean())
    for row in stats.iter_rows(named=True):
        for column in ("n", "n_left_out_strict", "n_left_out_lenient", "n_one_group",
                       "parse_rate", "mean_d", "ci_low", "ci_high", "p_value", "p_adjusted"):
            if row[column] is not None:
                metrics[metric_name("iat", row["model"], slug(row["dataset"]), column)] = \
                    float(row[column])
    return metrics


def _iat_models(cfg: AuditConfig) -> dict[str, ModelConfig]:
    """The audited models with the method's token budget (a list of pairs is long)."""
    if cfg.iat.max_tokens is None:
        return dict(cfg.model)
    return {name: replace(model, sampling=replace(model.sampling, max_tokens=cfg.iat.max_tokens))
            for name, model in cfg.model.items()}


def answers_from_responses(prompts: pl.DataFrame, responses: pl.DataFrame) -> pl.DataFrame:
    return (prompts.join(responses.filter(pl.col("status") == "ok"), on="prompt_id", how="inner")
            .select(pl.col("model_name").alias("model"), "dataset", "variation",
                    pl.col("prompt_id").alias("response_id"), "iteration", "response_text"))


class IATMethod:
    name = "iat"

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        output_dir = Path(output_dir)
        check_statistics_config(cfg.iat)
        timings: dict[str, float] = {}
        started_at = time.time()  # the MLflow run spans the work, not only its logging
        started = time.perf_counter()
        stimuli = read_stimuli(cfg.iat)
        models = _iat_models(cfg)
        prompts = design_prompts(stimuli, cfg.iat, models)
        write_table(prompts, output_dir / "iat_prompts.parquet", IATPromptSchema, "IAT prompts")
        timings["design"] = time.perf_counter() - started
        log.info("iat design: %d prompts (%d models x %d datasets x %d variations x %d "
                 "iterations)", prompts.height, len(models), prompts["dataset"].n_unique(),
                 len(cfg.iat.variations), cfg.iat.iterations)

        started = time.perf_counter()
        backends = {name: create_backend(cfg.model[name]) for name in sorted(models)}
        with ResponseStore(cfg.paths.response_store) as store:
            responses = collect_responses(prompts, backends, models, store, cfg.engine)
        write_table(responses, output_dir / "iat_responses.parquet", ResponseSchema,
                    "IAT responses")
        counts = summarise_responses(responses)
        log.info("iat respond: %d sent, %d from the store, %d failed", counts["sent"],
                 counts["cached"], counts["failed"])
        check_failures(responses, cfg.engine.max_failed_share, cfg.paths.response_store,
                       "IAT requests")
        timings["respond"] = time.perf_counter() - started

        started = time.perf_counter()
        scores = score_answers(answers_from_responses(prompts, responses), stimuli)
        analysis = analyse(scores, cfg.iat, output_dir)
        timings["analyse"] = time.perf_counter() - started
        metrics = {**iat_metrics(scores, analysis.stats),
                   "n_prompts": float(prompts.height), "n_failed": float(counts["failed"]),
                   "n_from_store": float(counts["cached"]),
                   **{f"duration_s/{stage}": seconds for stage, seconds in timings.items()}}
        (output_dir / "iat_metrics.json").write_text(json.dumps(metrics, indent=2,
                                                                sort_keys=True))
        run_info = self._log_run(cfg, output_dir, analysis, metrics, started_at)
        print_iat_table(analysis.stats, cfg.iat.confidence_level, cfg.iat.alpha)
        log.info("IAT tables and plots are in %s", output_dir)
        return {"run": run_info, "stats": analysis.stats, "metrics": metrics}

    @staticmethod
    def _log_run(cfg: AuditConfig, output_dir: Path, analysis: Analysis,
                 metrics: dict[str, float], started_at: float):
        config_file = write_config(cfg, output_dir)
        return log_run(cfg, metrics, [
            *[("tables", analysis.files[name]) for name in
              ("stats", "stats_by_variation") if name in analysis.files],
            *[("plots", analysis.files[name]) for name in
              ("plot_by_dataset", "plot_by_variation") if name in analysis.files],
            ("data", analysis.files["scores"]),
            ("data", output_dir / "iat_prompts.parquet"),
            ("data", output_dir / "iat_responses.parquet"),
        ], config_file, started_at=started_at)
