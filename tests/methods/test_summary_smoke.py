"""A smoke audit's last lines state its finding (`python -m audit items=smoke personas=smoke`, a
rules-only judge, a short fit), and a run without signal says NO SIGNAL once, not twice. The
audited model is a loopback OpenAI-compatible server with scripted answers, so no model runs."""

from __future__ import annotations

import re

import pytest
from servers.openai_loopback import REPLIES
from smoke_audit import run_smoke_audit

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _answer(stdout: str) -> list[str]:
    """The lines from `Result:` to the end of stdout."""
    lines = stdout.rstrip().splitlines()
    start = max(index for index, line in enumerate(lines) if line.startswith("Result: "))
    return lines[start:]


def test_the_last_lines_of_a_smoke_run_state_its_finding(tmp_path):
    done = run_smoke_audit(tmp_path)
    answer = _answer(done.stdout)
    assert answer[0] == "Result: rasch audit of vllm"
    notes, contrasts = answer[1:-6], answer[-6:-4]
    assert [line.split(":")[0].strip() for line in contrasts] == ["gender man vs woman",
                                                                  "race Black vs White"]
    # The smoke personas (a Black woman, a White man) alias gender with race: the two contrasts
    # are one comparison, which only the log said (review of what reaches the user, 2026-12-02).
    assert any("every gender level goes with one race level (man: White, woman: Black)" in note
               and "a gap in one is a gap in the other" in note for note in notes), notes
    # Each with the interval its decision was taken on: family-wise over the 2 contrasts.
    for line in contrasts:
        assert re.fullmatch(r"  \w+ \w+ vs \w+: (different|no practical difference|undecided|a "
                            r"gap).*, [+-]\d\.\d+ log-odds \(94% HDI [+-]\d\.\d+ to [+-]\d\.\d+; "
                            r"decided on the 97\.5% HDI [+-]\d\.\d+ to [+-]\d\.\d+ against the "
                            r"ROPE ±0\.18\)", line), line
    assert re.fullmatch(r"CI verdict: (PASS|FAIL) \(\d+ of 3 checks failed(; [12] of 2 "
                        r"comparisons undecided, a difference neither shown nor ruled out)?\).*",
                        answer[-4]), answer[-4]
    assert answer[-3] == f"Report: {tmp_path / 'run' / 'report' / 'report.html'}"
    assert answer[-2] == ("MLflow runs: http://127.0.0.1:5000/#/experiments/1/runs?"
                          "workflowType=machine_learning&viewStateShareKey=audit-rasch")
    assert "NO SIGNAL" not in done.stdout + done.stderr


def test_a_run_without_signal_says_so_once_leading_its_answer(tmp_path):
    done = run_smoke_audit(tmp_path, REPLIES[:1])  # every answer approves: the outcome never varies
    answer = _answer(done.stdout)
    assert answer[1].startswith("  NO SIGNAL: this run can neither show nor rule out")
    assert (done.stdout + done.stderr).count("NO SIGNAL") == 1
