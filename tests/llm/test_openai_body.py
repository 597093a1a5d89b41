"""The body the openai_compatible backend sends keeps to what OpenAI's API accepts: no
`repeat_penalty` unless it changes something, and a strict schema that keeps OpenAI's strict-mode
rules (every object closed, every property required, no length limits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from servers.scripted import ANSWER, ScriptedOpenAI, chat_reply, openai_model

from audit.llm.backends import BackendError, ChatRequest, Message, create_backend
from audit.methods.rasch.judge.llm import decision_words, judge_request, parse_verdict


# OpenAI's strict structured outputs (platform.openai.com/docs/guides/structured-outputs,
# "Supported schemas"): the root is an object, every object sets additionalProperties false and
# lists every property in `required`, and these keywords are not supported.
OPENAI_STRICT_UNSUPPORTED = {"minLength", "maxLength", "minProperties", "maxProperties",
                             "patternProperties", "unevaluatedProperties", "propertyNames"}
OPENAI_CHAT_ARGUMENTS = {"model", "messages", "temperature", "top_p", "max_tokens", "seed",
                         "response_format", "logprobs", "top_logprobs", "n", "stop", "stream",
                         "presence_penalty", "frequency_penalty", "logit_bias", "user"}


def strict_mode_violations(schema: dict, where: str = "schema") -> list[str]:
    problems = [f"{where} uses {word}" for word in OPENAI_STRICT_UNSUPPORTED & set(schema)]
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties is not false")
        if set(schema.get("required", [])) != set(schema.get("properties", {})):
            problems.append(f"{where}: not every property is required")
    for name, spec in schema.get("properties", {}).items():
        problems += strict_mode_violations(spec, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += strict_mode_violations(schema["items"], f"{where}[]")
    return problems


def test_strict_mode_rules_catch_what_openai_rejects():
    """The checker itself: the schema the judge sent before the fix breaks two rules."""
    before = {"type": "object", "required": ["decision", "rationale"],
              "properties": {"decision": {"type": "string", "enum": ["A"]},
                             "rationale": {"type": "string", "maxLength": 120}}}
    assert strict_mode_violations(before) == ["schema: additionalProperties is not false",
                                              "schema.rationale uses maxLength"]


def _judge_body(rationale_max_chars: int) -> tuple[dict, ChatRequest]:
    """The body a json judge with this rationale sends to the loopback server."""
    with ScriptedOpenAI(lambda body: (200, chat_reply('{"decision": "HIRE", "rationale": '
                                                       '"ok"}'))) as server:
        model = openai_model(server.url)
        request = judge_request(model, rationale_max_chars, "Hire?", "Maybe.", "HIRE", "REJECT",
                                0, "json")
        create_backend(model).complete(request)
    return server.bodies[0], request


@pytest.mark.parametrize("rationale_max_chars", [120, 0])
def test_the_judge_body_keeps_to_openai_arguments_and_strict_mode(rationale_max_chars,
                                                                  monkeypatch):
    """Catches the openai_gpt4o_mini judge's body that OpenAI answers with HTTP 400: the
    `repeat_penalty` argument, and a strict schema that is open and has maxLength."""
    from audit.llm.backends import openai_compatible

    monkeypatch.setattr(openai_compatible, "OPENAI_HOSTS", ("127.0.0.1",))  # play OpenAI
    body, request = _judge_body(rationale_max_chars)
    assert set(body) <= OPENAI_CHAT_ARGUMENTS, set(body) - OPENAI_CHAT_ARGUMENTS
    format_ = body["response_format"]
    assert format_["type"] == "json_schema" and format_["json_schema"]["strict"] is True
    assert format_["json_schema"]["schema"]["type"] == "object"
    assert strict_mode_violations(format_["json_schema"]["schema"]) == []
    # Only the wire copy is changed: the request and its key keep the judge's schema.
    if rationale_max_chars:
        assert request.json_schema["properties"]["rationale"]["maxLength"] == 120


def test_other_servers_keep_the_length_limit_their_grammar_enforces():
    """vLLM and llama.cpp build a grammar from maxLength, which keeps a judge's JSON inside its
    token budget: only the objects are closed for them."""
    body, _ = _judge_body(120)
    schema = body["response_format"]["json_schema"]["schema"]
    assert strict_mode_violations(schema) == ["schema.rationale uses maxLength"]


def test_openai_hosts_are_told_apart_from_other_servers():
    from audit.llm.backends.openai_compatible import is_openai

    from omegaconf import OmegaConf

    shipped = OmegaConf.load(Path(__file__).resolve().parents[2] / "src" / "audit" / "conf" /
                             "judge" / "openai_gpt4o_mini.yaml")
    assert is_openai(shipped.models.gpt4o_mini.base_url)  # the shipped judge gets strict rules
    assert is_openai("https://api.openai.com/v1")
    assert is_openai("https://my-resource.openai.azure.com/openai/v1")
    assert not is_openai("http://127.0.0.1:8000/v1")
    assert not is_openai("https://api.openai.com.example.org/v1")


def test_repeat_penalty_is_sent_only_when_it_changes_something():
    with ScriptedOpenAI(lambda body: (200, chat_reply(ANSWER))) as server:
        backend = create_backend(openai_model(server.url))
        for penalty in (1.0, 1.1):
            backend.complete(ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 8, penalty, 0))
    assert "repeat_penalty" not in server.bodies[0]
    assert server.bodies[1]["repeat_penalty"] == 1.1


def test_the_rationale_is_cut_to_its_limit_when_the_server_cannot_enforce_it():
    words = decision_words("HIRE", "REJECT")
    reply = json.dumps({"decision": "HIRE", "rationale": "x" * 300})
    verdict = parse_verdict(reply, words, rationale_max_chars=120)
    assert verdict.label == "favourable" and verdict.rationale == "x" * 120
    assert parse_verdict(reply, words).rationale == "x" * 300  # no limit: kept whole


def test_a_server_that_rejects_strict_mode_keywords_gets_schemas_without_them(caplog):
    """A gateway in front of OpenAI (LiteLLM, OpenRouter) has its own host, so is_openai sends
    it maxLength, which OpenAI's strict mode answers with HTTP 400. The backend resends that
    request without the keywords strict mode rejects, once, and sends later schemas without
    them; the request (and its store key) keeps the schema it was built with."""
    from audit.llm.backends.openai_compatible import STRICT_UNSUPPORTED

    def script(body):
        schema = json.dumps(body.get("response_format", {}))
        if "maxLength" in schema:
            return 400, {"error": {"message": "Invalid schema for response_format 'reply': In "
                                              "context=('properties', 'rationale'), 'maxLength' "
                                              "is not permitted.", "type": "invalid_request_error"}}
        return 200, chat_reply(json.dumps({"decision": "HIRE", "rationale": "fits"}))

    schema = {"type": "object", "properties": {
        "decision": {"type": "string", "enum": ["HIRE", "REJECT"]},
        "rationale": {"type": "string", "maxLength": 120}}}
    request = ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 64, 1.0, 0, json_schema=schema)
    with ScriptedOpenAI(script) as server:
        backend = create_backend(openai_model(server.url))
        first = backend.complete(request)
        second = backend.complete(request)
    assert json.loads(first.text)["decision"] == "HIRE" and second.text == first.text
    sent = [json.dumps(body["response_format"]) for body in server.bodies]
    assert ["maxLength" in body for body in sent] == [True, False, False]
    assert request.json_schema["properties"]["rationale"]["maxLength"] == 120
    assert len([r for r in caplog.records if "maxLength" in r.getMessage()]) == 1
    assert not any(keyword in sent[2] for keyword in STRICT_UNSUPPORTED)


def test_a_400_about_something_else_is_not_resent():
    schema = {"type": "object", "properties": {"rationale": {"type": "string", "maxLength": 9}}}
    request = ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 64, 1.0, 0, json_schema=schema)
    with ScriptedOpenAI(lambda body: (400, {"error": {"message": "unknown model 'm'"}})) as server:
        backend = create_backend(openai_model(server.url))
        with pytest.raises(BackendError, match="HTTP 400"):
            backend.complete(request)
    assert len(server.bodies) == 1


def test_a_strict_schema_closes_every_object_and_requires_every_property():
    """Catches an object without `type` left open, an optional property left out of `required`
    and an unsupported keyword kept inside a list (anyOf) or `items`."""
    from audit.llm.backends.openai_compatible import STRICT_UNSUPPORTED, strict_schema

    schema = {"properties": {"a": {"type": "string", "maxLength": 9},
                             "b": {"anyOf": [{"type": "string", "minLength": 1},
                                             {"type": "array", "items": {"properties": {}}}]}},
              "required": ["a"], "minProperties": 1}
    assert strict_schema(schema, STRICT_UNSUPPORTED) == {
        "properties": {"a": {"type": "string"},
                       "b": {"anyOf": [{"type": "string"},
                                       {"type": "array", "items": {
                                           "properties": {}, "additionalProperties": False,
                                           "required": []}}]}},
        "required": ["a", "b"], "additionalProperties": False}


def test_only_openai_hosts_and_azure_resources_count_as_openai():
    """Catches any host that ends in api.openai.com (another company's name) taken for OpenAI's
    own API: only a name with a leading dot matches as an ending."""
    from audit.llm.backends.openai_compatible import is_openai

    assert not is_openai("https://notapi.openai.com/v1")
    assert not is_openai("https://myopenai.azure.com/v1")
    assert is_openai("https://x.openai.azure.com/v1")
    assert not is_openai(None)


def test_the_identity_is_the_model_name_alone_so_replicas_share_answers():
    """Catches the base_url (or anything else) in the identity, and so in every request key."""
    backend = create_backend(openai_model("http://127.0.0.1:9/v1"))
    assert backend.identity() == {"backend": "openai_compatible", "model": "m",
                                  "digest": "none"}


def test_the_schema_format_enters_the_key_only_of_a_request_with_a_schema():
    """Catches json_object recorded for every request (all keys change) or for none."""
    from dataclasses import replace

    plain = ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0)
    schema = replace(plain, json_schema={"type": "string", "enum": ["A", "B"]})
    json_object = create_backend(openai_model("http://127.0.0.1:9/v1",
                                              schema_format="json_object"))
    default = create_backend(openai_model("http://127.0.0.1:9/v1"))
    assert json_object.reply_settings(plain) == {}
    assert json_object.reply_settings(schema) == {"schema_format": "json_object"}
    assert default.reply_settings(schema) == {}


def test_a_repeat_penalty_below_neutral_is_sent_too():
    """Catches only penalties above 1.0 being sent (a 0.9 silently dropped)."""
    with ScriptedOpenAI(lambda body: (200, chat_reply(ANSWER))) as server:
        create_backend(openai_model(server.url)).complete(
            ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 8, 0.9, 0))
    assert server.bodies[0]["repeat_penalty"] == 0.9


def test_json_object_format_sends_the_wrapped_schema_as_it_was_built():
    """Catches llama.cpp's json_object format sent as OpenAI's json_schema: its server takes
    only {"type": "json_object", "schema": ...}."""
    schema = {"type": "string", "enum": ["A", "B"], "maxLength": 1}
    request = ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0, json_schema=schema)
    with ScriptedOpenAI(lambda body: (200, chat_reply('{"value": "A"}'))) as server:
        create_backend(openai_model(server.url, schema_format="json_object")).complete(request)
    assert server.bodies[0]["response_format"] == {
        "type": "json_object", "schema": {"type": "object", "properties": {"value": schema},
                                          "required": ["value"],
                                          "additionalProperties": False}}


def test_a_wrapped_reply_is_unwrapped_and_its_token_count_kept():
    """Catches the judge's bare label left as {"value": ...} and completion_tokens dropped."""
    reply = chat_reply('{"value": "favourable"}')
    reply["usage"]["completion_tokens"] = 7
    request = ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0,
                          json_schema={"type": "string", "enum": ["favourable", "unfavourable"]})
    with ScriptedOpenAI(lambda body: (200, reply)) as server:
        completion = create_backend(openai_model(server.url)).complete(request)
    assert (completion.text, completion.completion_tokens) == ('"favourable"', 7)


