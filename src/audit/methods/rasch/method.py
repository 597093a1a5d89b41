"""The Rasch audit (design, respond, judge, fit, report) as a registered method: its stages.

Each stage is a thin function from the tables earlier stages wrote to the tables it writes; the
work is in design.py, score.py (the judge), analyse.py (the fit) and report/ (publish.py). The run
skeleton (audit.methods.run) runs them in order for `python -m audit` and one at a time for
`dvc repro` (`python -m audit.stages STAGE`), so both paths execute the same code on the same
tables.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.llm.model_sources import check_request_models, models_by_key
from audit.logs import counted
from audit.methods.configs import AuditConfig
from audit.methods.rasch.adaptive_run import ROUNDS, look_alpha_of, respond_adaptively
from audit.methods.rasch.analyse import (
    check_design_attributes,
    check_judge_error,
    check_fit_settings,
    fit_stage,
    no_signal_of,
    write_fit,
)
from audit.methods.rasch.design import PROMPTS, RESPONSES, design_stage, models_for
from audit.methods.rasch.ingest import stages as imported
from audit.methods.rasch.report.findings import findings
from audit.methods.rasch.report.publish import publish_from_files
from audit.methods.rasch.schemas import GoldResultSchema, LabelSchema, VoteSchema
from audit.methods.rasch.score import (
    check_judge_backends,
    check_judge_failures,
    check_judge_tokens,
    check_labeller,
    gold_set_of,
    judge_stage,
    warn_unreachable_judges,
)
from audit.methods.run import (
    RunClock,
    RunFiles,
    Stage,
    answer_prompts,
    run_stages,
    send_prompts,
)
from audit.schemas import PromptSchema, ResponseSchema
from audit.tables import read_table, write_table

log = logging.getLogger(__name__)

LABELS, VOTES, GOLD = "labels.parquet", "judge_votes.parquet", "judge_gold.parquet"
FIT, REPORT = "fit", "report"  # folders


class StageFiles(RunFiles):
    """Where each Rasch stage's tables live (flat in one run directory, or in the stage folders
    `dvc repro` uses: see audit.methods.run.RunFiles)."""

    @property
    def prompts(self) -> Path:
        return self.path(PROMPTS)

    @property
    def responses(self) -> Path:
        return self.path(RESPONSES)

    @property
    def rounds(self) -> Path:
        return self.path(ROUNDS)

    @property
    def labels(self) -> Path:
        return self.path(LABELS)

    @property
    def votes(self) -> Path:
        return self.path(VOTES)

    @property
    def gold(self) -> Path:
        return self.path(GOLD)

    @property
    def fit(self) -> Path:
        return self.path(FIT)

    @property
    def report(self) -> Path:
        return self.path(REPORT)


def respond_stage(cfg: AuditConfig, prompts: pl.DataFrame) -> pl.DataFrame:
    """The audited models' answers to the prompts (through the response store)."""
    return answer_prompts(cfg, prompts, models_for(cfg, prompts), "Rasch")


# --- the stages as the run skeleton runs them (audit.methods.run) --------------------------------

def _design(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    check_judge_backends(cfg)
    check_judge_tokens(cfg)
    check_labeller(cfg)
    gold_set_of(cfg)
    check_request_models({**models_by_key(cfg.model),
                          **models_by_key(cfg.judge.models, "judge.models")})
    warn_unreachable_judges(cfg)
    check_judge_error(cfg)
    check_fit_settings(cfg)
    prompts = design_stage(cfg)
    check_design_attributes(prompts, cfg.fit.attributes)
    write_table(prompts, files.prompts, PromptSchema, "prompts")
    log.info("design: %d prompts (%d respondents x %d items x %s)", prompts.height,
             prompts["respondent_id"].n_unique(), prompts["item_id"].n_unique(),
             counted(cfg.design.replicates, "replicate"))


def _respond(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    if cfg.design.adaptive:
        respond_adaptively(cfg, prompts, files.responses, files.rounds)
        return
    files.rounds.unlink(missing_ok=True)  # a fixed run's directory holds no trajectory
    send_prompts(cfg, prompts, models_for(cfg, prompts), files.responses, "Rasch")


def _score(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    """The judge on the answers and (judge.evaluate_on_gold) on its gold set: one stage, so the
    gold results the fit reads are always the same judge's; a rerun costs store lookups only,
    and sends again only the judge requests that failed (which stop the stage beyond
    engine.max_failed_share, after its tables are written)."""
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    responses = read_table(files.responses, ResponseSchema, "responses")
    judged = judge_stage(cfg, prompts, responses)
    write_table(judged.labels, files.labels, LabelSchema, "labels")
    write_table(judged.votes, files.votes, VoteSchema, "judge votes")
    write_table(judged.gold, files.gold, GoldResultSchema, "judge gold-set results")
    check_judge_failures(cfg, judged)


def _analyse(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    labels = read_table(files.labels, LabelSchema, "labels")
    gold = (read_table(files.gold, GoldResultSchema, "judge gold-set results")
            if files.gold.is_file() else None)
    look_alpha = look_alpha_of(files.rounds)
    if look_alpha is not None:  # an adaptive run decides at its last look's share of alpha
        cfg = replace(cfg, fit=replace(cfg.fit, familywise_alpha=look_alpha))
    # The no-signal reasons go next to the fit, where the CI verdict reads them.
    write_fit(fit_stage(cfg, prompts, labels, gold), files.fit,
              no_signal_of(cfg, prompts, labels, gold))


def _report(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> dict[str, object]:
    return publish_from_files(cfg, files, clock.timings, clock.started_at)


# --- answers collected elsewhere (ingest.input): the first three stages read them -------------

def _design_imported(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    # The judge's model files are not fetched here: answers that came with their decisions need
    # no judge, and nothing is sent before the score stage.
    check_judge_backends(cfg)
    check_fit_settings(cfg)
    imported.design(cfg, files.prompts)
    try:
        check_design_attributes(read_table(files.prompts, PromptSchema, "prompts"),
                                cfg.fit.attributes)
    except AuditError:
        files.prompts.unlink()  # so that no later stage reads a design refused here
        raise


def _respond_imported(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    imported.respond(cfg, files.prompts, files.responses)


def _score_imported(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    imported.score(cfg, files.prompts, files.responses, files.labels, files.votes, files.gold)


def _on_stage_files(run, run_imported=None):
    """The skeleton hands every stage RunFiles; the Rasch stages name their files StageFiles. With
    ingest.input set, the audited models are the imported ones and `run_imported` (when the stage
    has one) reads the answers instead of asking the models."""
    def on_stage_files(cfg: AuditConfig, files: RunFiles, clock: RunClock):
        chosen = run
        if cfg.ingest.input:
            cfg = imported.with_imported_models(cfg)
            chosen = run_imported or run
        return chosen(cfg, StageFiles(files.directory, files.owners), clock)
    return on_stage_files


STAGES = (
    Stage("design", _on_stage_files(_design, _design_imported), (PROMPTS,)),
    Stage("respond", _on_stage_files(_respond, _respond_imported), (RESPONSES, ROUNDS)),
    Stage("score", _on_stage_files(_score, _score_imported), (LABELS, VOTES, GOLD)),
    Stage("analyse", _on_stage_files(_analyse), (FIT,)),
    Stage("report", _on_stage_files(_report), (REPORT,)),
)


class RaschMethod:
    name = "rasch"
    stages = STAGES
    findings = staticmethod(findings)  # its contrasts in words, for the run's summary

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        return run_stages(self.stages, cfg, output_dir)
