"""`python -m audit.verdict` on input it cannot use: a rules file that is not UTF-8 or whose
aliases never end, a run killed before its report stage, a run whose config.yaml is damaged or
empty. Each is one line naming the file and the fix, exit 2 (exit 1 is a FAILED gate to CI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.cli.verdict import main, parse_arguments
from audit.methods.checks import VerdictError
from audit.methods.configs import VerdictConfig
from audit.methods.verdict import judge_run


@pytest.mark.parametrize(("content", "message"), [
    ("alpha: 0.01\n".encode("utf-16"), r"is not readable: it is UTF-16 text, as PowerShell's "
                                       r"`>` writes; save it as UTF-8"),
    ("alpha: 0.01  # café\n".encode("latin-1"), r"is not readable: it is not UTF-8 text \(byte "
                                                r"0xe9.*\); save it as UTF-8"),
    (b"a: &x [*x]\n", r"is not readable: an alias in it contains itself"),
], ids=["utf16-bom", "latin1", "recursive-alias"])
def test_a_rules_file_that_is_not_utf8_or_recurses_is_one_line_exit_2(
        tmp_path: Path, content: bytes, message: str) -> None:
    """Bug caught: a rules_file saved as UTF-16 (PowerShell's `>`) or with a Latin-1 byte ended
    in a UnicodeDecodeError traceback, and `a: &x [*x]` in a RecursionError one, each exit 1,
    which CI reads as a FAILED gate; now the rules file's one "not readable" line, exit 2."""
    rules = tmp_path / "rules.yaml"
    rules.write_bytes(content)
    with pytest.raises(VerdictError, match=message) as raised:
        parse_arguments(["run_dir=x", f"rules_file={rules}"])
    problem = str(raised.value)
    assert problem.startswith(f"rules_file {rules} is not readable")
    assert "\n" not in problem and len(problem) < 1000 and "rule: value" in problem
    assert main([f"run_dir={tmp_path / 'absent'}", f"rules_file={rules}"]) == 2


def test_a_run_killed_before_its_report_stage_is_not_taken_for_a_sweep(tmp_path: Path) -> None:
    """Bug caught: a run killed before its report stage, with only Hydra's .hydra/ folder,
    was called "a sweep's folder: judge each job's run, run_dir=RUN/.hydra (jobs: .hydra)",
    since .hydra/config.yaml looked like a job's recorded config; it is a run that did not
    finish, to be rerun (which resumes from the store)."""
    run = tmp_path / "killed"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("method: rasch\n")
    (run / ".hydra" / "overrides.yaml").write_text("- method=rasch\n")
    with pytest.raises(VerdictError, match=r"the run there did not finish \(it has "
                                           r"\.hydra/config\.yaml but no config\.yaml.*rerun the "
                                           r"same command to resume") as raised:
        judge_run(run, VerdictConfig())
    assert "sweep" not in str(raised.value)
    assert f"{run / '.hydra' / 'overrides.yaml'}" in str(raised.value)
    assert main([f"run_dir={run}"]) == 2


@pytest.mark.parametrize(("content", "detail"), [
    (b"", "it holds no settings"),
    (b"method: rasch\nab\ncd: 1\n", r"it is not valid YAML \(line 3\)"),
    (b"- rasch\n", "it holds a list, not a mapping of settings"),
    ("method: rasch\n".encode("utf-16"), "it is UTF-16 text"),
], ids=["empty", "bad-yaml", "list", "utf16"])
def test_a_damaged_or_empty_run_config_names_the_file_and_the_fix(
        tmp_path: Path, content: bytes, detail: str) -> None:
    """Bug caught: a run whose config.yaml was empty said "records method None"; one that was
    not readable YAML said "...: while scanning a simple key", naming no fix; one in UTF-16
    was a UnicodeDecodeError traceback, exit 1. Each is one line: the file, what is wrong with
    it, and the fix (rerun the audit, or restore the file)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_bytes(content)
    config = re.escape(str(run / "config.yaml"))
    with pytest.raises(VerdictError, match=rf"cannot read the run's config at {config}: "
                                           rf"{detail}.*the file is damaged or empty: rerun the "
                                           rf"same command.*or restore the file") as raised:
        judge_run(run, VerdictConfig())
    assert "\n" not in str(raised.value) and "None" not in str(raised.value)
    assert main([f"run_dir={run}"]) == 2



@pytest.mark.parametrize("where", ["config.yaml", "report/config.yaml"])
def test_a_folder_where_the_run_config_goes_is_named(tmp_path: Path, where: str) -> None:
    """Bug caught (bad-input review 2026-12-07): a run whose config.yaml was a folder was told
    "no config.yaml in RUN: ...", a file the user can see is there; now what it is and the fix."""
    run = tmp_path / "run"
    (run / where).mkdir(parents=True)
    (run / "design").mkdir()
    with pytest.raises(VerdictError, match=rf"^{re.escape(str(run / where))} is a folder, not the "
                                           r"config file a run records: move it aside and rerun "
                                           r"the same command to resume"):
        judge_run(run, VerdictConfig())
    assert main([f"run_dir={run}"]) == 2
