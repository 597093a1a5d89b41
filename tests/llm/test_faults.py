"""The engine against a server that misbehaves in every common way: nothing crashes, nothing is
mislabelled, every prompt ends as a stored answer or a stored error, and a rerun completes the
set without asking for any stored answer again."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time

import polars as pl
import pytest
from servers.fault_proxy import FAULTS, FaultProxy

from audit.llm.backends import create_backend
from audit.config import EngineConfig, JudgeConfig, ModelConfig, SamplingConfig
from audit.llm.engine import collect_responses
from audit.methods.rasch.judge.cascade import label_responses
from audit.llm.store import ResponseStore

pytestmark = pytest.mark.slow
ENGINE = EngineConfig(max_attempts=3, backoff_initial_s=0.05, backoff_max_s=0.2)
INFRASTRUCTURE_KINDS = {"rate_limit", "server_error", "connection", "malformed_reply", "timeout"}


def upstream(prompt: str) -> str:
    favourable = hashlib.sha256(prompt.encode()).digest()[0] % 2 == 0
    return "APPROVE. The file is sound." if favourable else "DENY. The file is weak."


def _prompts(count: int) -> pl.DataFrame:
    return pl.DataFrame({
        "prompt_id": [f"p{index:03d}" for index in range(count)], "model_name": ["server"] * count,
        "system_prompt": [""] * count, "user_prompt": [f"Decide case {index}." for index in
                                                      range(count)],
        "seed": list(range(count)), "question": ["Approve? Answer APPROVE or DENY."] * count,
        "favourable_option": ["APPROVE"] * count, "unfavourable_option": ["DENY"] * count})


def _slow_proxy(prompts: pl.DataFrame) -> FaultProxy:
    """Every answer 0.3 s late, so requests are in flight when something happens."""
    return FaultProxy(upstream, {text: ("latency", 99) for text in prompts["user_prompt"]}).start()


def _run(proxy: FaultProxy, prompts: pl.DataFrame, store_path, engine=ENGINE,
         timeout_s: float = 5) -> pl.DataFrame:
    model = ModelConfig(backend="openai_compatible", model="stub", base_url=proxy.base_url,
                        max_concurrency=4, timeout_s=timeout_s,
                        sampling=SamplingConfig(max_tokens=8))
    with ResponseStore(store_path) as store:
        return collect_responses(prompts, {"server": create_backend(model)}, {"server": model},
                                 store, engine, show_progress=False)


def _check_every_answer_is_real(responses: pl.DataFrame, prompts: pl.DataFrame) -> None:
    joined = responses.join(prompts, on="prompt_id")
    assert joined.height == prompts.height  # every prompt has a row
    ok = joined.filter(pl.col("status") == "ok")
    assert ok["response_text"].to_list() == [upstream(text) for text in ok["user_prompt"]]
    errors = joined.filter(pl.col("status") == "error")
    assert set(errors["error_kind"]) <= INFRASTRUCTURE_KINDS
    assert errors["response_text"].null_count() == errors.height


def test_every_kind_of_fault_ends_as_an_answer_or_a_stored_error(tmp_path):
    prompts = _prompts(3 * len(FAULTS))
    texts = prompts["user_prompt"].to_list()
    # Each fault twice on a first attempt only (retries recover), once for good (retries fail).
    schedule = {text: (FAULTS[index % len(FAULTS)], 1 if index < 2 * len(FAULTS) else 99)
                for index, text in enumerate(texts)}
    proxy = FaultProxy(upstream, schedule).start()
    # The six faults for good come last, in a row: a stage that accepts failures sends them all
    # (with the default share of 0 the run stops after five: test_engine.py).
    accepting = dataclasses.replace(ENGINE, max_failed_share=1.0)
    try:
        first = _run(proxy, prompts, tmp_path / "store.sqlite3", accepting)
        _check_every_answer_is_real(first, prompts)
        recovered = first.filter(pl.col("prompt_id").is_in(prompts["prompt_id"].head(14)))
        assert (recovered["status"] == "ok").all()
        persistent = first.filter(pl.col("status") == "error")
        # latency is not an error: those answers arrive, just late
        assert persistent.height == len(FAULTS) - 1
        assert {"rate_limit", "server_error", "connection", "malformed_reply"} <= set(
            persistent["error_kind"])
        with ResponseStore(tmp_path / "store.sqlite3") as store:
            labels = label_responses(prompts, first, JudgeConfig(name="rules"), [], store,
                                     show_progress=lambda rows, total, name: rows).labels
        assert labels.height == first.filter(pl.col("status") == "ok").height
        expected = {row["prompt_id"]: ("favourable" if upstream(row["user_prompt"])
                                       .startswith("APPROVE") else "unfavourable")
                    for row in prompts.iter_rows(named=True)}
        assert all(expected[p] == label for p, label in labels.select("prompt_id", "label").rows())

        proxy.schedule = {}  # the server recovers
        second = _run(proxy, prompts, tmp_path / "store.sqlite3")
        assert (second["status"] == "ok").all()
        assert second["from_cache"].sum() == first.filter(pl.col("status") == "ok").height
        assert max(proxy.answered.values()) == 1  # no stored answer was asked for again
    finally:
        proxy.stop()


def test_a_server_that_dies_mid_run_and_comes_back(tmp_path):
    prompts = _prompts(24)
    proxy = _slow_proxy(prompts)

    def outage() -> None:
        while sum(proxy.answered.values()) < 6:
            time.sleep(0.01)
        proxy.stop()
        time.sleep(1.0)
        proxy.start()  # same port

    killer = threading.Thread(target=outage)
    killer.start()
    try:
        patient = EngineConfig(max_attempts=6, backoff_initial_s=0.2, backoff_max_s=1.0)
        first = _run(proxy, prompts, tmp_path / "store.sqlite3", patient)
        killer.join()
        _check_every_answer_is_real(first, prompts)
        assert proxy.server is not None
        # Answered twice only if in flight when the server died (at most the 4 concurrent ones).
        assert sum(count - 1 for count in proxy.answered.values()) <= 4
        proxy.schedule = {}
        answered_in_first_run = dict(proxy.answered)
        second = _run(proxy, prompts, tmp_path / "store.sqlite3")
        assert (second["status"] == "ok").all()
        stored = set(first.filter(pl.col("status") == "ok")["prompt_id"])
        for prompt_id, text in prompts.select("prompt_id", "user_prompt").rows():
            if prompt_id in stored:  # a stored answer is never asked for again
                assert proxy.answered[text] == answered_in_first_run[text]
    finally:
        proxy.stop()


def test_a_request_slower_than_its_timeout_is_a_stored_timeout(tmp_path):
    prompts = _prompts(3)
    proxy = _slow_proxy(prompts)
    try:
        responses = _run(proxy, prompts, tmp_path / "store.sqlite3", timeout_s=0.1)
    finally:
        proxy.stop()
    assert set(responses["error_kind"]) == {"timeout"}
    assert responses["error_message"].str.contains("0.1 s").all()
