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


class Scripted(Host):
    """A host whose health check raises `checked` and whose requests raise `sent` (None:
    they pass); it records the requests it answered."""

    def __init__(self, checked: BackendError | None = None, sent: BackendError | None = None,
                 digest: str = "none") -> None:
        super().__init__()
        self.checked, self.sent, self.digest, self.answered = checked, sent, digest, 0

    def identity(self):
        return {"backend": "fake", "model": "m", "digest": self.digest}

    def complete(self, request):
        if self.sent is not None:
            raise self.sent
        self.answered += 1
        return super().complete(request)

    def health_check(self):
        self.probes += 1
        if self.checked is not None:
            raise self.checked


def _fleet(*hosts: Host, max_concurrency: int = 1) -> Fleet:
    urls = [f"http://h{index}/v1" for index in range(len(hosts))]
    backends = iter(hosts)
    return Fleet(ModelConfig(backend="openai_compatible", model="m", base_urls=urls,
                             max_concurrency=max_concurrency), lambda config: next(backends))


def test_hosts_that_serve_different_weights_are_refused():
    """Catches two hosts with different digests taken for one model (their answers stored
    under the first host's identity)."""
    assert _fleet(Scripted(), Scripted()).identity()["digest"] == "none"
    with pytest.raises(BackendError, match="^the hosts of 'm' serve different models") as error:
        _fleet(Scripted(), Scripted(digest="sha256:ab")).identity()
    assert error.value.kind == "config"


def test_the_health_check_sets_aside_a_dead_host_and_takes_back_a_live_one():
    """Catches the health check: stopping the run while one host answers; leaving a host that
    answers now set aside, or a dead one in use; hiding a refusal that is no host failure (a
    bad key); a server error (HTTP 5xx) not a host failure; naming another kind than the
    hosts' when none answers."""
    dead, live = Scripted(BackendError("connection", "refused")), Scripted()
    fleet = _fleet(dead, live)
    fleet.hosts[1].down_since = time.monotonic()
    fleet.health_check()
    assert fleet.hosts[0].down_since is not None and fleet.hosts[1].down_since is None
    refused = Scripted(BackendError("http_status", "HTTP 401", status=401))
    with pytest.raises(BackendError, match="^HTTP 401$"):
        _fleet(refused, Scripted()).health_check()
    failing = [Scripted(BackendError("server_error", "HTTP 503", status=503)) for _ in range(2)]
    with pytest.raises(BackendError, match="^none of the 2 hosts of 'm' answers: HTTP 503$") \
            as error:
        _fleet(*failing).health_check()
    assert error.value.kind == "server_error"


def test_a_request_goes_to_the_host_with_the_most_free_slots():
    """Catches the busiest host chosen, or the first, and a request's slot not taken or not
    given back: a second request sent while the first host holds one of its two slots goes to
    the idle host, and every slot is free once both have answered."""
    class Nesting(Scripted):
        def complete(self, request):
            self.answered += 1
            return fleet.complete(request)  # a second request while this one is in flight

    first, second = Nesting(), Scripted()
    fleet = _fleet(first, second, max_concurrency=2)
    assert fleet.complete(REQUEST).text == "APPROVE."
    assert (first.answered, second.answered) == (1, 1)
    assert [host.in_flight for host in fleet.hosts] == [0, 0]


def test_a_set_aside_host_is_probed_only_after_its_cool_down_and_again_after_a_failed_probe():
    """Catches the cool-down ignored or reversed, every due host but the first left unprobed
    (and marked as under probe for good), and a host whose probe failed never probed again."""
    dead = [Scripted(BackendError("connection", "refused")) for _ in range(2)]
    live = Scripted()
    fleet = _fleet(*dead, live)
    fleet.hosts[0].down_since = fleet.hosts[1].down_since = time.monotonic()
    fleet.complete(REQUEST)
    assert [host.probes for host in dead] == [0, 0]  # set aside just now: not yet due
    for host in fleet.hosts[:2]:
        host.down_since = time.monotonic() - 60
    fleet.complete(REQUEST)
    assert [host.probes for host in dead] == [1, 1]
    assert not any(host.probing for host in fleet.hosts)
    fleet.hosts[0].down_since = time.monotonic() - 60
    fleet.complete(REQUEST)
    assert [host.probes for host in dead] == [2, 1] and live.answered == 3


def test_a_refused_request_does_not_set_its_host_aside_and_all_down_is_a_connection_error():
    """Catches a request's own failure (HTTP 400) taken for its host's: one bad prompt took a
    live host out of the fleet; and the error when every host is set aside not read as a
    connection failure (the engine stops on those)."""
    bad = BackendError("http_status", "HTTP 400", status=400)
    fleet = _fleet(Scripted(sent=bad), Scripted())
    with pytest.raises(BackendError, match="^HTTP 400$"):
        fleet.complete(REQUEST)
    assert fleet.hosts[0].down_since is None
    for host in fleet.hosts:
        host.down_since = time.monotonic()
    with pytest.raises(BackendError, match="^all 2 hosts of 'm' are down$") as error:
        fleet.complete(REQUEST)
    assert error.value.kind == "connection"
