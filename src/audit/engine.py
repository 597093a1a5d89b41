"""Sending requests: one independent request per prompt, through the response store.

The store is consulted first, so a rerun only sends what is missing and a crash resumes where it
stopped. Infrastructure failures are retried with exponential backoff and jitter (tenacity) and,
once retries run out, become error rows with their kind: they never become labels.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import polars as pl
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from audit.backends import Backend, BackendError, ChatRequest, Completion, Message, request_key
from audit.config import EngineConfig, ModelConfig
from audit.schemas import ResponseSchema, validate
from audit.store import ResponseStore

log = logging.getLogger(__name__)

# Kinds worth retrying: the server may answer next time. A context overflow or a missing model
# file will fail the same way again, so they are recorded at once.
TRANSIENT_KINDS = frozenset({"timeout", "connection", "rate_limit", "server_error"})


@dataclass(frozen=True)
class Outcome:
    """What one send produced: a completion (fresh or from the store) or an error."""

    request_key: str
    completion: Completion | None
    from_cache: bool
    error: BackendError | None = None


def _is_transient(error: BaseException) -> bool:
    return isinstance(error, BackendError) and error.kind in TRANSIENT_KINDS


def send(backend: Backend, request: ChatRequest, store: ResponseStore,
         engine: EngineConfig | None = None) -> Outcome:
    """Answer one request from the store, or send it and store the reply before returning."""
    identity = backend.identity()
    key = request_key(identity, request)
    stored = store.get(key)
    if stored is not None:
        completion = Completion(stored.response_text, stored.completion_tokens, "stored",
                                stored.latency_s)
        return Outcome(key, completion, from_cache=True)
    engine = engine or EngineConfig()
    try:
        for attempt in Retrying(
            retry=retry_if_exception(_is_transient),
            stop=stop_after_attempt(engine.max_attempts),
            wait=wait_exponential_jitter(initial=engine.backoff_initial_s,
                                         max=engine.backoff_max_s),
            reraise=True,
        ):
            with attempt:
                completion = backend.complete(request)
    except (BackendError, RetryError) as error:
        failure = error if isinstance(error, BackendError) else BackendError("unknown", str(error))
        store.put_error(key, identity, request.as_payload(), failure.kind, str(failure))
        return Outcome(key, None, from_cache=False, error=failure)
    except Exception as error:  # noqa: BLE001 - any other crash of a backend is an infrastructure error
        failure = BackendError("backend_crash", f"{type(error).__name__}: {error}")
        store.put_error(key, identity, request.as_payload(), failure.kind, str(failure))
        return Outcome(key, None, from_cache=False, error=failure)
    store.put_ok(key, identity, request.as_payload(), completion.text,
                 completion.completion_tokens, completion.latency_s)
    return Outcome(key, completion, from_cache=False)


def build_request(config: ModelConfig, system_prompt: str, user_prompt: str, seed: int,
                  json_schema: dict | None = None) -> ChatRequest:
    messages = [Message("system", system_prompt)] if system_prompt else []
    messages.append(Message("user", user_prompt))
    sampling = config.sampling
    return ChatRequest(
        messages=tuple(messages),
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        repeat_penalty=sampling.repeat_penalty,
        seed=seed,
        json_schema=json_schema,
    )


def progress_bar() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), transient=False)


def track(rows: Iterable, total: int, description: str) -> Iterable:
    with progress_bar() as progress:
        task = progress.add_task(description, total=total)
        for row in rows:
            yield row
            progress.advance(task)


def collect_responses(
    prompts: pl.DataFrame,
    backends: dict[str, Backend],
    models: dict[str, ModelConfig],
    store: ResponseStore,
    engine: EngineConfig | None = None,
    show_progress: Callable[[Iterable, int, str], Iterable] = track,
) -> pl.DataFrame:
    """Send every prompt as its own request; return one response row per prompt, errors included."""
    rows = []
    ordered = prompts.sort("prompt_id").iter_rows(named=True)
    for prompt in show_progress(ordered, prompts.height, "respond"):
        model = models[prompt["model_name"]]
        request = build_request(model, prompt["system_prompt"], prompt["user_prompt"],
                                prompt["seed"])
        outcome = send(backends[prompt["model_name"]], request, store, engine)
        completion = outcome.completion
        rows.append({
            "prompt_id": prompt["prompt_id"],
            "request_key": outcome.request_key,
            "status": "ok" if completion is not None else "error",
            "response_text": completion.text if completion else None,
            "error_kind": outcome.error.kind if outcome.error else None,
            "error_message": str(outcome.error) if outcome.error else None,
            "completion_tokens": completion.completion_tokens if completion else None,
            "latency_s": completion.latency_s if completion else None,
            "from_cache": outcome.from_cache,
        })
    responses = pl.DataFrame(rows, schema={
        "prompt_id": pl.Utf8, "request_key": pl.Utf8, "status": pl.Utf8,
        "response_text": pl.Utf8, "error_kind": pl.Utf8, "error_message": pl.Utf8,
        "completion_tokens": pl.Int64, "latency_s": pl.Float64, "from_cache": pl.Boolean,
    })
    return validate(responses, ResponseSchema, "responses")


def summarise_responses(responses: pl.DataFrame) -> dict[str, int]:
    return {
        "sent": int(responses.filter(~pl.col("from_cache") & (pl.col("status") == "ok")).height),
        "cached": int(responses.filter(pl.col("from_cache")).height),
        "failed": int(responses.filter(pl.col("status") == "error").height),
    }
