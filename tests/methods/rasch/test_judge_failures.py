"""A judge request that fails after its retries is infrastructure, not behaviour (DESIGN.md).

Defect 1 of the engine review: a 429, 5xx, timeout or malformed reply from the judge became an
`unparseable` label, the score stage never applied engine.max_failed_share (the run exited 0),
the report said those answers "carried no decision", and gold answers whose judge request failed
counted as judge mistakes. These tests drive the score stage with a judge whose server answers
HTTP 500 and then recovers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.llm.backends import BackendError, ChatRequest, Completion
from audit.llm.backends.fake import FakeBackend
from audit.llm.failures import TooManyFailures
from audit.methods.configs import AuditConfig, register_configs, to_audit_config
from audit.methods.rasch import score
from audit.methods.rasch.design import design_stage
from audit.methods.rasch.irt.outcome import code_outcomes
from audit.methods.rasch.judge.cascade import label_responses
from audit.methods.rasch.judge.gold import gold_figures, gold_line
from audit.methods.rasch.method import StageFiles, _score
from audit.methods.rasch.no_signal import JudgeQuality
from audit.methods.rasch.report.reading import caveats
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE, LabelSchema
from audit.schemas import PromptSchema, ResponseSchema
from audit.tables import read_table, write_table

register_configs()

# No rule reads these, so every answer goes to the judge.
HARD = "Hmm."
UNCLEAR = "Perhaps."


class ServerJudge(FakeBackend):
    """A judge server that answers HTTP 500 while `down`, to questions about answers containing
    `failing` (every answer when None); `calls` counts every request it received, `failed`
    those it answered with the error."""

    def __init__(self, config, failing=None) -> None:
        super().__init__(config)
        self.down, self.failing, self.calls, self.failed = True, failing, 0, 0

    def complete(self, request: ChatRequest) -> Completion:
        self.calls += 1
        prompt = request.messages[-1].content
        if self.down and (self.failing is None or (self.failing(request) if callable(self.failing)
                                                   else self.failing in prompt)):
            self.failed += 1
            raise BackendError("server_error", "HTTP 500 from the server")
        return super().complete(request)


def _compose(tmp_path, *overrides: str) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=[
            f"paths.output_dir={tmp_path}", f"paths.response_store={tmp_path}/store.sqlite3",
            "items=smoke", "personas=smoke", "design.replicates=1", "judge=openai_gpt4o_mini",
            "judge.rationale_max_chars=0",  # the fake judge replies with a bare enum
            "engine.max_attempts=2", "engine.backoff_initial_s=0", "engine.backoff_max_s=0",
            *overrides]))


def _stage_files(tmp_path, cfg: AuditConfig) -> StageFiles:
    """The design's prompts and an answer to each (half HARD, half UNCLEAR) on disk."""
    files = StageFiles(tmp_path / "run")
    files.directory.mkdir()
    prompts = design_stage(cfg)
    write_table(prompts, files.prompts, PromptSchema, "prompts")
    ids = prompts["prompt_id"].to_list()
    responses = pl.DataFrame({
        "prompt_id": ids, "request_key": ids, "status": ["ok"] * len(ids),
        "response_text": [HARD if index % 2 else UNCLEAR for index in range(len(ids))],
        "error_kind": [None] * len(ids), "error_message": [None] * len(ids),
        "completion_tokens": [5] * len(ids), "latency_s": [0.1] * len(ids),
        "from_cache": [False] * len(ids)})
    write_table(responses, files.responses, ResponseSchema, "responses")
    return files


def _serve(monkeypatch, judge: ServerJudge) -> None:
    monkeypatch.setattr(score, "create_backend", lambda model: judge)


def test_a_failed_judge_stops_the_score_stage_and_a_rerun_asks_only_the_failed(
        tmp_path, monkeypatch):
    cfg = _compose(tmp_path)
    files = _stage_files(tmp_path, cfg)
    judge = ServerJudge(cfg.judge.models["gpt4o_mini"], failing=HARD)
    _serve(monkeypatch, judge)
    with pytest.raises(TooManyFailures,
                       match=r"^\d+ of \d+ judge requests failed \(server_error x\d+: .*HTTP 500"
                             r".*rerun the same command to resume") as stopped:
        _score(cfg, files, None)  # type: ignore[arg-type]
    assert "\n" not in str(stopped.value)
    # The tables were written before the stage stopped, and say what happened.
    labels = pl.read_parquet(files.labels)
    failed = labels.filter(pl.col("label") == JUDGE_FAILED)
    answers = pl.read_parquet(files.responses)
    hard = answers.filter(pl.col("response_text") == HARD)["prompt_id"].sort().to_list()
    assert failed["prompt_id"].sort().to_list() == hard
    assert UNPARSEABLE not in labels["label"].to_list()
    assert failed["rationale"].str.contains(r"judge request failed \(server_error\)").all()
    # One request per item: the same answer to the same question is the same request.
    failed_requests = pl.read_parquet(files.prompts).filter(
        pl.col("prompt_id").is_in(hard))["item_id"].n_unique()
    # Each failing request went through its retries once: the labelling loop asked again for
    # what had been sent ahead and failed, and retried it all over (a timeout cost twice).
    assert judge.failed == failed_requests * cfg.engine.max_attempts

    # The server recovers: the rerun sends the failed requests only (the answered ones, and
    # the gold answers, come from the store; a stored failure is never served as a reply).
    judge.down, calls_before = False, judge.calls
    _score(cfg, files, None)  # type: ignore[arg-type]
    assert judge.calls - calls_before == failed_requests
    relabelled = read_table(files.labels, LabelSchema, "labels")
    assert set(relabelled["label"]) <= set(LABELS)
    assert relabelled.filter(pl.col("prompt_id").is_in(hard))["label_source"].to_list() == \
        ["judge"] * len(hard)


