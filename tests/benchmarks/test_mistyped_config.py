"""The benchmark scripts that compose the audit config answer a mistyped model or override with
Hydra's one config-error line and exit 2, as `python -m audit` does, not a traceback: the
performance page tells users to run them with their own `--model`, and bench_embedded.py and
bench_threads.py printed Hydra's `Config search path:` dump and exited 1 for a typo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
UNKNOWN_MODEL = "config error: unknown option 'no_such_model' for config group 'model'; valid: "


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("script", "arguments", "line"), [
    ("bench_embedded", ["--model", "no_such_model"], UNKNOWN_MODEL),
    ("bench_threads", ["--model", "no_such_model"], UNKNOWN_MODEL),
    ("decided_share", ["no_such_model"], UNKNOWN_MODEL),
    ("decided_share", ["qwen_coder_0_5b", "items.per_domian=2"],
     "config error: unknown key 'items.per_domian'; valid keys under 'items': "),
    ("judge_refusal_cut", ["judge.no_such_key=1"],
     "config error: unknown key 'judge.no_such_key'; valid keys under 'judge': "),
    ("judge_refusal_cut", ["judge"], "config error: argument 'judge' is not key=value"),
])
def test_a_mistyped_config_is_one_line_and_exit_2(script, arguments, line, tmp_path):
    ended = subprocess.run([sys.executable, str(BENCHMARKS / f"{script}.py"), *arguments],
                           capture_output=True, text=True, cwd=tmp_path, check=False)
    assert ended.returncode == 2, ended.stderr[-2000:]
    assert ended.stderr.startswith(line) and ended.stderr.count("\n") == 1, ended.stderr[-2000:]
    assert not any(tmp_path.iterdir()), "a failed composition left files behind"
