"""The documentation site builds in strict mode, offline: a broken internal link or anchor, a page
missing from the nav, a missing included file or a plugin that fetches fails the test suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_blocks import PROJECT_ROOT

# Files the pages include with pymdownx.snippets (figures and the data reference live once).
INCLUDED = ("benchmarks/RESULTS.md", "data/README.md")
# Any fetch at build time goes to a closed port and fails.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "NO_MKDOCS_2_WARNING": "1"}


def build(project: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", str(project / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=project, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **OFFLINE})


def warnings_of(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines()
            if line.startswith(("WARNING", "ERROR"))]


def test_the_site_builds_strictly_without_a_warning(tmp_path: Path):
    done = build(PROJECT_ROOT, tmp_path / "site")
    assert done.returncode == 0 and not warnings_of(done), done.stdout + done.stderr
    pages = {path.relative_to(tmp_path / "site").as_posix()
             for path in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "install/index.html", "methods/rasch/index.html",
            "statistics/index.html", "commands/index.html"} <= pages
    # The included figures are on the pages, not a copy of them.
    assert "Judge on the gold set" in (tmp_path / "site/performance/index.html").read_text()
    # Material's web fonts and any CDN stay off: the site works offline.
    html = "\n".join(path.read_text() for path in (tmp_path / "site").rglob("*.html"))
    assert "fonts.googleapis" not in html and "fonts.gstatic" not in html


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """The site's sources in a folder of their own, to break."""
    project = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "docs", project / "docs")
    shutil.copy(PROJECT_ROOT / "mkdocs.yml", project / "mkdocs.yml")
    for name in INCLUDED:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / name, project / name)
    return project


@pytest.mark.parametrize("broken, named", [
    ("[a section](statistics.md#no-such-section)", "no-such-section"),
    ("[a page](no_such_page.md)", "no_such_page.md"),
])
def test_a_broken_link_or_anchor_fails_the_build(docs_copy: Path, broken: str, named: str):
    """Without `validation:` in mkdocs.yml, MkDocs reports a missing anchor at INFO level and
    strict mode lets it through."""
    index = docs_copy / "docs" / "index.md"
    index.write_text(index.read_text() + f"\nSee {broken}.\n")
    done = build(docs_copy, docs_copy / "site")
    assert done.returncode != 0
    assert any(named in line for line in warnings_of(done)), done.stdout + done.stderr


def test_a_page_left_out_of_the_nav_fails_the_build(docs_copy: Path):
    (docs_copy / "docs" / "orphan.md").write_text("# Orphan\n")
    done = build(docs_copy, docs_copy / "site")
    assert done.returncode != 0
    assert "not included in the \"nav\"" in done.stderr and "- orphan.md" in done.stderr
