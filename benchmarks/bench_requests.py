"""Throughput of the request engine against a server with fixed latency and parallel slots.

Usage: python benchmarks/bench_requests.py [--latency 0.05] [--slots 8] [--requests 400]

Starts a loopback OpenAI-compatible server (its own process, so it shares no GIL with the
engine) that holds each request for `latency` seconds with at most `slots` in service at once,
then measures in one run:
- the engine (the real `openai_compatible` backend, max_concurrency = slots) sending every prompt,
- the ideal throughput, slots / latency,
- the baseline of a plain sequential loop that sleeps 0.5 s between calls, as tutorials do,
- the per-prompt cost of a fully cached rerun (every answer from the response store).
Ends with one machine-readable line:
RESULT engine_vs_ideal=<x> engine_vs_baseline=<y> cached_ms_per_prompt=<z>
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BASELINE_SLEEP_S = 0.5
BASELINE_REQUESTS = 6


def serve(port: int, latency_s: float, slots: int) -> None:
    """The loopback server: a fixed service time and a fixed number of parallel slots."""
    gate = threading.BoundedSemaphore(slots)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

        def log_message(self, *args) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm
            # and the client's delayed ACK add about 40 ms to every keep-alive request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _reply(self, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._reply({"object": "list", "data": [{"id": "stub", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with gate:
                time.sleep(latency_s)
            content = f"APPROVE. {len(body['messages'][-1]['content'])}"
            self._reply({"id": "x", "object": "chat.completion", "created": int(time.time()),
                         "model": body["model"], "choices": [{
                             "index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 3,
                                   "total_tokens": 13}})

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def start_server(latency_s: float, slots: int) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency",
                                str(latency_s), "--slots", str(slots)])
    base_url = f"http://127.0.0.1:{port}/v1"
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).close()
            return process, base_url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the loopback server did not start")


def prompts_table(count: int):
    import polars as pl

    return pl.DataFrame({"prompt_id": [f"p{index:05d}" for index in range(count)],
                         "model_name": ["stub"] * count, "system_prompt": [""] * count,
                         "user_prompt": [f"Decide case {index}." for index in range(count)],
                         "seed": list(range(count))})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--serve", type=int, default=None)
    arguments = parser.parse_args()
    if arguments.serve is not None:
        serve(arguments.serve, arguments.latency, arguments.slots)
        return

    from audit.llm.backends import ChatRequest, Message, create_backend
    from audit.config import EngineConfig, ModelConfig, SamplingConfig
    from audit.llm.engine import collect_responses
    from audit.llm.store import ResponseStore

    process, base_url = start_server(arguments.latency, arguments.slots)
    try:
        model = ModelConfig(backend="openai_compatible", model="stub", base_url=base_url,
                            max_concurrency=arguments.slots, timeout_s=30,
                            sampling=SamplingConfig(max_tokens=8))
        models = {"stub": model}
        prompts = prompts_table(arguments.requests)
        engine = EngineConfig(max_attempts=1)
        with tempfile.TemporaryDirectory() as scratch:
            store_path = Path(scratch) / "store.sqlite3"
            backends = {"stub": create_backend(model)}  # client import and setup not timed
            with ResponseStore(store_path) as store:
                # Zero prompts, untimed: pandera builds its validation backend once per process
                # (about 0.1 s here), which a real run pays while validating its design tables
                # before this stage starts.
                collect_responses(prompts.head(0), backends, models, store, engine,
                                  show_progress=False)
            with ResponseStore(store_path) as store:
                started = time.perf_counter()
                fresh = collect_responses(prompts, backends, models, store, engine,
                                          show_progress=False)
                engine_s = time.perf_counter() - started
            with ResponseStore(store_path) as store:
                started = time.perf_counter()
                cached = collect_responses(prompts, backends, models, store, engine,
                                           show_progress=False)
                cached_s = time.perf_counter() - started
        assert (fresh["status"] == "ok").all() and cached["from_cache"].all()

        backend = create_backend(model)
        started = time.perf_counter()
        for index in range(BASELINE_REQUESTS):
            backend.complete(ChatRequest((Message("user", f"Baseline {index}."),), 0.7, 0.95, 8,
                                         1.0, index))
            time.sleep(BASELINE_SLEEP_S)
        baseline_rate = BASELINE_REQUESTS / (time.perf_counter() - started)
    finally:
        process.terminate()
        process.wait(timeout=10)

    engine_rate = arguments.requests / engine_s
    ideal_rate = arguments.slots / arguments.latency
    cached_ms = 1000 * cached_s / arguments.requests
    print(f"server: {arguments.latency * 1000:.0f} ms a request, {arguments.slots} slots; "
          f"{arguments.requests} prompts")
    print(f"engine:   {engine_rate:8.1f} requests/s ({engine_s:.2f} s)")
    print(f"ideal:    {ideal_rate:8.1f} requests/s (slots / latency)")
    print(f"baseline: {baseline_rate:8.1f} requests/s (sequential, {BASELINE_SLEEP_S} s sleep)")
    print(f"cached rerun: {cached_s:.3f} s, {cached_ms:.3f} ms per prompt")
    print(f"RESULT engine_vs_ideal={engine_rate / ideal_rate:.3f} "
          f"engine_vs_baseline={engine_rate / baseline_rate:.1f} "
          f"cached_ms_per_prompt={cached_ms:.3f}")


if __name__ == "__main__":
    main()
