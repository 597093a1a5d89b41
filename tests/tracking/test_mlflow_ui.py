"""A user who follows what a run prints lands on the experiment's runs table, with the method's
headline metrics as columns, in a fresh browser profile: the real `mlflow ui` in a real headless
Chromium. MLflow 3.17 opens an experiment on its GenAI "Overview" unless the URL asks for the
machine-learning view (audit.tracking.mlflow's docstring says why a URL, not a setting)."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser import ARTIFACT_DIR, LAUNCH_ARGS, require_chromium
from smoke_audit import run_smoke_audit

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.integration]
HEADLINE_COLUMNS = ["contrast/gender/man_vs_woman/mean", "contrast/race/Black_vs_White/mean"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(command: str, port: int) -> subprocess.Popen:
    """The `mlflow ui` command the run printed, on a free port."""
    arguments = command.split() + ["--port", str(port)]
    server = subprocess.Popen([str(Path(sys.executable).parent / "mlflow"), *arguments[1:]],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return server
        except OSError:
            time.sleep(0.5)
    server.send_signal(signal.SIGINT)
    raise AssertionError("mlflow ui did not start")


def test_the_printed_url_opens_the_runs_table_with_the_headline_columns(tmp_path):
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    stdout = run_smoke_audit(tmp_path).stdout.splitlines()
    url = next(line.split(": ", 1)[1] for line in stdout if line.startswith("MLflow runs: "))
    command = next(re.search(r"serve it first: (.*)\)$", line)[1] for line in stdout
                   if "serve it first: " in line)
    assert "--port 5000" in command and url.startswith("http://127.0.0.1:5000/#/")
    port = _free_port()
    server = _serve(command.replace(" --port 5000", ""), port)
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=executable, headless=True,
                args=LAUNCH_ARGS, viewport={"width": 1600, "height": 1000})
            page = context.new_page()
            page.goto(url.replace(":5000/", f":{port}/"))
            # The runs table, not the GenAI overview: its header row and the run's row.
            page.get_by_role("columnheader", name="Run Name").first.wait_for(timeout=90_000)
            page.get_by_text("rasch vllm items=smoke").first.wait_for(timeout=30_000)
            # The page header loads on its own request: on a loaded machine the table was there
            # while the header was still a placeholder (CI, 2026-11-29), so wait for it too.
            page.get_by_role("heading").first.wait_for(timeout=60_000)
            headers = page.locator("[role=columnheader]").all_inner_texts()
            heading = page.get_by_role("heading").all_inner_texts()
            landed = page.url
            ARTIFACT_DIR.mkdir(exist_ok=True)
            screenshot = tmp_path / "mlflow_runs.png"
            page.screenshot(path=str(screenshot))
            shutil.copy2(screenshot, ARTIFACT_DIR / "mlflow_runs.png")
            context.close()
    finally:
        server.send_signal(signal.SIGINT)  # mlflow ui stops on SIGINT, not SIGTERM
        server.wait(timeout=60)
    print(f"MLflow UI screenshot: {ARTIFACT_DIR / 'mlflow_runs.png'}")
    assert "/runs?" in landed and "workflowType=machine_learning" in landed
    assert heading == ["Runs"], heading
    for column in HEADLINE_COLUMNS:
        assert column in headers, headers
