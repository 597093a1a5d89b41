"""The Rasch audit's stages: design, respond, score (the judge), analyse (the fit), report.

Each stage is a function from validated tables and the config to tables; the run skeleton
(audit.methods.run) runs them in order for `python -m audit` and one at a time for `dvc repro`
(`python -m audit.stages STAGE`), so both paths execute the same code on the same tables.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from audit.llm.backends import Backend, can_score_options, create_backend
from audit.config import ModelConfig
from audit.methods.configs import AuditConfig
from audit.design import expand_design
from audit.data_files import data_file
from audit.errors import AuditError
from audit.methods.rasch.files import (
    FIT,
    GOLD,
    LABELS,
    PROMPTS,
    REPORT,
    RESPONSES,
    VOTES,
    StageFiles,
    write_fit,
)
from audit.methods.rasch.report.publish import publish_from_files
from audit.methods.run import RunClock, RunFiles, Stage, answer_prompts, send_prompts
from audit.tables import read_table, write_table
from audit.methods.rasch.irt import RaschFit, code_outcomes, fit_rasch
from audit.methods.rasch.irt.judge_error import resolve_confusion
from audit.items import select_items
from audit.methods.rasch.judge.cascade import Judge, label_responses, self_judged_shares
from audit.methods.rasch.judge.llm import DECODINGS, SCORED_DECODINGS, check_token_budget
from audit.methods.rasch.judge.gold import GOLD_RESULT_COLUMNS, gold_sample, label_gold
from audit.personas import PersonaSources, generate_personas
from audit.schemas import (
    GoldResultSchema,
    GoldSchema,
    ItemSchema,
    LabelSchema,
    PersonaSchema,
    PromptSchema,
    ResponseSchema,
    VoteSchema,
)
from audit.llm.model_sources import check_model_files
from audit.llm.store import ResponseStore

log = logging.getLogger(__name__)

JUDGE_METHODS = ("cascade", "logprob")


# --- stages -----------------------------------------------------------------------------------

def design_stage(cfg: AuditConfig) -> pl.DataFrame:
    bank = read_table(data_file(cfg.items.bank, "item bank", "items.bank"), ItemSchema,
                      "item bank")
    items = select_items(bank, cfg.items)
    explicit = (read_table(data_file(cfg.personas.explicit_file, "explicit personas",
                                     "personas.explicit_file"), PersonaSchema, "explicit personas")
                if "explicit" in cfg.personas.generators else PersonaSources().explicit_profiles)
    names = (read_table(data_file(cfg.personas.names_file, "name personas", "personas.names_file"),
                        PersonaSchema, "name personas")
             if "name" in cfg.personas.generators else PersonaSources().name_profiles)
    personas = generate_personas(cfg.personas,
                                 PersonaSources(explicit_profiles=explicit, name_profiles=names),
                                 cfg.design.seed)
    return expand_design(items, personas, cfg.model, cfg.design)


def _models_for(cfg: AuditConfig, prompts: pl.DataFrame) -> dict[str, ModelConfig]:
    """The configs of the models the prompts name; one line when the config lacks one."""
    model_names = sorted(prompts["model_name"].unique().to_list())
    missing = sorted(set(model_names) - set(cfg.model))
    if missing:
        raise AuditError(f"prompts name models {missing} that are not in the config: "
                         f"rerun the design stage or add them with model=[...]")
    return {name: cfg.model[name] for name in model_names}


def _backends_for(cfg: AuditConfig, prompts: pl.DataFrame) -> dict[str, Backend]:
    return {name: create_backend(model) for name, model in _models_for(cfg, prompts).items()}


def respond_stage(cfg: AuditConfig, prompts: pl.DataFrame) -> pl.DataFrame:
    return answer_prompts(cfg, prompts, _models_for(cfg, prompts), "Rasch")


@dataclass(frozen=True)
class JudgeOutputs:
    labels: pl.DataFrame
    votes: pl.DataFrame
    gold: pl.DataFrame  # the judge on the gold set; empty when judge.evaluate_on_gold is off

    def write(self, files: StageFiles) -> None:
        write_table(self.labels, files.labels, LabelSchema, "labels")
        write_table(self.votes, files.votes, VoteSchema, "judge votes")
        write_table(self.gold, files.gold, GoldResultSchema, "judge gold-set results")


def judge_panel(cfg: AuditConfig) -> list[Judge]:
    if cfg.judge.method not in JUDGE_METHODS:
        raise AuditError(f"unknown judge.method '{cfg.judge.method}': use one of "
                         f"{', '.join(JUDGE_METHODS)}")
    if cfg.judge.decoding not in DECODINGS:
        raise AuditError(f"unknown judge.decoding '{cfg.judge.decoding}': use one of "
                         f"{', '.join(DECODINGS)}")
    for name, model in cfg.judge.models.items():
        if cfg.judge.decoding == "json":  # a scoring judge writes nothing, so needs no tokens
            check_token_budget(name, model, cfg.judge.rationale_max_chars)
    check_judge_backends(cfg)
    return [Judge(name, create_backend(model), model, cfg.engine)
            for name, model in sorted(cfg.judge.models.items())]


def check_judge_backends(cfg: AuditConfig) -> None:
    """Refuse a judge (or, for option scoring, an audited model) whose backend cannot score
    options when the judge needs it to. Checked at design time too, so that a broken judge config
    stops the run before any prompt is sent."""
    scorers = {}
    if cfg.judge.decoding in SCORED_DECODINGS or cfg.judge.refusal_check:
        asked = (f"judge.decoding={cfg.judge.decoding}" if cfg.judge.decoding in SCORED_DECODINGS
                 else "judge.refusal_check=true")
        fix = "set judge.decoding=json judge.refusal_check=false, or judge with"
        scorers.update({("judge model", name): (model, asked, fix)
                        for name, model in cfg.judge.models.items()})
    if cfg.judge.method == "logprob" or cfg.judge.score_options:
        asked = ("judge.method=logprob" if cfg.judge.method == "logprob"
                 else "judge.score_options=true")
        fix = "use judge.method=cascade judge.score_options=false, or audit"
        scorers.update({("audited model", name): (model, asked, fix)
                        for name, model in cfg.model.items()})
    for (role, name), (model, asked, fix) in sorted(scorers.items()):
        if not can_score_options(model):
            raise AuditError(f"{role} '{name}' ({model.backend}) cannot score options, which "
                             f"{asked} needs: {fix} an embedded, llamacpp or "
                             f"openai_compatible model")


def judge_stage(cfg: AuditConfig, prompts: pl.DataFrame, responses: pl.DataFrame,
                with_gold: bool = True) -> JudgeOutputs:
    judges = judge_panel(cfg)
    scoring = cfg.judge.method == "logprob" or cfg.judge.score_options
    # Built once, and only when read: option scoring and the self-judged check (which needs a
    # judge panel) share them; a rules-only run never resolves the audited models' files.
    audited_backends = _backends_for(cfg, prompts) if scoring or judges else {}
    audited = ({name: (backend, cfg.model[name]) for name, backend in audited_backends.items()}
               if scoring else None)
    with ResponseStore(cfg.paths.response_store) as store:
        tables = label_responses(prompts, responses, cfg.judge, judges, store, audited,
                                 engine=cfg.engine)
        gold_results = label_gold_set(cfg, judges, store) if with_gold else empty_gold()
    _warn_self_judged(judges, audited_backends, prompts, tables.labels)
    return JudgeOutputs(tables.labels, tables.votes, gold_results)


def _warn_self_judged(judges: list[Judge], audited: dict[str, Backend], prompts: pl.DataFrame,
                      labels: pl.DataFrame) -> None:
    if not judges or labels.is_empty():
        return
    shares = self_judged_shares(labels, prompts,
                                {judge.backend.identity().get("digest", "") for judge in judges},
                                {name: backend.identity().get("digest", "")
                                 for name, backend in audited.items()})
    for name, share in shares.items():
        log.warning("the judge is the same weights file as audited model '%s' and labelled %.0f%% "
                    "of its answers (the rules labelled the rest); the gold set holds no answers "
                    "of that file, so its gold accuracy is not measured on its own answers",
                    name, 100 * share)


def empty_gold() -> pl.DataFrame:
    return pl.DataFrame(schema={column: pl.Utf8 for column in GOLD_RESULT_COLUMNS})


def label_gold_set(cfg: AuditConfig, judges: list[Judge], store: ResponseStore) -> pl.DataFrame:
    """The judge on (a sample of) its gold set; empty when not asked for or not applicable."""
    if not (cfg.judge.evaluate_on_gold and cfg.judge.method == "cascade"):
        return empty_gold()
    gold_file = data_file(cfg.judge.gold_file, "judge gold set", "judge.gold_file")
    gold = gold_sample(read_table(gold_file, GoldSchema, "judge gold set"),
                       cfg.judge.gold_per_category)
    items = read_table(data_file(cfg.judge.gold_items, "gold-set item bank", "judge.gold_items"),
                       ItemSchema, "gold-set item bank")
    return label_gold(gold, items, cfg.judge, judges, store)[0]


def outcome_table(prompts: pl.DataFrame, labels: pl.DataFrame, attributes: list[str]) -> pl.DataFrame:
    """Labels with the respondent, item and persona columns a fit and its contrasts read."""
    missing = sorted(set(attributes) - set(prompts.columns))
    if missing:
        raise AuditError(f"fit.attributes names {missing}, which the prompts table lacks: use "
                         f"persona columns such as gender, race")
    persona_columns = ["model_name", "persona_kind", *dict.fromkeys(attributes)]
    return labels.join(prompts.select("prompt_id", "respondent_id", "item_id", *persona_columns),
                       on="prompt_id", how="inner")


def fit_stage(cfg: AuditConfig, prompts: pl.DataFrame, labels: pl.DataFrame,
              gold: pl.DataFrame | None = None) -> RaschFit:
    """The configured outcome, plus fit.second_outcome on the same labels when it is set.

    ``gold``: the judge's gold-set results; with them (and fit.judge_error not false) every fit
    reads its labels through the judge's measured misclassification rates.
    """
    table = outcome_table(prompts, labels, cfg.fit.attributes)
    fits = []
    # The hurdle model fits both of its steps from the labels at once: no second coding.
    second = cfg.fit.second_outcome if cfg.fit.model != "hurdle" else None
    codings = [cfg.fit.outcome, *([second] if second else [])]
    for coding in codings:
        outcomes = code_outcomes(table, coding, cfg.fit.drop_labels)
        if outcomes.is_empty():
            raise AuditError("no labelled responses to fit: every answer failed or was "
                             "unparseable; check the judge (judge=...) and the responses table")
        confusion = resolve_confusion(cfg.fit.judge_error, cfg.fit.model, coding, gold)
        fits.append(fit_rasch(outcomes, replace(cfg.fit, outcome=coding), confusion=confusion))
    # Keep the first fit's own companions (the hurdle model's abstention step).
    return replace(fits[0], companions=(*fits[0].companions, *fits[1:]))


# --- the stages as the run skeleton runs them (audit.methods.run) --------------------------------

def _design(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    check_judge_backends(cfg)
    check_model_files([*cfg.model.values(), *cfg.judge.models.values()])
    prompts = design_stage(cfg)
    write_table(prompts, files.prompts, PromptSchema, "prompts")
    log.info("design: %d prompts (%d respondents x %d items x %d replicates)", prompts.height,
             prompts["respondent_id"].n_unique(), prompts["item_id"].n_unique(),
             cfg.design.replicates)


def _respond(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    send_prompts(cfg, prompts, _models_for(cfg, prompts), files.responses, "Rasch")


def _score(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    """The judge on the answers and (judge.evaluate_on_gold) on its gold set: one stage, so the
    gold results the fit reads are always the same judge's; a rerun costs store lookups only."""
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    responses = read_table(files.responses, ResponseSchema, "responses")
    judge_stage(cfg, prompts, responses).write(files)


