"""The smoke audit (`python -m audit items=smoke personas=smoke design.replicates=1`) with a
rules-only judge and a short fit, its model a loopback OpenAI-compatible server with scripted
answers: a real run end to end, in seconds, with no model. For the tests of what a run prints and
where its MLflow link leads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from servers.openai_loopback import MODEL, REPLIES, OpenAILoopback

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def run_smoke_audit(tmp_path: Path,
                    replies: tuple[str, ...] = REPLIES) -> subprocess.CompletedProcess:
    """Run it in `tmp_path` (run directory, MLflow store, response store); it must succeed."""
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
                              env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done
