"""An empty reply (no content, null, only whitespace; a reasoning model that spent max_tokens, a
content filter, a proxy that dropped the body) is an infrastructure failure: retried, recorded as
an error naming its finish reason, counted by check_failures, never an answer."""

from __future__ import annotations

import dataclasses

import pytest
from servers.scripted import (ANSWER, NO_WAIT, ScriptedOllama, ScriptedOpenAI, chat_reply,
                              collect, ollama_reply, openai_model)

from audit.config import ModelConfig
from audit.llm.backends import (BackendError, ChatRequest, Completion, Message,
                                check_reply_text, create_backend, request_key)
from audit.llm.engine import send
from audit.llm.failures import TooManyFailures, check_failures
from audit.llm.store import ResponseStore


@pytest.mark.parametrize("content", ["", None, "  \n"], ids=["empty", "null", "blank"])
def test_an_empty_openai_reply_is_retried_then_an_error_never_an_answer(content, tmp_path):
    """Catches an empty reply (content "" or null, here blanked by a filter) stored as a
    successful answer, served to every rerun and labelled by the judge."""
    with ScriptedOpenAI(lambda body: (200, chat_reply(content, "content_filter"))) as server:
        responses = collect(openai_model(server.url), tmp_path / "store.sqlite3")
        assert len(server.bodies) == 2 * NO_WAIT.max_attempts  # retried like other failures
    assert responses["status"].to_list() == ["error"] * 2
    assert responses["error_kind"].to_list() == ["empty_reply"] * 2
    assert "finish_reason=content_filter" in responses["error_message"][0]
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        assert all(store.get(key) is None for key in responses["request_key"])
    with pytest.raises(TooManyFailures, match="empty_reply x2: empty reply "
                                              r"\(finish_reason=content_filter\)"):
        check_failures(responses, 0.0, str(tmp_path / "store.sqlite3"))


def test_an_empty_reply_cut_off_by_max_tokens_is_not_retried(tmp_path):
    """A reply that ran out of max_tokens before any text (a reasoning model) does so again for
    the same request: it was retried max_attempts times, each billed max_tokens on a paid API,
    before the run failed anyway. It is recorded at once and says to raise max_tokens."""
    with ScriptedOpenAI(lambda body: (200, chat_reply("", "length"))) as server:
        responses = collect(openai_model(server.url), tmp_path / "store.sqlite3")
        assert len(server.bodies) == 2  # once each
    assert responses["error_kind"].to_list() == ["empty_reply_length"] * 2
    assert "raise it" in responses["error_message"][0]


@pytest.mark.parametrize("content", ["", None], ids=["empty", "null"])
def test_an_empty_ollama_reply_is_an_error_too(content, tmp_path):
    with ScriptedOllama(lambda body: (200, ollama_reply(content))) as server:
        model = ModelConfig(backend="ollama", model="m:1b", base_url=server.url, timeout_s=5)
        responses = collect(model, tmp_path / "store.sqlite3", count=1)
        assert len(server.bodies) == 1  # cut off by max_tokens (done_reason length): not retried
    assert responses.select("status", "error_kind").row(0) == ("error", "empty_reply_length")
    assert "finish_reason=length" in responses["error_message"][0]


def test_an_empty_answer_stored_by_an_earlier_release_is_asked_again(tmp_path):
    """Catches an empty answer already in a store being served as an answer for good."""
    with ScriptedOpenAI(lambda body: (200, chat_reply(ANSWER))) as server:
        model = openai_model(server.url)
        backend = create_backend(model)
        request = ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 80, 1.0, 0)
        key = request_key(backend.identity(), request)
        with ResponseStore(tmp_path / "store.sqlite3") as store:
            store.put_ok(key, backend.identity(), request.as_payload(), "", 0, 0.1)
            assert store.get(key) is None
            outcome = send(backend, request, store, NO_WAIT)
            assert not outcome.from_cache and outcome.completion.text == ANSWER
            assert store.get(key).response_text == ANSWER
            kinds = store._connection.execute(
                "SELECT status, error_kind FROM responses ORDER BY created_at").fetchall()
    assert kinds == [("error", "empty_reply"), ("ok", None)]  # the old row kept as an error


DECIDE = ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 80, 1.0, 0)


def test_an_in_process_reply_with_null_fields_is_an_empty_first_choice_not_a_crash():
    """Catches a null content or finish reason in a llama.cpp runtime's reply read as None or
    "None" (the empty-reply check then crashed or named finish_reason=None), a reply without
    usage refused, or a later choice read instead of the first."""
    reply = {"choices": [{"message": {"content": None}, "finish_reason": None},
                         {"message": {"content": "second"}, "finish_reason": "stop"}]}
    completion = Completion.from_chat_reply(reply, 0.25)
    assert completion == Completion("", 0, "", 0.25)
    with pytest.raises(BackendError, match=r"^empty reply \(finish_reason=none\)$") as empty:
        check_reply_text(DECIDE, completion)
    assert empty.value.kind == "empty_reply"
    counted = Completion.from_chat_reply(
        {"choices": [{"message": {"content": "Yes."}, "finish_reason": "stop"}],
         "usage": {"completion_tokens": 3}}, 0.5)
    assert counted == Completion("Yes.", 3, "stop", 0.5)


def test_a_scoring_reply_is_never_an_empty_reply():
    """Catches a scoring request's reply held to the empty-reply check meant for generated text
    (its scores are read by the scoring parser, which names what is wrong with them)."""
    scoring = dataclasses.replace(DECIDE, score_options=("yes", "no"))
    reply = Completion("", 0, "", 0.1)
    assert check_reply_text(scoring, reply) is reply
