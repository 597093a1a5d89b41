"""The engine with the scripted fake backend: independence, caching, resumption, error rows."""

from __future__ import annotations

import dataclasses
import re
import sqlite3
import subprocess
import sys

import polars as pl
import pytest

from audit.llm.backends import create_backend
from audit.config import DesignConfig, EngineConfig
from audit.design import expand_design
from audit.llm.engine import collect_responses, summarise_responses
from audit.llm.store import _SCHEMA, ResponseStore


NO_WAIT = EngineConfig(max_attempts=3, backoff_initial_s=0.0, backoff_max_s=0.0)


def _run(prompts, fake_models, store_path, backends=None, engine=NO_WAIT):
    backends = backends or {name: create_backend(config) for name, config in fake_models.items()}
    with ResponseStore(store_path) as store:
        return collect_responses(prompts, backends, fake_models, store, engine,
                                 show_progress=False), backends


def test_each_request_carries_only_its_own_messages(items, personas, fake_models, tmp_path):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    responses, backends = _run(prompts, fake_models, tmp_path / "store.sqlite3")
    sent = [request for backend in backends.values() for request in backend.requests]
    assert len(sent) == prompts.height
    for request in sent:
        roles = [message.role for message in request.messages]
        assert roles in (["user"], ["system", "user"])
    user_prompts = sorted(request.messages[-1].content for request in sent)
    assert user_prompts == sorted(prompts["user_prompt"].to_list())


def test_rerun_sends_nothing_and_returns_the_same_answers(items, personas, fake_models, tmp_path):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=2, seed=3))
    first, _ = _run(prompts, fake_models, tmp_path / "store.sqlite3")
    second, backends = _run(prompts, fake_models, tmp_path / "store.sqlite3")
    assert sum(len(backend.requests) for backend in backends.values()) == 0
    assert summarise_responses(second) == {"sent": 0, "cached": prompts.height, "failed": 0}
    assert first.select("prompt_id", "response_text").equals(
        second.select("prompt_id", "response_text"))


def test_a_partial_store_resumes_with_only_the_missing_requests(items, personas, fake_models,
                                                                 tmp_path):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=2, seed=3))
    half = prompts.sort("prompt_id").head(prompts.height // 2)
    _run(half, fake_models, tmp_path / "store.sqlite3")
    _, backends = _run(prompts, fake_models, tmp_path / "store.sqlite3")
    assert sum(len(b.requests) for b in backends.values()) == prompts.height - half.height


def test_replicates_are_not_collapsed_by_the_cache(items, personas, fake_models, tmp_path):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=3, seed=3))
    responses, _ = _run(prompts, fake_models, tmp_path / "store.sqlite3")
    assert responses["request_key"].n_unique() == prompts.height


def test_failures_become_error_rows_and_are_retried_on_rerun(items, personas, fake_models,
                                                             tmp_path):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    failing = prompts.with_columns(
        pl.when(pl.col("item_id") == "hiring_01").then(pl.col("user_prompt") + " FAIL")
        .otherwise(pl.col("user_prompt")).alias("user_prompt"))
    # A stage that accepts the failures: one scenario's prompts fail in a row here, which would
    # otherwise stop the run as a failing server (test_a_server_that_fails_every_request_...).
    accepting = dataclasses.replace(NO_WAIT, max_failed_share=1.0)
    responses, _ = _run(failing, fake_models, tmp_path / "store.sqlite3", engine=accepting)
    errors = responses.filter(pl.col("status") == "error")
    assert errors.height == failing.filter(pl.col("item_id") == "hiring_01").height
    assert set(errors["error_kind"]) == {"connection"}
    assert errors["response_text"].null_count() == errors.height
    _, backends = _run(failing, fake_models, tmp_path / "store.sqlite3", engine=accepting)
    resent = [request for backend in backends.values() for request in backend.requests]
    assert len(set(resent)) == errors.height  # only the failed ones are sent again
    # each retried until its attempts ran out
    assert len(resent) == errors.height * NO_WAIT.max_attempts


class _Failing:
    """A backend that fails every request the same way, counting the sends."""

    def __init__(self, failure: Exception) -> None:
        self.failure, self.sends = failure, 0

    def identity(self):
        return {"backend": "failing", "model": "failing", "digest": "none"}

    def complete(self, request):
        self.sends += 1
        raise self.failure


def test_only_transient_failures_are_retried(items, personas, tmp_path):
    from audit.llm.backends import BackendError

    cases = [(BackendError("http_status", "HTTP 404 from the server"), "http_status", 1),
             (RuntimeError("client bug"), "backend_crash", 1),
             (BackendError("server_error", "HTTP 503 from the server"), "server_error",
              NO_WAIT.max_attempts)]
    accepting = dataclasses.replace(NO_WAIT, max_failed_share=1.0)  # no stop: every prompt sent
    for failure, kind, sends_per_prompt in cases:
        backend = _Failing(failure)
        responses, _ = _timed_run(items, personas, tmp_path / kind, backend, engine=accepting)
        assert responses["error_kind"].to_list() == [kind] * 8
        assert backend.sends == 8 * sends_per_prompt


class _FirstThenLater(_Failing):
    """A backend that fails each prompt's first send with `first` and every later one with
    `later`."""

    def __init__(self, first: Exception, later: Exception) -> None:
        import threading

        super().__init__(first)
        self.later, self._guard, self.seen = later, threading.Lock(), set()

    def complete(self, request):
        with self._guard:
            self.sends += 1
            prompt = request.messages[-1].content
            first = prompt not in self.seen
            self.seen.add(prompt)
        raise self.failure if first else self.later


