"""The lines of a run's summary (audit.methods.summary) from hand-made checks and findings: the
CI verdict line, the model line, the MLflow lines and the runs-table columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.config import ModelConfig
from audit.methods import summary
from audit.methods.checks import Check
from audit.methods.configs import AuditConfig
from audit.methods.findings import Findings, Headline
from audit.tracking.mlflow import RunInfo, TrackingError


def _failed(name: str) -> Check:
    return Check("iat", f"iat.{name}", "test", True, "p=0.001")


def _verdict_line(monkeypatch, tmp_path: Path, checks: list[Check]) -> str:
    monkeypatch.setattr(summary, "judge_run", lambda run_dir, rules: checks)
    return summary.verdict_line(tmp_path)


def test_the_verdict_line_names_three_failed_checks_and_marks_more(monkeypatch, tmp_path):
    """Mutation review 2026-12-06: three failed checks are named in full; a fourth is `...`;
    a check that passed is never named."""
    passed = Check("iat", "iat.m.ok", "test", False, "p=0.4")
    three = _verdict_line(monkeypatch, tmp_path, [passed, *(_failed(n) for n in "abc")])
    assert three.startswith("CI verdict: FAIL (3 of 4 checks failed): a test; b test; c test "
                            "(default rules;"), three
    four = _verdict_line(monkeypatch, tmp_path, [_failed(n) for n in "abcd"])
    assert ": a test; b test; c test; ... (default rules;" in four and "d test" not in four


def test_only_a_pass_without_undecided_comparisons_says_no_gap_was_found(monkeypatch, tmp_path):
    """Mutation review 2026-12-06: "no check found a gap" follows a PASS with every comparison
    decided; a PASS on undecided comparisons and a NOT TESTED run do not say it."""
    note = "(no check found a gap; not by itself evidence that groups are treated alike)"
    decided = Check("iat", "iat.m.a", "test", False, "p=0.4")
    undecided = Check("rasch", "rasch.m.a", "test", False, "undecided", undecided=True)
    untestable = Check("iat", "iat.m.a", "test", False, "not testable", skipped=True)
    assert note in _verdict_line(monkeypatch, tmp_path, [decided])
    assert note not in _verdict_line(monkeypatch, tmp_path, [decided, undecided])
    not_tested = _verdict_line(monkeypatch, tmp_path, [untestable])
    assert not_tested.startswith("CI verdict: NOT TESTED") and note not in not_tested


def test_the_result_line_lists_the_models_sorted_or_says_no_model(tmp_path):
    """Mutation review 2026-12-06: the first line names the models in sorted order, and a
    config without models says `no model`."""
    findings = Findings([Headline("pair", "no difference shown")])
    models = {"zeta": ModelConfig(model="z"), "alpha": ModelConfig(model="a")}
    text = summary.summary_text(AuditConfig(method="iat", model=models), findings, tmp_path, {})
    assert text.splitlines()[0] == "Result: iat audit of alpha, zeta"
    empty = summary.summary_text(AuditConfig(method="iat", model={}), findings, tmp_path, {})
    assert empty.splitlines()[0] == "Result: iat audit of no model"


def test_a_run_without_mlflow_names_the_setting_that_turned_it_off(tmp_path):
    """Mutation review 2026-12-06: the default names `tracking.enabled=false`, the setting of
    `python -m audit`; the summary's last line says it for a run without an MLflow run."""
    assert summary.mlflow_lines(None, "audit-iat") == ["MLflow: off (tracking.enabled=false)"]
    text = summary.summary_text(AuditConfig(method="iat"), Findings([]), tmp_path, {})
    assert text.splitlines()[-1] == "MLflow: off (tracking.enabled=false)"


def test_the_runs_view_shows_logged_headline_metrics_in_the_findings_order():
    """Mutation review 2026-12-06: the headlines' metrics first, then the findings' further
    metrics, each once, and only those the run logged."""
    findings = Findings([Headline("a", "x", metric="gap/b"), Headline("b", "x"),
                         Headline("c", "x", metric="gap/a"), Headline("d", "x", metric="gap/z")],
                        metrics=["extra", "gap/a"])
    logged = {"gap/a": 0.1, "gap/b": 0.2, "extra": 1.0, "unrelated": 2.0}
    assert summary.view_metrics(findings, logged) == ["gap/b", "gap/a", "extra"]


class _Method:
    def findings(self, cfg, run_dir, result):
        return Findings([Headline("pair", "no difference shown", metric="gap")])


