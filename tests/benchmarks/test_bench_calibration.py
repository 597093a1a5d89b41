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
    """About 40 s (one compile, a dozen short fits). Fails when the benchmark breaks (an API it
    uses moved) or its RESULT line loses a figure or prints one out of range."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"RESULT coverage_group_gap=(\S+) false_different_rate=(\S+) "
                         r"power_1logit=(\S+) plan_width_error=(\S+)", last)
    assert match, last
    coverage, false_rate, power, width_error = (float(value) for value in match.groups())
    assert 0.0 <= coverage <= 1.0 and 0.0 <= false_rate <= 1.0
    assert math.isnan(power)  # --quick plants no 1-logit gap
    assert 0.0 <= width_error < 1.0
    assert "coverage agrees" in done.stdout
