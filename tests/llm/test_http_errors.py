"""An HTTP error from an OpenAI-compatible server names the server's own explanation and the
URL, in one line, without the API key."""

from __future__ import annotations

from dataclasses import replace

import pytest
from llama_fakes import REQUEST, FakeLlama, embedded_backend, llamacpp_backend
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


def test_a_context_overflow_or_a_rate_limit_names_the_setting_to_change():
    """Bug caught (server probe 2026-12-07): vLLM's 400 for a prompt and max_tokens beyond its
    context, and a 429 on every request, quoted the server but named no setting of this tool."""
    overflow = {"error": {"message": "This model's maximum context length is 2048 tokens. "
                                     "However, you requested 2100 tokens.", "code": 400}}
    with ScriptedOpenAI(lambda body: (400, overflow)) as server:
        error = _error_of(openai_model(server.url))
    assert str(error).endswith("(lower sampling.max_tokens in conf/model/, or give the server a "
                               "longer context: vLLM's --max-model-len, llama.cpp's --ctx-size)")
    with ScriptedOpenAI(lambda body: (429, {"error": {"message": "Rate limit reached"}})) as server:
        error = _error_of(openai_model(server.url))
    assert (error.kind, str(error)) == ("rate_limit", (
        f"HTTP 429 from {server.url}/chat/completions: Rate limit reached (lower max_concurrency "
        "in conf/model/, or set engine.requests_per_minute to the server's limit)"))


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


def test_an_empty_model_name_for_a_server_is_named_at_once():
    """Bug caught (server probe 2026-12-07): `model: ''` passed, and a server that lists no
    models would have been sent requests for no model."""
    with pytest.raises(BackendError) as error:
        create_backend(replace(openai_model("http://127.0.0.1:1/v1"), model=" "))
    assert (error.value.kind, str(error.value)) == ("config", (
        "openai_compatible needs `model`, the name the server serves (its /v1/models lists "
        "them), in conf/model/"))


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


