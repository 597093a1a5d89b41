"""The LLM step of the judge: fencing, strict parsing, unparseable never guessed, panel voting."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from slow_backend import SlowBackend

from audit.llm.backends import Completion, create_backend
from audit.config import DesignConfig, EngineConfig, JudgeConfig, ModelConfig, SamplingConfig
from audit.design import expand_design
from audit.llm.engine import collect_responses
from audit.methods.rasch.judge.cascade import (
    Judge,
    check_rule_labels,
    label_answers,
    label_responses,
)
from audit.methods.rasch.judge.llm import decision_schema, decision_words, judge_answer, parse_verdict
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE
from audit.llm.store import ResponseStore

WORDS = decision_words("APPROVE", "DENY")
JUDGE_MODEL = ModelConfig(backend="fake", model="judge", sampling=SamplingConfig(temperature=0.0))
quiet = {"show_progress": lambda rows, total, name: rows}


def test_decision_words_map_onto_the_four_labels():
    assert WORDS == {"APPROVE": "favourable", "DENY": "unfavourable",
                     "UNDECIDED": "needs_more_information", "REFUSED": "refusal"}


def test_the_schema_allows_only_the_decision_words_and_a_bounded_rationale():
    schema = decision_schema(WORDS, 80)
    assert schema["properties"]["decision"]["enum"] == list(WORDS)
    assert schema["properties"]["rationale"]["maxLength"] == 80
    assert schema["required"] == ["decision", "rationale"]
    assert decision_schema(WORDS, 0) == {"type": "string", "enum": list(WORDS)}


def test_only_an_allowed_decision_in_json_counts():
    assert parse_verdict('"DENY"', WORDS).label == "unfavourable"
    assert parse_verdict(' "REFUSED" ', WORDS).label == "refusal"
    verdict = parse_verdict('{"decision": "APPROVE", "rationale": " stable\\n income "}', WORDS)
    assert (verdict.label, verdict.rationale) == ("favourable", "stable income")
    for reply in ('"deny"', '{"decision": "DENY"}', '"favourable"', "APPROVE", '["APPROVE"]',
                  '{"decision": "favourable", "rationale": "x"}', '{"label": "DENY"}',
                  '{"decision": "DENY", "rationale": 3}', ""):
        assert parse_verdict(reply, WORDS) is None, reply


@given(st.text(max_size=200))
def test_parse_verdict_never_raises_and_never_invents_a_label(reply):
    verdict = parse_verdict(reply, WORDS)
    assert verdict is None or verdict.label in LABELS


class _Scripted:
    """A judge that replies with a fixed text, to test what happens to each kind of reply."""

    def __init__(self, reply: str, name: str = "scripted") -> None:
        self.reply, self.name, self.calls = reply, name, 0

    def identity(self):
        return {"backend": "scripted", "model": self.name + self.reply, "digest": "none"}

    def complete(self, request):
        self.calls += 1
        return Completion(self.reply, 3, "stop", 0.0)


def test_an_unparseable_reply_is_retried_then_recorded_not_guessed(tmp_path):
    backend = _Scripted("I think they should get it")
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        verdict = judge_answer(backend, JUDGE_MODEL, 80, store, "Approve?", "maybe", "APPROVE",
                               "DENY")
    assert verdict.label == UNPARSEABLE
    assert backend.calls == 2 and "not an allowed label" in verdict.rationale


def test_a_valid_reply_is_mapped_with_its_rationale(tmp_path):
    backend = _Scripted(json.dumps({"decision": "REFUSED", "rationale": "declines to decide"}))
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        verdict = judge_answer(backend, JUDGE_MODEL, 80, store, "Approve?", "no comment",
                               "APPROVE", "DENY")
    assert (verdict.label, verdict.rationale) == ("refusal", "declines to decide")


def _answers(*texts: str) -> pl.DataFrame:
    return pl.DataFrame({"answer_id": [f"a{i}" for i in range(len(texts))],
                         "question": ["Approve the loan?"] * len(texts),
                         "favourable_option": ["APPROVE"] * len(texts),
                         "unfavourable_option": ["DENY"] * len(texts),
                         "answer_text": list(texts)})


def _panel(*replies: str) -> list[Judge]:
    return [Judge(f"j{i}", _Scripted(json.dumps(reply), f"j{i}"), JUDGE_MODEL)
            for i, reply in enumerate(replies)]


def test_a_panel_votes_by_majority_and_records_every_vote(tmp_path):
    config = JudgeConfig(name="panel", use_rules=False, rationale_max_chars=0)
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_answers(_answers("It depends on the paperwork."), config,
                               _panel("DENY", "DENY", "UNDECIDED"), store, **quiet)
    label = tables.labels.row(0, named=True)
    assert (label["label"], label["label_source"]) == ("unfavourable", "judge")
    assert label["agreement"] == pytest.approx(2 / 3)
    assert "j2=needs_more_information" in label["rationale"]
    assert sorted(tables.votes["judge"]) == ["j0", "j1", "j2"]


def test_a_tied_panel_gives_unparseable_never_a_guess(tmp_path):
    config = JudgeConfig(name="panel", use_rules=False, rationale_max_chars=0)
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_answers(_answers("Hmm."), config, _panel("APPROVE", "DENY"), store, **quiet)
    assert tables.labels["label"].to_list() == [UNPARSEABLE]
    assert "no label has more than half of the 2 valid votes" in tables.labels["rationale"][0]


def test_the_rule_check_hears_every_judge_of_the_panel(tmp_path):
    """Bug caught: the re-reading of rule labels asked only the panel's first judge, so the
    other judges' votes (and their failed requests) were missing from the rule check. By hand:
    two answers, three judges: 2 x 3 = 6 votes and asks, each judge's own word, no labels."""
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = check_rule_labels(_answers("DENY. Income is too low.", "APPROVE."),
                                   JudgeConfig(name="x"), _panel("DENY", "APPROVE", "DENY"),
                                   store, **quiet)
    assert tables.labels.height == 0
    assert sorted(tables.votes.select("answer_id", "judge", "label").rows()) == [
        ("a0", "j0", "unfavourable"), ("a0", "j1", "favourable"), ("a0", "j2", "unfavourable"),
        ("a1", "j0", "unfavourable"), ("a1", "j1", "favourable"), ("a1", "j2", "unfavourable")]
    assert tables.asks.height == 6 and set(tables.asks["status"]) == {"ok"}


