"""Scripted servers on loopback for tests of the server backends without a model: an
OpenAI-compatible one and an Ollama one, each of whose replies (status and JSON) a test scripts;
with the model configs and prompts that use them."""

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


OLLAMA_DIGEST = "sha256:" + "ab" * 32


def ollama_reply(content: str | None, done_reason: str = "length", eval_count: int = 0) -> dict:
    """An Ollama chat reply of model m:1b."""
    return {"model": "m:1b", "created_at": "2026-11-01T00:00:00Z",
            "message": {"role": "assistant", "content": content}, "done": True,
            "done_reason": done_reason, "eval_count": eval_count}


class ScriptedOllama(LoopbackServer):
    """An Ollama server listing `tags` (name -> digest; m:1b by default) whose chat replies
    `chat(body)` gives as (status, JSON), after `delay_s`; it keeps every chat body and counts
    the model lists it was asked for."""

    def __init__(self, chat=lambda body: (200, ollama_reply("")),
                 tags: dict[str, str] | None = None, delay_s: float = 0.0) -> None:
        self.chat, self.delay_s = chat, delay_s
        self.tags = {"m:1b": OLLAMA_DIGEST} if tags is None else tags
        self.bodies: list[dict] = []
        self.lists = 0
        super().__init__()

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                server.lists += 1
                self._send(200, {"models": [
                    {"name": name, "model": name, "size": 1, "digest": digest,
                     "modified_at": "2026-11-01T00:00:00Z"}
                    for name, digest in server.tags.items()]})

            def do_POST(self) -> None:
                body = self._body()
                server.bodies.append(body)
                time.sleep(server.delay_s)
                self._send(*server.chat(body))

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