def test_a_refusal_after_a_timeout_is_not_retried(items, personas, tmp_path):
    """Bug caught: once a request had been retried, any later failure was retried too, so a
    request refused with an HTTP 400 after a timeout was sent again until max_attempts."""
    from audit.llm.backends import BackendError

    backend = _FirstThenLater(BackendError("timeout", "no reply within 60 s"),
                              BackendError("http_status", "HTTP 400 from the server", status=400))
    responses, _ = _timed_run(items, personas, tmp_path, backend)
    assert responses["error_kind"].to_list() == ["http_status"] * 8
    # Each of the 8 prompts: the timeout, then the refusal, and no third send (max_attempts 3).
    assert backend.sends == 8 * 2


class _Timed:
    """A backend that takes a fixed time per request and records how many run at once."""

    def __init__(self, latency_s: float = 0.2, rate_limited_first: float | None = None) -> None:
        import threading

        self.latency_s, self.rate_limited_first = latency_s, rate_limited_first
        self.in_flight = self.peak = 0
        self.calls: list[tuple[str, float]] = []
        self._guard = threading.Lock()

    def identity(self):
        return {"backend": "timed", "model": "timed", "digest": "none"}

    def complete(self, request):
        import time

        from audit.llm.backends import BackendError, Completion

        prompt = request.messages[-1].content
        with self._guard:
            first_call = all(sent != prompt for sent, _ in self.calls)
            self.calls.append((prompt, time.monotonic()))
            if first_call and self.rate_limited_first is not None:
                raise BackendError("rate_limit", "HTTP 429", self.rate_limited_first)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(self.latency_s)
        with self._guard:
            self.in_flight -= 1
        return Completion(f"APPROVE {prompt}", 2, "stop", self.latency_s)


def _timed_run(items, personas, tmp_path, backend, model_backend="fake", concurrency=4,
               engine=NO_WAIT):
    import time

    from audit.config import ModelConfig

    models = {"timed": ModelConfig(backend=model_backend, model="timed",
                                   max_concurrency=concurrency)}
    prompts = expand_design(items, personas, models, DesignConfig(replicates=1, seed=3)).head(8)
    started = time.monotonic()
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        responses = collect_responses(prompts, {"timed": backend}, models, store, engine,
                                      show_progress=False)
    return responses, time.monotonic() - started


def test_requests_run_concurrently_up_to_the_models_limit(items, personas, tmp_path):
    backend = _Timed(latency_s=0.2)
    responses, seconds = _timed_run(items, personas, tmp_path, backend, concurrency=4)
    assert backend.peak == 4 and responses["status"].to_list() == ["ok"] * 8
    assert seconds < 8 * 0.2 * 0.6  # two waves of four, not eight in a row


def test_a_serial_backend_runs_one_request_at_a_time(items, personas, tmp_path):
    backend = _Timed(latency_s=0.05)
    backend.serial = True  # what LlamaCppBackend declares
    _timed_run(items, personas, tmp_path, backend, model_backend="llamacpp", concurrency=4)
    assert backend.peak == 1


def test_the_embedded_runtime_gets_as_many_requests_as_it_has_slots():
    """The xllamacpp backend decodes max_concurrency requests at once, so the engine must send
    that many; llama-cpp-python's contexts are not thread-safe, so it gets one."""
    from audit.llm.backends.embedded import EmbeddedBackend
    from audit.llm.backends.llamacpp import LlamaCppBackend
    from audit.config import ModelConfig
    from audit.llm.engine import concurrency_limits

    models = {name: ModelConfig(backend=name, model="smollm2-135m-instruct", max_concurrency=4)
              for name in ("embedded", "llamacpp")}
    backends = {"embedded": EmbeddedBackend(models["embedded"]),
                "llamacpp": LlamaCppBackend(models["llamacpp"])}
    assert concurrency_limits(backends, models) == {"embedded": 4, "llamacpp": 1}
    assert backends["embedded"].slots == 4



def test_the_embedded_runtime_gets_every_request_parameter_and_the_pinned_samplers(monkeypatch):
    """Catches a request parameter not passed on to the embedded runtime, the pinned samplers or
    the prompt-cache switch (prefix reuse changes logits) left out, or a schema not sent as
    llama.cpp's `json_schema`."""
    from llama_fakes import REQUEST, embedded_backend
    from servers.scripted import chat_reply

    from audit.llm.backends.embedded import PINNED_SAMPLING

    backend, runtime = embedded_backend(monkeypatch, lambda payload: chat_reply("ok"))
    schema = {"type": "object"}
    assert backend.complete(dataclasses.replace(REQUEST, json_schema=schema)).text == "ok"
    backend.complete(REQUEST)
    assert runtime.payloads[0] == {**PINNED_SAMPLING,
                                   "messages": [{"role": "user", "content": "Hi"}],
                                   "temperature": 0.7, "top_p": 0.9, "max_tokens": 16,
                                   "repeat_penalty": 1.1, "seed": 42, "json_schema": schema}
    assert runtime.payloads[0]["cache_prompt"] is False and "json_schema" not in runtime.payloads[1]


def test_llamacpp_answers_each_request_in_a_fresh_context_with_its_schema(monkeypatch):
    """Catches llama-cpp-python's context not reset before a request (the previous prompt's KV
    cache reused), or a schema sent in another shape or with a request that has none."""
    from llama_fakes import REQUEST, FakeLlama, llamacpp_backend

    llm = FakeLlama()
    backend, _ = llamacpp_backend(monkeypatch, llm)
    schema = {"type": "object"}
    backend.complete(dataclasses.replace(REQUEST, json_schema=schema))
    backend.complete(REQUEST)
    assert [call if call == "reset" else "chat" for call in llm.calls] == ["reset", "chat"] * 2
    assert llm.calls[1]["response_format"] == {"type": "json_object", "schema": schema}
    assert "response_format" not in llm.calls[3]