def test_a_run_with_mlflow_records_its_summary_and_its_logged_columns(monkeypatch, tmp_path,
                                                                     capsys):
    """Mutation review 2026-12-06: the summary is printed, the runs view gets the logged
    headline metrics and the description keeps each line apart (two spaces before each
    newline, as the UI's Markdown needs)."""
    calls = {}
    monkeypatch.setattr(summary.ui, "set_runs_view",
                        lambda uri, experiment, key, metrics: calls.update(view=(key, metrics)))
    monkeypatch.setattr(summary.ui, "set_run_description",
                        lambda uri, run_id, text: calls.update(description=text))
    monkeypatch.setattr(summary.ui, "set_run_tag",
                        lambda uri, run_id, key, value: calls.update(tag=(key, value)))
    run = RunInfo("r" * 32, "4", "sqlite:///m.db", "file:///a")
    text = summary.state_summary(_Method(), AuditConfig(method="iat"), tmp_path,
                                 {"run": run, "metrics": {"gap": 0.1}})
    assert capsys.readouterr().out == text + "\n"
    assert calls["view"] == ("audit-iat", ["gap"])
    assert calls["description"] == text.replace("\n", "  \n") and "  \n" in calls["description"]
    # A folder with no run files has no verdict: the tag says so, as the line does.
    assert calls["tag"] == (summary.VERDICT_TAG, "none") and "\nCI verdict: none (" in text


def test_a_store_that_fails_says_where_the_runs_files_are(monkeypatch, tmp_path, capsys):
    """Mutation review 2026-12-06: the summary is printed first, then the store's error says
    where the run's tables and report are."""
    def refuse(*arguments):
        raise TrackingError("the store is locked")
    monkeypatch.setattr(summary.ui, "set_runs_view", refuse)
    run = RunInfo("r" * 32, "4", "sqlite:///m.db", "file:///a")
    with pytest.raises(TrackingError, match=rf"the store is locked; the run's tables and report "
                                            rf"are in {tmp_path}$"):
        summary.state_summary(_Method(), AuditConfig(method="iat"), tmp_path, {"run": run})
    assert capsys.readouterr().out.startswith("Result: iat audit of")


def _interrupt(*arguments):
    raise KeyboardInterrupt


def test_a_stop_after_the_summary_says_the_run_finished_not_that_a_rerun_resumes(
        monkeypatch, tmp_path, capsys):
    """Interrupt probe 2026-12-07: Ctrl-C or SIGTERM while the summary became the MLflow run's
    description ended `python -m audit` with "the answers received so far are saved ...; rerun
    the same command to resume" about a finished run (whose rerun fits a second run). Fails
    while the bare interrupt goes on: its text is empty, so the command writes that line."""
    monkeypatch.setattr(summary.ui, "set_runs_view", lambda *arguments: None)
    monkeypatch.setattr(summary.ui, "set_run_description", _interrupt)
    run = RunInfo("r" * 32, "4", "sqlite:///m.db", "file:///a")
    with pytest.raises(KeyboardInterrupt) as stopped:
        summary.state_summary(_Method(), AuditConfig(method="iat"), tmp_path, {"run": run})
    assert str(stopped.value) == (f"interrupted after the run finished: its tables and report "
                                  f"are in {tmp_path}; the summary above is its answer; its "
                                  "MLflow run is FINISHED, without that summary as its "
                                  "description")
    assert capsys.readouterr().out.startswith("Result: iat audit of")


def test_a_stop_before_the_summary_names_the_verdict_command(monkeypatch, tmp_path, capsys):
    """The same stop while the findings are read: nothing is printed, and the line names the
    command that gives the finished run's verdict."""
    method = _Method()
    method.findings = _interrupt
    run_dir = tmp_path / "a run"
    with pytest.raises(KeyboardInterrupt) as stopped:
        summary.state_summary(method, AuditConfig(method="iat"), run_dir, {})
    assert str(stopped.value) == (f"interrupted after the run finished: its tables and report "
                                  f"are in {run_dir}; its summary was not printed: `python -m "
                                  f"audit.verdict 'run_dir={run_dir}'` gives its verdict")
    assert capsys.readouterr().out == ""


def test_a_summary_lists_twelve_comparisons_and_counts_the_thirteenth():
    """Mutation review 2026-12-06: twelve headlines are listed (a literal, not the constant the
    code uses); a thirteenth is counted, without a table when the findings name none."""
    twelve = [Headline(f"pair {index}", "no difference shown") for index in range(12)]
    assert summary.findings_lines(Findings(twelve))[-1] == "  pair 11: no difference shown"
    assert len(summary.findings_lines(Findings(twelve))) == 12
    thirteen = [*twelve, Headline("pair 12", "no difference shown")]
    assert summary.findings_lines(Findings(thirteen))[-1] == "  ... and 1 more"


def test_a_headline_shows_an_interval_only_with_both_ends_and_no_stray_space():
    """Catches: bounds shown with only the low end set (number(None) fails), the interval's
    text left unstripped ("( +0.20 ..." when no interval name is given), and a default
    interval name other than none."""
    assert Headline("pair", "different", 0.5, low=0.2, high=0.8).line() == \
        "pair: different, +0.50 (+0.20 to +0.80)"
    assert Headline("pair", "different", 0.5, low=0.2).line() == "pair: different, +0.50"


def test_a_run_without_headlines_says_it_has_no_comparison_to_report():
    """Catches: Findings.empty's default emptied, so a run with nothing to compare ended on a
    blank line."""
    assert summary.findings_lines(Findings([])) == ["  no comparison to report"]
