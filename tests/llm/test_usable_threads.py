"""llama.cpp never gets more threads than the process has CPUs (its threads spin-wait for each
other, so one without a core stalls the rest: benchmarks/bench_threads.py)."""

from __future__ import annotations

import logging
import os

import pytest

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
