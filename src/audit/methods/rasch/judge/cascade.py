"""The labelling cascade: rules for answers that state a decision plainly, a judge panel for the rest.

Only successful responses are labelled: an infrastructure error is not behaviour and never gets a
label. A judge request (or option score) that fails after its retries is recorded as
`judge_failed`, not as a label, and as an error row of the stage's asks table, which the score
stage counts as the respond stage counts its requests. Each label records which step produced it
and why, every judge's vote is kept, and the same function labels audit responses and the gold
set, so the gold-set figures describe exactly the judge that labelled the audit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import polars as pl

from audit.llm.backends import Backend, BackendError, ChatRequest
from audit.config import EngineConfig, JudgeConfig, ModelConfig
from audit.llm.engine import build_request, send, send_ahead
from audit.logs import track
from audit.methods.rasch.judge.agreement import majority
from audit.methods.rasch.judge.llm import (
    JUDGE_SEEDS,
    JudgeVerdict,
    failed_verdict,
    judge_answer,
    judge_request,
)
from audit.methods.rasch.judge.logprob import OptionScore, option_score, option_variants, parse_scores
from audit.methods.rasch.judge.rules import label_by_rules
from audit.schemas import validate
from audit.methods.rasch.schemas import JUDGE_FAILED, UNPARSEABLE, LabelSchema, VoteSchema
from audit.llm.store import ResponseStore

ProgressFn = Callable[[Iterable, int, str], Iterable]
# The columns label_answers reads: any table of answers to decision questions.
ANSWER_COLUMNS = ("answer_id", "question", "favourable_option", "unfavourable_option",
                  "answer_text")
_LABEL_TYPES = {"answer_id": pl.Utf8, "label": pl.Utf8, "label_source": pl.Utf8,
                "rationale": pl.Utf8, "agreement": pl.Float64}
_VOTE_TYPES = {"answer_id": pl.Utf8, "judge": pl.Utf8, "label": pl.Utf8, "rationale": pl.Utf8}
# One row per question put to a judge about an answer (or per option score): the columns
# failures.check_failures reads, so the score stage applies engine.max_failed_share to them as the
# respond stage does to its requests. `judge` is the judge's name, or the audited model's for an
# option score.
ASK_TYPES = {"answer_id": pl.Utf8, "judge": pl.Utf8, "status": pl.Utf8, "error_kind": pl.Utf8,
             "error_message": pl.Utf8}


def no_asks() -> pl.DataFrame:
    return pl.DataFrame(schema=ASK_TYPES)


def ask_row(answer_id: str, judge: str, verdict: JudgeVerdict | None) -> dict:
    """One ask: an error row when `verdict` records a failed request (None: a scored reply)."""
    failed = verdict is not None and verdict.failed_kind is not None
    return {"answer_id": answer_id, "judge": judge, "status": "error" if failed else "ok",
            "error_kind": verdict.failed_kind if failed else None,
            "error_message": verdict.rationale if failed else None}


@dataclass(frozen=True)
class Judge:
    """One member of the panel: its name in config, its backend and its model settings."""

    name: str
    backend: Backend
    model: ModelConfig
    # Retries and backoff for its requests: the run's `engine` settings, as for audited models.
    engine: EngineConfig = field(default_factory=EngineConfig)


@dataclass(frozen=True)
class JudgeTables:
    labels: pl.DataFrame  # one row per answer: the label and where it came from
    votes: pl.DataFrame  # one row per (answer, judge) that the panel was asked about
    asks: pl.DataFrame = field(default_factory=no_asks)  # each ask's status (ASK_TYPES)


def _prefetch(judges: list[Judge], config: JudgeConfig, store: ResponseStore,
              rows: list[dict], show_progress: bool) -> None:
    """Send every judge's first request for the answers the rules leave, concurrently up to
    each judge's max_concurrency, so the labelling loop, which asks one answer at a time, reads
    them from the store: a judge server with 8 slots labels about 8 times faster. An
    unreachable server stops the stage before anything is sent."""
    requests = ((judge.name, judge_request(judge.model, config.rationale_max_chars,
                                           row["question"], row["answer_text"] or "",
                                           row["favourable_option"], row["unfavourable_option"],
                                           JUDGE_SEEDS[0], config.decoding))
                for judge in judges for row in rows)
    send_ahead(requests, {judge.name: judge.backend for judge in judges},
               {judge.name: judge.model for judge in judges}, store, judges[0].engine,
               show_progress, "judge replies", role="judge")


def _ask(judge: Judge, config: JudgeConfig, store: ResponseStore, row: dict) -> JudgeVerdict:
    try:
        return judge_answer(judge.backend, judge.model, config.rationale_max_chars, store,
                            row["question"], row["answer_text"] or "", row["favourable_option"],
                            row["unfavourable_option"], judge.engine, config.decoding,
                            config.refusal_log_odds if config.refusal_check else None)
    except BackendError as error:  # the judge's server is unreachable: stop, in one line
        raise BackendError(error.kind, f"judge '{judge.name}': {error}. The judge's answers so "
                                       "far are in the response store: start its server (or fix "
                                       "base_url in conf/judge/) and rerun") from error


def label_answers(answers: pl.DataFrame, config: JudgeConfig, judges: list[Judge],
                  store: ResponseStore, show_progress: ProgressFn = track) -> JudgeTables:
    labels, votes, asks = [], [], []
    rows = list(answers.select(ANSWER_COLUMNS).sort("answer_id").iter_rows(named=True))
    matches = [label_by_rules(row["answer_text"] or "", row["favourable_option"],
                              row["unfavourable_option"]) if config.use_rules else None
               for row in rows]
    if judges:
        _prefetch(judges, config, store, [row for row, match in zip(rows, matches)
                                          if match is None], show_progress is track)
    for row, match in show_progress(zip(rows, matches), len(rows), "labelled answers"):
        if match is not None:
            labels.append({"answer_id": row["answer_id"], "label": match.label,
                           "label_source": "rule", "rationale": f"rule matched: {match.evidence}",
                           "agreement": None})
            continue
        if not judges:
            labels.append({"answer_id": row["answer_id"], "label": UNPARSEABLE,
                           "label_source": "none", "agreement": None,
                           "rationale": "no rule matched and no judge model"})
            continue
        verdicts = {judge.name: _ask(judge, config, store, row) for judge in judges}
        votes.extend({"answer_id": row["answer_id"], "judge": name, "label": verdict.label,
                      "rationale": verdict.rationale} for name, verdict in verdicts.items())
        asks.extend(ask_row(row["answer_id"], name, verdict) for name, verdict in verdicts.items())
        consensus = majority({name: verdict.label for name, verdict in verdicts.items()})
        labels.append({"answer_id": row["answer_id"], "label": consensus.label,
                       "label_source": "judge", "agreement": consensus.agreement,
                       "rationale": _panel_rationale(verdicts, consensus.label, consensus.reason)})
    return JudgeTables(pl.DataFrame(labels, schema=_LABEL_TYPES),
                       validate(pl.DataFrame(votes, schema=_VOTE_TYPES), VoteSchema, "judge votes"),
                       pl.DataFrame(asks, schema=ASK_TYPES))


def answer_table(answered: pl.DataFrame) -> pl.DataFrame:
    """Answered prompts (prompts joined to their ok responses) as the answers the cascade reads."""
    return answered.select(pl.col("prompt_id").alias("answer_id"), "question",
                           "favourable_option", "unfavourable_option",
                           pl.col("response_text").alias("answer_text"))


def check_rule_labels(answers: pl.DataFrame, config: JudgeConfig, judges: list[Judge],
                      store: ResponseStore, show_progress: ProgressFn = track) -> JudgeTables:
    """The panel's votes on answers the rules labelled (judge/rule_check.py says why): votes
    (and their asks) only, the rule labels stand, so `labels` is empty."""
    rows = list(answers.select(ANSWER_COLUMNS).sort("answer_id").iter_rows(named=True))
    votes, asks = [], []
    if judges and rows:
        _prefetch(judges, config, store, rows, show_progress is track)
        for row in show_progress(rows, len(rows), "rule labels re-read by the judge"):
            for judge in judges:
                verdict = _ask(judge, config, store, row)
                votes.append({"answer_id": row["answer_id"], "judge": judge.name,
                              "label": verdict.label, "rationale": verdict.rationale})
                asks.append(ask_row(row["answer_id"], judge.name, verdict))
    return JudgeTables(pl.DataFrame(schema=_LABEL_TYPES),
                       validate(pl.DataFrame(votes, schema=_VOTE_TYPES), VoteSchema, "judge votes"),
                       pl.DataFrame(asks, schema=ASK_TYPES))


def _panel_rationale(verdicts: dict, label: str, reason: str) -> str:
    """The first agreeing judge's own words; for a panel, prefixed with how each judge voted."""
    own_words = next((verdict.rationale for verdict in verdicts.values()
                      if verdict.label == label and verdict.rationale), "")
    if len(verdicts) == 1:
        name, verdict = next(iter(verdicts.items()))
        return own_words or verdict.rationale or f"judge {name}"
    return f"{reason}; {own_words}" if own_words else reason


