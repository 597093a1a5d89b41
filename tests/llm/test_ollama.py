"""The ollama backend through the real `ollama` client against a scripted loopback server (no
model): what a request sends, how a reply and an error read, the model's identity."""

from __future__ import annotations

import dataclasses

import pytest
from servers.scripted import OLLAMA_DIGEST as DIGEST, ScriptedOllama, ollama_reply

from audit.config import ModelConfig
from audit.llm.backends import BackendError, ChatRequest, Message, create_backend

REQUEST = ChatRequest((Message("system", "Be brief."), Message("user", "Decide.")),
                      temperature=0.3, top_p=0.9, max_tokens=16, repeat_penalty=1.1, seed=7)
REPLY = ollama_reply("APPROVE.", eval_count=5)


class Ollama(ScriptedOllama):
    """The scripted server, answering REPLY unless told otherwise."""

    def __init__(self, chat=lambda body: (200, REPLY), **settings) -> None:
        super().__init__(chat, **settings)


def _backend(url: str, **settings):
    return create_backend(ModelConfig(**{"backend": "ollama", "model": "m:1b", "base_url": url,
                                         "timeout_s": 5, **settings}))


def test_a_request_sends_its_messages_and_settings_and_reads_the_reply():
    """Catches a sampling setting sent under another option or left out (temperature and top_p
    swapped, max_tokens, seed, the context size), the schema or keep_alive not sent, earlier
    messages dropped, and the reply's token count, finish reason or latency not read."""
    schema = {"type": "string", "enum": ["A", "B"]}
    with Ollama(delay_s=0.05) as server:
        completion = _backend(server.url, n_ctx=4096, keep_alive="10m").complete(
            dataclasses.replace(REQUEST, json_schema=schema))
    body = server.bodies[0]
    assert body["model"] == "m:1b" and body["format"] == schema and body["keep_alive"] == "10m"
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Decide."}]
    assert body["options"] == {"temperature": 0.3, "top_p": 0.9, "num_predict": 16,
                               "repeat_penalty": 1.1, "seed": 7, "num_ctx": 4096}
    assert (completion.text, completion.completion_tokens, completion.finish_reason) == (
        "APPROVE.", 5, "length")
    assert completion.latency_s >= 0.05


def test_a_scoring_request_is_refused_before_it_is_sent():
    """Catches a request to score option words sent to Ollama, which gives no log-probabilities
    (its reply would be read as scores it does not hold)."""
    with Ollama() as server:
        with pytest.raises(BackendError, match="no log-probabilities") as error:
            _backend(server.url).complete(dataclasses.replace(REQUEST,
                                                              score_options=("yes", "no")))
    assert error.value.kind == "unsupported" and server.bodies == []


def test_the_identity_holds_the_tags_digest_asked_once():
    """Catches a model named without a tag not looked up as NAME:latest (as Ollama does), the
    identity naming the tag it was looked up under instead of the configured model (every
    stored key would change), the digest cut, the model list asked again for every request,
    and the models a server has listed out of order when the model is not among them."""
    with Ollama(tags={"z:1b": "sha256:01", "m:latest": DIGEST, "a:1b": "sha256:02"}) as server:
        backend = _backend(server.url, model="m")
        assert backend.identity() == {"backend": "ollama", "model": "m", "digest": DIGEST}
        assert backend.identity() == backend.identity() and server.lists == 1
        with pytest.raises(BackendError) as error:
            _backend(server.url, model="n:1b").identity()
    assert error.value.kind == "model_not_found"
    assert str(error.value) == (f"Ollama at {server.url} has no model 'n:1b' (it has: a:1b, "
                                "m:latest, z:1b); run `ollama pull n:1b`")


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit"), (500, "server_error"),
                                              (404, "model_not_found"), (400, "http_status")])
