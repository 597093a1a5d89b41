"""Every README command block marked as a smoke example (`<!-- smoke -->` on the line before its
opening fence) runs verbatim, as a reader would paste it: in a fresh folder, with the
environment's `python` first on PATH. The smoke audit is real (the embedded model and judge), so
this takes minutes.

That audit also labels the judge's 57-answer gold sample with the default judge (every run does),
so it is where CI checks the default judge's agreement with the human labels: the figures it
logs must stay at what the shipped judge reached (REACHED). The judge alone on all 57 answers is
measured by benchmarks/judge_gold.py and the whole 441-answer set by `python -m audit.judge_eval`
(benchmarks/RESULTS.md, "Judge on the gold set"), not in CI: labelling them costs minutes more.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import json

import pytest

from doc_blocks import README, SMOKE_MARKER, fenced_blocks

# What the default judge (rules, then Qwen2.5-Coder-1.5B scoring lettered outcomes, with the
# refusal check at -0.5) reached on the 57-answer sample when it was chosen: the cascade 56/57 =
# 0.982 with kappa 0.975; the judge on the 24 answers the rules left, 23/24 = 0.958. The sample is
# partly in-sample (benchmarks/RESULTS.md gives the held-out half). Raise a floor when a better
# judge reaches more; never lower one. The issue-19 targets are 0.90 and 0.85.
REACHED = {"gold/accuracy": 0.98, "gold/cohen_kappa": 0.97, "gold/judge_accuracy": 0.95}

SMOKE_BLOCKS = [block for block in fenced_blocks(README.read_text())
                if block.marker == SMOKE_MARKER]


def test_the_readme_marks_few_smoke_examples():
    """At least the smoke audit, and few: each costs the test suite minutes."""
    assert 1 <= len(SMOKE_BLOCKS) <= 3
    assert all(block.language in {"bash", "sh", "console"} for block in SMOKE_BLOCKS)
    assert any("python -m audit items=smoke" in block.text for block in SMOKE_BLOCKS)


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("block", SMOKE_BLOCKS, ids=lambda block: f"README line {block.line}")
def test_a_smoke_example_runs_as_written(block, tmp_path: Path):
    environment_bin = str(Path(sys.executable).parent)
    done = subprocess.run(["bash", "-e", "-c", block.text], cwd=tmp_path, capture_output=True,
                          text=True, timeout=1400,
                          env={**os.environ, "PATH": environment_bin + os.pathsep
                               + os.environ.get("PATH", "")})
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    if re.search(r"python -m audit(\s|$)", block.text):
        # An audit that did its work leaves its report where the README says (outputs/DATE/TIME).
        assert list(tmp_path.glob("outputs/*/*/report/report.html")), done.stderr[-4000:]
    if "items=smoke" in block.text and "judge=" not in block.text:
        # Catches any change to the default judge's prompt, decoding, rules or model that loses
        # agreement with the human labels (a broken lettered prompt reads at chance, about 0.3).
        (metrics_file,) = tmp_path.glob("outputs/*/*/report/metrics.json")
        metrics = json.loads(metrics_file.read_text())
        assert metrics["gold/n"] == 57, metrics["gold/n"]
        below = {name: round(metrics[name], 3) for name, floor in REACHED.items()
                 if not metrics[name] >= floor}
        assert not below, f"the default judge fell below what it reached on the gold sample: {below}"
