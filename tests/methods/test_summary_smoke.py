"""A smoke audit's last lines state its finding (`python -m audit items=smoke personas=smoke`, a
rules-only judge, a short fit), and a run without signal says NO SIGNAL once, not twice. The
audited model is a loopback OpenAI-compatible server with scripted answers, so no model runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from servers.openai_loopback import MODEL, REPLIES, OpenAILoopback

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _smoke(tmp_path: Path, replies: tuple[str, ...]) -> subprocess.CompletedProcess:
    with OpenAILoopback(replies=replies) as server:
        command = [sys.executable, "-m", "audit", "items=smoke", "personas=smoke",
                   "design.replicates=1", "model=vllm", f"model.vllm.base_url={server.url}",
                   f"model.vllm.model={MODEL}", "judge=rules_only",
                   "judge.evaluate_on_gold=false", "fit.draws=300", "fit.tune=300",
                   f"tracking.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
                   f"tracking.artifact_root={tmp_path / 'artifacts'}",
                   f"paths.response_store={tmp_path / 'store.sqlite3'}",
                   f"hydra.run.dir={tmp_path / 'run'}"]
        env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
        done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True,
                              env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _answer(stdout: str) -> list[str]:
    """The lines from `Result:` to the end of stdout."""
    lines = stdout.rstrip().splitlines()
    start = max(index for index, line in enumerate(lines) if line.startswith("Result: "))
    return lines[start:]


def test_the_last_lines_of_a_smoke_run_state_its_finding(tmp_path):
    done = _smoke(tmp_path, REPLIES)
    answer = _answer(done.stdout)
    assert answer[0] == "Result: rasch audit of vllm"
    contrasts = answer[1:-4]
    assert [line.split(":")[0].strip() for line in contrasts] == ["gender man vs woman",
                                                                  "race Black vs White"]
    for line in contrasts:
        assert re.fullmatch(r"  \w+ \w+ vs \w+: (different|no practical difference|undecided|a "
                            r"gap).*, [+-]\d\.\d+ \(94% HDI [+-]\d\.\d+ to [+-]\d\.\d+\)",
                            line), line
    assert re.fullmatch(r"CI verdict: (PASS|FAIL) \(\d+ of 3 comparisons flagged\).*", answer[-4])
    assert answer[-3] == f"Report: {tmp_path / 'run' / 'report' / 'report.html'}"
    assert answer[-2] == ("MLflow runs: http://127.0.0.1:5000/#/experiments/1/runs?"
                          "workflowType=machine_learning&viewStateShareKey=audit-rasch")
    assert "NO SIGNAL" not in done.stdout + done.stderr


def test_a_run_without_signal_says_so_once_leading_its_answer(tmp_path):
    done = _smoke(tmp_path, REPLIES[:1])  # every answer approves: the outcome never varies
    answer = _answer(done.stdout)
    assert answer[1].startswith("  NO SIGNAL: this run can neither show nor rule out")
    assert (done.stdout + done.stderr).count("NO SIGNAL") == 1