def test_max_failed_share_accepts_the_gap_and_keeps_it_out_of_the_fit(tmp_path, monkeypatch,
                                                                       caplog):
    cfg = _compose(tmp_path, "engine.max_failed_share=1")
    files = _stage_files(tmp_path, cfg)
    _serve(monkeypatch, ServerJudge(cfg.judge.models["gpt4o_mini"]))  # every request fails
    with caplog.at_level(logging.WARNING):
        _score(cfg, files, None)  # type: ignore[arg-type]
    assert any("judge requests failed and engine.max_failed_share accepts it" in record.message
               for record in caplog.records)
    labels = pl.read_parquet(files.labels)
    assert set(labels.filter(pl.col("label_source") == "judge")["label"]) == {JUDGE_FAILED}
    gold = pl.read_parquet(files.gold)
    judged_gold = gold.filter(pl.col("label_source") == "judge")
    assert judged_gold.height and set(judged_gold["label"]) == {JUDGE_FAILED}
    # Never coded: the fit reads the rule labels only.
    prompts = pl.read_parquet(files.prompts).select("prompt_id", "respondent_id", "item_id")
    coded = code_outcomes(labels.join(prompts, on="prompt_id"), "favourable")
    assert coded.height == labels.filter(pl.col("label").is_in(LABELS)).height


def test_gold_answers_whose_judge_failed_are_not_judge_mistakes():
    results = pl.DataFrame({
        "gold_id": ["g1", "g2", "g3", "g4"], "category": ["plain"] * 4, "domain": ["d"] * 4,
        "true_label": ["favourable", "unfavourable", "refusal", "refusal"],
        "label": ["favourable", "unfavourable", JUDGE_FAILED, JUDGE_FAILED],
        "label_source": ["rule", "judge", "judge", "judge"], "rationale": [""] * 4})
    metrics = gold_figures(results).metrics
    assert metrics["gold/accuracy"] == 1.0  # was 0.5: two failed requests counted as mistakes
    assert metrics["gold/n"] == 2.0
    assert metrics["gold/judge_failed"] == 2.0
    assert metrics["gold/judge_accuracy"] == 1.0


def test_the_report_gives_judge_failures_their_own_sentence():
    prompts = pl.DataFrame({"prompt_id": [f"p{i}" for i in range(10)],
                            "respondent_id": ["m/a"] * 10})
    labels = pl.DataFrame({"prompt_id": prompts["prompt_id"],
                           "label": ["favourable"] * 4 + [JUDGE_FAILED] * 6,
                           "label_source": ["rule"] * 4 + ["judge"] * 6})
    unmeasured = JudgeQuality(**{field.name: None for field in dataclasses.fields(JudgeQuality)})
    found = caveats(labels, prompts, unmeasured, converged=True, failed=0, judge_name="rules_only")
    assert any(caveat.startswith("6 answers have no label because a judge request failed")
               for caveat in found)
    assert not any("carried no decision" in caveat for caveat in found)
    # A failed answer is not a decided one.
    assert any("only 4 decided answers" in caveat for caveat in found)
    # It read "1 answers have no label ...: they are left out".
    one = labels.with_columns(label=pl.when(pl.int_range(pl.len()) < 9).then(pl.lit("favourable"))
                              .otherwise(pl.lit(JUDGE_FAILED)))
    found = caveats(one, prompts, unmeasured, converged=True, failed=1, judge_name="rules_only")
    assert any(caveat.startswith("1 answer has no label because") and ": it is left out" in caveat
               for caveat in found), found
    assert "1 request failed after retries and is missing from the design." in found, found


