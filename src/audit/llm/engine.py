"""Sending requests: one independent request per prompt, through the response store.

The store is consulted first, so a rerun only sends what is missing and a crash resumes where it
stopped. Requests run concurrently under asyncio up to each model's `max_concurrency` (the
blocking clients run in worker threads; the embedded model one request at a time) and an
optional requests-per-minute limit (aiolimiter). Infrastructure failures are retried with
exponential backoff and jitter, never sooner than the server's Retry-After (tenacity), and once
retries run out become error rows with their kind: they never become labels (a reply with no
text is one such failure, `empty_reply`). Every reply is committed to the store as it arrives
(once the request waiting for its slot has gone out), on the event loop's thread, which owns
the SQLite connection. What a run will cost, and whether its servers answer, is checked first
(audit.llm.preflight).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace

import polars as pl
from aiolimiter import AsyncLimiter
from rich.progress import Progress
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from audit.llm.backends import (UNREACHABLE_KINDS, Backend, BackendError, ChatRequest,
                                Completion, Message, backend_request_key, check_reply_text)
from audit.config import EngineConfig, ModelConfig
from audit.interrupts import Interrupted
from audit.logs import progress_bar
from audit.llm.heap import heap_frozen
from audit.llm.preflight import (REFUSED_STATUSES, Planned, ServerFailing, ServerStopped,
                                 ServerWatch, answering_time_text, estimate, preflight,
                                 stopped_run_line)
from audit.schemas import ResponseSchema, validate
from audit.llm.store import ResponseStore

log = logging.getLogger(__name__)

# Kinds worth retrying: the server may answer next time (a garbled reply is usually a proxy or
# a restarting server; an empty one a sampled reply, a filter or a proxy that may pass next
# time). A context overflow, a missing model or an empty reply cut off by max_tokens
# (empty_reply_length) fails the same way again, so they are recorded at once.
TRANSIENT_KINDS = frozenset({"timeout", "connection", "rate_limit", "server_error",
                             "malformed_reply", "empty_reply"})


@dataclass(frozen=True)
class Outcome:
    """What one send produced: a completion (fresh or from the store) or an error."""

    request_key: str
    completion: Completion | None
    from_cache: bool
    error: BackendError | None = None


def _is_transient(error: BaseException) -> bool:
    return isinstance(error, BackendError) and error.kind in TRANSIENT_KINDS


def _asks_too_long_a_wait(error: BackendError, engine: EngineConfig) -> bool:
    return (error.retry_after_s or 0.0) > engine.max_retry_after_s


def _wait_refused(error: BackendError, engine: EngineConfig) -> BackendError:
    """The failure of a request whose server asks for a longer wait than the run takes."""
    return BackendError(error.kind, f"{error}; the server asks to wait {error.retry_after_s:g} s "
                        f"(Retry-After), more than engine.max_retry_after_s="
                        f"{engine.max_retry_after_s:g}: run again later (answers so far are "
                        f"kept) or raise it", status=error.status)


def _backoff(engine: EngineConfig):
    """Exponential backoff with jitter, but never shorter than the server's Retry-After."""
    # `multiplier`, not `initial`: tenacity 9.2.1 deprecates `initial` (jd/tenacity#629).
    exponential = wait_exponential_jitter(multiplier=engine.backoff_initial_s,
                                          max=engine.backoff_max_s)

    def wait(retry_state) -> float:
        error = retry_state.outcome.exception() if retry_state.outcome else None
        hinted = getattr(error, "retry_after_s", None)
        return max(exponential(retry_state), hinted or 0.0)

    return wait


# The embedded model runs on this one long-lived thread. Handing each llama.cpp call to whichever
# pool thread is free made generation about 18% slower here (4.50 s against 5.33 s for the same
# six greedy requests, interleaved runs); one fixed thread is as fast as the main thread.
_SERIAL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-serial")


def _serial(backend: Backend) -> bool:
    """A backend that must run one request at a time says so with `serial = True`."""
    return bool(getattr(backend, "serial", False))


