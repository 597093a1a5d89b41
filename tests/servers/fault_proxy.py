"""A loopback OpenAI-compatible endpoint that injects faults in front of an upstream answerer.

Each request is matched to a prompt by its last message; the schedule says which fault the
first N attempts of that prompt get (latency, 429 with Retry-After, 500, 503, a dropped
connection, truncated JSON, malformed JSON) before the upstream answer goes through. The server
can also be stopped and restarted on the same port, to play a server that dies mid-run.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("latency", "rate_limit", "server_error", "unavailable", "drop", "truncated",
          "malformed")


class FaultProxy:
    def __init__(self, upstream: Callable[[str], str], schedule: dict[str, tuple[str, int]]):
        """`schedule` maps a prompt to (fault, how many first attempts get it)."""
        self.upstream, self.schedule = upstream, schedule
        self.attempts: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()  # prompts that got a real answer, and how often
        self._lock = threading.Lock()
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.connections: set[socket.socket] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultProxy:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Die like a crashed server: stop listening and cut every open keep-alive connection."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        with self._lock:
            for connection in list(self.connections):
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.connections.clear()

    def _fault_for(self, prompt: str) -> str | None:
        with self._lock:
            self.attempts[prompt] += 1
            fault, times = self.schedule.get(prompt, (None, 0))
            return fault if self.attempts[prompt] <= times else None

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with proxy._lock:
                    proxy.connections.add(self.connection)

            def finish(self) -> None:
                with proxy._lock:
                    proxy.connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def do_GET(self) -> None:  # the model list: what health checks ask for
                self._raw(200, json.dumps({"object": "list", "data": [
                    {"id": "stub", "object": "model", "created": 0, "owned_by": "test"}]}).encode())

            def _raw(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                     declared_length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(declared_length or len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                fault = proxy._fault_for(prompt)
                error = json.dumps({"error": {"message": fault, "type": "injected"}}).encode()
                if fault == "rate_limit":
                    return self._raw(429, error, {"Retry-After": "1"})
                if fault in ("server_error", "unavailable"):
                    return self._raw(500 if fault == "server_error" else 503, error)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                if fault == "latency":
                    time.sleep(0.3)
                content = proxy.upstream(prompt)
                reply = json.dumps({
                    "id": "x", "object": "chat.completion", "created": int(time.time()),
                    "model": body["model"], "choices": [{
                        "index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                }).encode()
                if fault == "truncated":
                    self.close_connection = True
                    return self._raw(200, reply[: len(reply) // 2], declared_length=len(reply))
                if fault == "malformed":
                    return self._raw(200, b"{'choices': not json")
                with proxy._lock:
                    proxy.answered[prompt] += 1
                return self._raw(200, reply)

        return Handler
