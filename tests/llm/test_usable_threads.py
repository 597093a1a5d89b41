"""llama.cpp never gets more threads than the process has CPUs (its threads spin-wait for each
other, so one without a core stalls the rest: benchmarks/bench_threads.py)."""

from __future__ import annotations

import logging
import os

import pytest
from llama_fakes import FakeLlama, llamacpp_backend

from audit.config import ModelConfig
from audit.llm.backends import ChatRequest, Message, create_backend, embedded
from audit.llm.backends.base import usable_threads

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"),
                                reason="CPU affinity is a Linux interface")


@pytest.fixture
def one_cpu():
    """This process pinned to one of its CPUs for the test, then given its CPUs back."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    yield
    os.sched_setaffinity(0, before)


def test_a_process_pinned_to_one_cpu_gets_one_thread(one_cpu):
    assert usable_threads(2) == 1
    assert usable_threads(8) == 1


def test_the_configured_count_stands_when_the_cpus_exist():
    cpus = len(os.sched_getaffinity(0))
    assert usable_threads(1) == 1
    assert usable_threads(cpus) == cpus
    assert usable_threads(cpus + 3) == cpus


@pytest.mark.slow
def test_the_embedded_runtime_starts_one_thread_on_one_cpu(one_cpu, caplog):
    backend = create_backend(ModelConfig(model="smollm2-135m-instruct", n_threads=2))
    embedded.close_runtimes()  # a runtime an earlier test left loaded would not log its start
    with caplog.at_level(logging.INFO, logger="audit.llm.backends.embedded"):
        # One request, as in a run: an xllamacpp server destroyed the instant it was created can
        # wait forever to join its loop thread (seen once in CI, in ~Server's thread join).
        backend.complete(ChatRequest((Message("user", "Hi"),), 0.0, 1.0, 1, 1.0, 0))
    embedded.close_runtimes()
    loaded = [record.getMessage() for record in caplog.records if "loaded" in record.getMessage()]
    assert loaded and loaded[-1].endswith("(1 slot(s), 1 threads)"), loaded


class _Server:
    """xllamacpp.Server without a model: keeps the settings it was started with."""

    def __init__(self, params) -> None:
        self.settings = {"n_ctx": params.n_ctx, "n_parallel": params.n_parallel,
                         "threads": params.cpuparams.n_threads,
                         "batch_threads": params.cpuparams_batch.n_threads,
                         "cache_prompt": params.cache_prompt,
                         "cache_ram_mib": params.cache_ram_mib}


@pytest.fixture
def no_model(monkeypatch):
    """Runtimes started as _Server, none shared with other tests."""
    monkeypatch.setattr(embedded.xllamacpp, "Server", _Server)
    embedded.close_runtimes()
    yield
    embedded.close_runtimes()


def test_the_runtime_starts_with_the_asked_threads_slots_and_no_prompt_cache(no_model, tmp_path):
    """Catches a runtime whose total context is not n_ctx for each slot, started with one slot,
    with other thread counts than asked (either of the two), or with a prompt cache (prefix
    reuse changes logits: module docstring of embedded.py)."""
    runtime = embedded.load_runtime(tmp_path / "m.gguf", 512, 3, 4)
    assert runtime.settings == {"n_ctx": 2048, "n_parallel": 4, "threads": 3,
                                "batch_threads": 3, "cache_prompt": False, "cache_ram_mib": 0}


def test_a_runtime_is_shared_by_equal_settings_only_until_closed(no_model, tmp_path):
    """Catches a runtime started again for the same file and settings, one shared by a backend
    asking another slot count, or one kept after close_runtimes."""
    path = tmp_path / "m.gguf"
    first = embedded.load_runtime(path, 512, 2, 1)
    assert embedded.load_runtime(path, 512, 2, 1) is first
    assert embedded.load_runtime(path, 512, 2, 2) is not first
    embedded.close_runtimes()
    assert embedded.load_runtime(path, 512, 2, 1) is not first


def test_the_backends_start_their_runtimes_with_usable_threads(monkeypatch):
    """Catches the configured thread count passed on without usable_threads (embedded and
    llamacpp), threads and slots swapped, or no slot at all for max_concurrency 0."""
    starts = []
    monkeypatch.setattr(embedded, "usable_threads", lambda requested: requested + 100)
    monkeypatch.setattr(embedded, "load_runtime", lambda *args: starts.append(args))
    backend = embedded.EmbeddedBackend(ModelConfig(model="smollm2-135m-instruct", n_ctx=1024,
                                                   n_threads=3, max_concurrency=2))
    backend.runtime()
    assert starts == [(backend.path, 1024, 103, 2)]
    assert embedded.EmbeddedBackend(ModelConfig(model="smollm2-135m-instruct",
                                                max_concurrency=0)).slots == 1
    llamacpp, loads = llamacpp_backend(monkeypatch, FakeLlama())
    llamacpp.complete(ChatRequest((Message("user", "Hi"),), 0.0, 1.0, 1, 1.0, 0))
    assert loads == [(llamacpp.path, 2048, 103)]


def test_closing_the_runtimes_forgets_their_tokens(monkeypatch):
    """Catches tokens cached by a closed runtime's loopback address served to the next runtime
    given that address (another model, another vocabulary)."""
    replies = iter([[1, 2], [7]])

    class _Reply:
        def __init__(self) -> None:
            self.tokens = next(replies)

        def raise_for_status(self) -> None:
            pass

        def json(self) -> dict:
            return {"tokens": self.tokens}

    monkeypatch.setattr(embedded.httpx, "post", lambda *args, **kwargs: _Reply())
    embedded.close_runtimes()
    assert embedded._tokenize("http://127.0.0.1:5000", "yes") == (1, 2)
    embedded.close_runtimes()
    assert embedded._tokenize("http://127.0.0.1:5000", "yes") == (7,)
