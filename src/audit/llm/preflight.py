"""Before sending: what a run will cost, and whether its servers are up; while sending, whether
a server that stopped answering is gone, or fails every request (ServerWatch).

The first two run on the planned requests before the first one goes out, so a user sees the size
of a large run, or learns that a server is down, in seconds rather than after minutes of
retries. The time an adaptive run has spent is counted here too, from the same stored latencies
the estimate reads, so a budget and its estimate agree.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

import polars as pl

from audit.llm.backends import UNREACHABLE_KINDS, Backend, BackendError, ChatRequest
from audit.llm.store import ResponseStore

log = logging.getLogger(__name__)
# Characters a prompt token, for estimates made before any tokenizer is at hand.
CHARS_PER_TOKEN = 4
# A model's finished requests that may fail in a row (each after its retries) before the run
# stops, once the batch holds more failures than engine.max_failed_share accepts (so its stage
# would stop at its end anyway). A server that answers every request with an error (HTTP 500, a
# proxy's HTML login page, a generator stuck while its model list still answers) otherwise
# spent every request's retries before the run said so: 139 s for the 15-prompt smoke design
# on a loopback server, about 37 min for the default 252 prompts, days where every try timed
# out (server probe, 2026-12-07). Five: a server that fails one request in ten, at random,
# has five in a row in about one batch of 250 requests in 450, and at the default share of 0
# such a batch fails its stage anyway; stopping then loses only requests not yet sent.
FAILURES_IN_A_ROW = 5


@dataclass(frozen=True)
class Planned:
    """One request a run is about to need: for this prompt and model, under this store key
    (engine.plan_requests builds them; the engine sends those the store lacks)."""

    prompt_id: str
    model_name: str
    identity: dict[str, str]
    key: str
    request: ChatRequest


def estimate(planned: list[Planned], store: ResponseStore,
             concurrency: dict[str, int]) -> dict[str, float]:
    """What a run will cost before it starts: requests to send and tokens (at ~4 characters a
    prompt token, and every completion at its max_tokens, so an upper bound), and the time from
    this model's earlier answers in the store (NaN when it has none; seconds_to_answer)."""
    missing = [item for item in planned if store.get(item.key) is None]
    prompt_chars = sum(len(m.content) for item in missing for m in item.request.messages)
    seconds, timed_elsewhere = answering_forecast(missing, store, concurrency)
    return {"prompts": len(planned), "stored": len(planned) - len(missing),
            "to_send": len(missing), "prompt_tokens": prompt_chars // CHARS_PER_TOKEN,
            "max_completion_tokens": sum(item.request.max_tokens for item in missing),
            "seconds": seconds, "timed_at_other_concurrency": timed_elsewhere}


def seconds_to_answer(planned: list[Planned], store: ResponseStore,
                      concurrency: dict[str, int]) -> float:
    """The time these requests would take, from each model's earlier answers in the store (NaN
    when a model has none): answering_forecast's seconds."""
    return answering_forecast(planned, store, concurrency)[0]


def answering_forecast(planned: list[Planned], store: ResponseStore,
                       concurrency: dict[str, int]) -> tuple[float, bool]:
    """The time these requests would take, and whether a model's figure comes from answers
    asked at another concurrency than its own now.

    A model's answers asked at its concurrency now give their median latency over that
    concurrency. Without any, its other answers give the median of each one's latency over the
    concurrency it was asked at, the share of a run's time it took: the right figure for a
    model on local cores, whose rate does not grow with slots (the embedded model answered 1.08
    prompts a second at 1 slot and 1.14 at 4, benchmarks/RESULTS.md; 126 prompts at 4 slots
    took 127 s where this estimate from 1-slot answers said 132 s and their latency over 4 said
    32 s, 2026-12-04); a server with idle slots answers faster than that at more slots. Answers
    stored before the store kept their concurrency count, as asked at the concurrency now, only
    when no answer of the model has one."""
    seconds, elsewhere = 0.0, False
    identities = {item.model_name: item.identity for item in planned}
    for name, identity in identities.items():
        count = sum(item.model_name == name for item in planned)
        now = concurrency[name]
        times = store.answer_times(identity)
        if not times:
            return float("nan"), False
        same = [time.latency_s / now for time in times if time.concurrency == now]
        other = [time.latency_s / time.concurrency for time in times
                 if time.concurrency not in (None, now)]
        unknown = [time.latency_s / now for time in times if time.concurrency is None]
        # Answers with no recorded concurrency count only without any that have one: an
        # upgraded store's old answers, asked at 1 slot, timed a run at 4 as a quarter.
        shares = same or other or unknown
        elsewhere = elsewhere or (not same and bool(other))
        seconds += count * float(median(shares))
    return seconds, elsewhere