async def _send_once(backend: Backend, request: ChatRequest,
                     limiter: AsyncLimiter | None) -> Completion:
    """One try. The blocking client call runs in a worker thread so the event loop keeps other
    requests moving."""
    if limiter is not None:
        await limiter.acquire()
    if _serial(backend):
        completion = await asyncio.get_running_loop().run_in_executor(_SERIAL, backend.complete,
                                                                      request)
    else:
        completion = await asyncio.to_thread(backend.complete, request)
    return check_reply_text(request, completion)


async def _attempt(backend: Backend, request: ChatRequest, engine: EngineConfig,
                   limiter: AsyncLimiter | None, before_sleep=None) -> Completion:
    """Send with retries. The first try runs outside tenacity: nearly every request succeeds at
    once, and tenacity's retry state costs about 45 us of event-loop time a request, enough to
    cost 2% of throughput at 160 requests a second (benchmarks/bench_requests.py)."""
    try:
        return await _send_once(backend, request, limiter)
    except BackendError as error:
        if not _is_transient(error) or engine.max_attempts <= 1:
            raise
        first_failure = error
    replayed = False

    async def retry() -> Completion:
        # The first failure is replayed as tenacity's attempt 1, so the attempt count and the
        # backoff schedule (Retry-After included) are the ones tenacity alone would give.
        nonlocal replayed
        if not replayed:
            replayed = True
            raise first_failure
        return await _send_once(backend, request, limiter)

    def worth_retrying(error: BaseException) -> bool:
        return _is_transient(error) and not _asks_too_long_a_wait(error, engine)

    try:
        return await AsyncRetrying(retry=retry_if_exception(worth_retrying),
                                   stop=stop_after_attempt(engine.max_attempts),
                                   wait=_backoff(engine), before_sleep=before_sleep,
                                   reraise=True)(retry)
    except BackendError as error:
        if _is_transient(error) and _asks_too_long_a_wait(error, engine):
            raise _wait_refused(error, engine) from error
        raise


async def _send_missing(backend: Backend, identity: dict[str, str], key: str,
                        request: ChatRequest, store: ResponseStore, engine: EngineConfig,
                        limiter: AsyncLimiter | None, slot: asyncio.Semaphore | None = None,
                        watch: ServerWatch | None = None, concurrency: int = 1) -> Outcome:
    """One request that is not in the store, holding `slot` while it is sent and retried; its
    reply or error is stored before returning, so a crash loses at most the requests in
    flight. With `watch`, a request to a server found gone is not sent, and a failure to reach
    the server probes it (ServerStopped when it is gone). `concurrency`: the slots its model
    has (`slot`'s size), stored with the reply's latency."""
    async with slot or nullcontext():
        if watch is not None:
            watch.check()
        try:
            completion = await _attempt(backend, request, engine, limiter,
                                        watch.retrying if watch is not None else None)
            failure = None
        except Exception as error:  # noqa: BLE001 - a backend's crash is an infrastructure error
            failure = (error if isinstance(error, BackendError)
                       else BackendError("backend_crash", f"{type(error).__name__}: {error}"))
        if failure is not None:
            # Stored in the slot, so a failure to reach the server is on record before the
            # probe that may stop the run (failures are rare: replies are the hot path below).
            store.put_error(key, identity, request.as_payload(), failure.kind, str(failure))
            if watch is not None and failure.kind in UNREACHABLE_KINDS:
                await watch.confirm_up()
            return Outcome(key, None, from_cache=False, error=failure)
    if slot is not None:
        # Let the request waiting for this slot go out before the store write: otherwise,
        # when a burst of replies lands together, each next request waits for the writes of
        # all the replies ahead of it in the loop (2 ms a round at 8 slots).
        await asyncio.sleep(0)
    stored = store.put_ok(key, identity, request.as_payload(), completion.text,
                          completion.completion_tokens, completion.latency_s, concurrency)
    if stored.response_text != completion.text:
        # Another process stored this request's answer first: every rerun replays that one, so
        # it is this run's answer too.
        completion = replace(completion, text=stored.response_text,
                             completion_tokens=stored.completion_tokens,
                             latency_s=stored.latency_s)
    return Outcome(key, completion, from_cache=False)


