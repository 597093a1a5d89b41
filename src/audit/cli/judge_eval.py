"""`python -m audit.judge_eval judge=NAME`: measure a judge on the gold set before trusting it.

Three ways of labelling the same gold answers: the rules alone, the judge alone (no rules) and
the cascade an audit uses (with judge.use_rules=false, an audit uses the judge alone: the last
row is always the one the audit uses). Judge replies are stored in the response store, so the
cascade reuses the judge-alone replies and a rerun costs nothing. Prints the figures, writes them
as CSV and logs them to one MLflow run. A judge that reads no answer text (judge=logprob) is
refused: the gold set has nothing of it to measure.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.table import Table

from audit.config import CONF_DIR, JudgeConfig

from audit.methods.configs import AuditConfig, register_configs
from audit.config_errors import one_line_config_errors, validated_config
from audit.data_files import read_users_table
from audit.errors import AuditError
from audit.interrupts import interrupted_line, interrupted_status, termination_as_interrupt
from audit.llm.backends import BackendError
from audit.llm.failures import check_failures
from audit.llm.store import ResponseStore
from audit.logs import counted, quiet_noisy_loggers
from audit.methods.rasch.judge.gold import gold_figures, label_gold, read_gold_set
from audit.methods.rasch.score import check_labeller, judge_panel
from audit.schemas import ItemSchema
from audit.tables import write_frame, write_json
from audit.tracking import mlflow as tracking

log = logging.getLogger("audit.judge_eval")
register_configs()


def check_reads_answers(judge: JudgeConfig) -> None:
    """A judge method that reads no answer text has nothing to show on the gold set: judge=logprob
    printed "Judge 'logprob' on the gold set" over the rules' figures alone, and logged them
    as its own (judge review 2026-12-02)."""
    if judge.method != "cascade":
        raise AuditError(f"judge={judge.name} reads no answer text (judge.method={judge.method}: "
                         "the audited model's own preference between the option words is the "
                         "decision), so the gold set has nothing of it to measure: "
                         "`python -m audit.judge_eval` measures a judge that reads answers "
                         "(judge=qwen_coder_1_5b, the default, or judge=rules_only)")


def labelling_modes(judge: JudgeConfig, judges: list) -> dict[str, tuple[JudgeConfig, list]]:
    """The ways the gold answers are labelled, the last the one an audit with this judge uses:
    the rules alone, the judge alone and the cascade (rules first); with judge.use_rules=false
    the judge alone (a cascade row then measured rules the audit never runs)."""
    modes = {"rules": (dataclasses.replace(judge, use_rules=True), [])}
    if judges:
        modes["judge"] = (dataclasses.replace(judge, use_rules=False), judges)
        if judge.use_rules:
            modes["cascade"] = (dataclasses.replace(judge, use_rules=True), judges)
    return modes


def evaluate(cfg: AuditConfig, output_dir: Path) -> dict[str, dict[str, float]]:
    gold = read_gold_set(cfg.judge.gold_file)
    if gold.is_empty():  # it printed nan figures and logged them to MLflow as a measurement
        raise AuditError(f"judge.gold_file={cfg.judge.gold_file} has no rows: it needs one row "
                         "per hand-checked answer")
    items = read_users_table(cfg.judge.gold_items, ItemSchema, "gold-set item bank",
                             "judge.gold_items")
    check_reads_answers(cfg.judge)
    check_labeller(cfg)  # no rules and no judge model: an audit refuses it, so measure nothing
    if cfg.tracking.enabled:  # before the judge's minutes on the gold set, not after them
        tracking.check_store(cfg.tracking)
    modes = labelling_modes(cfg.judge, judge_panel(cfg))
    output_dir.mkdir(parents=True, exist_ok=True)
    figures, artifacts, asks = {}, [], {}
    with ResponseStore(cfg.paths.response_store) as store:
        for mode, (judge_config, panel) in modes.items():
            results, tables = label_gold(gold, items, judge_config, panel, store)
            asks[mode] = tables.asks
            figures[mode] = gold_figures(results)
            if failed := int(figures[mode].metrics["gold/judge_failed"]):
                log.warning("%s: %s no label because a judge request failed after its "
                            "retries; %s left out of these figures: rerun to ask again", mode,
                            counted(failed, "gold answer", ("has", "have")),
                            "it is" if failed == 1 else "they are")
            for name, table in (("labels", results), ("confusion", figures[mode].confusion),
                                ("by_category", figures[mode].by_category)):
                path = output_dir / f"{mode}_{name}.csv"
                write_frame(table, path)
                artifacts.append(("judge_eval", path))
    metrics = {mode: figure.metrics for mode, figure in figures.items()}
    write_json(metrics, output_dir / "metrics.json", sort_keys=True)
    print_figures(figures, cfg.judge.name, gold.height)
    if cfg.tracking.enabled:
        flat = tracking.flatten({"judge": OmegaConf.to_container(OmegaConf.structured(cfg.judge))})
        tags = {**tracking.provenance(Path(cfg.paths.root_dir)), "judge": cfg.judge.name}
        with tracking.mlflow_run(cfg.tracking, f"judge_eval-{cfg.judge.name}", tags) as run:
            tracking.log_params(flat)
            tracking.log_metrics({f"{mode}/{name.removeprefix('gold/')}": value
                                  for mode, values in metrics.items()
                                  for name, value in values.items()})
            tracking.log_artifacts([*artifacts, ("", output_dir / "metrics.json")])
        log.info("MLflow run %s in experiment '%s'", run.run_id, cfg.tracking.experiment)
    log.info("tables are in %s", output_dir)
    # As the score stage stops (check_judge_failures): figures over the gold answers a failed
    # request left unlabelled would measure a different gold set, so they are written and logged
    # for a look, and the command then fails unless engine.max_failed_share accepts the gaps.
    for mode, mode_asks in asks.items():
        check_failures(mode_asks, cfg.engine.max_failed_share, cfg.paths.response_store,
                       f"judge requests on the gold set ({mode})")
    return metrics


def print_figures(figures: dict, judge_name: str, gold_size: int) -> None:
    console = Console(width=max(Console().width, 110))  # no truncated labels in a redirected log
    table = Table(title=f"Judge '{judge_name}' on the gold set ({gold_size} answers)")
    # "on labelled": accuracy over the answers given a label, what an audit's no-signal test
    # reads; "model": the judge model on the answers the rules left.
    columns = {"accuracy": "gold/accuracy", "on labelled": "gold/labelled_accuracy",
               "Cohen's kappa": "gold/cohen_kappa", "rules coverage": "gold/rules_coverage",
               "rules accuracy": "gold/rules_accuracy", "model coverage": "gold/judge_coverage",
               "model accuracy": "gold/judge_accuracy", "unparseable": "gold/unparseable_share"}
    table.add_column("labelled by")
    for column in columns:
        table.add_column(column, justify="right")
    for mode, figure in figures.items():
        # "-": a figure over no answer (the model's accuracy where the rules labelled all).
        values = [figure.metrics[key] for key in columns.values()]
        table.add_row(mode, *(f"{value:.3f}" if math.isfinite(value) else "-" for value in values))
    console.print(table)
    final_mode = list(figures)[-1]
    confusion = Table(title=f"{final_mode}: true label (rows) x label given (columns)")
    for column in figures[final_mode].confusion.columns:
        confusion.add_column(column)
    for row in figures[final_mode].confusion.iter_rows():
        confusion.add_row(*(str(value) for value in row))
    console.print(confusion)
    by_category = Table(title=f"{final_mode}: accuracy by kind of answer")
    for column in ("category", "n", "accuracy", "rules coverage"):
        by_category.add_column(column)
    for category, count, accuracy, coverage in figures[final_mode].by_category.iter_rows():
        by_category.add_row(category, str(count), f"{accuracy:.3f}", f"{coverage:.3f}")
    console.print(by_category)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="judge_eval")
def app(cfg: DictConfig) -> None:
    quiet_noisy_loggers()
    try:
        audit_cfg = validated_config(cfg, Path(CONF_DIR))
        evaluate(audit_cfg, Path(audit_cfg.paths.output_dir))
    except KeyboardInterrupt as interrupted:
        # As python -m audit: the engine's line says how many replies are saved; Ctrl-C was a
        # 40-line traceback here (bad-input review 2026-12-06).
        log.error("%s", interrupted_line(interrupted, "judge replies",
                                         cfg.paths.response_store))
        raise SystemExit(interrupted_status()) from None
    except (AuditError, BackendError) as error:
        log.error("%s", error)
        raise SystemExit(2) from None


def main() -> None:
    with termination_as_interrupt(), one_line_config_errors(Path(CONF_DIR)):
        app()


if __name__ == "__main__":
    main()