def answering_seconds(responses: pl.DataFrame, model_names: pl.DataFrame,
                      concurrency: dict[str, int], store: ResponseStore) -> float:
    """The time the answers took as the store recorded them (an answer served from the store
    keeps the latency and concurrency of its first asking): each answer's latency over the
    concurrency it was asked at, summed, as the preflight estimates a run's time. A speed
    setting changed between a run and its rerun does not change what the rerun spends.
    ``model_names``: prompt_id -> model_name; answers stored before the store kept their
    concurrency count at the model's concurrency now."""
    recorded = [None if key is None or (stored := store.get(key)) is None else stored.concurrency
                for key in responses["request_key"]]
    rows = (responses.select("prompt_id", "latency_s")
            .with_columns(pl.Series("asked_at", recorded, dtype=pl.Int64))
            .join(model_names.select("prompt_id", "model_name"), on="prompt_id"))
    now = pl.col("model_name").replace_strict(concurrency, return_dtype=pl.Int64)
    return float(rows.select((pl.col("latency_s").fill_null(0.0)
                              / pl.coalesce("asked_at", now)).sum()).item())


def answering_time_text(seconds: float, to_send: int, timed_elsewhere: bool = False) -> str:
    """The respond line's estimate of the time left ("" with nothing to go on or to send); a
    few seconds read "about 0.0 min", as if no time at all."""
    minutes = seconds / 60
    if minutes != minutes or not to_send:
        return ""
    said = "under 0.1 min" if minutes < 0.05 else f"about {minutes:.1f} min"
    if timed_elsewhere:
        return (f", {said} at the rate of earlier answers asked at another max_concurrency "
                f"(a server with idle slots may be faster)")
    return f", {said} at the median latency of earlier answers"


# Pre-flight failures that mean no request to this server can succeed now: unreachable, a model
# it does not serve, a web page where the API should be (a proxy's login), or a key it refuses
# (every request would be refused the same way: a hosted API with a bad key answered each of
# thousands of prompts with a 401).
STOPPING_KINDS = UNREACHABLE_KINDS | {"model_not_found", "not_the_api"}
REFUSED_STATUSES = frozenset({401, 403})


def server_problem(backend: Backend) -> BackendError | None:
    """What the server behind `backend` says to a request for its model list (a cheap call that
    needs the server): None when it answers, or when the backend is no server (in-process
    models, and test backends)."""
    probe = getattr(backend, "health_check", None)
    try:
        if probe is not None:
            probe()
    except BackendError as error:
        return error
    return None


def preflight(backends: dict[str, Backend], model_names: Iterable[str],
              role: str = "model") -> None:
    """Ask each server about to be sent requests for its model list (a cheap call that needs
    the server) before sending anything. An unreachable server stops the run at once, in one
    line: otherwise every request would fail through its retries one by one, which takes
    minutes on a large design before the user learns the server was never up; so does a model
    the server's list leaves out, or a key it refuses. Any other failure only warns: some
    servers do not list models, and the requests will tell."""
    for name in sorted(set(model_names)):
        error = server_problem(backends[name])
        if error is None:
            continue
        if error.kind not in STOPPING_KINDS and error.status not in REFUSED_STATUSES:
            log.warning("%s '%s': the health check failed (%s); sending anyway", role, name,
                        error)
            continue
        # The fix the error's own words call for: "start the server" for a key the server
        # refused, or for one that is up but slow, sent the user the wrong way (server probe
        # 2026-12-07).
        fix = (f"fix it in conf/{role}/" if error.kind in {"model_not_found", "not_the_api"} else
               f"fix the key or its variable (api_key_env in conf/{role}/)"
               if error.status in REFUSED_STATUSES else
               f"the server is there but did not answer in time (busy, or loading its model): "
               f"wait, or raise timeout_s in conf/{role}/," if error.kind == "timeout" else
               f"start the server (or fix base_url in conf/{role}/)")
        raise BackendError(error.kind, f"{role} '{name}': {error}. Nothing was sent: {fix} "
                                       "and rerun", status=error.status) from error