def test_rules_label_plain_answers_and_the_panel_is_not_asked(tmp_path):
    panel = _panel("APPROVE")
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_answers(_answers("DENY. Income is too low."), JudgeConfig(name="x"), panel,
                               store, **quiet)
    assert tables.labels.select("label", "label_source").row(0) == ("unfavourable", "rule")
    assert panel[0].backend.calls == 0 and tables.votes.is_empty()


class _Down(_Scripted):
    """A judge whose requests fail with one kind of infrastructure error; `probe` gives it the
    health check a real server backend has, failing the same way."""

    def __init__(self, kind: str, probe: bool = False) -> None:
        super().__init__("", f"down-{kind}")
        self.kind = kind
        if probe:
            self.health_check = self._fail

    def _fail(self):
        from audit.llm.backends import BackendError

        raise BackendError(self.kind, "cannot reach http://127.0.0.1:9/v1")

    def complete(self, request):
        self.calls += 1
        self._fail()


NO_WAIT = EngineConfig(max_attempts=3, backoff_initial_s=0.0, backoff_max_s=0.0)


def test_an_unreachable_judge_server_stops_the_stage_before_any_request(tmp_path):
    from audit.llm.backends import BackendError

    judge = Judge("remote", _Down("connection", probe=True), JUDGE_MODEL, NO_WAIT)
    config = JudgeConfig(name="remote", use_rules=False)
    with ResponseStore(tmp_path / "s.sqlite3") as store, pytest.raises(
            BackendError, match=r"^judge 'remote': cannot reach .*Nothing was sent.*conf/judge/"):
        label_answers(_answers("Hmm.", "Perhaps."), config, [judge], store, **quiet)
    assert judge.backend.calls == 0


def test_a_judge_server_that_goes_down_stops_labelling_at_its_first_answer(tmp_path):
    from audit.llm.backends import BackendError

    judge = Judge("remote", _Down("connection"), JUDGE_MODEL, NO_WAIT)
    config = JudgeConfig(name="remote", use_rules=False)
    with ResponseStore(tmp_path / "s.sqlite3") as store, pytest.raises(
            BackendError, match=r"^judge 'remote': cannot reach .*start its server"):
        label_answers(_answers("Hmm.", "Perhaps.", "Maybe."), config, [judge], store, **quiet)
    # The run's 3 attempts for each answer sent ahead; labelling stops at the first answer with
    # the failure it already has (it sent that request's 3 attempts again).
    assert judge.backend.calls == 3 * 3


