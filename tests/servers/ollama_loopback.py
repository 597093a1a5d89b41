"""A loopback server that speaks Ollama's HTTP API (/api/tags, /api/show, /api/chat), answering
with the embedded model, for tests of the `ollama` backend through the real `ollama` client.

No Ollama binary can be installed on these machines; the server follows the API reference's
non-streaming JSON shapes, honours `format` (a JSON schema) and the sampling options, and records
every chat request it receives so tests can count and inspect them.
"""

from __future__ import annotations

import socket
import threading
import time
from datetime import datetime, timezone

from audit.config import ModelConfig
from audit.llm.backends import ChatRequest, Message, create_backend
from servers import JsonHandler, LoopbackServer

MODEL_TAG = "smollm2:135m"


class OllamaLoopback(LoopbackServer):
    def __init__(self, digest: str = "sha256:" + "ab" * 32) -> None:
        self.backend = create_backend(ModelConfig(model="smollm2-135m-instruct"))
        self.digest = digest
        self.chats: list[dict] = []
        self._lock = threading.Lock()
        super().__init__()

    def _answer(self, body: dict) -> dict:
        options = body.get("options") or {}
        request = ChatRequest(
            messages=tuple(Message(m["role"], m["content"]) for m in body["messages"]),
            temperature=float(options.get("temperature", 0.8)),
            top_p=float(options.get("top_p", 0.9)),
            max_tokens=int(options.get("num_predict", 128)),
            repeat_penalty=float(options.get("repeat_penalty", 1.1)),
            seed=int(options.get("seed", 0)),
            json_schema=body.get("format") if isinstance(body.get("format"), dict) else None)
        with self._lock:
            self.chats.append(body)
            completion = self.backend.complete(request)
        now = datetime.now(timezone.utc).isoformat()
        return {"model": body["model"], "created_at": now,
                "message": {"role": "assistant", "content": completion.text},
                "done": True, "done_reason": "stop" if completion.finish_reason == "stop"
                else "length", "total_duration": int(completion.latency_s * 1e9),
                "load_duration": 0, "prompt_eval_count": 0, "prompt_eval_duration": 0,
                "eval_count": completion.completion_tokens,
                "eval_duration": int(completion.latency_s * 1e9)}

    def _handler(self):
        loopback = self

        class Handler(JsonHandler):
            content_type = "application/json; charset=utf-8"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm
                # and the client's delayed ACK add about 40 ms to every keep-alive request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self._send(200, {"models": [{
                        "name": MODEL_TAG, "model": MODEL_TAG,
                        "modified_at": "2026-11-01T00:00:00Z", "size": 100_000_000,
                        "digest": loopback.digest,
                        "details": {"format": "gguf", "family": "llama", "families": ["llama"],
                                    "parameter_size": "135M", "quantization_level": "Q4_1"}}]})
                else:
                    self._send(404, {"error": f"unknown path {self.path}"})

            def do_POST(self) -> None:
                body = self._body()
                if self.path == "/api/show":
                    self._send(200, {"modelfile": f"FROM {MODEL_TAG}", "parameters": "",
                                     "template": "{{ .Prompt }}", "details": {"format": "gguf"},
                                     "model_info": {"general.architecture": "llama"},
                                     "modified_at": "2026-11-01T00:00:00Z"})
                elif self.path == "/api/chat":
                    if body.get("model") != MODEL_TAG:
                        self._send(404, {"error": f"model '{body.get('model')}' not found"})
                        return
                    started = time.perf_counter()
                    answer = loopback._answer(body)
                    answer["total_duration"] = int((time.perf_counter() - started) * 1e9)
                    self._send(200, answer)
                else:
                    self._send(404, {"error": f"unknown path {self.path}"})

        return Handler
