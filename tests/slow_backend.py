"""A backend wrapper for concurrency tests: slower answers, and a count of requests in flight."""

from __future__ import annotations

import threading
import time


class SlowBackend:
    """Wraps a backend so each request takes `delay_s` longer; `peak` is the most requests it
    served at once, which is what a concurrency limit must bound."""

    def __init__(self, inner, delay_s: float = 0.02) -> None:
        self.inner, self.delay_s = inner, delay_s
        self.in_flight = self.peak = 0
        self._guard = threading.Lock()

    def identity(self):
        return self.inner.identity()

    def complete(self, request):
        with self._guard:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(self.delay_s)
        with self._guard:
            self.in_flight -= 1
        return self.inner.complete(request)