class ServerStopped(BackendError):
    """A server that answered at the start stopped answering: its model and the probe's error."""

    def __init__(self, model_name: str, error: BackendError) -> None:
        super().__init__(error.kind, str(error), status=error.status)
        self.model_name = model_name


class ServerFailing(BackendError):
    """A server that is up failed a model's last FAILURES_IN_A_ROW requests: the last error."""

    def __init__(self, model_name: str, error: BackendError) -> None:
        super().__init__(error.kind, str(error), status=error.status)
        self.model_name = model_name


class ServerWatch:
    """Stops a run whose server went away mid-run. A server that died otherwise failed every
    remaining request through all its retries, in turn: minutes on a small design, hours on a
    large one, before the run said so.

    The engine calls `check` in a request's slot before sending, and `confirm_up` in that slot
    after a request gave up unable to reach the server. The probe runs in the slot so that no
    other request to the model takes it meanwhile: at one request at a time, exactly one
    request's retries are spent before the run stops. (With the probe after the slot was
    freed, the next request sent one or two tries during it, by thread timing.)"""

    def __init__(self, model_name: str, backend: Backend) -> None:
        self.model_name, self.backend = model_name, backend
        self.stopped: ServerStopped | ServerFailing | None = None
        self.failed_in_a_row = 0
        self.said_timeout = False
        self._probing = asyncio.Lock()  # one probe a model at a time

    def check(self) -> None:
        if self.stopped is not None:
            raise self.stopped

    async def confirm_up(self) -> None:
        """Ask the server once; raise ServerStopped, now and for every later request, when it
        cannot be reached."""
        async with self._probing:
            self.check()
            error = await asyncio.get_running_loop().run_in_executor(None, server_problem,
                                                                     self.backend)
            if error is not None and error.kind in UNREACHABLE_KINDS:
                self.stopped = ServerStopped(self.model_name, error)
                raise self.stopped from error

    def retrying(self, retry_state) -> None:
        """Before a retry (tenacity's before_sleep): the model's first try that timed out is
        said at once. A server that lists its models but does not generate (stuck, or
        overloaded) left the run silent through every try's timeout: 4 x 120 s a request at the
        defaults (server probe, 2026-12-07)."""
        error = retry_state.outcome.exception() if retry_state.outcome else None
        if not self.said_timeout and getattr(error, "kind", None) == "timeout":
            self.said_timeout = True
            log.warning("'%s': %s; retrying. A server that is up but does not answer in time is "
                        "busy or stuck (its log says which); a slow model needs a larger "
                        "timeout_s", self.model_name, error)

    def count(self, failure: BackendError | None, beyond_accepted: bool) -> None:
        """After each finished request (`failure` None when it was answered or refused): raise
        ServerFailing, now and for every later request, when the model's last FAILURES_IN_A_ROW
        failed and the batch already failed beyond what the stage accepts."""
        self.failed_in_a_row = self.failed_in_a_row + 1 if failure is not None else 0
        if (beyond_accepted and self.stopped is None
                and self.failed_in_a_row >= FAILURES_IN_A_ROW):
            self.stopped = ServerFailing(self.model_name, failure)
            raise self.stopped


def stopped_run_line(stopped: ServerStopped | ServerFailing, role: str, saved: str,
                     store: object) -> str:
    """The one line a run stopped by its ServerWatch ends with; `saved`: "N of M answers"."""
    if isinstance(stopped, ServerStopped):
        return (f"{role} '{stopped.model_name}' stopped answering mid-run ({stopped}); {saved} "
                f"are saved in {store}: start the server and rerun the same command to send "
                "the rest")
    return (f"{role} '{stopped.model_name}' failed its last {FAILURES_IN_A_ROW} requests in a "
            f"row ({stopped.kind}: {stopped}); stopped with {saved} saved in {store}: fix what "
            "the error names (the server's log may say more), then rerun the same command to "
            "send the rest")