def _analyse(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> None:
    prompts = read_table(files.prompts, PromptSchema, "prompts")
    labels = read_table(files.labels, LabelSchema, "labels")
    gold = (read_table(files.gold, GoldResultSchema, "judge gold-set results")
            if files.gold.is_file() else None)
    write_fit(fit_stage(cfg, prompts, labels, gold), files.fit)


def _report(cfg: AuditConfig, files: StageFiles, clock: RunClock) -> dict[str, object]:
    return publish_from_files(cfg, files, clock.timings, clock.started_at)


def _on_stage_files(run):
    """The skeleton hands every stage RunFiles; the Rasch stages name their files StageFiles."""
    def on_stage_files(cfg: AuditConfig, files: RunFiles, clock: RunClock):
        return run(cfg, StageFiles(files.directory, files.owners), clock)
    return on_stage_files


STAGES = (
    Stage("design", _on_stage_files(_design), (PROMPTS,)),
    Stage("respond", _on_stage_files(_respond), (RESPONSES,)),
    Stage("score", _on_stage_files(_score), (LABELS, VOTES, GOLD), aliases=("judge", "judge_gold")),
    Stage("analyse", _on_stage_files(_analyse), (FIT,), aliases=("fit",)),
    Stage("report", _on_stage_files(_report), (REPORT,)),
)