def test_an_option_score_that_fails_is_a_judge_failure(tmp_path):
    """judge.method=logprob: a failed scoring request was an `unparseable` label."""
    from audit.config import JudgeConfig
    from audit.llm.store import ResponseStore

    cfg = _compose(tmp_path, "judge=logprob")
    prompts = design_stage(cfg).head(2)
    ids = prompts["prompt_id"].to_list()
    responses = pl.DataFrame({"prompt_id": ids, "request_key": ids, "status": ["ok", "ok"],
                              "response_text": [HARD, HARD], "error_kind": [None, None],
                              "error_message": [None, None], "completion_tokens": [1, 1],
                              "latency_s": [0.1, 0.1], "from_cache": [False, False]})
    model_name = prompts["model_name"][0]
    audited = ServerJudge(cfg.model[model_name])
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_responses(prompts, responses, JudgeConfig(name="lp", method="logprob"),
                                 [], store, {model_name: (audited, cfg.model[model_name])},
                                 show_progress=lambda rows, total, name: rows,
                                 engine=cfg.engine)
    assert tables.labels["label"].to_list() == [JUDGE_FAILED] * 2
    assert tables.labels["rationale"][0].startswith("option scoring failed (server_error)")
    assert tables.asks.select("judge", "status", "error_kind").rows() == \
        [(model_name, "error", "server_error")] * 2


def test_a_failed_re_read_of_a_rule_label_is_no_disagreement():
    """The judge's re-reads of rule labels (judge/rule_check.py): a re-read whose request failed
    counted as the judge disagreeing with the rule."""
    from audit.methods.rasch.judge.rule_check import rule_agreement

    prompts = pl.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4"],
                            "gender": ["woman", "woman", "man", "man"]})
    labels = pl.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4"], "label": ["favourable"] * 4,
                           "label_source": ["rule"] * 4})
    votes = pl.DataFrame({"answer_id": ["p1", "p2", "p3", "p4"], "judge": ["j"] * 4,
                          "label": ["favourable", JUDGE_FAILED, "favourable", "favourable"],
                          "rationale": [""] * 4})
    table = rule_agreement(labels, votes, prompts, ["gender"])
    assert table.select("level", "n", "agree").rows() == [("man", 2.0, 2.0), ("woman", 1.0, 1.0)]


def test_a_gold_sample_whose_every_judge_request_failed_has_unknown_figures_not_a_crash():
    """Every gold answer failed (a judge rate-limited at the end of the score stage, within
    engine.max_failed_share of all its asks): gold_figures raised TypeError on float(None) and
    took the analyse stage, the report and audit.judge_eval down with it. Its shares are
    unknown (NaN), and the labelled accuracy NaN reads NO SIGNAL: the judge was never heard."""
    results = pl.DataFrame({
        "gold_id": ["g1", "g2"], "category": ["plain"] * 2, "domain": ["d"] * 2,
        "true_label": ["favourable", "refusal"], "label": [JUDGE_FAILED] * 2,
        "label_source": ["judge"] * 2, "rationale": [""] * 2})
    metrics = gold_figures(results).metrics
    assert metrics["gold/n"] == 0.0 and metrics["gold/judge_failed"] == 2.0
    assert all(math.isnan(metrics[name]) for name in (
        "gold/accuracy", "gold/labelled_accuracy", "gold/unparseable_share",
        "gold/rules_coverage"))
    # The run's line says so, where it read "accuracy nan, Cohen's kappa nan".
    assert gold_line("cascade", metrics) == ("judge 'cascade' on the gold set: no gold answer "
                                             "was read, every one of its 2 judge requests failed")


def test_a_rounds_judge_failures_stop_an_adaptive_run_before_the_next_round(tmp_path,
                                                                           monkeypatch):
    """Adaptive rounds ignored failed judge requests until every round was bought: each look
    chose on the answers left (a non-random subset), the whole budget was spent, and only the
    score stage then stopped; a rerun, whose retries may succeed, chose differently. Now the
    round whose judge requests fail stops the run at its look."""
    from audit.llm.failures import TooManyFailures
    from audit.methods.rasch import adaptive_run

    cfg = _compose(tmp_path, "design.adaptive=true", "design.replicates=4",
                   "design.round_prompts=20", "judge.evaluate_on_gold=false",
                   "fit.judge_error=false", "fit.draws=100", "fit.tune=100", "fit.chains=1")
    judge = ServerJudge(next(iter(cfg.judge.models.values())))
    _serve(monkeypatch, judge)
    prompts = design_stage(cfg)
    rounds: list[int] = []

    def answered(cfg, asked, models, name):  # the audited model's answers, all received
        rounds.append(len(rounds))
        ids = asked["prompt_id"].to_list()
        return pl.DataFrame({
            "prompt_id": ids, "request_key": ids, "status": ["ok"] * len(ids),
            "response_text": [HARD] * len(ids), "error_kind": [None] * len(ids),
            "error_message": [None] * len(ids), "completion_tokens": [5] * len(ids),
            "latency_s": [0.1] * len(ids), "from_cache": [False] * len(ids)},
            schema_overrides={"error_kind": pl.String, "error_message": pl.String})

    monkeypatch.setattr(adaptive_run, "answer_prompts", answered)
    monkeypatch.setattr(adaptive_run, "models_for", lambda cfg, prompts: dict(cfg.model))
    with pytest.raises(TooManyFailures, match="judge requests"):
        adaptive_run.respond_adaptively(cfg, prompts, tmp_path / "responses.parquet",
                                        tmp_path / "rounds.csv")
    assert rounds == [0]  # round 1 was never bought