def _stored(store: ResponseStore, key: str) -> Outcome | None:
    stored = store.get(key)
    if stored is None:
        return None
    completion = Completion(stored.response_text, stored.completion_tokens, "stored",
                            stored.latency_s)
    return Outcome(key, completion, from_cache=True)


def send(backend: Backend, request: ChatRequest, store: ResponseStore,
         engine: EngineConfig | None = None) -> Outcome:
    """Answer one request from the store, or send it (with the same retries as a batch). A
    request that already failed in this run (sent ahead by send_ahead) is that failure: asking
    again doubled the retries of every failed judge request, timeouts included."""
    identity = backend.identity()
    key = backend_request_key(backend, identity, request)
    stored = _stored(store, key)  # another process may have answered it since
    failure = None if stored else store.failure_this_run(key)
    if failure is not None:
        return Outcome(key, None, from_cache=False, error=BackendError(*failure))
    return stored or asyncio.run(
        _send_missing(backend, identity, key, request, store, engine or EngineConfig(), None))


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


def plan_requests(prompts: pl.DataFrame, backends: dict[str, Backend],
                  models: dict[str, ModelConfig]) -> list[Planned]:
    identities = {name: backend.identity() for name, backend in backends.items()}
    planned = []
    for prompt in prompts.sort("prompt_id").iter_rows(named=True):
        name = prompt["model_name"]
        request = build_request(models[name], prompt["system_prompt"], prompt["user_prompt"],
                                prompt["seed"])
        planned.append(Planned(prompt["prompt_id"], name, identities[name],
                               backend_request_key(backends[name], identities[name], request),
                               request))
    return planned


def concurrency_limits(backends: dict[str, Backend],
                       models: dict[str, ModelConfig]) -> dict[str, int]:
    return {name: 1 if _serial(backend) else
            max(1, models[name].max_concurrency) * max(1, len(models[name].base_urls))
            for name, backend in backends.items()}


async def _collect(planned: list[Planned], backends: dict[str, Backend],
                   models: dict[str, ModelConfig], store: ResponseStore, engine: EngineConfig,
                   progress: Progress | None, description: str) -> dict[str, Outcome]:
    limits = concurrency_limits(backends, models)
    slots = {name: asyncio.Semaphore(limits[name]) for name in backends}
    # One request per 60/rpm seconds, no bursts: servers that rate-limit count per window.
    limiters = {name: (AsyncLimiter(1, 60 / engine.requests_per_minute)
                       if engine.requests_per_minute else None) for name in backends}
    # The default thread pool has min(32, cores + 4) workers, which would cap concurrency.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=max(4, sum(limits[name] for name in backends))))
    outcomes: dict[str, Outcome] = {}
    missing = []
    for item in planned:
        stored = _stored(store, item.key)
        failed = None if stored else store.failure_this_run(item.key)
        if failed is not None:  # as `send` says: sent again, a failure spent its retries twice
            outcomes[item.prompt_id] = Outcome(item.key, None, False, BackendError(*failed))
        elif stored is None:
            missing.append(item)
        else:
            outcomes[item.prompt_id] = stored
    # What the store holds is counted in before the bar starts: its rate is of requests sent.
    errors = sum(outcome.error is not None for outcome in outcomes.values())
    task = (progress.add_task(description, total=len(planned), completed=len(outcomes),
                              errors=errors) if progress else None)
    watches = {name: ServerWatch(name, backend) for name, backend in backends.items()}

    async def one(item: Planned) -> None:
        nonlocal errors
        outcome = await _send_missing(backends[item.model_name], item.identity, item.key,
                                      item.request, store, engine, limiters[item.model_name],
                                      slots[item.model_name], watches[item.model_name],
                                      limits[item.model_name])
        outcomes[item.prompt_id] = outcome
        errors += outcome.error is not None
        if progress is not None:
            progress.update(task, advance=1, errors=errors)
        # A refusal of one request (an HTTP 400: its content, its settings) says nothing of the
        # server: failures retried in vain, and a refused key, count towards stopping the run.
        server_failure = (outcome.error if _is_transient(outcome.error) or getattr(
            outcome.error, "status", None) in REFUSED_STATUSES else None)
        watches[item.model_name].count(server_failure,
                                       errors > engine.max_failed_share * len(planned))

    await asyncio.gather(*(one(item) for item in missing))
    return outcomes


