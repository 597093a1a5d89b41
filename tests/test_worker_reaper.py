"""The suite's own safety net (tests/conftest.py): when pytest-timeout stops a worker, what its
test started dies with it instead of spinning on a CPU for the rest of the CI run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HANGING_TEST = '''
import subprocess, sys, time
from pathlib import Path

def test_starts_a_child_then_hangs():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path("child.pid").write_text(str(child.pid))
    time.sleep(120)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_a_worker_stopped_by_the_timeout_takes_its_childrens_processes_with_it(tmp_path: Path):
    """Fails if the worker's process group is not reaped (the bug: a timed-out model test's
    audit subprocess kept running and slowed every later test)."""
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_hang.py").write_text(HANGING_TEST)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider",
                           "-o", "timeout=3", "-o", "timeout_method=thread",
                           "test_hang.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "crashed" in done.stdout, done.stdout[-2000:]
    pid = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, 9)
        pytest.fail("the timed-out worker's child process outlived it")
