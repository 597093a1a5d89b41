"""benchmarks/item_pilot.py run as a user runs it: from their own folder, with their own model
in ./conf/model/, served here by a loopback OpenAI-compatible server with scripted answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers.openai_loopback import MODEL, OpenAILoopback

PILOT = Path(__file__).resolve().parents[2] / "benchmarks" / "item_pilot.py"
SMOKE_ITEMS = 3  # conf/items/smoke.yaml


@pytest.mark.slow
def test_the_pilot_finds_the_users_model_and_asks_the_placebo_arm_it_was_chosen_with(
        tmp_path: Path):
    with OpenAILoopback() as server:
        (tmp_path / "conf" / "model").mkdir(parents=True)
        (tmp_path / "conf" / "model" / "my_server.yaml").write_text(
            f"my_server:\n  backend: openai_compatible\n  base_url: {server.url}\n"
            f"  model: {MODEL}\n")
        env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
        done = subprocess.run([sys.executable, str(PILOT), "--count", "2", "model=my_server",
                               "items=smoke", "fit.draws=200", "fit.tune=200"],
                              cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=600, check=False)
        asked = len(server.chats)
    # The bug: the pilot audit ran in the clone's root, where ./conf/model/my_server.yaml is not.
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].startswith("RESULT item_ids="), done.stdout[-2000:]
    # The baseline and the 8 placebo personas of the pilot behind conf/items/default.yaml, not the
    # audit's current default of 4 (which would ask 5 per item).
    assert asked == SMOKE_ITEMS * (1 + 8)
    # The answers are kept where the user's own audits keep theirs.
    assert (tmp_path / ".audit" / "responses.sqlite3").is_file()


@pytest.mark.parametrize("tables", [(), ("prompts.parquet",)])
def test_a_run_folder_without_the_pilots_tables_is_one_line_not_a_traceback(
        tmp_path: Path, tables: tuple[str, ...]):
    for name in tables:  # a run stopped before its labels were written
        (tmp_path / name).write_bytes(b"")
    done = subprocess.run([sys.executable, str(PILOT), "--run", str(tmp_path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"item_pilot.py: --run {tmp_path}: no {'labels' if tables else 'prompts'}.parquet there; "
        "give the folder of a finished pilot run (it holds prompts.parquet and labels.parquet), "
        "or leave --run out to run one"]