def test_the_in_process_backends_name_themselves_and_free_their_models(monkeypatch):
    """Catches an embedded or llamacpp model identified as the other backend's (their answers
    differ, so a store must not mix them), or close_models leaving closed models loaded."""
    import threading

    from audit.config import ModelConfig
    from audit.llm.backends import embedded, llamacpp

    for module in (embedded, llamacpp):
        monkeypatch.setattr(module, "file_digest", lambda path: "sha256:x")
    for name, backend in (("embedded", embedded.EmbeddedBackend),
                          ("llamacpp", llamacpp.LlamaCppBackend)):
        model = backend(ModelConfig(backend=name, model="smollm2-135m-instruct"))
        assert model.identity() == {"backend": name, "model": model.path.name,
                                    "digest": "sha256:x"}
    closed = []

    class Model:
        def close(self) -> None:
            closed.append(self)
    monkeypatch.setitem(llamacpp._LOADED, ("m.gguf", 1, 1), (Model(), threading.Lock()))
    llamacpp.close_models()
    assert len(closed) == 1 and llamacpp._LOADED == {}

def test_a_model_on_several_hosts_gets_its_concurrency_on_each():
    """Bug caught: a model served by two hosts at max_concurrency 4 got 4 requests in flight in
    all instead of 4 on each, halving a fleet's throughput."""
    from audit.config import ModelConfig
    from audit.llm.engine import concurrency_limits

    models = {"m": ModelConfig(backend="openai", model="m", max_concurrency=4,
                               base_urls=["http://a:1/v1", "http://b:2/v1"])}
    # 4 slots on each of the 2 hosts: 8.
    assert concurrency_limits({"m": object()}, models) == {"m": 8}


def test_a_probe_refused_for_another_reason_does_not_stop_the_run():
    """Bug caught: ServerWatch stopped a run mid-way when the probe after a failed request got
    any error (a server without /v1/models answers 404), not only when the server was gone."""
    import asyncio

    from audit.llm.backends import BackendError
    from audit.llm.preflight import ServerWatch

    class _NoModelList:
        def health_check(self):
            raise BackendError("http_status", "HTTP 404 from /v1/models", status=404)

    watch = ServerWatch("m", _NoModelList())
    asyncio.run(watch.confirm_up())
    watch.check()
    assert watch.stopped is None


def test_a_server_found_gone_is_not_probed_again_by_the_next_request():
    """Catches confirm_up probing before it checks whether the server was already found gone:
    each later request that gave up probed the dead server again (another timeout each)."""
    import asyncio

    from audit.llm.backends import BackendError
    from audit.llm.preflight import ServerStopped, ServerWatch

    class _Gone:
        probes = 0

        def health_check(self):
            self.probes += 1
            raise BackendError("connection", "cannot reach http://127.0.0.1:9/v1")

    gone = _Gone()
    watch = ServerWatch("m", gone)
    for _ in range(2):
        with pytest.raises(ServerStopped, match="cannot reach") as stopped:
            asyncio.run(watch.confirm_up())
        assert stopped.value.model_name == "m" and stopped.value is watch.stopped
    assert gone.probes == 1


def test_retry_after_is_honoured(items, personas, tmp_path):
    backend = _Timed(latency_s=0.0, rate_limited_first=0.5)
    responses, _ = _timed_run(items, personas, tmp_path, backend)
    assert responses["status"].to_list() == ["ok"] * 8
    first_try, second_try = {}, {}
    for prompt, at in backend.calls:
        (second_try if prompt in first_try else first_try)[prompt] = at
    assert all(second_try[prompt] - first_try[prompt] >= 0.5 for prompt in first_try)


def test_a_retry_after_longer_than_the_setting_fails_the_request_at_once(items, personas,
                                                                        tmp_path):
    """Bug caught: a server's Retry-After was always obeyed, so an exhausted daily quota (429
    with hours to wait) left every request asleep that long without a word. Longer than
    engine.max_retry_after_s, the request fails at once and says so; shorter, it is waited."""
    from dataclasses import replace

    # max_failed_share=1: every request is tried (8 failing in a row would stop the run).
    patient = replace(NO_WAIT, max_retry_after_s=0.3, max_failed_share=1.0)
    backend = _Timed(latency_s=0.0, rate_limited_first=0.5)
    responses, _ = _timed_run(items, personas, tmp_path / "long", backend, engine=patient)
    assert responses["error_kind"].to_list() == ["rate_limit"] * 8 and len(backend.calls) == 8
    assert all(message.startswith("HTTP 429; the server asks to wait 0.5 s (Retry-After), more "
                                  "than engine.max_retry_after_s=0.3: run again later")
               for message in responses["error_message"].to_list())
    backend = _Timed(latency_s=0.0, rate_limited_first=0.2)
    responses, _ = _timed_run(items, personas, tmp_path / "short", backend, engine=patient)
    assert responses["status"].to_list() == ["ok"] * 8 and len(backend.calls) == 16


def test_a_long_retry_after_on_a_retry_stops_the_retries(items, personas, tmp_path):
    """Catches the wait refused only on a request's first failure: a server that first says
    "try again now" and then "in an hour" had the request wait the hour (here 5 s against a
    limit of 1 s)."""
    from dataclasses import replace

    from audit.llm.backends import BackendError

    backend = _FirstThenLater(BackendError("rate_limit", "HTTP 429", 0.0),
                              BackendError("rate_limit", "HTTP 429", 5.0))
    responses, _ = _timed_run(items, personas, tmp_path, backend,
                              engine=replace(NO_WAIT, max_retry_after_s=1.0,
                                             max_failed_share=1.0))
    assert responses["error_kind"].to_list() == ["rate_limit"] * 8 and backend.sends == 8 * 2
    assert all("wait 5 s (Retry-After), more than engine.max_retry_after_s=1: " in message
               for message in responses["error_message"].to_list())


