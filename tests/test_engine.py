"""The engine with the scripted fake backend: independence, caching, resumption, error rows."""

from __future__ import annotations

import polars as pl

from audit.backends import create_backend
from audit.config import DesignConfig, EngineConfig
from audit.design import expand_design
from audit.engine import collect_responses, summarise_responses
from audit.store import ResponseStore


NO_WAIT = EngineConfig(max_attempts=3, backoff_initial_s=0.0, backoff_max_s=0.0)


def _no_progress(rows, total, description):
    return rows


def _run(prompts, fake_models, store_path, backends=None):
    backends = backends or {name: create_backend(config) for name, config in fake_models.items()}
    with ResponseStore(store_path) as store:
        return collect_responses(prompts, backends, fake_models, store, NO_WAIT, _no_progress), backends


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
    responses, _ = _run(failing, fake_models, tmp_path / "store.sqlite3")
    errors = responses.filter(pl.col("status") == "error")
    assert errors.height == failing.filter(pl.col("item_id") == "hiring_01").height
    assert set(errors["error_kind"]) == {"connection"}
    assert errors["response_text"].null_count() == errors.height
    _, backends = _run(failing, fake_models, tmp_path / "store.sqlite3")
    resent = [request for backend in backends.values() for request in backend.requests]
    assert len(set(resent)) == errors.height  # only the failed ones are sent again
    assert len(resent) == errors.height * NO_WAIT.max_attempts  # each retried until attempts ran out