def score_request(model: ModelConfig, prompt: dict) -> ChatRequest:
    """The request that scores the option words as continuations of the audited prompt."""
    variants = (*option_variants(prompt["favourable_option"]),
                *option_variants(prompt["unfavourable_option"]))
    return dataclasses.replace(
        build_request(model, prompt["system_prompt"], prompt["user_prompt"], prompt["seed"]),
        score_options=variants)


def score_prompt(backend: Backend, model: ModelConfig, prompt: dict, store: ResponseStore,
                 engine: EngineConfig | None = None) -> OptionScore | JudgeVerdict | str:
    """The audited model's option score for one prompt; a failed verdict (JUDGE_FAILED) when its
    request failed after the retries; or why a reply carried no score."""
    request = score_request(model, prompt)
    variants = request.score_options
    outcome = send(backend, request, store, engine)
    if outcome.completion is None:
        return failed_verdict(outcome.error or BackendError("unknown", "no reply and no error"),
                              "option scoring")
    scores = parse_scores(outcome.completion.text, variants)
    if scores is None:
        return f"scoring reply not a log-probability per option: {outcome.completion.text[:80]!r}"
    return option_score(scores, prompt["favourable_option"], prompt["unfavourable_option"])


def label_responses(prompts: pl.DataFrame, responses: pl.DataFrame, config: JudgeConfig,
                    judges: list[Judge], store: ResponseStore,
                    audited: dict[str, tuple[Backend, ModelConfig]] | None = None,
                    show_progress: ProgressFn = track,
                    engine: EngineConfig | None = None) -> JudgeTables:
    """Label every successful response; `audited` (model name -> backend and settings) is needed
    only to score options (method `logprob`, or `score_options`), whose requests retry with
    `engine`."""
    answered = (responses.filter(pl.col("status") == "ok")
                .join(prompts, on="prompt_id", how="inner").sort("prompt_id"))
    answers = answer_table(answered)
    if config.method == "logprob":
        tables = JudgeTables(answers.select("answer_id").with_columns(
            label=pl.lit(UNPARSEABLE), label_source=pl.lit("logprob"), rationale=pl.lit(""),
            agreement=pl.lit(None, pl.Float64)), pl.DataFrame(schema=_VOTE_TYPES))
    else:
        tables = label_answers(answers, config, judges, store, show_progress)
    labels = tables.labels.rename({"answer_id": "prompt_id"}).with_columns(
        p_favourable=pl.lit(None, pl.Float64), decision_mass=pl.lit(None, pl.Float64))
    scoring_asks = no_asks()
    if config.method == "logprob" or config.score_options:
        labels, scoring_asks = _with_option_scores(labels, answered, config, audited or {}, store,
                                                   show_progress, engine or EngineConfig())
    return JudgeTables(validate(labels, LabelSchema, "labels"), tables.votes,
                       pl.concat([tables.asks, scoring_asks]))


