"""The one interface every backend implements, and the request/reply types that cross it.

Only modules in `audit.llm.backends` know a wire protocol; everything else sees `ChatRequest` in and
`Completion` out, so adding a server type never touches the engine, the judge or the design.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """Everything that changes a reply. A request carries only its own messages: no history."""

    messages: tuple[Message, ...]
    temperature: float
    top_p: float
    max_tokens: int
    repeat_penalty: float
    seed: int
    json_schema: dict[str, Any] | None = None
    # Score these continuations instead of generating: the reply text is a JSON object mapping
    # each continuation to its log-probability as the opening of the assistant's answer.
    score_options: tuple[str, ...] = ()
    # Score only each continuation's first token: the log-probability that a decoder constrained
    # to the continuations picks this one, since they part at their first token and the rest of
    # each is then forced. One prompt evaluation for all of them instead of one each; needs
    # continuations that open with different tokens (a backend scores whole continuations when
    # two share their first token).
    score_first_token: bool = False

    def as_payload(self) -> dict[str, Any]:
        # Fields read one level deep: `asdict` deep-copies the JSON schema too, which made this
        # a tenth of a millisecond of event-loop time per request, spent twice (key and store).
        payload = {item.name: getattr(self, item.name) for item in fields(self)}
        payload["messages"] = [{"role": message.role, "content": message.content}
                               for message in self.messages]
        if not self.score_options:
            # Absent rather than empty, so adding scoring left every earlier request key unchanged.
            del payload["score_options"]
        else:
            payload["score_options"] = list(self.score_options)
        if not self.score_first_token:
            # Absent when off, so whole-option scoring requests kept their earlier keys.
            del payload["score_first_token"]
        return payload


@dataclass(frozen=True)
class Completion:
    text: str
    completion_tokens: int
    finish_reason: str
    latency_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_chat_reply(cls, reply: dict[str, Any], latency_s: float) -> "Completion":
        """The first choice of an OpenAI-style chat reply given as a dict (what both in-process
        llama.cpp runtimes return)."""
        choice = reply["choices"][0]
        return cls(
            text=choice["message"].get("content") or "",
            completion_tokens=int(reply.get("usage", {}).get("completion_tokens", 0)),
            finish_reason=str(choice.get("finish_reason") or ""),
            latency_s=latency_s,
        )


def usable_threads(requested: int) -> int:
    """The llama.cpp thread count to start: `requested`, but never more than the CPUs this process
    may run on (its affinity mask, as `taskset`, a container's cpuset or a pinned test worker set
    it). llama.cpp's threads spin-wait for each other at every layer, so a thread without a core
    of its own stalls all of them: Qwen2.5-Coder-0.5B, 2 threads, took 0.85 s a prompt on 2 idle
    CPUs, 52 s pinned to one CPU and 1.39 s with one thread there (benchmarks/bench_threads.py,
    2026-11-25, idle machine)."""
    available = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
    return max(1, min(requested, available))


def first_tokens_decide(request: ChatRequest, tokenized: dict[str, Sequence[int]]) -> bool:
    """Whether a backend scores `request`'s continuations by their first tokens alone: asked for
    (`score_first_token`) and possible, no two continuations opening with the same token. Raises
    for a continuation with no tokens, which has no probability to score."""
    empty = [continuation for continuation, tokens in tokenized.items() if not tokens]
    if empty:
        raise BackendError("malformed_request", f"empty continuation {empty[0]!r}")
    return request.score_first_token and \
        len({tokens[0] for tokens in tokenized.values()}) == len(tokenized)


# What a backend that cannot score option words tells a user asked to score with it, by role; the
# fix said `method=cascade`, a value no `method=` takes (review 2026-12-04). score.py's check,
# made before any prompt, names the one that applies.
NO_SCORING_FIX = ("judge.decoding=json judge.refusal_check=false for a judge model, "
                  "judge.method=cascade judge.score_options=false for an audited one")


# Failures that say the server is not there: the preflight stops on them, the engine asks the
# server again mid-run after one, and a judge stops its stage.
UNREACHABLE_KINDS = frozenset({"connection", "timeout"})


def connection_problem(error: BaseException, url: str) -> str:
    """Why a connection to `url` failed, from the root of the client's exception chain: the
    client's own name for it ("APIConnectionError") said nothing, and its fix, "start the
    server", was wrong for a server that was up but spoke plain HTTP (server probe 2026-12-07)."""
    import socket
    import ssl

    root = error
    while (root.__cause__ or root.__context__) is not None:
        root = root.__cause__ or root.__context__
    if isinstance(root, ssl.SSLError):
        plain = (": if the server speaks plain HTTP, base_url starts with http://"
                 if url.startswith("https://") else "")
        return f"the TLS handshake failed ({getattr(root, 'reason', None) or root}){plain}"
    if isinstance(root, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(root, socket.gaierror):
        return "host name not found"
    return str(root) or type(root).__name__


class BackendError(RuntimeError):
    """A failure of infrastructure, never of the audited behaviour; `kind` says which."""

    def __init__(self, kind: str, message: str, retry_after_s: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        # The server's Retry-After, when it sent one: the engine waits at least this long.
        self.retry_after_s = retry_after_s
        self.status = status  # the HTTP status of a server's refusal, when there was one


@runtime_checkable
class Backend(Protocol):
    """A model server or an in-process model that answers one chat request at a time."""

    def identity(self) -> dict[str, str]:
        """What makes this model this model: backend, model name and a content digest when known.

        It goes into every request key, so a model file that changes underneath a name shows up as
        a different model and never reuses another model's stored answers."""
        ...

    def complete(self, request: ChatRequest) -> Completion:
        """Generate a reply, or, when `request.score_options` is set, score those continuations
        (a backend that cannot raises BackendError with kind `unsupported`)."""
        ...


def request_key(identity: dict[str, str], request: ChatRequest,
                settings: dict[str, Any] | None = None) -> str:
    """Content hash of only what changes the output: model identity, messages, sampling, seed,
    and the backend's own `settings` that change this reply (reply_settings)."""
    hashed: dict[str, Any] = {"model": identity, "request": request.as_payload()}
    if settings:
        # Absent when there are none, so the keys of every request without them stay as they were.
        hashed["settings"] = settings
    canonical = json.dumps(hashed, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def reply_settings(backend: Backend, request: ChatRequest) -> dict[str, Any]:
    """Settings of `backend` that are not in the request but change its reply to it (Ollama's
    context size, how a server is told a JSON schema): a backend names them, each only when it
    is not at its default, in an optional `reply_settings(request)` method."""
    settings = getattr(backend, "reply_settings", None)
    return settings(request) if settings is not None else {}


def backend_request_key(backend: Backend, identity: dict[str, str],
                        request: ChatRequest) -> str:
    """The request key of `request` sent to `backend` (whose identity is `identity`)."""
    return request_key(identity, request, reply_settings(backend, request))


def check_reply_text(request: ChatRequest, completion: Completion) -> Completion:
    """`completion`, unless it has no text. A reply with no text is no behaviour to measure: a
    reasoning model that spent max_tokens before answering, a content filter, a proxy that
    dropped the body. It is an infrastructure failure, recorded as an error and never stored as
    an answer: `empty_reply` (retried: a filter or a proxy may pass next time), or
    `empty_reply_length` when the reply ran out of max_tokens, which the same request does
    again, so it is not retried (on a paid reasoning model each retry bills max_tokens)."""
    if request.score_options or completion.text.strip():
        return completion
    reason = completion.finish_reason or "none"
    if reason == "length":
        raise BackendError("empty_reply_length", (
            "empty reply (finish_reason=length): the reply ran out of sampling.max_tokens (a "
            "reasoning model may spend them all before answering); raise it"))
    raise BackendError("empty_reply", f"empty reply (finish_reason={reason})")