def _top_logprobs(pairs: list[tuple[str, float]]) -> dict:
    reply = chat_reply("D")
    reply["choices"][0]["logprobs"] = {"content": [{
        "token": pairs[0][0], "logprob": pairs[0][1], "bytes": None,
        "top_logprobs": [{"token": token, "logprob": logprob, "bytes": None}
                         for token, logprob in pairs]}]}
    return reply


def test_first_token_scores_count_each_top_token_once_for_the_first_option_it_opens():
    """Catches a token counted for a later option, an empty token opening every option, the
    probabilities of one option's tokens not summed (max instead of logsumexp), another
    log-probability for an option no token opens, and the body asking for fewer top tokens
    or more than one token."""
    reply = _top_logprobs([("D", -1.0), ("", -0.5), ("De", -2.0), ("A", -1.5), ("AP", -2.5)])
    request = ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 1, 1.0, 0,
                          score_options=("DENY", "Deny", "APPROVE", "zzzz"))
    with ScriptedOpenAI(lambda body: (200, reply)) as server:
        completion = create_backend(openai_model(server.url)).complete(request)
    scores = json.loads(completion.text)
    assert list(scores) == ["APPROVE", "DENY", "Deny", "zzzz"]  # sorted, as stored
    assert scores["DENY"] == -1.0 and scores["Deny"] == -2.0 and scores["zzzz"] == -100.0
    assert scores["APPROVE"] == pytest.approx(-1.5 + 0.31326169, abs=1e-7)  # log(e^-1.5+e^-2.5)
    assert (completion.finish_reason, completion.completion_tokens) == ("scored", 0)
    body = server.bodies[0]
    assert (body["max_tokens"], body["logprobs"], body["top_logprobs"]) == (1, True, 20)


def test_a_400_naming_a_keyword_the_schema_does_not_use_or_another_status_is_not_resent():
    """Catches a resend for any 4xx or 5xx that names a keyword, or for a 400 naming a
    keyword the body never sent (minLength here, where the schema has maxLength)."""
    schema = {"type": "object", "properties": {"rationale": {"type": "string", "maxLength": 9}}}
    request = ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 64, 1.0, 0, json_schema=schema)
    for status, message in ((400, "'minLength' is not permitted."),
                            (422, "'maxLength' is not permitted.")):
        with ScriptedOpenAI(lambda body: (status, {"error": {"message": message}})) as server:
            with pytest.raises(BackendError, match=f"HTTP {status}"):
                create_backend(openai_model(server.url)).complete(request)
        assert len(server.bodies) == 1, status
