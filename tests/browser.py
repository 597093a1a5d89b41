"""A real headless Chromium for the browser tests (the HTML report, the MLflow UI), driven by
Playwright's Python client: where to find it, how to launch it, where screenshots go."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
ARTIFACT_DIR = PROJECT_ROOT / "test-artifacts"  # screenshots to look at (git-ignored)
# No sandbox: CI runs as root. Nothing in the background reaches for the network.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run"]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("AUDIT_CHROMIUM"), "/usr/bin/chromium",
                      "/usr/lib/chromium/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def require_chromium() -> str:
    """The browser's path; without it (or without Playwright) the test is skipped, or fails
    where AUDIT_REQUIRE_BROWSER=1 says the browser must be there (CI)."""
    executable = chromium_path()
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        executable = None
    if executable is None:
        if os.environ.get("AUDIT_REQUIRE_BROWSER") == "1":
            pytest.fail("no chromium (or no playwright): apt-get install chromium; pip install "
                        "playwright")
        pytest.skip("chromium or playwright not installed (CI installs them: make browser)")
    return executable
