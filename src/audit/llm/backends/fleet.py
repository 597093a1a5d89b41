"""Several hosts serving the same model, as one backend: requests go to the healthy host with the
most free slots; a host that fails is set aside and probed again after a cool-down, and comes
back when its health check passes.

Deliberately small: anything bigger (autoscaling, priorities, queues) belongs in vLLM or a
gateway in front of it, whose single URL is then one host here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from audit.llm.backends.base import (Backend, BackendError, ChatRequest, Completion,
                                     reply_settings)
from audit.config import ModelConfig

# Failures that say "this host", not "this request": the host is set aside.
HOST_FAILURES = frozenset({"connection", "timeout", "server_error"})
COOL_DOWN_S = 5.0


class Host:
    def __init__(self, url: str, backend: Backend, capacity: int) -> None:
        self.url, self.backend, self.capacity = url, backend, capacity
        self.in_flight = 0
        self.down_since: float | None = None
        self.probing = False  # one request at a time asks a set-aside host if it is back


class Fleet:
    def __init__(self, config: ModelConfig, make_backend) -> None:
        capacity = max(1, config.max_concurrency)
        repeated = sorted({url for url in config.base_urls if config.base_urls.count(url) > 1})
        if repeated:
            # One server counted twice took twice its slots, and "none of the 2 hosts" named
            # one (bad-input review 2026-12-04).
            raise BackendError("config", f"base_urls of '{config.model}' lists {repeated[0]} "
                                         "more than once: list each host once")
        self.config = config
        self.hosts = [Host(url, make_backend(replace(config, base_url=url, base_urls=[])),
                           capacity) for url in config.base_urls]
        self._lock = threading.Lock()

    def identity(self) -> dict[str, str]:
        identities = {host.url: host.backend.identity() for host in self.hosts}
        distinct = {tuple(sorted(identity.items())) for identity in identities.values()}
        if len(distinct) > 1:
            raise BackendError("config", f"the hosts of '{self.config.model}' serve different "
                                         f"models or weights: {identities}")
        return next(iter(identities.values()))

    def reply_settings(self, request: ChatRequest) -> dict:
        """The hosts' settings that change a reply (reply_settings): theirs share one config."""
        return reply_settings(self.hosts[0].backend, request)

    def health_check(self) -> None:
        """Probe every host now: those that fail as hosts are set aside, the others are usable
        at once; raise only when no host answers."""
        failures: list[BackendError] = []
        for host in self.hosts:
            probe = getattr(host.backend, "health_check", None)
            try:
                if probe is not None:
                    probe()
            except BackendError as error:
                if error.kind not in HOST_FAILURES:
                    raise
                failures.append(error)
                with self._lock:
                    host.down_since = time.monotonic()
                continue
            with self._lock:
                host.down_since = None
        if len(failures) == len(self.hosts):
            raise BackendError(failures[0].kind, f"none of the {len(self.hosts)} hosts of "
                                                 f"'{self.config.model}' answers: {failures[0]}")

    def _due_for_probe(self) -> list[Host]:
        """Set-aside hosts whose cool-down is over and that no other request is probing, each
        claimed for this request's probe. Called under the lock."""
        now = time.monotonic()
        due = [host for host in self.hosts if host.down_since is not None and not host.probing
               and now - host.down_since >= COOL_DOWN_S]
        for host in due:
            host.probing = True
        return due

    def _probe(self, host: Host) -> None:
        """Ask a set-aside host for its model list, outside the lock: a host that accepts
        connections and never answers held the lock for its whole timeout, and every request to
        the healthy hosts waited that long at each cool-down (41 s for 63 prompts at
        timeout_s 10, 71 s at 20)."""
        probe = getattr(host.backend, "health_check", None)
        try:
            if probe is not None:
                probe()  # a cheap call that needs the server: list its models
            healthy = True
        except BackendError:
            healthy = False
        with self._lock:
            host.down_since = None if healthy else time.monotonic()
            host.probing = False

    def _choose(self) -> Host:
        with self._lock:
            due = self._due_for_probe()
        for host in due:
            self._probe(host)
        with self._lock:
            usable = [host for host in self.hosts if host.down_since is None]
            if not usable:
                raise BackendError("connection", f"all {len(self.hosts)} hosts of "
                                                 f"'{self.config.model}' are down")
            host = max(usable, key=lambda candidate: candidate.capacity - candidate.in_flight)
            host.in_flight += 1
            return host

    def complete(self, request: ChatRequest) -> Completion:
        host = self._choose()
        try:
            return host.backend.complete(request)
        except BackendError as error:
            if error.kind not in HOST_FAILURES:
                raise
            with self._lock:
                host.down_since = time.monotonic()
                elsewhere = any(other.down_since is None for other in self.hosts)
            if elsewhere and error.retry_after_s is not None:
                # The wait is this host's: the next try goes to another, so it need not sleep
                # it (nor fail for it, beyond engine.max_retry_after_s).
                raise BackendError(error.kind, str(error), status=error.status) from error
            raise
        finally:
            with self._lock:
                host.in_flight -= 1