def test_requests_per_minute_spaces_the_requests(items, personas, tmp_path):
    """Catches requests_per_minute ignored or misread: the k-th request starts no sooner than
    k intervals after the run began. Lower bounds only, so a loaded machine, which only delays a
    request, cannot fail it; the gap between two recorded starts could (a thread late to record
    one start, the next on time), and did with two test runs on two cores."""
    import time

    backend = _Timed(latency_s=0.0)
    engine = EngineConfig(max_attempts=1, requests_per_minute=600)  # one every 0.1 s
    began = time.monotonic()
    _timed_run(items, personas, tmp_path, backend, engine=engine)
    starts = sorted(at for _, at in backend.calls)
    assert len(starts) == 8
    # aiolimiter's leaky bucket grants the k-th at k x 0.1 s; 1% below it for the float clock.
    assert [k for k, at in enumerate(starts) if at - began < 0.099 * k] == []


def test_the_estimate_counts_what_is_missing_and_times_it_from_stored_latencies(
        items, personas, fake_models, tmp_path):
    from audit.llm.engine import concurrency_limits, plan_requests
    from audit.llm.preflight import estimate

    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    backends = {name: create_backend(config) for name, config in fake_models.items()}
    planned = plan_requests(prompts, backends, fake_models)
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        before = estimate(planned, store, concurrency_limits(backends, fake_models))
        assert before["to_send"] == prompts.height and before["stored"] == 0
        assert before["seconds"] != before["seconds"]  # NaN: no latency to go on yet
        assert before["max_completion_tokens"] == sum(p.request.max_tokens for p in planned)
        half = planned[: len(planned) // 2]
        for item in half:
            identity = backends[item.model_name].identity()
            store.put_ok(item.key, identity, item.request.as_payload(), "APPROVE", 1, 2.0)
        after = estimate(planned, store, concurrency_limits(backends, fake_models))
    assert after["stored"] == len(half) and after["to_send"] == len(planned) - len(half)
    assert after["seconds"] == 2.0 * after["to_send"]  # concurrency 1 each


def test_the_estimate_counts_tokens_of_the_requests_still_to_send_only(tmp_path):
    """Catches CHARS_PER_TOKEN changed from 4, and the prompt tokens or max completion tokens
    summed over every planned request instead of the ones the store lacks (a rerun of a
    nearly finished run announced the whole run's tokens)."""
    from audit.llm.backends import ChatRequest, Message
    from audit.llm.preflight import Planned, estimate

    identity = {"backend": "fake", "model": "m"}

    def planned(key: str, text: str, max_tokens: int) -> Planned:
        request = ChatRequest(messages=(Message("system", "Be brief."), Message("user", text)),
                              temperature=0.0, top_p=1.0, max_tokens=max_tokens,
                              repeat_penalty=1.0, seed=1)
        return Planned(key, "m", identity, key, request)

    # 9 + 31 characters to send: 10 tokens at 4 characters a token (13 at 3).
    items = [planned("stored", "x" * 400, 100), planned("new", "y" * 31, 7)]
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        store.put_ok("stored", identity, {}, "APPROVE", 1, 2.0, concurrency=1)
        figures = estimate(items, store, {"m": 1})
    assert (figures["prompts"], figures["stored"], figures["to_send"]) == (2, 1, 1)
    assert figures["prompt_tokens"] == 10 and figures["max_completion_tokens"] == 7
    assert figures["seconds"] == 2.0


def test_a_run_of_seconds_is_not_announced_as_zero_minutes():
    """Bug caught (own-model review 2026-12-02): a run whose earlier answers took a fraction of
    a second each was announced as "about 0.0 min"."""
    from audit.llm.preflight import answering_time_text

    assert answering_time_text(2.0, 3) == (", under 0.1 min at the median latency of earlier "
                                           "answers")
    assert answering_time_text(600.0, 3).startswith(", about 10.0 min")
    assert answering_time_text(float("nan"), 3) == answering_time_text(600.0, 0) == ""


def test_a_run_of_six_seconds_reads_about_a_tenth_of_a_minute():
    """Catches the "under 0.1 min" cut moved from 0.05 min (3 s): 6 s is "about 0.1 min"."""
    from audit.llm.preflight import answering_time_text

    assert answering_time_text(2.9, 1).startswith(", under 0.1 min at")
    assert answering_time_text(6.0, 1).startswith(", about 0.1 min at")


def test_answering_time_is_the_stores_record_not_the_clock(items, personas, fake_models,
                                                           tmp_path):
    """design.max_answer_minutes counts answering_seconds. Bugs caught: an answer served from
    the store counted at its (near-zero) serving time, so a rerun would spend less and stop
    somewhere else; a model's concurrency ignored; a failed answer's missing latency turning
    the total into NaN; an answer counted at the concurrency of the run now rather than the one
    it was asked at (a rerun with more slots spent a quarter of the time at 4)."""
    from audit.llm.preflight import answering_seconds

    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    four = {name: dataclasses.replace(config, max_concurrency=4)
            for name, config in fake_models.items()}
    first, _ = _run(prompts, four, tmp_path / "store.sqlite3")
    again, _ = _run(prompts, fake_models, tmp_path / "store.sqlite3")
    assert again["from_cache"].all() and not first["from_cache"].any()
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        for limits in ({name: 4 for name in fake_models}, {name: 1 for name in fake_models}):
            assert answering_seconds(again, prompts, limits, store) == pytest.approx(
                first["latency_s"].sum() / 4)
        names = pl.DataFrame({"prompt_id": ["p1", "p2", "p3"], "model_name": ["a", "b", "b"]})
        answers = pl.DataFrame({"prompt_id": ["p1", "p2", "p3"], "latency_s": [3.0, 4.0, None],
                                "request_key": ["not stored", "k2", "k3"]})
        store.put_ok("k2", {"model": "b"}, {}, "APPROVE", 1, 4.0, concurrency=None)
        # Unknown to the store, or stored before it kept concurrency: at the model's now.
        assert answering_seconds(answers, names, {"a": 1, "b": 2}, store) == 3.0 + 4.0 / 2


def test_an_answer_asked_at_more_slots_counts_its_share_when_the_model_has_fewer_now(tmp_path):
    """Bug caught: answering_seconds divided a stored answer's latency by the model's
    concurrency now instead of the one it was asked at, so a rerun at 1 slot counted an answer
    asked at 4 slots at its whole latency and an adaptive budget ran out 4x too early."""
    from audit.llm.preflight import answering_seconds

    with ResponseStore(tmp_path / "store.sqlite3") as store:
        store.put_ok("k1", {"model": "m"}, {}, "APPROVE", 1, 8.0, concurrency=4)
        answers = pl.DataFrame({"prompt_id": ["p1"], "latency_s": [8.0], "request_key": ["k1"]})
        names = pl.DataFrame({"prompt_id": ["p1"], "model_name": ["m"]})
        # 8 s asked at 4 slots is a quarter of the run's time: 8 / 4 = 2 s, at 1 slot now.
        assert answering_seconds(answers, names, {"m": 1}, store) == 2.0


def test_the_estimate_reads_answers_asked_at_the_concurrency_it_times(tmp_path):
    """The respond line's minutes. Bugs caught: answers asked one at a time timed a run at 4
    slots as a quarter of their latency each (the embedded model answers no faster at 4 slots:
    benchmarks/RESULTS.md), and answers asked at 4 slots timed a run at 1 at their whole
    latency each, 4x too slow; answers asked at the run's own concurrency not preferred when
    the store has them; the line not saying when its figure comes from another concurrency."""
    from audit.llm.backends import ChatRequest, Message
    from audit.llm.preflight import Planned, answering_forecast, answering_time_text

    identity = {"backend": "fake", "model": "m"}
    request = ChatRequest(messages=(Message("user", "?"),), temperature=0.0, top_p=1.0,
                          max_tokens=8, repeat_penalty=1.0, seed=1)
    planned = [Planned(f"p{i}", "m", identity, f"new{i}", request) for i in range(10)]
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        for i in range(5):
            store.put_ok(f"one{i}", identity, {"i": i}, "APPROVE", 1, 1.0, concurrency=1)
        assert answering_forecast(planned, store, {"m": 4}) == (10 * 1.0, True)
        assert answering_forecast(planned, store, {"m": 1}) == (10 * 1.0, False)
        for i in range(3):
            store.put_ok(f"four{i}", identity, {"j": i}, "APPROVE", 1, 6.0, concurrency=4)
        assert answering_forecast(planned, store, {"m": 4}) == (10 * 6.0 / 4, False)
        assert answering_forecast(planned, store, {"m": 1}) == (10 * 1.0, False)
        assert answering_forecast(planned, store, {"m": 2}) == (10 * 1.0, True)
    with ResponseStore(tmp_path / "upgraded.sqlite3") as store:
        # An upgraded store: old answers with no concurrency, then answers asked at 1 slot. The
        # old ones count only when no answer has a concurrency (they timed 4 slots as 2.5 s).
        for i in range(5):
            store.put_ok(f"old{i}", identity, {"i": i}, "APPROVE", 1, 1.0, concurrency=None)
        assert answering_forecast(planned, store, {"m": 4}) == (10 * 1.0 / 4, False)
        for i in range(5):
            store.put_ok(f"one{i}", identity, {"j": i}, "APPROVE", 1, 1.0, concurrency=1)
        assert answering_forecast(planned, store, {"m": 4}) == (10 * 1.0, True)
    said = answering_time_text(600.0, 10, timed_elsewhere=True)
    assert said.startswith(", about 10.0 min at the rate of earlier answers asked at another "
                           "max_concurrency")


def test_a_store_from_before_concurrency_was_recorded_opens_and_keeps_its_answers(tmp_path):
    """Bug caught: a response store written by an earlier release (no concurrency column) made
    every read and write fail with "no such column", losing the use of its answers."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:
        old.executescript(OLD_STORE_SCHEMA)
        old.execute("INSERT INTO responses (request_key, status, identity_json, request_json, "
                    "response_text, completion_tokens, latency_s, created_at) "
                    "VALUES ('k', 'ok', '{}', '{}', 'APPROVE', 1, 2.5, 0)")
    with ResponseStore(path) as store, ResponseStore(path) as second:
        assert store.get("k").concurrency is None and store.get("k").latency_s == 2.5
        second.put_ok("k2", {}, {}, "DENY", 1, 1.0, concurrency=3)
        assert store.get("k2").concurrency == 3
        assert [time.concurrency for time in store.answer_times({})] == [3, None]
        # A 0 written by hand is no count of slots: it would divide a time by zero.
        store.put_ok("k3", {}, {}, "DENY", 1, 1.0, concurrency=0)
        assert store.get("k3").concurrency is None


# The schema of a release before answers recorded their concurrency: this one without it.
OLD_STORE_SCHEMA = _SCHEMA.replace("created_at REAL NOT NULL,\n    concurrency INTEGER",
                                   "created_at REAL NOT NULL")
assert "concurrency" not in OLD_STORE_SCHEMA


def test_too_many_failures_stop_with_the_kinds_and_how_to_resume():
    from audit.llm.failures import TooManyFailures, check_failures

    responses = pl.DataFrame({"status": ["ok", "error", "error", "ok"],
                              "error_kind": [None, "timeout", "rate_limit", None],
                              "error_message": [None, "no reply within 60 s", "HTTP 429", None]})
    check_failures(responses, 0.5, "store.sqlite3")  # half failed: allowed at 0.5
    with pytest.raises(TooManyFailures, match=r"^2 of 4 DIF requests failed \(rate_limit x1: "
                                              r"HTTP 429; timeout x1: no reply within 60 s\); "
                                              r".* in store.sqlite3: rerun"):
        check_failures(responses, 0.25, "store.sqlite3", "DIF requests")
    check_failures(responses.filter(pl.col("status") == "ok"), 0.0, "store.sqlite3")


def test_too_many_failures_quote_the_setting_to_fix_and_say_a_plain_rerun_will_not_do():
    """Bugs caught (own-model review 2026-12-02): each kind's message was cut at 120
    characters, which lost the setting to check at its end ("(check `model` and `ba"); a 401 or
    404 said "rerun the same command to resume", which fails the same way."""
    from audit.llm.failures import TooManyFailures, check_failures

    message = ("HTTP 404 from http://127.0.0.1:8000/v1/chat/completions: The model "
               "`meta-llama/Llama-3.1-8B-Instrct` does not exist. (check `model` and `base_url` "
               "in conf/model/)")
    responses = pl.DataFrame({"status": ["error"], "error_kind": ["http_status"],
                              "error_message": [message]})
    with pytest.raises(TooManyFailures) as stopped:
        check_failures(responses, 0.0, "store.sqlite3")
    assert message in str(stopped.value) and "fix what the message names" in str(stopped.value)
    assert "rerun the same command" not in str(stopped.value)


class _Unreachable(_Failing):
    """A server that is down: its health check and every request fail to connect."""

    def __init__(self, kind: str = "connection") -> None:
        from audit.llm.backends import BackendError

        super().__init__(BackendError(kind, "cannot reach http://127.0.0.1:9/v1"))
        self.checks = 0

    def health_check(self):
        self.checks += 1
        raise self.failure


def test_an_unreachable_server_stops_the_run_before_any_request(items, personas, tmp_path):
    from audit.llm.backends import BackendError

    backend = _Unreachable()
    with pytest.raises(BackendError, match=r"^model 'timed': cannot reach http://127.0.0.1:9/v1"
                                           r"\. Nothing was sent: start the server"):
        _timed_run(items, personas, tmp_path, backend)
    assert backend.checks == 1 and backend.sends == 0


class _DiesAfter(_Failing):
    """A server that answers its first `answers` requests, then goes down: requests and its
    health check fail to connect from then on."""

    def __init__(self, answers: int) -> None:
        from audit.llm.backends import BackendError

        super().__init__(BackendError("connection", "cannot reach http://127.0.0.1:9/v1"))
        self.answers, self.checks = answers, 0

    def complete(self, request):
        from audit.llm.backends import Completion

        if self.sends < self.answers:
            self.sends += 1
            return Completion("APPROVE.", 1, "stop", 0.0)
        return super().complete(request)

    def health_check(self):
        self.checks += 1
        if self.sends >= self.answers:
            raise self.failure


def test_a_server_that_dies_mid_run_stops_it_after_one_probe_with_the_answers_saved(
        items, personas, tmp_path):
    """Bug caught (own-model review 2026-12-02): a server killed mid-run left every remaining
    request to fail through all its retries, one after another (5 min 20 s for 48 prompts at
    two at a time), before the run said anything."""
    from audit.llm.backends import BackendError

    backend = _DiesAfter(answers=3)
    with pytest.raises(BackendError, match=r"^model 'timed' stopped answering mid-run \(cannot "
                                           r"reach .*\); 3 of 8 answers are saved in .*: start "
                                           r"the server and rerun"):
        _timed_run(items, personas, tmp_path, backend, concurrency=1)
    # The first failed request's retries, then one probe (the preflight's was the first), run
    # in that request's slot so that the next prompt sends nothing. Without the probe:
    # 3 + 5 x 3 sends; with the probe outside the slot, the next prompt sent once or twice
    # during it, by thread timing (CI on Python 3.13 saw 8).
    assert backend.sends == 3 + NO_WAIT.max_attempts and backend.checks == 2


def test_at_two_requests_at_a_time_a_dead_server_costs_at_most_the_two_in_flight(
        items, personas, tmp_path):
    """Bug caught: with the probe outside the failed request's slot, the next prompt took that
    slot and sent during the probe; at any concurrency, only the requests already in flight
    when the server died may spend their retries."""
    from audit.llm.backends import BackendError

    backend = _DiesAfter(answers=3)
    with pytest.raises(BackendError, match=r"stopped answering mid-run") as stopped:
        _timed_run(items, personas, tmp_path, backend, concurrency=2)
    saved = int(re.search(r"; (\d+) of 8 answers are saved", str(stopped.value)).group(1))
    assert backend.sends - saved <= 2 * NO_WAIT.max_attempts


def test_a_fully_stored_run_needs_no_server(items, personas, tmp_path):
    _timed_run(items, personas, tmp_path, _Timed(latency_s=0.0))
    backend = _Unreachable()
    backend.identity = _Timed().identity  # the same model, whose server is now down
    responses, _ = _timed_run(items, personas, tmp_path, backend)
    assert responses["from_cache"].all() and backend.checks == 0 and backend.sends == 0


def test_a_health_check_that_fails_otherwise_only_warns(items, personas, tmp_path, caplog):
    backend = _Unreachable(kind="http_status")  # for example a server without /v1/models
    responses, _ = _timed_run(items, personas, tmp_path, backend)
    assert backend.checks == 1 and backend.sends == 8
    assert "the health check failed" in caplog.text


def test_the_openai_backend_on_a_closed_port_fails_at_once(items, personas, tmp_path):
    import socket
    import time

    from audit.llm.backends import BackendError
    from audit.config import ModelConfig

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the probe is: nothing listens there
    model = ModelConfig(backend="openai_compatible", model="m", timeout_s=10,
                        base_url=f"http://127.0.0.1:{port}/v1")
    prompts = expand_design(items, personas, {"m": model}, DesignConfig(replicates=1, seed=3))
    started = time.monotonic()
    with ResponseStore(tmp_path / "store.sqlite3") as store, pytest.raises(BackendError) as error:
        collect_responses(prompts, {"m": create_backend(model)}, {"m": model}, store,
                          EngineConfig(), show_progress=False)
    assert time.monotonic() - started < 5  # not every prompt through its backoff
    assert str(error.value).startswith(f"model 'm': cannot reach http://127.0.0.1:{port}/v1")
    assert "Nothing was sent" in str(error.value)


class _Recording:
    """A backend and a store wrapper that log, in order, each send and each stored reply, and
    whether the collector's heap was frozen during the send."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.frozen_during_send: list[bool] = []

    def identity(self):
        return {"backend": "recording", "model": "recording", "digest": "none"}

    def complete(self, request):
        import gc

        from audit.llm.backends import Completion

        self.frozen_during_send.append(gc.get_freeze_count() > 0)
        self.events.append(("send", request.messages[-1].content))
        return Completion("APPROVE", 1, "stop", 0.0)

    def watch(self, store: ResponseStore, write_s: float) -> ResponseStore:
        """Each write takes `write_s` longer (a slow disk), logged once it is done."""
        import time

        put_ok = store.put_ok

        def recorded_put_ok(key, identity, request, *rest):
            time.sleep(write_s)
            stored = put_ok(key, identity, request, *rest)
            self.events.append(("store", request["messages"][-1]["content"]))
            return stored

        store.put_ok = recorded_put_ok
        return store


def test_the_next_request_goes_out_before_the_last_reply_is_stored(items, personas, tmp_path):
    """With one slot, prompt 2 is sent while prompt 1's reply is being written, and every reply
    is still stored when the stage returns."""
    from audit.config import ModelConfig

    backend = _Recording()
    models = {"recording": ModelConfig(backend="fake", model="recording", max_concurrency=1)}
    prompts = expand_design(items, personas, models, DesignConfig(replicates=1, seed=3)).head(3)
    # A write of 1 s: with 0.2 s the request thread, starved on a loaded machine (a fresh-clone
    # CI beside a benchmark), missed the window and the test failed though the engine was right.
    with backend.watch(ResponseStore(tmp_path / "store.sqlite3"), write_s=1.0) as store:
        responses = collect_responses(prompts, {"recording": backend}, models, store, NO_WAIT,
                                      show_progress=False)
        assert store.count_ok() == 3
    sent = [prompt for event, prompt in backend.events if event == "send"]
    assert backend.events.index(("send", sent[1])) < backend.events.index(("store", sent[0]))
    assert responses["status"].to_list() == ["ok"] * 3


def test_the_heap_is_frozen_only_while_requests_are_in_flight(items, personas, tmp_path):
    """A full garbage collection mid-run stalls every request thread (engine.heap_frozen)."""
    import gc

    from audit.config import ModelConfig
    from audit.llm.engine import heap_frozen

    backend = _Recording()
    models = {"recording": ModelConfig(backend="fake", model="recording", max_concurrency=2)}
    prompts = expand_design(items, personas, models, DesignConfig(replicates=1, seed=3)).head(4)
    gc.unfreeze()  # nobody's freeze in place (Python 3.12 starts with some objects frozen)
    assert gc.get_freeze_count() == 0
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        collect_responses(prompts, {"recording": backend}, models, store, NO_WAIT,
                          show_progress=False)
    assert backend.frozen_during_send == [True] * 4
    assert gc.get_freeze_count() == 0
    gc.freeze()  # a caller's own freeze is left in place
    try:
        with heap_frozen():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_fresh_interpreter_gets_its_heap_back_after_sending():
    """Python 3.12 starts with objects in the permanent generation (gc.get_freeze_count() > 0
    before any code runs). Fails if heap_frozen takes that for a caller's freeze and never
    unfreezes: every object alive before the run would then stay uncollectable for the process."""
    code = ("import gc\nfrom audit.llm.engine import heap_frozen\nstart = gc.get_freeze_count()\n"
            "with heap_frozen():\n    assert gc.get_freeze_count() > start\n"
            "print(gc.get_freeze_count() <= start)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


class _Answering(_Failing):
    """A backend that answers the prompts whose position (in sending order) `fails` rejects and
    fails the others with `failure`."""

    def __init__(self, failure: Exception, fails) -> None:
        super().__init__(failure)
        self.fails = fails

    def complete(self, request):
        from audit.llm.backends import Completion

        self.sends += 1
        if self.fails(self.sends):
            raise self.failure
        return Completion("A", 1, "stop", 0.0)


def _serial_run(prompts, backend, tmp_path, engine=NO_WAIT):
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        return _serial_run_in(prompts, backend, store, engine)


@pytest.mark.parametrize("status", [500, 401])
def test_a_server_that_fails_every_request_stops_the_run_after_five(items, personas,
                                                                     fake_models, tmp_path,
                                                                     status):
    """Bug caught (server probe 2026-12-07): a server answering every request with HTTP 500 (or
    a proxy's HTML page) cost every prompt its retries before the stage stopped: 60 sends and
    139 s for the 15-prompt smoke design, about 37 minutes for the default one. The run now stops
    after FAILURES_IN_A_ROW such failures in a row, with one line; what was stored stays."""
    from audit.llm.backends import BackendError
    from audit.llm.preflight import FAILURES_IN_A_ROW

    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    assert prompts.height > 2 * FAILURES_IN_A_ROW
    # A refused key (401 on every chat request, the model list allowed) is not retried, but
    # says as much of the server as a 500.
    kind, said, tries = (("server_error", "HTTP 500 from http://srv/v1: Internal Server Error",
                          NO_WAIT.max_attempts) if status == 500 else
                         ("http_status", "HTTP 401 from http://srv/v1: Invalid key", 1))
    backend = _Answering(BackendError(kind, said, status=status), lambda send: send > 2)
    with pytest.raises(BackendError, match=re.escape(
            f"model 'srv' failed its last {FAILURES_IN_A_ROW} requests in a row ({kind}: "
            f"{said}); stopped with 2 of {prompts.height} answers saved in ")) as raised:
        _serial_run(prompts, backend, tmp_path)
    assert raised.value.kind == kind and "rerun the same command" in str(raised.value)
    assert backend.sends == 2 + FAILURES_IN_A_ROW * tries
    with sqlite3.connect(tmp_path / "store.sqlite3") as stored:
        assert stored.execute("SELECT status, COUNT(*) FROM responses GROUP BY status "
                              "ORDER BY status").fetchall() == [("error", FAILURES_IN_A_ROW),
                                                                ("ok", 2)]


def test_failures_the_stage_accepts_or_that_alternate_with_answers_never_stop_the_run(
        items, personas, fake_models, tmp_path):
    """What the stop must not catch: failures engine.max_failed_share accepts, a server that
    fails often but answers between (a stop here loses nothing, but the run would end without
    sending what it could), and refusals of single requests (an HTTP 400: their content)."""
    from audit.llm.backends import BackendError

    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    server_error = BackendError("server_error", "HTTP 500")
    refusal = BackendError("http_status", "HTTP 400: content filter", status=400)
    accepting = dataclasses.replace(NO_WAIT, max_failed_share=1.0)
    cases = [(server_error, lambda send: True, accepting),
             (server_error, lambda send: send % 4 != 0, NO_WAIT),  # 3 failures, then an answer
             (refusal, lambda send: True, NO_WAIT)]
    for index, (failure, fails, engine) in enumerate(cases):
        backend = _Answering(failure, fails)
        responses = _serial_run(prompts, backend, tmp_path / str(index), engine)
        assert responses.height == prompts.height, index
        assert responses.filter(pl.col("status") == "error").height > 0, index


def test_the_first_timeout_of_a_model_is_said_at_once_and_once(items, personas, tmp_path,
                                                               caplog):
    """Bug caught (server probe 2026-12-07): against a server whose model list answered but
    whose generation hung, the run sat silent through every try's timeout (4 x 120 s a request
    at the defaults) before a failure showed. The first timed-out try is now a warning, once a
    model; other failures retried say nothing until they fail."""
    from audit.llm.backends import BackendError

    accepting = dataclasses.replace(NO_WAIT, max_failed_share=1.0)
    slow = _Failing(BackendError("timeout", "no reply from http://h/v1/chat/completions within "
                                            "0.1 s"))
    with caplog.at_level("WARNING", logger="audit.llm.preflight"):
        _timed_run(items, personas, tmp_path / "slow", slow, engine=accepting)
    said = [record.getMessage() for record in caplog.records if "retrying" in record.getMessage()]
    assert said == ["'timed': no reply from http://h/v1/chat/completions within 0.1 s; retrying. "
                    "A server that is up but does not answer in time is busy or stuck (its log "
                    "says which); a slow model needs a larger timeout_s"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="audit.llm.preflight"):
        _timed_run(items, personas, tmp_path / "500", _Failing(BackendError("server_error", "500")),
                   engine=accepting)
    assert "retrying" not in caplog.text


def test_a_request_that_failed_in_this_run_is_not_sent_again_by_a_later_batch(items, personas,
                                                                               fake_models,
                                                                               tmp_path):
    """Bug caught (2026-12-07): `audit.judge_eval` labels the gold set once per mode through one
    store; the second mode's batch sent again every request the first had failed, spending its
    retries twice (`send` already returned the failure), and, being nothing but failures, now
    read as a server failing everything. A later run (another store object) sends them again."""
    from audit.llm.backends import BackendError

    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=3))
    accepting = dataclasses.replace(NO_WAIT, max_failed_share=1.0)
    backend = _ByPrompt(BackendError("server_error", "HTTP 500"))
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        first = _serial_run_in(prompts, backend, store, accepting)
        sent = backend.sends
        second = _serial_run_in(prompts, backend, store, accepting)
    assert backend.sends == sent  # nothing sent again within the run
    assert second.select("prompt_id", "status", "error_kind").equals(
        first.select("prompt_id", "status", "error_kind"))
    assert 0 < first.filter(pl.col("status") == "error").height < first.height
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        _serial_run_in(prompts, backend, store, accepting)
    assert backend.sends > sent  # a rerun sends the failed ones again


class _ByPrompt(_Failing):
    """A backend that fails, every time, the prompts whose text hashes to a multiple of 3."""

    def complete(self, request):
        import hashlib

        from audit.llm.backends import Completion

        self.sends += 1
        if hashlib.sha256(request.messages[-1].content.encode()).digest()[0] % 3 == 0:
            raise self.failure
        return Completion("A", 1, "stop", 0.0)


def _serial_run_in(prompts, backend, store, engine):
    from audit.config import ModelConfig

    models = {"srv": ModelConfig(backend="fake", model="srv", max_concurrency=1)}
    prompts = prompts.with_columns(pl.lit("srv").alias("model_name"))
    return collect_responses(prompts, {"srv": backend}, models, store, engine,
                             show_progress=False)
