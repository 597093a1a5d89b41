"""Several hosts for one model: spread by free slots, a dead host set aside, back on recovery."""

from __future__ import annotations

import time

import polars as pl
import pytest
from servers.fault_proxy import FaultProxy

from audit.llm.backends import create_backend
from audit.llm.backends import fleet as fleet_module
from audit.config import EngineConfig, ModelConfig, SamplingConfig
from audit.llm.engine import collect_responses
from audit.llm.store import ResponseStore

pytestmark = pytest.mark.slow


def upstream(prompt: str) -> str:
    return f"APPROVE. {prompt}"


def _prompts(start: int, count: int) -> pl.DataFrame:
    indices = range(start, start + count)
    return pl.DataFrame({"prompt_id": [f"p{i:03d}" for i in indices],
                         "model_name": ["fleet"] * count, "system_prompt": [""] * count,
                         "user_prompt": [f"Case {i}." for i in indices], "seed": list(indices)})


def _model(urls: list[str]) -> ModelConfig:
    return ModelConfig(backend="openai_compatible", model="stub", base_urls=urls,
                       max_concurrency=2, timeout_s=5, sampling=SamplingConfig(max_tokens=8))


def _collect(backend, urls: list[str], prompts: pl.DataFrame, store_path) -> pl.DataFrame:
    engine = EngineConfig(max_attempts=4, backoff_initial_s=0.05, backoff_max_s=0.2)
    with ResponseStore(store_path) as store:
        return collect_responses(prompts, {"fleet": backend}, {"fleet": _model(urls)}, store,
                                 engine, show_progress=False)


def test_requests_spread_over_hosts_and_survive_a_dead_one(tmp_path, monkeypatch):
    monkeypatch.setattr(fleet_module, "COOL_DOWN_S", 0.5)
    slow = {f"Case {i}.": ("latency", 1) for i in range(40)}  # keeps both hosts' slots busy
    first, second = FaultProxy(upstream, slow).start(), FaultProxy(upstream, slow).start()
    try:
        urls = [first.base_url, second.base_url]
        fleet = create_backend(_model(urls))  # one fleet through the outage and the recovery
        responses = _collect(fleet, urls, _prompts(0, 16), tmp_path / "store.sqlite3")
        assert (responses["status"] == "ok").all()
        assert sum(first.answered.values()) >= 4 and sum(second.answered.values()) >= 4

        second.stop()
        responses = _collect(fleet, urls, _prompts(16, 12), tmp_path / "store.sqlite3")
        assert (responses["status"] == "ok").all()  # retries went to the live host
        assert fleet.hosts[1].down_since is not None

        second.start()  # recovers on the same port
        served_before = sum(second.answered.values())
        time.sleep(0.6)  # past the cool-down: the next request probes it and it is back
        responses = _collect(fleet, urls, _prompts(28, 12), tmp_path / "store.sqlite3")
        assert (responses["status"] == "ok").all()
        assert sum(second.answered.values()) > served_before
    finally:
        first.stop()
        second.stop()


def test_all_hosts_down_stops_before_sending(tmp_path, monkeypatch):
    from audit.llm.backends import BackendError

    monkeypatch.setattr(fleet_module, "COOL_DOWN_S", 60)
    proxy = FaultProxy(upstream, {}).start()
    url = proxy.base_url
    proxy.stop()
    urls = [url, url.replace("/v1", "/v2")]
    with pytest.raises(BackendError, match="none of the 2 hosts of 'stub' answers.*Nothing was "
                                           "sent") as error:
        _collect(create_backend(_model(urls)), urls, _prompts(0, 3), tmp_path / "s.db")
    assert error.value.kind == "connection"
    with ResponseStore(tmp_path / "s.db") as store:
        assert store.count_ok() == 0


def test_a_host_listed_twice_is_refused_when_the_backend_is_built():
    """Bug caught (bad-input review 2026-12-04): `base_urls: [X, X]` made two hosts of one
    server, each with max_concurrency slots, so the run sent it twice the requests it serves
    at once, and "none of the 2 hosts" named one."""
    from audit.llm.backends import BackendError

    url = "http://127.0.0.1:9/v1"
    with pytest.raises(BackendError, match=rf"^base_urls of 'm' lists {url} more than once: "
                                           r"list each host once$"):
        create_backend(ModelConfig(backend="openai_compatible", model="m",
                                   base_urls=[url, "http://127.0.0.1:10/v1", url]))
    assert len(create_backend(ModelConfig(backend="openai_compatible", model="m",
                                          base_urls=[url, "http://127.0.0.1:10/v1"])).hosts) == 2
