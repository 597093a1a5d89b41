"""A loopback server that speaks the OpenAI chat API (`GET /v1/models`, `POST
/v1/chat/completions`), answering each request after `delay_s` with a scripted decision: for tests
that need requests in flight for a while (Ctrl-C in the middle of the respond stage) without a
model. The reply depends on the messages and the seed only, as the fake backend's does; with one
reply in `replies`, every answer is the same (a run without signal).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

from servers import JsonHandler, LoopbackServer

MODEL = "loopback-model"
REPLIES = ("APPROVE. The profile meets the stated criteria.",
           "DENY. The profile does not meet the stated criteria.")


class OpenAILoopback(LoopbackServer):
    path = "/v1"

    def __init__(self, delay_s: float = 0.0, replies: tuple[str, ...] = REPLIES) -> None:
        self.delay_s, self.replies = delay_s, replies
        self.chats: list[dict] = []
        self._lock = threading.Lock()
        super().__init__()

    def answer(self, body: dict) -> dict:
        time.sleep(self.delay_s)
        with self._lock:
            self.chats.append(body)
        digest = hashlib.sha256(json.dumps([body.get("messages"), body.get("seed")],
                                           sort_keys=True).encode()).digest()
        text = self.replies[digest[0] % len(self.replies)]
        return {"id": f"chatcmpl-{len(self.chats)}", "object": "chat.completion",
                "created": int(time.time()), "model": body.get("model", MODEL),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": len(text.split()),
                          "total_tokens": 50 + len(text.split())}}

    def _handler(self):
        loopback = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": MODEL, "object": "model", "created": 0, "owned_by": "test"}]})
                else:
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})

            def do_POST(self) -> None:
                body = self._body()
                if self.path.rstrip("/") == "/v1/chat/completions":
                    self._send(200, loopback.answer(body))
                else:
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})

        return Handler
