"""`--help` on the commands that take key=value arguments prints their usage and description and
exits 0: fit, iat and verdict refused it as an argument that is not key=value (exit 2), and
compare took it for a run to compare."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("command", ["fit", "iat", "verdict", "compare"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_and_the_description_and_exits_0(command, flag, capsys):
    module = importlib.import_module(f"audit.cli.{command}")
    assert module.main(["run_dir=ignored", flag]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(f"usage: python -m audit.{command} ")
    # The description's first line, which names what the command does.
    assert module.__doc__.strip().splitlines()[0] in printed.out
    assert "ERROR" not in printed.err