def test_retry_after_reads_seconds_and_dates_never_a_negative_wait():
    """Catches a past HTTP date passed on as a negative wait, a date read as seconds since 1970
    (or not at all) and the header looked up under another name. A negative delay is no HTTP
    delay-seconds at all, so it gives no hint (see the test above)."""
    from datetime import datetime, timedelta, timezone
    from email.utils import format_datetime

    from audit.llm.backends.openai_compatible import retry_after

    assert retry_after({"retry-after": "7"}) == 7.0
    assert retry_after({"retry-after": "-3"}) is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=60), usegmt=True)
    assert 50 < retry_after({"retry-after": later}) <= 60
    earlier = format_datetime(datetime.now(timezone.utc) - timedelta(seconds=60), usegmt=True)
    assert retry_after({"retry-after": earlier}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None and retry_after(None) is None


class _Replying(ScriptedOpenAI):
    """A server whose chat replies are a status, raw bytes and extra headers."""

    def __init__(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.reply = (status, data, headers or {})
        super().__init__(lambda body: None)

    def _handler(self):
        server = self

        class Handler(super()._handler()):
            def do_POST(self) -> None:
                server.bodies.append(self._body())
                status, data, headers = server.reply
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.mark.parametrize("status, kind", [(429, "rate_limit"), (500, "server_error"),
                                          (503, "server_error"), (400, "http_status"),
                                          (499, "http_status")])
def test_each_http_status_is_one_request_of_its_kind_with_the_servers_retry_after(status, kind):
    """Catches the client's own retries switched on (retrying is the engine's job), a 500 or a
    429 given the kind of an error not worth retrying, and the server's Retry-After dropped."""
    with _Replying(status, b'{"error": {"message": "busy"}}', {"Retry-After": "7"}) as server:
        error = _error_of(openai_model(server.url))
    assert (error.kind, error.status, error.retry_after_s) == (kind, status, 7.0)
    assert len(server.bodies) == 1


def test_a_reply_that_is_not_json_is_a_malformed_reply():
    """Catches the client's JSONDecodeError escaping as a crash instead of a BackendError."""
    with _Replying(200, b"<html>proxy login</html>") as server:
        error = _error_of(openai_model(server.url))
    assert error.kind == "malformed_reply"


def test_a_server_that_does_not_answer_in_time_is_a_timeout():
    """Catches the configured timeout_s not given to the client (its default is 10 minutes)
    and a timeout labelled as a connection failure."""
    import threading

    release = threading.Event()

    def late(body):
        release.wait(3)
        return 200, chat_reply(ANSWER)

    with ScriptedOpenAI(late) as server:
        try:
            error = _error_of(replace(openai_model(server.url), timeout_s=0.2))
        finally:
            release.set()
    assert (error.kind, str(error)) == ("timeout", f"no reply from {server.url}/chat/completions"
                                                   " within 0.2 s")


@pytest.mark.parametrize("api_key_env, hint", [
    (None, " (the server wants an API key: name its variable in api_key_env)"),
    ("AUDIT_TEST_API_KEY", " (check the key in $AUDIT_TEST_API_KEY)")])
def test_a_403_names_the_key_to_check_as_a_401_does(api_key_env, hint, monkeypatch):
    monkeypatch.setenv("AUDIT_TEST_API_KEY", SECRET)
    with ScriptedOpenAI(lambda body: (403, {"error": {"message": "Forbidden."}})) as server:
        error = _error_of(openai_model(server.url, api_key_env=api_key_env))
    assert str(error) == f"HTTP 403 from {server.url}/chat/completions: Forbidden.{hint}"


def test_an_api_key_variable_that_is_unset_or_empty_stops_at_once(monkeypatch):
    """Catches an empty key (or none) sent to a server that wants one: every request a 401."""
    monkeypatch.delenv("AUDIT_TEST_API_KEY", raising=False)
    model = openai_model("http://127.0.0.1:9/v1", api_key_env="AUDIT_TEST_API_KEY")
    with pytest.raises(BackendError, match=r"AUDIT_TEST_API_KEY \(named by api_key_env\) is "
                                           r"not set") as unset:
        create_backend(model)
    monkeypatch.setenv("AUDIT_TEST_API_KEY", "")
    with pytest.raises(BackendError, match="AUDIT_TEST_API_KEY") as empty:
        create_backend(model)
    assert unset.value.kind == empty.value.kind == "config"


def test_an_https_base_url_is_taken_and_a_path_with_a_url_in_it_has_no_scheme():
    """Catches https:// refused as a scheme the server cannot speak, and `host/path/http://x`
    read as the scheme `host/path/http://`."""
    from audit.llm.backends.openai_compatible import base_url_problem

    create_backend(openai_model("https://api.example.org/v1"))  # no error
    assert base_url_problem("127.0.0.1:8000/proxy/http://up/v1") == (
        "base_url '127.0.0.1:8000/proxy/http://up/v1' has no scheme: write "
        "http://127.0.0.1:8000/proxy/http://up/v1 (or https://) in conf/model/")


def test_the_server_message_is_one_line_cut_only_past_200_characters():
    """Catches a message of exactly 200 characters given "...", a multi-line message kept on
    several lines, and an error object without a message quoted as "None"."""
    messages = ["x" * 200, "first\n  second", None]
    with ScriptedOpenAI(lambda body: (500, {"error": {"message": messages.pop(0)}})) as server:
        backend = create_backend(openai_model(server.url))
        errors = []
        for _ in range(3):
            with pytest.raises(BackendError) as error:
                backend.complete(ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0))
            errors.append(str(error.value).removeprefix(f"HTTP 500 from {server.url}"))
    assert errors == ["/chat/completions: " + "x" * 200, "/chat/completions: first second",
                      '/chat/completions: {"error": {"message": null}}']


def _listing(models: list) -> type[ScriptedOpenAI]:
    class Listing(ScriptedOpenAI):
        def _handler(self):
            class Handler(super()._handler()):
                def do_GET(self) -> None:
                    self._send(200, {"object": "list", "data": models})
            return Handler
    return Listing


def test_the_health_check_names_ten_served_models_and_passes_a_list_without_models():
    """Catches a server that lists no models (nothing to judge by) failing the check, and a
    long model list shown whole."""
    with _listing([])(lambda body: (200, chat_reply(ANSWER))) as server:
        create_backend(openai_model(server.url)).health_check()  # no error
    served = [{"id": f"m{index}"} for index in range(1, 12)]
    with _listing(served)(lambda body: (200, chat_reply(ANSWER))) as server:
        with pytest.raises(BackendError) as error:
            create_backend(openai_model(server.url)).health_check()
    assert str(error.value) == (f"{server.url} does not serve 'm' (it serves: m1, m2, m3, m4, "
                                "m5, m6, m7, m8, m9, m10, ...); set `model:` to one of them")


def test_served_models_skips_entries_without_an_id_and_bodies_that_are_no_list():
    """Catches an entry without an id (or not an object) ending the whole list with an error."""
    from audit.llm.backends.openai_compatible import served_models

    assert served_models(b'{"data": [{"id": "a"}, "b", {"name": "c"}, {"id": 5}]}') == ["a", "5"]
    assert served_models(b'{"data": null}') == served_models(b"not json") == []
    assert served_models(b"[1, 2]") == []


@pytest.mark.parametrize(("reply", "kind"), [
    ({"error": {"type": "exceed_context_size_error", "code": 400, "message": "too long"}},
     "context_length"),
    ({"error": {"type": "invalid_request_error", "code": 400, "message": "bad"}},
     "malformed_request"),
    ({"error": {"type": "server_error", "code": 500, "message": "boom"}}, "server_error"),
    ({"choices": []}, "malformed_reply"),
    ("not a dict", "malformed_reply"),
])
def test_an_embedded_runtime_error_or_empty_reply_is_read_as_its_kind(monkeypatch, reply, kind):
    """Catches an overlong prompt, a bad request or a runtime failure of the embedded llama.cpp
    read as another kind (the engine retries some kinds and not others), or a reply without
    choices taken for an answer."""
    backend, _ = embedded_backend(monkeypatch, lambda payload: reply)
    with pytest.raises(BackendError) as error:
        backend.complete(REQUEST)
    assert error.value.kind == kind


def test_a_model_file_llama_cpp_cannot_load_is_model_not_found(monkeypatch, tmp_path):
    """Catches a file the embedded runtime cannot load reported as another kind, or without
    llama.cpp's reason."""
    from audit.llm.backends import embedded

    def refuse(params):
        raise RuntimeError("bad magic")
    monkeypatch.setattr(embedded.xllamacpp, "Server", refuse)
    embedded.close_runtimes()
    with pytest.raises(BackendError, match="could not load .*broken.gguf: bad magic") as error:
        embedded.load_runtime(tmp_path / "broken.gguf", 512, 2, 1)
    assert error.value.kind == "model_not_found"


def test_an_overlong_prompt_to_llama_cpp_python_is_context_length(monkeypatch):
    """Catches llama-cpp-python's ValueError for a prompt longer than the context not read as
    context_length."""
    backend, _ = llamacpp_backend(monkeypatch, FakeLlama(overflow=True))
    with pytest.raises(BackendError, match="exceed context window") as error:
        backend.complete(REQUEST)
    assert error.value.kind == "context_length"


@pytest.mark.parametrize("kind", ["connection", "timeout"])
def test_a_server_that_cannot_be_reached_or_answers_too_late_stops_before_any_request(kind):
    """Catches a health check that timed out taken for a server that is there (timeout left out
    of UNREACHABLE_KINDS): the run warned, then sent every prompt through its retries."""
    from audit.llm.preflight import preflight

    class Unreachable:
        def health_check(self) -> None:
            raise BackendError(kind, "no reply from http://127.0.0.1:9/v1")

    fix = "start the server" if kind == "connection" else "the server is there but did not"
    with pytest.raises(BackendError, match=r"^model 'down': no reply from http://127.0.0.1:9/v1"
                                           rf"\. Nothing was sent: {fix}") as stopped:
        preflight({"down": Unreachable()}, ["down"])
    assert stopped.value.kind == kind


class _Probed:
    """A backend whose health check raises `error` (none: it answers); counts its probes."""

    def __init__(self, error: BackendError | None = None) -> None:
        self.error, self.probes = error, 0

    def health_check(self) -> None:
        self.probes += 1
        if self.error is not None:
            raise self.error


def test_a_key_refused_with_403_stops_a_judge_run_naming_its_config_folder():
    """Catches 403 left out of REFUSED_STATUSES (a key the API forbids only warned), the fix
    for a refused key reading "start the server", the refusal's status dropped from the error,
    and the fix naming conf/model/ for a judge."""
    from audit.llm.preflight import preflight

    forbidden = _Probed(BackendError("http_status", "HTTP 403 from http://h/v1/models",
                                     status=403))
    with pytest.raises(BackendError) as stopped:
        preflight({"j": forbidden}, ["j"], role="judge")
    assert str(stopped.value) == ("judge 'j': HTTP 403 from http://h/v1/models. Nothing was "
                                  "sent: fix the key or its variable (api_key_env in "
                                  "conf/judge/) and rerun")
    assert (stopped.value.kind, stopped.value.status) == ("http_status", 403)
    down = _Probed(BackendError("connection", "cannot reach http://h/v1"))
    with pytest.raises(BackendError, match=r"start the server \(or fix base_url in "
                                           r"conf/judge/\) and rerun$"):
        preflight({"j": down}, ["j"], role="judge")
    slow = _Probed(BackendError("timeout", "no reply from http://h/v1/models within 3 s"))
    with pytest.raises(BackendError, match=r"Nothing was sent: the server is there but did not "
                                           r"answer in time \(busy, or loading its model\): wait, "
                                           r"or raise timeout_s in conf/model/, and rerun$"):
        preflight({"m": slow}, ["m"])


def test_a_connection_failure_names_its_cause_not_the_clients_exception():
    """Bug caught (server probe 2026-12-07): https:// to a port that speaks plain HTTP, a port
    where nothing listens and a host that does not exist each read "cannot reach URL:
    APIConnectionError. ... start the server", though for the first the server was up."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with ScriptedOpenAI(lambda body: (200, chat_reply(ANSWER))) as server:
        tls = server.url.replace("http://", "https://")
        cases = {tls: "the TLS handshake failed (WRONG_VERSION_NUMBER): if the server speaks "
                      "plain HTTP, base_url starts with http://",
                 f"http://127.0.0.1:{closed}/v1": "connection refused (nothing listens on that "
                                                  "port)",
                 "http://no-such-host.invalid/v1": "host name not found"}
        for url, cause in cases.items():
            with pytest.raises(BackendError) as error:
                create_backend(replace(openai_model(url), timeout_s=5)).health_check()
            assert (error.value.kind, str(error.value)) == ("connection",
                                                            f"cannot reach {url}: {cause}")


def test_ollama_given_its_openai_v1_url_is_told_to_drop_it():
    """Bug caught (server probe 2026-12-07): backend ollama with base_url http://HOST/v1 (the URL
    guides give for Ollama's OpenAI-compatible API) read "HTTP 404 from Ollama at URL: 404 page
    not found", naming no fix."""
    from servers import JsonHandler, LoopbackServer

    class NotFound(LoopbackServer):
        def _handler(self):
            class Handler(JsonHandler):
                def do_GET(self) -> None:
                    self._send(404, b"404 page not found", "text/plain")
            return Handler

    with NotFound() as server:
        backend = create_backend(ModelConfig(backend="ollama", model="llama3.2:1b",
                                             base_url=f"{server.url}/v1", timeout_s=5))
        with pytest.raises(BackendError) as error:
            backend.identity()
        rooted = create_backend(ModelConfig(backend="ollama", model="llama3.2:1b",
                                            base_url=server.url, timeout_s=5))
        with pytest.raises(BackendError) as at_root:
            rooted.identity()
    assert str(error.value).endswith(": backend ollama takes the server's root URL, not its "
                                     "OpenAI-compatible /v1: drop /v1 from base_url (or use "
                                     "backend openai_compatible with it)"), error.value
    assert "drop /v1" not in str(at_root.value)


def test_a_health_check_refused_for_another_reason_warns_and_every_server_is_asked(caplog):
    """Catches a server without a model list (HTTP 404 on /models) stopping the run, and only
    the first of the models being checked (a later model's server down went unseen)."""
    from audit.llm.preflight import preflight

    no_list = _Probed(BackendError("http_status", "HTTP 404 from http://a/v1/models",
                                   status=404))
    up, down = _Probed(), _Probed(BackendError("connection", "cannot reach http://c/v1"))
    with caplog.at_level("WARNING", logger="audit.llm.preflight"):
        preflight({"a": no_list, "b": up}, ["b", "a", "b"])
    assert (no_list.probes, up.probes) == (1, 1)
    assert "model 'a': the health check failed (HTTP 404 from http://a/v1/models); sending " \
           "anyway" in caplog.text
    with pytest.raises(BackendError, match="^model 'c': cannot reach"):
        preflight({"a": no_list, "b": up, "c": down}, ["a", "b", "c"])


PAGE = (b"<!DOCTYPE html><html><head><title>Sign in - Corp Proxy</title></head>"
        b"<body>Log in to continue</body></html>")


@pytest.mark.parametrize(("reply", "said"), [
    ((200, PAGE, "text/html"), 'is an HTML page titled "Sign in - Corp Proxy", not an OpenAI '
                               "chat completion: base_url should reach"),
    ((200, {"error": {"message": "upstream unavailable"}}),
     "is JSON without choices (the server said: upstream unavailable), not an OpenAI chat "
     "completion: the server's message says why"),
    ((200, b"OK", "text/plain"), "is text ('OK'), not an OpenAI chat completion: base_url"),
    ((200, b"{not json"), "is not JSON ('{not json'): base_url should reach"),
    ((200, b""), "is an empty body, not JSON: base_url should reach"),
], ids=["html", "gateway-error", "text", "bad-json", "empty"])
def test_a_reply_that_is_not_a_chat_completion_says_what_came_back(reply, said):
    """Bug caught (server probe 2026-12-07): a proxy's login page answered with status 200 was
    "reply without a choice: 'str' object has no attribute 'choices'", a gateway's own error
    "'NoneType' object is not subscriptable", and a body that was not JSON named no URL and no
    fix. Each now says what came back, from which URL, and what to check."""
    with ScriptedOpenAI(lambda body: reply) as server:
        error = _error_of(openai_model(server.url))
    assert error.kind == "malformed_reply"
    assert str(error).startswith(f"the reply from {server.url}/chat/completions {said}"), error
    assert "object" not in str(error) and "\n" not in str(error)


def test_a_web_page_where_the_model_list_goes_stops_the_run_before_any_request():
    """Bug caught (server probe 2026-12-07): a proxy's login page on every route passed the
    preflight (a model list that is not JSON was not judged), then every request was sent to
    the page. Now the preflight names the page and nothing is sent."""
    from audit.llm.preflight import preflight

    class LoginPage(ScriptedOpenAI):
        def _handler(self):
            class Handler(super()._handler()):
                def do_GET(self) -> None:
                    self._send(200, PAGE, "text/html")
            return Handler

    with LoginPage(lambda body: (200, PAGE, "text/html")) as server:
        with pytest.raises(BackendError) as stopped:
            preflight({"srv": create_backend(openai_model(server.url))}, ["srv"])
        assert server.bodies == []
    assert stopped.value.kind == "not_the_api"
    assert str(stopped.value) == (
        f"model 'srv': the reply from {server.url}/models is an HTML page titled \"Sign in - "
        "Corp Proxy\", not the OpenAI API's model list: base_url should reach the server's "
        "OpenAI-compatible API (often ending in /v1), not a web page or a proxy; check it in "
        "conf/model/. Nothing was sent: fix it in conf/model/ and rerun")
