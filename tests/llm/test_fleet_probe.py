"""A set-aside host is probed by one request, outside the fleet's lock (no server needed)."""

from __future__ import annotations

import threading
import time

import pytest

from audit.config import ModelConfig
from audit.llm.backends import BackendError, ChatRequest, Completion, Message
from audit.llm.backends.fleet import Fleet

REQUEST = ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0)


class Host:
    """A live host; or (hung) one that takes a probe and answers nothing until released."""

    def __init__(self, hung: bool = False) -> None:
        self.hung, self.probes = hung, 0
        self.probing, self.released = threading.Event(), threading.Event()

    def identity(self):
        return {"backend": "fake", "model": "m", "digest": "none"}

    def complete(self, request):
        return Completion("APPROVE.", 1, "stop", 0.0)

    def health_check(self):
        self.probes += 1
        if self.hung:
            self.probing.set()
            self.released.wait(timeout=10)
            raise BackendError("timeout", "no reply within 10 s")


def test_a_hung_host_under_probe_does_not_hold_up_requests_to_the_live_one():
    """Bug caught (own-model review 2026-12-02): the probe of a set-aside host ran under the
    fleet's lock, so while a host that accepts connections and never answers was probed, every
    request to the healthy host waited the probe's whole timeout."""
    live, hung = Host(), Host(hung=True)
    backends = iter([live, hung])
    fleet = Fleet(ModelConfig(backend="openai_compatible", model="m",
                              base_urls=["http://live/v1", "http://hung/v1"]),
                  lambda config: next(backends))
    fleet.hosts[1].down_since = time.monotonic() - 60  # set aside, its cool-down long over
    probing = threading.Thread(target=fleet.complete, args=(REQUEST,))
    probing.start()
    assert hung.probing.wait(timeout=10)  # the first request is probing the hung host now
    answered: list[str] = []
    second = threading.Thread(target=lambda: answered.append(fleet.complete(REQUEST).text))
    second.start()
    second.join(timeout=5)  # held by the lock, it waits until the probe gives up
    done_during_probe = not second.is_alive()
    hung.released.set()
    probing.join()
    second.join()
    assert done_during_probe and answered == ["APPROVE."]
    assert hung.probes == 1 and fleet.hosts[1].down_since is not None


class Busy(Host):
    """A host that answers every request with HTTP 503 and an hour's Retry-After."""

    def complete(self, request):
        raise BackendError("server_error", "HTTP 503", retry_after_s=3600.0, status=503)


def test_a_hosts_long_retry_after_is_not_the_fleets_wait_while_another_host_answers():
    """Catches a host's Retry-After passed on while another host is usable: the request slept
    an hour before its next try went to the other host, or, past engine.max_retry_after_s,
    failed outright. The last usable host's hint is passed on, as a lone server's is."""
    backends = iter([Busy(), Host()])
    fleet = Fleet(ModelConfig(backend="openai_compatible", model="m",
                              base_urls=["http://busy/v1", "http://live/v1"]),
                  lambda config: next(backends))
    with pytest.raises(BackendError) as failed:  # the first host: both have free slots
        fleet.complete(REQUEST)
    assert (failed.value.kind, str(failed.value), failed.value.status) == ("server_error",
                                                                           "HTTP 503", 503)
    assert failed.value.retry_after_s is None and fleet.hosts[0].down_since is not None
    assert fleet.complete(REQUEST).text == "APPROVE."  # the next try: the other host
    alone = Fleet(ModelConfig(backend="openai_compatible", model="m",
                              base_urls=["http://busy/v1"]), lambda config: Busy())
    with pytest.raises(BackendError) as failed:
        alone.complete(REQUEST)
    assert failed.value.retry_after_s == 3600.0
