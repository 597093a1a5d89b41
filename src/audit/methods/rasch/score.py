"""The Rasch audit's score stage: the judge labels each answer (rules, then the judge panel, or the
audited model's own option probabilities with judge.method=logprob), and is itself measured on
(a sample of) its gold set, so the fit can read the labels through the judge's error rates."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import polars as pl

from audit.data_files import read_users_table
from audit.errors import AuditError
from audit.llm.failures import check_failures
from audit.llm.backends import Backend, backend_class, can_score_options, create_backend
from audit.llm.preflight import server_problem
from audit.llm.store import ResponseStore
from audit.methods.configs import AuditConfig
from audit.methods.rasch.design import backends_for
from audit.methods.rasch.judge.cascade import (
    Judge,
    JudgeTables,
    answer_table,
    check_rule_labels,
    label_responses,
    no_asks,
    self_judged_shares,
)
from audit.methods.rasch.judge.rule_check import rule_check_sample
from audit.methods.rasch.judge.gold import (GOLD_RESULT_COLUMNS, gold_answers, gold_sample,
                                         label_gold, read_gold_set)
from audit.methods.rasch.judge.llm import SCORED_DECODINGS, check_token_budget
from audit.methods.rasch.schemas import JUDGE_FAILED
from audit.schemas import ItemSchema

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class JudgeOutputs:
    labels: pl.DataFrame
    votes: pl.DataFrame
    gold: pl.DataFrame  # the judge on the gold set; empty when judge.evaluate_on_gold is off
    # Every question put to a judge (and every option score) with its status: check_judge_failures
    asks: pl.DataFrame = field(default_factory=no_asks)


def judge_panel(cfg: AuditConfig) -> list[Judge]:
    check_judge_backends(cfg)
    check_judge_tokens(cfg)
    return [Judge(name, create_backend(model), model, cfg.engine)
            for name, model in sorted(cfg.judge.models.items())]


def check_judge_backends(cfg: AuditConfig) -> None:
    """Refuse a judge (or, for option scoring, an audited model) whose backend cannot score
    options when the judge needs it to. Checked at design time too, so that a broken judge
    config stops the run before any prompt is sent."""
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


def check_judge_tokens(cfg: AuditConfig) -> None:
    """Refuse a writing judge allowed too few tokens for its rationale; at design too (it was
    checked only in the score stage, after every answer had been bought: bad-input review
    2026-12-04), though not for imported answers, which may need no judge."""
    for name, model in cfg.judge.models.items():
        if cfg.judge.decoding == "json":  # a scoring judge writes nothing, so needs no tokens
            check_token_budget(name, model, cfg.judge.rationale_max_chars)


def check_labeller(cfg: AuditConfig) -> None:
    """Refuse a cascade with neither rules nor a judge model: nothing would label the answers,
    and the fit stopped after every answer was in, saying "every answer failed or was
    unparseable" of answers that had not failed (bad-input review 2026-12-04)."""
    if cfg.judge.method == "cascade" and not cfg.judge.use_rules and not cfg.judge.models:
        raise AuditError(f"judge.use_rules=false, and judge={cfg.judge.name} has no models, so "
                         f"nothing would label the answers: set judge.use_rules=true, or choose a "
                         f"judge with a model (judge=qwen_coder_1_5b)")


def warn_unreachable_judges(cfg: AuditConfig) -> None:
    """Ask each judge served over the network for its model list before any prompt is sent, and
    warn when it cannot answer: the judge's backend is built in the score stage, so a judge
    server that was never up was found only after every answer had been bought. A warning, not
    a stop: a rerun whose labels are all in the response store needs no judge."""
    for name, model in sorted(cfg.judge.models.items()):
        if not hasattr(backend_class(model.backend), "health_check"):
            continue  # in-process judges: nothing to reach
        error = server_problem(create_backend(model))
        if error is not None:
            log.warning("judge '%s': %s. The score stage needs it for every answer the rules "
                        "leave whose label is not in the response store: start it before the "
                        "answers are done, or that stage stops", name, error)


@dataclass(frozen=True)
class JudgeTools:
    """The judge panel and the audited models' backends: built once per stage, since an adaptive
    run labels every round with the same ones (and an embedded judge loads its weights once)."""
    judges: list[Judge]
    audited_backends: dict[str, Backend]
    scoring: bool  # option scoring reads the audited models' own probabilities


def judge_tools(cfg: AuditConfig, prompts: pl.DataFrame) -> JudgeTools:
    judges = judge_panel(cfg)
    scoring = bool(cfg.judge.method == "logprob" or cfg.judge.score_options)
    # Only when read: option scoring and the self-judged check (which needs a judge panel) use
    # them; a rules-only run never resolves the audited models' files.
    audited_backends = backends_for(cfg, prompts) if scoring or judges else {}
    return JudgeTools(judges, audited_backends, scoring)


