"""benchmarks/bench_calibration.py --quick: the calibration benchmark runs and reports its line."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_calibration.py"


@pytest.mark.slow
def test_quick_calibration_run_ends_with_its_result_line():
    """About 2 min on 2 shared cores (one compile, a few dozen short fits, a power arm). Fails
    when the benchmark breaks (an API it uses moved) or its RESULT line loses a figure, prints
    one out of range, or comes without its targets' PASS/FAIL lines."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    match = re.fullmatch(r"RESULT coverage_group_gap=(\S+) false_different_rate=(\S+) "
                         r"power_1logit=(\S+) power_3logit=(\S+) plan_width_error=(\S+)",
                         lines[-1])
    assert match, lines[-1]
    coverage, false_rate, power, power_3, width_error = (float(value) for value in match.groups())
    assert 0.0 <= coverage <= 1.0 and 0.0 <= false_rate <= 1.0 and 0.0 <= power_3 <= 1.0
    assert math.isnan(power)  # --quick plants no 1-logit gap
    assert 0.0 <= width_error < 1.0
    assert "coverage agrees" in done.stdout
    # A PASS/FAIL line per target, just before the RESULT line.
    verdicts = [line for line in lines if line.startswith("target ")]
    assert [line.split("=")[0] for line in verdicts] == [
        "target coverage_group_gap", "target false_different_rate", "target power_3logit",
        "target plan_width_error"]
    assert all(line.endswith(("PASS", "FAIL")) for line in verdicts)
