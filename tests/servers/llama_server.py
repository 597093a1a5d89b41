"""llama.cpp's own OpenAI-compatible HTTP server (xllamacpp runs it in process on a free loopback
port): a real server for the openai_compatible backend that needs no compiler."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import xllamacpp


@contextmanager
def openai_server(model_path: str, alias: str) -> Iterator[str]:
    """Serve the GGUF file under `alias`; yields the /v1 base URL. Its prompt cache is off, as in
    the embedded backend, so the same request gives the same text through either."""
    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.model_alias = {alias}  # a set in xllamacpp: a string was read as its letters
    params.n_ctx = 2048
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.cache_prompt = False
    params.verbosity = -1
    params.hostnames = ["127.0.0.1"]
    server = xllamacpp.Server(params)
    base_url = f"{server.listening_address}/v1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                break
        except OSError:
            time.sleep(0.3)
    else:
        raise RuntimeError("xllamacpp's HTTP server did not start")
    try:
        yield base_url
    finally:
        del server
