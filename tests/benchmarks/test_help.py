"""Every script of the docs' benchmark table answers `--help` with its usage, as docs/commands.md
promises (`python benchmarks/NAME.py --help`), without starting its work: a benchmark runs for
minutes to an hour, and judge_gold.py once began labelling the gold sample with the 1.5B judge
on `--help`, audit_wall_time.py stopped on a KeyError and judge_refusal_cut.py on Hydra's
override parser."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLE = (ROOT / "docs" / "performance.md").read_text()
SCRIPTS = sorted(set(re.findall(r"^\| `benchmarks/(\w+)\.py` \|", TABLE, flags=re.MULTILINE)))


def test_the_table_lists_the_benchmarks():
    assert {"bench_calibration", "audit_wall_time", "judge_gold"} <= set(SCRIPTS), SCRIPTS


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", SCRIPTS)
def test_help_prints_the_usage_and_exits_0(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(str(ROOT / "benchmarks" / f"{name}.py"), run_name="__main__")
    printed = capsys.readouterr()
    assert ended.value.code in (0, None), printed.err[-2000:]
    assert "usage:" in printed.out.lower() + printed.err.lower(), printed.out[-2000:]