def send_planned(planned: list[Planned], backends: dict[str, Backend],
                 models: dict[str, ModelConfig], store: ResponseStore, engine: EngineConfig,
                 show_progress: bool, description: str, role: str = "model",
                 ) -> dict[str, Outcome]:
    """Answer each planned request from the store or send it, concurrently up to each model's
    limit; outcomes by `prompt_id`. Stops first, in one line, when a server to send to is
    unreachable (`role` names what it serves in that line: model or judge)."""
    preflight(backends, {item.model_name for item in planned if store.get(item.key) is None},
              role)
    try:
        with heap_frozen(), progress_bar() if show_progress else nullcontext() as progress:
            return asyncio.run(_collect(planned, backends, models, store, engine, progress,
                                        description))
    except KeyboardInterrupt:
        # Every reply was committed as it arrived: say how many, and that a rerun resumes.
        saved = sum(store.get(item.key) is not None for item in planned)
        raise Interrupted(saved, len(planned), description, store.path) from None
    except (ServerStopped, ServerFailing) as stopped:
        saved = sum(store.get(item.key) is not None for item in planned)
        raise BackendError(stopped.kind, stopped_run_line(stopped, role, f"{saved} of "
                                                          f"{len(planned)} {description}",
                                                          store.path),
                           status=stopped.status) from None


def send_ahead(requests: Iterable[tuple[str, ChatRequest]], backends: dict[str, Backend],
               models: dict[str, ModelConfig], store: ResponseStore, engine: EngineConfig,
               show_progress: bool, description: str, role: str = "model") -> None:
    """Send (model name, request) pairs concurrently into the store, for a loop that then asks
    for them one at a time (the judge panel, option scoring) and reads them back at once.
    Identical requests go out once. Failures are stored, and the loop's own `send` returns
    them without sending again (a rerun sends them again)."""
    identities: dict[str, dict[str, str]] = {}
    planned: dict[str, Planned] = {}
    for name, request in requests:
        identity = identities.setdefault(name, backends[name].identity())
        key = backend_request_key(backends[name], identity, request)
        planned[key] = Planned(key, name, identity, key, request)
    if planned:
        send_planned(list(planned.values()), backends, models, store, engine, show_progress,
                     description, role)


def collect_responses(
    prompts: pl.DataFrame,
    backends: dict[str, Backend],
    models: dict[str, ModelConfig],
    store: ResponseStore,
    engine: EngineConfig | None = None,
    show_progress: bool = True,
) -> pl.DataFrame:
    """Send every prompt as its own request, concurrently up to each model's limit; return one
    response row per prompt, errors included."""
    engine = engine or EngineConfig()
    planned = plan_requests(prompts, backends, models)
    workload = estimate(planned, store, concurrency_limits(backends, models))
    timing = answering_time_text(workload["seconds"], workload["to_send"],
                                 workload["timed_at_other_concurrency"])
    log.info("respond: %d prompts, %d in the store, %d to send (about %d prompt tokens and at "
             "most %d completion tokens%s)", workload["prompts"], workload["stored"],
             workload["to_send"], workload["prompt_tokens"], workload["max_completion_tokens"],
             timing)
    outcomes = send_planned(planned, backends, models, store, engine, show_progress, "answers")
    rows = []
    for item in planned:
        outcome = outcomes[item.prompt_id]
        completion = outcome.completion
        rows.append({
            "prompt_id": item.prompt_id,
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