def judge_stage(cfg: AuditConfig, prompts: pl.DataFrame, responses: pl.DataFrame,
                with_gold: bool = True, tools: JudgeTools | None = None,
                with_rule_check: bool = True) -> JudgeOutputs:
    """Labels, the judge's votes (and its re-reading of a sample of rule labels unless
    with_rule_check is off) and its gold-set results (when with_gold)."""
    tools = tools or judge_tools(cfg, prompts)
    audited = ({name: (backend, cfg.model[name])
                for name, backend in tools.audited_backends.items()} if tools.scoring else None)
    with ResponseStore(cfg.paths.response_store) as store:
        tables = label_responses(prompts, responses, cfg.judge, tools.judges, store, audited,
                                 engine=cfg.engine)
        checks = (rule_check_votes(cfg, prompts, responses, tables.labels, tools.judges, store)
                  if with_rule_check else JudgeTables(tables.labels.clear(), tables.votes.clear()))
        gold, gold_asks = (label_gold_set(cfg, tools.judges, store) if with_gold
                           else (empty_gold(), no_asks()))
    _warn_self_judged(tools.judges, tools.audited_backends, prompts, tables.labels)
    return JudgeOutputs(tables.labels, pl.concat([tables.votes, checks.votes]), gold,
                        pl.concat([tables.asks, checks.asks, gold_asks]))


def check_judge_failures(cfg: AuditConfig, judged: JudgeOutputs) -> None:
    """Stop the score stage, as the respond stage stops, when more of the judge's requests
    failed than engine.max_failed_share allows. Called after the stage's tables are written: the
    replies are in the response store, which never serves a failed request, so a rerun sends
    only the failed ones."""
    check_failures(judged.asks, cfg.engine.max_failed_share, cfg.paths.response_store,
                   "judge requests")
    failed = judged.asks.filter(pl.col("status") == "error").height
    if failed:
        log.warning("%d of %d judge requests failed and engine.max_failed_share accepts it: %d "
                    "answers and %d gold answers have no label (judge_failed) and are left out "
                    "of the fit and of the judge's gold accuracy; rerun to ask again", failed,
                    judged.asks.height, (judged.labels["label"] == JUDGE_FAILED).sum(),
                    (judged.gold["label"] == JUDGE_FAILED).sum())


def rule_check_votes(cfg: AuditConfig, prompts: pl.DataFrame, responses: pl.DataFrame,
                     labels: pl.DataFrame, judges: list[Judge], store: ResponseStore
                     ) -> JudgeTables:
    """The panel's votes on a stratified sample of rule-labelled answers (rule_check.py)."""
    chosen = [] if not judges or cfg.judge.method != "cascade" else rule_check_sample(
        labels, prompts, list(cfg.fit.attributes), cfg.judge.rule_check_per_group,
        cfg.design.seed)
    answered = (responses.filter((pl.col("status") == "ok") & pl.col("prompt_id").is_in(chosen))
                .join(prompts, on="prompt_id", how="inner"))
    if chosen:
        log.info("the judge re-reads %d rule-labelled answers (judge.rule_check_per_group=%d a "
                 "demographic cell) to compare its reading with the rules' per group",
                 len(chosen), cfg.judge.rule_check_per_group)
    return check_rule_labels(answer_table(answered), cfg.judge, judges, store)


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


def gold_set_of(cfg: AuditConfig) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The gold answers the run's judge is measured on and the bank they answer, validated (a
    gold answer of an item the bank lacks too); None when the run measures no judge. Called at
    design as well: a missing or malformed gold file, or a bank that does not match it, stopped
    the run in the score stage, after every answer was in (bad-input review 2026-12-04)."""
    if not (cfg.judge.evaluate_on_gold and cfg.judge.method == "cascade"):
        return None
    gold = gold_sample(read_gold_set(cfg.judge.gold_file), cfg.judge.gold_per_category)
    items = read_users_table(cfg.judge.gold_items, ItemSchema, "gold-set item bank",
                             "judge.gold_items")
    gold_answers(gold, items)
    return gold, items


def label_gold_set(cfg: AuditConfig, judges: list[Judge], store: ResponseStore
                   ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The judge on (a sample of) its gold set, and its asks; empty when not asked for or not
    applicable."""
    gold_set = gold_set_of(cfg)
    if gold_set is None:
        return empty_gold(), no_asks()
    results, tables = label_gold(*gold_set, cfg.judge, judges, store)
    return results, tables.asks
