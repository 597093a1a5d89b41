"""Real servers on loopback for the tests: each speaks a protocol on 127.0.0.1 and a free port."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that reads and answers JSON, quietly (no access log in test output)."""

    content_type = "application/json"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, payload: dict | bytes, content_type: str | None = None) -> None:
        """`payload` as JSON; bytes as they are (what a proxy's page or a broken server sends),
        under `content_type`."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type or self.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")


class LoopbackServer:
    """An HTTP server on a free loopback port, served from a thread while in a `with` block.
    A subclass builds its request handler class (`_handler`) and names its base URL."""

    path = ""  # what `url` adds to the host and port (an API's /v1)

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