def test_judge_requests_go_out_concurrently_and_label_as_one_at_a_time_would(tmp_path):
    from dataclasses import replace

    reply = json.dumps("DENY")
    texts = [f"It depends on document {index}." for index in range(12)]
    config = JudgeConfig(name="slow", use_rules=False, rationale_max_chars=0)
    parallel = SlowBackend(_Scripted(reply, "slow"), delay_s=0.05)
    with ResponseStore(tmp_path / "a.sqlite3") as store:
        fast = label_answers(_answers(*texts), config, [
            Judge("slow", parallel, replace(JUDGE_MODEL, max_concurrency=4), NO_WAIT)],
            store, **quiet)
    assert parallel.peak == 4 and parallel.inner.calls == 12
    serial = SlowBackend(_Scripted(reply, "slow"), delay_s=0.05)
    with ResponseStore(tmp_path / "b.sqlite3") as store:
        slow = label_answers(_answers(*texts), config, [Judge("slow", serial, JUDGE_MODEL,
                                                              NO_WAIT)], store, **quiet)
    assert serial.peak == 1 and serial.inner.calls == 12
    assert fast.labels.equals(slow.labels) and fast.votes.equals(slow.votes)
    assert set(fast.labels["label"]) == {"unfavourable"}


def test_a_judge_request_that_fails_otherwise_is_a_judge_failure_not_a_label(tmp_path):
    """Defect 1 (review engine.md): a failed judge request became an `unparseable` label, which
    the report read as an answer that "carried no decision". It is a judge failure with its
    kind, as an error row of the asks the score stage counts, and the second seed is not asked
    (a rerun asks the first again)."""
    judge = Judge("strict", _Down("http_status"), JUDGE_MODEL, NO_WAIT)
    config = JudgeConfig(name="strict", use_rules=False)
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_answers(_answers("Hmm."), config, [judge], store, **quiet)
    assert tables.labels["label"].to_list() == [JUDGE_FAILED]
    assert tables.votes["label"].to_list() == [JUDGE_FAILED]
    assert "judge request failed (http_status)" in tables.labels["rationale"][0]
    assert tables.asks.select("status", "error_kind").rows() == [("error", "http_status")]
    # Sent ahead once (http_status is not retried); the labelling loop takes that failure
    # instead of sending it again, and asks no second seed.
    assert judge.backend.calls == 1


def test_without_rules_or_judges_nothing_is_guessed(tmp_path):
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_answers(_answers("DENY."), JudgeConfig(name="x", use_rules=False), [],
                               store, **quiet)
    assert tables.labels.select("label", "label_source").row(0) == (UNPARSEABLE, "none")


def test_cascade_labels_only_successful_responses(items, personas, fake_models, tmp_path):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=1))
    backends = {name: create_backend(config) for name, config in fake_models.items()}
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        responses = collect_responses(prompts, backends, fake_models, store,
                                      show_progress=False)
        responses = responses.with_columns(
            pl.when(pl.col("prompt_id") == prompts["prompt_id"][0]).then(pl.lit("error"))
            .otherwise(pl.col("status")).alias("status"))
        judge = create_backend(JUDGE_MODEL)
        tables = label_responses(prompts, responses, JudgeConfig(name="fake"),
                                 [Judge("fake", judge, JUDGE_MODEL)], store, **quiet)
    labels = tables.labels
    assert labels.height == prompts.height - 1
    assert prompts["prompt_id"][0] not in labels["prompt_id"].to_list()
    # The fake model states APPROVE/DENY plainly, so the rules label everything and the judge idles.
    assert set(labels["label_source"]) == {"rule"}
    assert set(labels["label"]) <= {"favourable", "unfavourable"}
    assert judge.requests == []
    assert labels["p_favourable"].null_count() == labels.height