def _with_option_scores(labels: pl.DataFrame, answered: pl.DataFrame, config: JudgeConfig,
                        audited: dict[str, tuple[Backend, ModelConfig]], store: ResponseStore,
                        show_progress: ProgressFn, engine: EngineConfig
                        ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The labels with each answer's option score (and, for judge.method=logprob, the label it
    gives), and the scoring requests' asks."""
    decides = config.method == "logprob"
    missing = set(answered["model_name"]) - set(audited)
    if missing:
        raise ValueError(f"no backend for audited model '{sorted(missing)[0]}' to score options "
                         "with; pass the audited models to label_responses")
    # Sent ahead, concurrently up to each model's limit, as the judge's requests are.
    send_ahead(((prompt["model_name"], score_request(audited[prompt["model_name"]][1], prompt))
                for prompt in answered.iter_rows(named=True)),
               {name: backend for name, (backend, _) in audited.items()},
               {name: model for name, (_, model) in audited.items()}, store, engine,
               show_progress is track, "option scores")
    scored, asks = [], []
    for prompt in show_progress(answered.iter_rows(named=True), answered.height, "scored answers"):
        backend, model = audited[prompt["model_name"]]
        score = score_prompt(backend, model, prompt, store, engine)
        row = {"prompt_id": prompt["prompt_id"], "p_favourable": None, "decision_mass": None}
        failed = isinstance(score, JudgeVerdict)
        asks.append(ask_row(prompt["prompt_id"], prompt["model_name"], score if failed else None))
        if isinstance(score, OptionScore):
            row.update(p_favourable=score.p_favourable, decision_mass=score.decision_mass)
        if decides and failed:
            row.update(label=JUDGE_FAILED, rationale=score.rationale)
        elif decides:
            row["label"] = (score.label(config.min_decision_mass)
                            if isinstance(score, OptionScore) else UNPARSEABLE)
            row["rationale"] = score if not isinstance(score, OptionScore) else (
                score.rationale(prompt["favourable_option"])
                + ("; below judge.min_decision_mass, so no decision is read"
                   if row["label"] == UNPARSEABLE else ""))
        scored.append(row)
    updates = pl.DataFrame(scored, schema={"prompt_id": pl.Utf8, "p_favourable": pl.Float64,
                                           "decision_mass": pl.Float64,
                                           **({"label": pl.Utf8, "rationale": pl.Utf8}
                                              if decides else {})})
    return (labels.update(updates, on="prompt_id", include_nulls=True),
            pl.DataFrame(asks, schema=ASK_TYPES))


def self_judged_shares(labels: pl.DataFrame, prompts: pl.DataFrame, judge_digests: set[str],
                       model_digests: dict[str, str]) -> dict[str, float]:
    """For each audited model whose weights file (by digest) is also a judge's: the share of its
    labelled answers that the judge, not the rules, labelled. A model reading its own answers may
    share their blind spots, and the gold set holds no answers of the judge's own file, so its
    gold accuracy says less about those labels; the run says how many there are."""
    own = {name for name, digest in model_digests.items()
           if digest and digest != "none" and digest in judge_digests}
    if not own:
        return {}
    joined = labels.join(prompts.select("prompt_id", "model_name"), on="prompt_id", how="inner")
    shares = {}
    for name in sorted(own):
        answers = joined.filter(pl.col("model_name") == name)
        if answers.height:
            shares[name] = float((answers["label_source"] == "judge").mean())
    return shares
