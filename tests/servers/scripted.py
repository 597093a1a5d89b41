"""Scripted servers on loopback for tests of the server backends without a model: an
OpenAI-compatible one whose every reply (status and JSON) a test scripts, and an Ollama one whose
every chat reply has the same content; with the model configs and prompts that use them."""

from __future__ import annotations

import time

import polars as pl

from audit.config import EngineConfig, ModelConfig, SamplingConfig
from audit.llm.backends import create_backend
from audit.llm.engine import collect_responses
from audit.llm.store import ResponseStore
from servers import JsonHandler, LoopbackServer

NO_WAIT = EngineConfig(max_attempts=3, backoff_initial_s=0.0, backoff_max_s=0.0)
ANSWER = "APPROVE. The profile meets the stated criteria."


def chat_reply(content: str | None, finish_reason: str = "stop") -> dict:
    """An OpenAI chat completion with one choice."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
            "model": "m", "choices": [{"index": 0, "finish_reason": finish_reason,
                                       "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}}


class ScriptedOpenAI(LoopbackServer):
    """An OpenAI-compatible server whose `script(body)` gives each chat reply's (status, JSON);
    it keeps every body it was sent."""

    path = "/v1"

    def __init__(self, script) -> None:
        self.script, self.bodies = script, []
        super().__init__()

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self) -> None:
                body = self._body()
                server.bodies.append(body)
                self._send(*server.script(body))

        return Handler


class ScriptedOllama(LoopbackServer):
    """An Ollama server with one model whose every chat reply has `content`."""

    def __init__(self, content: str | None) -> None:
        self.content, self.chats = content, 0
        super().__init__()

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                self._send(200, {"models": [{"name": "m:1b", "model": "m:1b", "size": 1,
                                             "modified_at": "2026-11-01T00:00:00Z",
                                             "digest": "sha256:" + "ab" * 32}]})

            def do_POST(self) -> None:
                self._body()
                server.chats += 1
                self._send(200, {"model": "m:1b", "created_at": "2026-11-01T00:00:00Z",
                                 "message": {"role": "assistant", "content": server.content},
                                 "done": True, "done_reason": "length", "eval_count": 0})

        return Handler


def openai_model(url: str, **settings) -> ModelConfig:
    return ModelConfig(backend="openai_compatible", model="m", base_url=url, timeout_s=5,
                       sampling=SamplingConfig(temperature=0.0, top_p=1.0, max_tokens=80),
                       **settings)


def prompts(count: int, model_name: str = "server") -> pl.DataFrame:
    return pl.DataFrame({"prompt_id": [f"p{index}" for index in range(count)],
                         "model_name": [model_name] * count, "system_prompt": [""] * count,
                         "user_prompt": [f"Decide case {index}." for index in range(count)],
                         "seed": list(range(count))})


def collect(model: ModelConfig, store_path, count: int = 2) -> pl.DataFrame:
    """`count` prompts answered by `model` as the model `server`, retries without waiting."""
    with ResponseStore(store_path) as store:
        return collect_responses(prompts(count), {"server": create_backend(model)},
                                 {"server": model}, store, NO_WAIT, show_progress=False)