def test_a_panel_label_quotes_the_first_agreeing_judge_after_the_votes(tmp_path):
    """Catches a panel rationale that quotes a judge who voted against the label, or drops the
    judges' own words. By hand: j0 and j2 say DENY, j1 APPROVE; the words are j0's."""
    replies = [("DENY", "income too low"), ("APPROVE", "looks fine"), ("DENY", "thin history")]
    panel = [Judge(f"j{i}", _Scripted(json.dumps({"decision": word, "rationale": why}), f"j{i}"),
                   JUDGE_MODEL) for i, (word, why) in enumerate(replies)]
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = label_answers(_answers("It depends."), JudgeConfig(name="p", use_rules=False),
                               panel, store, **quiet)
    assert tables.labels["rationale"].to_list() == [
        "j0=unfavourable, j1=favourable, j2=unfavourable; income too low"]


def test_labels_and_votes_come_out_in_answer_id_order_whatever_the_input_order(tmp_path):
    """Catches a dropped sort by answer_id in label_answers or check_rule_labels: their tables
    followed the input's row order, so the same answers in another order gave other tables."""
    answers = _answers("Hmm.", "Perhaps.", "Maybe.").reverse()  # a2, a1, a0
    config = JudgeConfig(name="p", use_rules=False, rationale_max_chars=0)
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        labelled = label_answers(answers, config, _panel("DENY"), store, **quiet)
        checked = check_rule_labels(answers, config, _panel("DENY"), store, **quiet)
    assert labelled.labels["answer_id"].to_list() == ["a0", "a1", "a2"]
    assert labelled.votes["answer_id"].to_list() == ["a0", "a1", "a2"]
    assert checked.votes["answer_id"].to_list() == ["a0", "a1", "a2"]


def test_the_rule_check_without_a_judge_asks_nothing_and_returns_empty_tables(tmp_path):
    """Catches a rule check that sends ahead with no judge: it crashed on judges[0]."""
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        tables = check_rule_labels(_answers("DENY."), JudgeConfig(name="x"), [], store, **quiet)
    assert (tables.labels.height, tables.votes.height, tables.asks.height) == (0, 0, 0)


def test_every_panel_judges_requests_are_sent_ahead_concurrently(tmp_path):
    """Catches sending ahead only the first judge's requests: the panel's other judges were
    asked one answer at a time. By hand: 8 answers, two judges of 4 slots each, both reach 4."""
    from dataclasses import replace

    model = replace(JUDGE_MODEL, max_concurrency=4)
    backends = [SlowBackend(_Scripted(json.dumps("DENY"), f"s{i}"), delay_s=0.05)
                for i in range(2)]
    panel = [Judge(f"s{i}", backend, model, NO_WAIT) for i, backend in enumerate(backends)]
    config = JudgeConfig(name="slow", use_rules=False, rationale_max_chars=0)
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        label_answers(_answers(*[f"It depends on {k}." for k in range(8)]), config, panel, store,
                      **quiet)
    assert [backend.peak for backend in backends] == [4, 4]
    assert [backend.inner.calls for backend in backends] == [8, 8]


def test_judge_answer_cuts_the_rationale_to_the_configured_cap(tmp_path):
    """Catches judge_answer not passing judge.rationale_max_chars on to parse_verdict: a server
    that cannot enforce the schema's maxLength wrote a longer rationale, and it was kept whole."""
    reply = json.dumps({"decision": "DENY", "rationale": "income too low for the payments"})
    with ResponseStore(tmp_path / "s.sqlite3") as store:
        verdict = judge_answer(_Scripted(reply), JUDGE_MODEL, 10, store, "Approve?", "Hmm.",
                               "APPROVE", "DENY")
    assert (verdict.label, verdict.rationale) == ("unfavourable", "income too")


def test_the_token_budget_by_hand():
    """Catches a changed token budget or an off-by-one in its check. By hand: a rationale of 40
    characters needs 12 + 41 // 2 = 32 tokens, of 42 characters 33, a bare decision 8; a judge
    allowed exactly 32 tokens may write 40 characters but not 42."""
    from dataclasses import replace

    from audit.errors import AuditError
    from audit.methods.rasch.judge.llm import check_token_budget, min_judge_tokens

    assert [min_judge_tokens(chars) for chars in (0, 40, 42)] == [8, 32, 33]
    model = replace(JUDGE_MODEL, sampling=SamplingConfig(temperature=0.0, max_tokens=32))
    check_token_budget("j", model, 40)
    with pytest.raises(AuditError, match="max_tokens to at least 33 "):
        check_token_budget("j", model, 42)
