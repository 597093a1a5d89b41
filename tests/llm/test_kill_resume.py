"""`kill -9` in the middle of the respond stage loses at most the requests in flight, and the
rerun never sends a request whose answer was stored: counted at the server, a loopback that
speaks Ollama's API with the embedded model."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from servers.ollama_loopback import MODEL_TAG, OllamaLoopback

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _signature(messages: list[dict], seed: int) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages] + [seed])


def _audit_command(tmp_path: Path, url: str, run_dir: str) -> list[str]:
    return [sys.executable, "-m", "audit", "items=smoke", "personas=smoke",
            "design.replicates=1", "model=ollama_llama3", f"model.ollama_llama3.model={MODEL_TAG}",
            f"model.ollama_llama3.base_url={url}", "model.ollama_llama3.sampling.max_tokens=24",
            "judge=rules_only", "judge.evaluate_on_gold=false", "tracking=none",
            "fit.draws=300", "fit.tune=300", f"paths.response_store={tmp_path / 'store.sqlite3'}",
            f"hydra.run.dir={tmp_path / run_dir}"]


def _stored_signatures(store: Path) -> set[str]:
    with sqlite3.connect(store) as connection:
        rows = connection.execute(
            "SELECT request_json FROM responses WHERE status = 'ok'").fetchall()
    return {_signature(json.loads(row)["messages"], json.loads(row)["seed"]) for (row,) in rows}


def _kill_9_after(command: list[str], server: OllamaLoopback, requests: int,
                 seconds: float, why: str) -> None:
    """Start the audit and kill -9 it once the server has received ``requests`` chats."""
    first = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + seconds
    while len(server.chats) < requests and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert first.poll() is None, why
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)


def test_kill_9_mid_run_then_rerun_resends_nothing_stored(tmp_path):
    with OllamaLoopback() as server:
        _kill_9_after(_audit_command(tmp_path, server.url, "run1"), server, 6, 300,
                      "the audit finished before it could be killed")
        answered_before_kill = [_signature(chat["messages"], chat["options"]["seed"])
                                for chat in server.chats]
        stored = _stored_signatures(tmp_path / "store.sqlite3")
        # Everything the server had answered is stored, except at most the one in flight.
        assert stored <= set(answered_before_kill)
        assert len(stored) >= len(set(answered_before_kill)) - 1 >= 5

        chats_before_rerun = len(server.chats)
        second = subprocess.run(_audit_command(tmp_path, server.url, "run2"), cwd=PROJECT_ROOT,
                                capture_output=True, text=True, timeout=600)
        assert second.returncode == 0, second.stderr[-3000:]
        resent = [_signature(chat["messages"], chat["options"]["seed"])
                  for chat in server.chats[chats_before_rerun:]]
    assert not set(resent) & stored, "a stored answer was requested again"
    responses = pl.read_parquet(tmp_path / "run2" / "responses.parquet")
    assert responses.height == 15 and (responses["status"] == "ok").all()
    assert responses["from_cache"].sum() == len(stored)
    assert len(resent) == 15 - len(stored)


def test_an_adaptive_audit_killed_in_its_second_round_resumes_and_replays(tmp_path):
    # Bugs caught: a resumed adaptive run that chooses other prompts than the killed one had
    # (its stored answers go unused and are paid for again), a round re-asked from the start,
    # or a replay that is not served wholly from the store with the same rounds.
    # design.futility=0: no futility stop, so the run goes on round by round to the budget
    # (this test is about resuming inside a round, not about when a run stops: with one persona
    # text a level, the smoke personas, the text floor ends the run as futile after round one).
    # Two replicates (a budget of 30 prompts, so three rounds): four made five rounds of fits in
    # each of the resumed run and its replay, 240 s of the suite against about half that.
    adaptive = ["design.replicates=2", "design.adaptive=true", "design.round_prompts=12",
                "design.futility=0", "fit.judge_error=false"]

    def command(url: str, run_dir: str) -> list[str]:
        return _audit_command(tmp_path, url, run_dir) + adaptive

    with OllamaLoopback() as server:
        # The first round asks about 12 prompts (10 on this design) and is fitted; the 15th
        # request is inside the second round.
        _kill_9_after(command(server.url, "run1"), server, 15, 400,
                      "the adaptive audit ended before its second round")
        stored = _stored_signatures(tmp_path / "store.sqlite3")
        assert len(stored) >= 13

        chats_before_rerun = len(server.chats)
        second = subprocess.run(command(server.url, "run2"), cwd=PROJECT_ROOT,
                                capture_output=True, text=True, timeout=900)
        assert second.returncode == 0, second.stderr[-3000:]
        resent = {_signature(chat["messages"], chat["options"]["seed"])
                  for chat in server.chats[chats_before_rerun:]}
        chats_before_replay = len(server.chats)
        third = subprocess.run(command(server.url, "run3"), cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=900)
        assert third.returncode == 0, third.stderr[-3000:]
        assert len(server.chats) == chats_before_replay, "the replay asked the model again"
    assert not resent & stored, "a stored answer was requested again"
    resumed = pl.read_parquet(tmp_path / "run2" / "responses.parquet")
    # Every answer the killed run stored was one the resumed run chose again.
    assert resumed["from_cache"].sum() == len(stored)
    assert resumed.height == len(stored) + len(resent)
    rounds = pl.read_csv(tmp_path / "run2" / "adaptive_rounds.csv")
    assert rounds.height >= 2 and rounds["prompts"][-1] == resumed.height
    replay = pl.read_parquet(tmp_path / "run3" / "responses.parquet")
    assert replay["from_cache"].all()
    assert sorted(replay["prompt_id"]) == sorted(resumed["prompt_id"])
    assert pl.read_csv(tmp_path / "run3" / "adaptive_rounds.csv").equals(rounds)
