"""A loopback stand-in for the Hugging Face hub's file endpoint, for HF_ENDPOINT in tests.

It serves `/{repo}/resolve/{revision}/{file}` the way the hub does for a file stored in LFS: a HEAD
with the commit (`X-Repo-Commit`), the sha256 as the ETag and the size, then the bytes on GET.
huggingface_hub's real client talks to it (no part of the client is replaced), so a test covers
the real download, cache layout and error paths. Only files it was given exist; anything else is a
404 with the hub's `X-Error-Code`. Every request is recorded, so a test can see that a cached file
is not fetched again.
"""

from __future__ import annotations

import hashlib
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote

from servers import LoopbackServer


class HubLoopback(LoopbackServer):
    def __init__(self, files: dict[tuple[str, str, str], bytes]) -> None:
        """files: (repo, revision, file path) -> content."""
        self.files = dict(files)
        self.requests: list[tuple[str, str]] = []
        super().__init__()

    def downloads(self) -> int:
        """File downloads (the client also asks other endpoints, which are not files)."""
        return sum(method == "GET" and "/resolve/" in path for method, path in self.requests)

    def _find(self, path: str) -> tuple[str, bytes] | None:
        parts = unquote(path.split("?", 1)[0]).strip("/").split("/")
        if "resolve" not in parts:
            return None
        at = parts.index("resolve")
        repo, revision, name = "/".join(parts[:at]), parts[at + 1], "/".join(parts[at + 2:])
        content = self.files.get((repo, revision, name))
        return None if content is None else (revision, content)

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _headers(self, send_body: bool) -> None:
                hub.requests.append((self.command, self.path))
                found = hub._find(self.path)
                if found is None:
                    body = b'{"error": "Entry not found"}'
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if send_body:
                        self.wfile.write(body)
                    return
                revision, content = found
                self.send_response(200)
                self.send_header("X-Repo-Commit", revision)
                self.send_header("ETag", f'"{hashlib.sha256(content).hexdigest()}"')
                self.send_header("Content-Length", str(len(content)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if send_body:
                    self.wfile.write(content)

            def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
                self._headers(send_body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._headers(send_body=True)

        return Handler
