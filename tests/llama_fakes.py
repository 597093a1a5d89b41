"""The in-process llama.cpp runtimes without a model, for unit tests of the embedded and llamacpp
backends: a runtime that answers each payload from a function, and the backends wired to them."""

from __future__ import annotations

import threading
from typing import Any, Callable

from servers.scripted import chat_reply

from audit.config import ModelConfig
from audit.llm.backends import ChatRequest, Message, embedded, llamacpp

REQUEST = ChatRequest((Message("user", "Hi"),), 0.7, 0.9, 16, 1.1, 42)


class FakeRuntime:
    """An xllamacpp server without a model: answers each payload with `answer(payload)` and
    keeps every payload it was sent."""

    def __init__(self, answer: Callable[[dict], Any]) -> None:
        self.answer = answer
        self.payloads: list[dict] = []

    def handle_chat_completions(self, payload: dict) -> Any:
        self.payloads.append(payload)
        return self.answer(payload)


def embedded_backend(monkeypatch, answer: Callable[[dict], Any],
                     tokens: dict[str, tuple[int, ...]] | None = None):
    """An EmbeddedBackend on a FakeRuntime, tokenizing by `tokens`; returns both."""
    backend = embedded.EmbeddedBackend(ModelConfig(model="smollm2-135m-instruct"))
    runtime = FakeRuntime(answer)
    monkeypatch.setattr(backend, "runtime", lambda: runtime)
    monkeypatch.setattr(backend, "_tokens", lambda text: (tokens or {})[text])
    return backend, runtime


def scoring_runtime(top: dict[int, float], forced: dict[int, float] | None = None,
                    decoded: dict[int, int] | None = None) -> Callable[[dict], dict]:
    """Answers the first-step evaluation with the entries `top` (token id -> log-probability)
    and a forced evaluation with `forced[id]` for each id of its grammar, decoded as
    `decoded.get(id, id)`."""
    def answer(payload: dict) -> dict:
        if "grammar" not in payload:
            steps = [{"top_logprobs": [{"id": token, "logprob": logprob}
                                       for token, logprob in top.items()]}]
        else:
            ids = [int(part[2:-2]) for part in payload["grammar"].split()[2:]]
            steps = [{"id": (decoded or {}).get(token, token), "logprob": (forced or {})[token]}
                     for token in ids]
        return {"choices": [{"logprobs": {"content": steps}}]}
    return answer


class FakeLlama:
    """llama_cpp.Llama without a model: keeps its resets and chat calls in order, and raises
    llama-cpp-python's ValueError for an overlong prompt when `overflow`."""

    def __init__(self, overflow: bool = False) -> None:
        self.overflow = overflow
        self.calls: list[Any] = []

    def reset(self) -> None:
        self.calls.append("reset")

    def create_chat_completion(self, **options: Any) -> dict:
        self.calls.append(options)
        if self.overflow:
            raise ValueError("Requested tokens (5000) exceed context window of 2048")
        return chat_reply("ok")


def llamacpp_backend(monkeypatch, llm: Any):
    """A LlamaCppBackend (3 threads asked) on `llm`, whose usable_threads adds 100 to what it is
    asked; returns it and the arguments of each load."""
    loads: list[tuple] = []
    monkeypatch.setattr(llamacpp, "usable_threads", lambda requested: requested + 100)
    monkeypatch.setattr(llamacpp, "_load",
                        lambda *args: loads.append(args) or (llm, threading.Lock()))
    backend = llamacpp.LlamaCppBackend(ModelConfig(backend="llamacpp", n_threads=3,
                                                   model="smollm2-135m-instruct"))
    return backend, loads
