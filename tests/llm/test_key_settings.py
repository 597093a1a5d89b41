"""Backend settings outside the request that change a reply (Ollama's context size, how a schema
is sent) are in the request key, and only when they are not at their default, so every earlier
key holds."""

from __future__ import annotations

from servers.scripted import ANSWER, ScriptedOllama, collect, ollama_reply, openai_model

from audit.config import ModelConfig
from audit.llm.backends import (ChatRequest, Message, backend_request_key, create_backend,
                                request_key)


def _request(schema: dict | None = None) -> ChatRequest:
    return ChatRequest((Message("user", "Decide."),), 0.0, 1.0, 8, 1.0, 0, schema)


IDENTITY = {"backend": "b", "model": "m", "digest": "none"}
SCHEMA = {"type": "string", "enum": ["A", "B"]}


def test_ollama_context_size_is_in_the_key_only_when_set():
    """Catches answers truncated at one num_ctx served for another."""
    def key(**settings) -> str:
        config = ModelConfig(backend="ollama", model="m:1b", base_url="http://127.0.0.1:9",
                             **settings)
        return backend_request_key(create_backend(config), IDENTITY, _request())

    assert key() == request_key(IDENTITY, _request())  # the default keeps earlier keys
    assert key(n_ctx=4096) != key(n_ctx=8192) != key()
    fleet = ModelConfig(backend="ollama", model="m:1b", n_ctx=4096,
                        base_urls=["http://127.0.0.1:9", "http://127.0.0.1:10"])
    assert backend_request_key(create_backend(fleet), IDENTITY, _request()) == key(n_ctx=4096)


def test_the_schema_format_is_in_the_key_of_schema_requests_only():
    """Catches a judge's replies constrained as json_object served for json_schema."""
    def key(request: ChatRequest, schema_format: str) -> str:
        config = openai_model("http://127.0.0.1:9/v1", schema_format=schema_format)
        return backend_request_key(create_backend(config), IDENTITY, request)

    assert key(_request(SCHEMA), "json_schema") == request_key(IDENTITY, _request(SCHEMA))
    assert key(_request(SCHEMA), "json_object") != key(_request(SCHEMA), "json_schema")
    assert key(_request(), "json_object") == key(_request(), "json_schema")


def test_the_engine_keys_requests_with_the_backend_settings(tmp_path):
    """The key the engine stores under is the one with the settings (not only the helper's)."""
    with ScriptedOllama(lambda body: (200, ollama_reply(ANSWER))) as server:
        model = ModelConfig(backend="ollama", model="m:1b", base_url=server.url, timeout_s=5,
                            n_ctx=4096)
        backend = create_backend(model)
        identity = backend.identity()
        responses = collect(model, tmp_path / "store.sqlite3", count=1)
    request = ChatRequest((Message("user", "Decide case 0."),), model.sampling.temperature,
                          model.sampling.top_p, model.sampling.max_tokens,
                          model.sampling.repeat_penalty, 0)
    assert responses["request_key"][0] == backend_request_key(backend, identity, request)
    assert responses["request_key"][0] != request_key(identity, request)
