"""An HTTP error from an OpenAI-compatible server names the server's own explanation and the
URL, in one line, without the API key."""

from __future__ import annotations

from dataclasses import replace

import pytest
from servers.scripted import ANSWER, ScriptedOpenAI, chat_reply, openai_model

from audit.config import ModelConfig
from audit.llm.backends import BackendError, ChatRequest, Message, create_backend

SECRET = "sk-test-0123456789abcdefSECRET"


def _error_of(model: ModelConfig) -> BackendError:
    with pytest.raises(BackendError) as error:
        create_backend(model).complete(ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0))
    return error.value


def test_an_http_error_quotes_the_server_and_its_url():
    """Catches "HTTP 404 from the server" with the server's explanation dropped."""
    missing = {"error": {"message": "The model `Llama-3.1-8B-Instrct` does not exist.",
                         "type": "NotFoundError", "code": 404}}
    with ScriptedOpenAI(lambda body: (404, missing)) as server:
        error = _error_of(openai_model(server.url))
    assert error.kind == "http_status"
    assert str(error).startswith(f"HTTP 404 from {server.url}/chat/completions: The model "
                                 "`Llama-3.1-8B-Instrct` does not exist. (check `model`")
    message = "Unrecognized request argument supplied: " + "y" * 500
    with ScriptedOpenAI(lambda body: (400, {"error": {"message": message}})) as server:
        error = _error_of(openai_model(server.url))
    # The first 200 characters: enough for the cause, short enough for the one line.
    assert str(error) == f"HTTP 400 from {server.url}/chat/completions: {message[:200]}..."


def test_an_http_error_never_shows_the_api_key(monkeypatch):
    monkeypatch.setenv("AUDIT_TEST_API_KEY", SECRET)
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}."}}
    with ScriptedOpenAI(lambda body: (401, echo)) as server:
        error = _error_of(openai_model(server.url, api_key_env="AUDIT_TEST_API_KEY"))
    assert SECRET not in str(error)
    assert "Incorrect API key provided: [API key]." in str(error)
    assert "check the key in $AUDIT_TEST_API_KEY" in str(error)


def test_a_model_the_server_does_not_list_or_a_refused_key_stops_before_any_request(
        monkeypatch):
    """Bugs caught (own-model review 2026-12-02): a misnamed `model:` against a server that
    answers whatever name it is sent (llama.cpp's) passed the health check, and its answers were
    stored under the misnamed model for every later run of that name; a key the server refuses
    only warned, then every prompt was sent for its own 401. Both now stop the run at once."""
    from audit.llm.preflight import preflight

    with ScriptedOpenAI(lambda body: (200, chat_reply(ANSWER))) as server:
        misnamed = create_backend(replace(openai_model(server.url),
                                          model="Llama-3.1-8B-Instruct"))
        with pytest.raises(BackendError) as stopped:
            preflight({"mine": misnamed}, ["mine"])
        preflight({"right": create_backend(openai_model(server.url))}, ["right"])
        assert server.bodies == []  # nothing was sent
    assert stopped.value.kind == "model_not_found"
    assert str(stopped.value) == (f"model 'mine': {server.url} does not serve "
                                  "'Llama-3.1-8B-Instruct' (it serves: m); set `model:` to one "
                                  "of them. Nothing was sent: fix it in conf/model/ and rerun")

    class Refusing(ScriptedOpenAI):
        def _handler(self):
            class Handler(super()._handler()):
                def do_GET(self) -> None:
                    self._send(401, {"error": {"message": "Incorrect API key provided."}})
            return Handler

    monkeypatch.setenv("AUDIT_TEST_API_KEY", SECRET)
    with Refusing(lambda body: (200, chat_reply(ANSWER))) as server:
        keyed = create_backend(openai_model(server.url, api_key_env="AUDIT_TEST_API_KEY"))
        with pytest.raises(BackendError) as refused:
            preflight({"hosted": keyed}, ["hosted"])
        assert server.bodies == []
    assert refused.value.status == 401 and "check the key in $AUDIT_TEST_API_KEY" in \
        str(refused.value)


def test_a_base_url_without_its_scheme_is_named_at_once():
    """Bug caught (own-model review 2026-12-02): `base_url: 127.0.0.1:18080/v1` read as
    "cannot reach 127.0.0.1:18080/v1: APIConnectionError ... start the server", though the
    server was up and the URL lacked http://."""
    with pytest.raises(BackendError) as error:
        create_backend(replace(openai_model("http://x"), base_url="127.0.0.1:18080/v1"))
    assert error.value.kind == "config"
    assert "write http://127.0.0.1:18080/v1 (or https://)" in str(error.value)
    # Bad-input review 2026-12-04: another scheme was "no scheme: write http://ftp://...".
    with pytest.raises(BackendError) as error:
        create_backend(replace(openai_model("http://x"), base_url="ftp://127.0.0.1:1/v1"))
    assert str(error.value) == ("base_url 'ftp://127.0.0.1:1/v1' has the scheme ftp://, which an "
                                "OpenAI-compatible server does not speak: use http:// or "
                                "https:// in conf/model/")


def test_an_ollama_server_that_is_not_running_is_named_with_its_model_and_the_fix():
    """Bug caught (own-model review 2026-12-02): the digest is asked before the preflight, so a
    stopped Ollama read only "cannot reach Ollama at http://127.0.0.1:11999: ConnectError",
    without the model or the fix, and a rerun served from the store failed the same way."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the probe is: nothing listens there
    backend = create_backend(ModelConfig(backend="ollama", model="llama3.2:1b",
                                         base_url=f"http://127.0.0.1:{port}", timeout_s=5))
    with pytest.raises(BackendError) as error:
        backend.identity()
    assert error.value.kind == "connection"
    assert str(error.value).startswith(f"model 'llama3.2:1b': cannot reach Ollama at "
                                       f"http://127.0.0.1:{port}")
    assert "start Ollama (ollama serve) or fix base_url" in str(error.value)


def test_a_fastapi_error_body_and_a_short_backend_name_read_plainly():
    """Bugs caught (own-model review 2026-12-02): a vLLM-style 404 printed its body as a Python
    dict (`{'detail': 'Not Found'}`); `backend: openai` got no hint of openai_compatible (too
    short for the similarity cut)."""
    from audit.errors import AuditError

    with ScriptedOpenAI(lambda body: (404, {"detail": "Not Found"})) as server:
        error = _error_of(openai_model(server.url))
    assert str(error).startswith(f"HTTP 404 from {server.url}/chat/completions: Not Found "
                                 "(check `model`")
    with pytest.raises(AuditError, match=r"\(did you mean 'openai_compatible'\?\)$"):
        create_backend(replace(openai_model("http://x"), backend="openai"))


@pytest.mark.parametrize(("value", "expected"), [("inf", None), ("Infinity", None), ("1e300", None),
                                                 (" 30 ", 30.0), ("0", 0.0), ("-5", None)])
def test_a_retry_after_that_is_no_http_delay_is_not_a_wait(value, expected):
    """Bug caught (mutation review 2026-12-06): the header was read with float(), so "inf"
    (HTTP's delay-seconds are digits) became an endless wait: the engine's backoff takes the
    larger of its own delay and the hint, and the run slept for good on a proxy's 429."""
    from audit.llm.backends.openai_compatible import retry_after

    assert retry_after({"retry-after": value}) == expected