def test_judge_eval_fails_after_writing_its_figures_when_judge_requests_failed(
        tmp_path, monkeypatch):
    """audit.judge_eval only warned when gold answers lost their judge label to a failed request
    and exited 0 with figures over a smaller gold set than it printed. Now it writes and logs the
    figures, then stops as the score stage does (engine.max_failed_share)."""
    from audit.cli.judge_eval import evaluate

    cfg = _compose(tmp_path, "tracking.enabled=false")
    # About one request in ten, scattered (by the whole request: an answer's requests come
    # together): a judge failing every request stops the run before any figure (engine: five
    # failures in a row), which is not this test's case.
    judge = ServerJudge(cfg.judge.models["gpt4o_mini"],
                        failing=lambda request: hashlib.sha256(
                            repr(request).encode()).digest()[0] < 26)
    _serve(monkeypatch, judge)
    with pytest.raises(TooManyFailures, match=r"judge requests on the gold set \(judge\)"):
        evaluate(cfg, tmp_path / "eval")
    assert (tmp_path / "eval" / "metrics.json").exists()  # the figures are kept for a look
    judge.down = False  # the server recovers: the same command succeeds
    metrics = evaluate(cfg, tmp_path / "eval")
    assert metrics["cascade"]["gold/judge_failed"] == 0.0


def test_judge_eval_refuses_a_gold_file_without_rows(tmp_path):
    """Bug caught (bad-input review 2026-12-02): a gold file with its header alone printed a
    table of nan accuracy, kappa and coverage and logged it to MLflow as a measurement (exit
    0). It is one line, as `audit.fit gold=` already says it, and nothing is written."""
    import polars as pl

    from audit.cli.judge_eval import evaluate
    from audit.errors import AuditError

    cfg = _compose(tmp_path, "tracking.enabled=false", "judge=rules_only")
    gold = pl.read_csv(cfg.judge.gold_file)
    gold.head(0).write_csv(tmp_path / "gold.csv")
    cfg = _compose(tmp_path, "tracking.enabled=false", "judge=rules_only",
                   f"judge.gold_file={tmp_path / 'gold.csv'}")
    with pytest.raises(AuditError, match=r"judge.gold_file=.*gold.csv has no rows: it needs one "
                                         r"row per hand-checked answer"):
        evaluate(cfg, tmp_path / "eval")
    assert not (tmp_path / "eval").exists()


def test_a_judge_server_that_is_down_is_named_before_any_prompt_is_sent(caplog):
    """Bug caught (own-model review 2026-12-02): a judge on a server that was never up was
    found in the score stage, after every answer had been bought ("judge 'x': cannot reach
    ..."); the design stage now says so, and an in-process judge is not touched."""
    import socket

    from audit.config import JudgeConfig, ModelConfig
    from audit.methods.configs import AuditConfig
    from audit.methods.rasch.score import warn_unreachable_judges

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the probe is: nothing listens there
    served = ModelConfig(backend="openai_compatible", model="judge-llm",
                         base_url=f"http://127.0.0.1:{port}/v1", timeout_s=5)
    cfg = AuditConfig(judge=JudgeConfig(name="mine", models={"served": served}))
    with caplog.at_level("WARNING"):
        warn_unreachable_judges(cfg)
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith(f"judge 'served': cannot reach http://127.0.0.1:{port}/v1")
    assert "start it before the answers are done" in line


def test_judge_eval_checks_the_store_before_labelling_the_gold_set(tmp_path, monkeypatch):
    """Bug caught (bad-input review 2026-12-04): the store was first reached when the figures
    were logged, after the judge had labelled the whole gold set (minutes for the default
    judge)."""
    from audit.cli.judge_eval import evaluate
    from audit.tracking.mlflow import TrackingError

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    dead = "http://127.0.0.1:9"  # nothing listens on the discard port
    cfg = _compose(tmp_path, f"tracking.tracking_uri={dead}", "judge=rules_only")
    with pytest.raises(TrackingError, match=f"MLflow store {dead} unreachable"):
        evaluate(cfg, tmp_path / "eval")
    assert not (tmp_path / "eval").exists()
