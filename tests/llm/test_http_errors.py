"""An HTTP error from an OpenAI-compatible server names the server's own explanation and the
URL, in one line, without the API key."""

from __future__ import annotations

import pytest
from servers.scripted import ScriptedOpenAI, openai_model

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
