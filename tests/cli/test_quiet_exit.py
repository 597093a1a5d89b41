"""A run ends without a traceback and without library chatter that tells a user nothing."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.logs import quiet_noisy_loggers

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    # A fresh cache directory: ArviZ shows its banner once a day, stamped in the user's cache.
    env = {**os.environ, "PYTHONPATH": SRC, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)


def test_importing_audit_hides_arviz_refactor_banner(tmp_path):
    bare = _python("import arviz", tmp_path / "bare")
    assert "ArviZ is undergoing" in bare.stderr  # the banner this guards against still exists
    quiet = _python("import audit, arviz", tmp_path / "quiet")
    assert quiet.returncode == 0 and "ArviZ is undergoing" not in quiet.stderr


def test_per_request_and_table_creation_loggers_are_quieted():
    quiet_noisy_loggers()
    for name in ("httpx", "mlflow.store.db.utils", "alembic.runtime.migration"):
        assert not logging.getLogger(name).isEnabledFor(logging.INFO), name


@pytest.mark.slow
def test_the_embedded_runtime_exits_cleanly_with_the_model_loaded(tmp_path):
    """The runtime is left loaded at exit, as after an audit: it is closed before interpreter
    teardown, so no destructor error or traceback is printed and the exit status is 0."""
    done = _python(
        "from audit.llm.backends import ChatRequest, Message, create_backend\n"
        "from audit.config import ModelConfig\n"
        "backend = create_backend(ModelConfig(model='smollm2-135m-instruct'))\n"
        "print(backend.complete(ChatRequest((Message('user', 'Hi'),), 0.0, 1.0, 4, 1.0, 0))"
        ".completion_tokens)\n", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in {"1", "2", "3", "4"}
    for noise in ("Traceback", "Exception ignored", "Error"):
        assert noise not in done.stderr, done.stderr[-2000:]
