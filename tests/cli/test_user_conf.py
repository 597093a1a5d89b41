"""A user's own ./conf extends and overrides the configs shipped in the package: adding a model is
one YAML file in the user's project, and the command works from any folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

SRC = Path(__file__).resolve().parents[2] / "src"


def _params(cwd: Path, *overrides: str) -> dict:
    output = cwd / "params.yaml"
    done = subprocess.run([sys.executable, "-m", "audit.params", *overrides, "--output",
                           str(output)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    return yaml.safe_load(output.read_text())


def test_a_model_file_in_the_users_conf_is_a_new_option(tmp_path: Path):
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "my_model.yaml").write_text(
        "my_model:\n  backend: ollama\n  model: llama3.2:1b\n")
    params = _params(tmp_path, "model=my_model")
    assert params["model"] == {"my_model": params["model"]["my_model"]}
    assert params["model"]["my_model"]["model"] == "llama3.2:1b"


def test_a_users_file_wins_over_the_shipped_file_of_the_same_name(tmp_path: Path):
    shipped = _params(tmp_path)  # no ./conf: the shipped default composes from any folder
    assert "qwen_coder_0_5b" in shipped["model"]  # the shipped default model
    (tmp_path / "conf" / "items").mkdir(parents=True)
    (tmp_path / "conf" / "items" / "smoke.yaml").write_text(
        "name: my_smoke\nbank: my_items.csv\n")
    params = _params(tmp_path, "items=smoke")
    assert params["items"]["name"] == "my_smoke" and params["items"]["bank"] == "my_items.csv"
