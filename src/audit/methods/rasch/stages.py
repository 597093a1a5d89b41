"""The stages of an audit, and the only place (with __main__) that reads and writes files.

Each stage is a function from validated tables and the config to a table; `python -m audit` runs
them in order in the Hydra run directory and `dvc repro` runs them one by one through
`python -m audit.stages STAGE`, so both paths execute the same code on the same tables.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pandera.polars as pa
import polars as pl
from omegaconf import OmegaConf

from audit.llm.backends import Backend, BackendError, create_backend
from audit.config import AuditConfig, to_audit_config
from audit.design import expand_design
from audit.data_files import data_file
from audit.errors import AuditError
from audit.methods.rasch.files import StageFiles, write_fit
from audit.methods.rasch.report.publish import publish, publish_from_files
from audit.tables import read_table, write_table
from audit.llm.engine import check_failures, collect_responses, summarise_responses
from audit.methods.rasch.irt import RaschFit, code_outcomes, fit_rasch
from audit.methods.rasch.irt.judge_error import resolve_confusion
from audit.items import select_items
from audit.methods.rasch.judge.cascade import Judge, label_responses, self_judged_shares
from audit.methods.rasch.judge.llm import DECODINGS, check_token_budget
from audit.methods.rasch.judge.gold import GOLD_RESULT_COLUMNS, gold_sample, label_gold
from audit.logs import configure_cli_logging
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
    validate,
)
from audit.llm.store import ResponseStore

log = logging.getLogger(__name__)

STAGES = ("design", "respond", "judge", "judge_gold", "fit", "report")
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


def _backends_for(cfg: AuditConfig, model_names: list[str]) -> dict[str, Backend]:
    missing = sorted(set(model_names) - set(cfg.model))
    if missing:
        raise AuditError(f"prompts name models {missing} that are not in the config: "
                         f"rerun the design stage or add them with model=[...]")
    return {name: create_backend(cfg.model[name]) for name in model_names}


def respond_stage(cfg: AuditConfig, prompts: pl.DataFrame) -> pl.DataFrame:
    backends = _backends_for(cfg, sorted(prompts["model_name"].unique().to_list()))
    with ResponseStore(cfg.paths.response_store) as store:
        responses = collect_responses(prompts, backends, cfg.model, store, cfg.engine)
    counts = summarise_responses(responses)
    log.info("respond: %d sent, %d from the store, %d failed", counts["sent"], counts["cached"],
             counts["failed"])
    return responses


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
    return [Judge(name, create_backend(model), model, cfg.engine)
            for name, model in sorted(cfg.judge.models.items())]


def judge_stage(cfg: AuditConfig, prompts: pl.DataFrame, responses: pl.DataFrame,
                with_gold: bool = True) -> JudgeOutputs:
    judges = judge_panel(cfg)
    scoring = cfg.judge.method == "logprob" or cfg.judge.score_options
    audited = ({name: (backend, cfg.model[name]) for name, backend in
                _backends_for(cfg, sorted(prompts["model_name"].unique().to_list())).items()}
               if scoring else None)
    with ResponseStore(cfg.paths.response_store) as store:
        tables = label_responses(prompts, responses, cfg.judge, judges, store, audited,
                                 engine=cfg.engine)
        gold_results = label_gold_set(cfg, judges, store) if with_gold else empty_gold()
    _warn_self_judged(cfg, judges, prompts, tables.labels)
    return JudgeOutputs(tables.labels, tables.votes, gold_results)


def _warn_self_judged(cfg: AuditConfig, judges: list[Judge], prompts: pl.DataFrame,
                      labels: pl.DataFrame) -> None:
    if not judges or labels.is_empty():
        return
    audited = _backends_for(cfg, sorted(prompts["model_name"].unique().to_list()))
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


def judge_gold_stage(cfg: AuditConfig) -> pl.DataFrame:
    """The gold-set evaluation as a stage of its own (dvc.yaml): it depends on the judge and the
    gold files, never on the design, so a new item set does not rerun it."""
    with ResponseStore(cfg.paths.response_store) as store:
        return label_gold_set(cfg, judge_panel(cfg), store)


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


# --- the whole audit ----------------------------------------------------------------------------

def run_audit(cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
    """All stages in order; each table is written as soon as it exists, so nothing is lost."""
    files = StageFiles(Path(output_dir))
    started_at = time.time()  # the MLflow run spans the work, not only its logging
    timings: dict[str, float] = {}
    started = time.perf_counter()
    prompts = design_stage(cfg)
    write_table(prompts, files.prompts, PromptSchema, "prompts")
    timings["design"] = time.perf_counter() - started
    log.info("design: %d prompts (%d respondents x %d items x %d replicates)", prompts.height,
             prompts["respondent_id"].n_unique(), prompts["item_id"].n_unique(),
             cfg.design.replicates)

    started = time.perf_counter()
    responses = respond_stage(cfg, prompts)
    write_table(responses, files.responses, ResponseSchema, "responses")
    check_failures(responses, cfg.engine.max_failed_share, cfg.paths.response_store)
    timings["respond"] = time.perf_counter() - started

    started = time.perf_counter()
    judged = judge_stage(cfg, prompts, responses)
    judged.write(files)
    labels = judged.labels
    timings["judge"] = time.perf_counter() - started

    started = time.perf_counter()
    fit = fit_stage(cfg, prompts, labels, judged.gold)
    write_fit(fit, files.fit)
    timings["fit"] = time.perf_counter() - started

    return publish(cfg, prompts, responses, labels, fit, files, timings, started_at)


# --- `python -m audit.stages STAGE`: what dvc.yaml runs -----------------------------------------

def load_params(path: Path) -> AuditConfig:
    if not path.is_file():
        raise AuditError(f"params file not found: {path} (write it with `python -m audit.params`)")
    return to_audit_config(OmegaConf.load(path))


def run_stage(stage: str, cfg: AuditConfig, directory: Path) -> None:
    files = StageFiles(directory)
    if stage == "design":
        write_table(design_stage(cfg), files.prompts, PromptSchema, "prompts")
    elif stage == "respond":
        prompts = read_table(files.prompts, PromptSchema, "prompts")
        responses = respond_stage(cfg, prompts)
        write_table(responses, files.responses, ResponseSchema, "responses")
        check_failures(responses, cfg.engine.max_failed_share, cfg.paths.response_store)
    elif stage == "judge":
        prompts = read_table(files.prompts, PromptSchema, "prompts")
        responses = read_table(files.responses, ResponseSchema, "responses")
        judged = judge_stage(cfg, prompts, responses, with_gold=False)
        write_table(judged.labels, files.labels, LabelSchema, "labels")
        write_table(judged.votes, files.votes, VoteSchema, "judge votes")
    elif stage == "judge_gold":
        write_table(judge_gold_stage(cfg), files.gold, GoldResultSchema, "judge gold-set results")
    elif stage == "fit":
        prompts = read_table(files.prompts, PromptSchema, "prompts")
        labels = read_table(files.labels, LabelSchema, "labels")
        gold = (read_table(files.gold, GoldResultSchema, "judge gold-set results")
                if files.gold.is_file() else None)
        write_fit(fit_stage(cfg, prompts, labels, gold), files.fit)
    elif stage == "report":

        publish_from_files(cfg, files)
    else:  # argparse restricts the choices; kept for callers from Python
        raise AuditError(f"unknown stage '{stage}'; valid: {', '.join(STAGES)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m audit.stages", description=__doc__)
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--dir", type=Path, default=Path("pipeline"))
    arguments = parser.parse_args(argv)
    configure_cli_logging()
    try:
        run_stage(arguments.stage, load_params(arguments.params), arguments.dir)
    except (AuditError, ValueError, BackendError) as error:
        log.error("%s", error)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
