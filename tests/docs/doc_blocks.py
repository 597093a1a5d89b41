"""The documentation as data: its files, its fenced code blocks and the marker before each.

A README block meant to be run by the smoke test is marked by the HTML comment SMOKE_MARKER on
the line before its opening fence; GitHub and MkDocs render nothing for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
README = PROJECT_ROOT / "README.md"
SMOKE_MARKER = "<!-- smoke -->"
_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int  # 1-based line of the opening fence
    marker: str  # the line before the opening fence, stripped ("" when none)


def documentation_files() -> list[Path]:
    """Every Markdown file a user reads: the README, the site's pages and the benchmark results."""
    pages = sorted((PROJECT_ROOT / "docs").rglob("*.md"))
    return [README, *pages, PROJECT_ROOT / "benchmarks" / "RESULTS.md"]


def fenced_blocks(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index].strip())
        if not opening:
            index += 1
            continue
        fence, language = opening.groups()
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise ValueError(f"code block opened on line {index + 1} is never closed")
        marker = lines[index - 1].strip() if index else ""
        blocks.append(Block(language, "\n".join(lines[index + 1:end]), index + 1, marker))
        index = end + 1
    return blocks


def commands(block: Block) -> list[str]:
    """A shell block's commands: continuation lines (a trailing backslash) joined, each without
    its trailing comment, blank lines and comment lines dropped."""
    found = []
    for line in re.sub(r"\s*\\\n\s*", " ", block.text).splitlines():
        command = line.split(" #", 1)[0].strip()
        if command and not command.startswith("#"):
            found.append(command)
    return found
