"""Ctrl-C in the middle of the respond stage ends the run with one line: how many answers are
saved and that the same command resumes; no traceback, exit status 130. SIGTERM (a CI job's
timeout, `kill`, `docker stop`) the same, with exit status 143. Against a loopback
OpenAI-compatible server whose answers take a while, so requests are in flight when it comes."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers.openai_loopback import MODEL, OpenAILoopback

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _stored(store: Path) -> int:
    with sqlite3.connect(store) as connection:
        return connection.execute(
            "SELECT COUNT(*) FROM responses WHERE status = 'ok'").fetchone()[0]


def _stopped_after_three_answers(overrides: list[str], sent: int) -> tuple[int, str]:
    """The exit status and stderr of a smoke audit of a slow loopback server (one request at a
    time), sent `sent` once the server has had three requests."""
    with OpenAILoopback(delay_s=0.3) as server:
        command = [sys.executable, "-m", "audit", *overrides, "items=smoke", "personas=smoke",
                   "design.replicates=1", "model=vllm", f"model.vllm.base_url={server.url}",
                   f"model.vllm.model={MODEL}", "model.vllm.max_concurrency=1",
                   "judge=rules_only", "judge.evaluate_on_gold=false"]
        env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
        run = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 300
        while len(server.chats) < 3 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        assert run.poll() is None, "the run ended before it could be interrupted"
        run.send_signal(sent)
        _, stderr = run.communicate(timeout=120)
    return run.returncode, stderr


@pytest.mark.parametrize(("sent", "status", "word"), [
    (signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, r"terminated \(SIGTERM\)")])
def test_an_interrupt_during_respond_prints_one_line_and_exits_128_plus_the_signal(
        tmp_path, sent: int, status: int, word: str):
    """Bug caught for SIGTERM: the run ended at once with no line (status -15), leaving a CI
    log that said nothing of the answers saved or of the rerun that resumes."""
    store = tmp_path / "store.sqlite3"
    status_got, stderr = _stopped_after_three_answers(
        ["tracking=none", f"paths.response_store={store}", f"hydra.run.dir={tmp_path / 'run'}"],
        sent)
    assert status_got == status, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    said = [line for line in stderr.splitlines() if re.search(word, line)]
    assert len(said) == 1, stderr[-3000:]
    assert said[0] == stderr.strip().splitlines()[-1], stderr[-3000:]  # the last thing said
    saved = re.search(word + r": (\d+) of 15 answers are saved in (\S+); rerun the same "
                      r"command to resume", said[0])
    assert saved, said[0]
    # The server had answered 3; the reply in flight when Ctrl-C came may be lost, no more.
    assert int(saved.group(1)) == _stored(store) >= 2 and saved.group(2) == str(store)


def test_sigterm_in_a_sweep_ends_its_parent_run_failed_instead_of_running_for_good(tmp_path):
    """A sweep (`-m`, two jobs in this process) stopped by SIGTERM in its first job. Bug caught:
    the process ended at once, so the sweep's MLflow parent run, opened when the sweep started,
    stayed RUNNING in the UI for good, and the log said nothing."""
    from audit.tracking.mlflow import find_runs

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    status, stderr = _stopped_after_three_answers(
        ["-m", "design.seed=1,2", f"tracking.tracking_uri={uri}",
         f"tracking.artifact_root={tmp_path / 'artifacts'}",
         f"paths.response_store={tmp_path / 'store.sqlite3'}",
         f"hydra.sweep.dir={tmp_path / 'multirun'}"], signal.SIGTERM)
    assert status == 143, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert re.search(r"terminated \(SIGTERM\): \d+ of 15 answers are saved", stderr), stderr
    parents = [found for found in find_runs(uri, "audit")
               if found["tags"].get("audit.role") == "sweep"]
    assert [parent["status"] for parent in parents] == ["FAILED"], parents