def test_an_http_error_is_read_as_its_kind_with_the_servers_words(status, kind):
    """Catches the HTTP statuses read as the wrong kind (a 500 not a server error, a 404 not a
    missing model, a 429 not a rate limit) and the server's message replaced."""
    with Ollama(chat=lambda body: (status, {"error": "model 'm:1b' is busy"})) as server:
        with pytest.raises(BackendError) as error:
            _backend(server.url).complete(REQUEST)
    assert error.value.kind == kind
    assert str(error.value) == f"HTTP {status} from Ollama at {server.url}: model 'm:1b' is busy"


def test_a_reply_later_than_timeout_s_is_a_timeout():
    """Catches timeout_s not given to the client (it waited its own default) and a timeout read
    as an unreachable server."""
    with Ollama(delay_s=1.0) as server:
        with pytest.raises(BackendError) as error:
            _backend(server.url, timeout_s=0.2).complete(REQUEST)
    assert error.value.kind == "timeout"
    assert str(error.value) == f"no reply from {server.url} within 0.2 s"


def test_ollama_host_is_read_when_no_base_url_is_set(monkeypatch):
    """Catches OLLAMA_HOST, Ollama's own variable for where it serves, ignored: the backend
    asked the default port, where nothing listens."""
    with Ollama() as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        backend = _backend("")
        assert backend.identity()["digest"] == DIGEST and backend.host == server.url
    monkeypatch.delenv("OLLAMA_HOST")
    assert _backend("").host == "http://127.0.0.1:11434"  # Ollama's default


def test_a_server_error_on_the_model_list_is_not_called_unreachable():
    """Catches every error of the identity's model list read as a server that is not running
    (the fix said to start Ollama, which was up and answered HTTP 500)."""
    class Failing(Ollama):
        def _handler(self):
            class Handler(super()._handler()):
                def do_GET(self) -> None:
                    self._send(500, {"error": "out of memory"})
            return Handler

    with Failing() as server:
        with pytest.raises(BackendError) as error:
            _backend(server.url).identity()
        with pytest.raises(BackendError, match="^HTTP 500 from Ollama at .*: out of memory$"):
            _backend(server.url).health_check()
    assert str(error.value) == f"HTTP 500 from Ollama at {server.url}: out of memory"
    assert error.value.kind == "server_error"


def test_the_context_size_setting_is_keyed_as_ollamas_num_ctx():
    """Catches the key's setting renamed, which would change every key of a run that set
    n_ctx and lose its stored answers."""
    assert _backend("http://127.0.0.1:9", n_ctx=4096).reply_settings(REQUEST) == {
        "num_ctx": 4096}
    assert _backend("http://127.0.0.1:9").reply_settings(REQUEST) == {}


def test_a_reply_that_is_not_json_is_a_malformed_reply():
    """Catches an unreadable reply (a proxy's page, a cut body) read as another kind than
    malformed_reply, which the engine retries and counts as such."""
    class Garbled(Ollama):
        def _handler(self):
            class Handler(super()._handler()):
                def do_POST(self) -> None:
                    self._body()
                    self.send_response(200)
                    self.send_header("Content-Length", "8")
                    self.end_headers()
                    self.wfile.write(b"not json")
            return Handler

    with Garbled() as server:
        with pytest.raises(BackendError, match=f"^unreadable reply from {server.url}: ") as error:
            _backend(server.url).complete(REQUEST)
    assert error.value.kind == "malformed_reply"


def test_a_reply_without_a_message_is_one_line_naming_it():
    """Bug caught: a 200 reply without `message` (a proxy's error JSON) fails the client's own
    check first, so the error was pydantic's four-line text, which broke the one-line failure
    summary; it is one line naming the missing field."""
    reply = {key: value for key, value in REPLY.items() if key != "message"}
    with Ollama(chat=lambda body: (200, reply)) as server:
        with pytest.raises(BackendError) as error:
            _backend(server.url).complete(REQUEST)
    assert error.value.kind == "malformed_reply" and "\n" not in str(error.value)
    assert str(error.value).endswith("(message: Field required)"), str(error.value)
