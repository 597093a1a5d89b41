"""The counterfactual method's verdict rules (methods/counterfactual/verdict.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from verdict_fixtures import counterfactual_run, read_junit

from audit.methods.configs import VerdictConfig
from audit.cli.verdict import judge_run, main
from audit.errors import AuditError
from audit.methods.counterfactual.verdict import judge_counterfactual


def test_counterfactual_planted_gap_fails_with_junit_failures(tmp_path: Path, capsys) -> None:
    run = counterfactual_run(tmp_path / "run", effect=0.6)
    junit = tmp_path / "reports" / "verdict.xml"
    assert main([f"run_dir={run}", f"junit={junit}"]) == 1
    pairs = pl.read_csv(run / "counterfactual_pairwise.csv")
    root = read_junit(junit)
    cases = root.findall(".//testcase")
    failures = root.findall(".//testcase/failure")
    assert len(cases) == pairs.height and int(root.get("tests")) == pairs.height
    assert len(failures) == int(pairs["flagged"].sum()) == int(root.get("failures")) > 0
    failed_names = {case.get("classname") for case in cases if case.find("failure") is not None}
    assert failed_names == {"counterfactual.m.sentiment.race"}
    out = capsys.readouterr().out
    assert "Flagged comparisons" in out and "verdict: FAIL" in out and "A vs B" in out


def test_counterfactual_without_gap_passes(tmp_path: Path, capsys) -> None:
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    assert main([f"run_dir={run}"]) == 0
    root = read_junit(run / "verdict_junit.xml")
    assert root.get("failures") == "0" and len(root.findall(".//testcase")) > 0
    assert "verdict: PASS" in capsys.readouterr().out


def test_counterfactual_threshold_override(tmp_path: Path) -> None:
    pairs = pl.read_csv(counterfactual_run(tmp_path / "run", effect=0.6)
                        / "counterfactual_pairwise.csv")
    default = judge_counterfactual(pairs, VerdictConfig())
    strict = judge_counterfactual(pairs, VerdictConfig(min_rank_biserial=0.99))
    lenient_alpha = judge_counterfactual(pairs, VerdictConfig(alpha=1e-12))
    assert sum(c.failed for c in default) == int(pairs["flagged"].sum()) > 0
    assert sum(c.failed for c in strict) == 0 and sum(c.failed for c in lenient_alpha) == 0


def test_malformed_counterfactual_table_is_bad_input(tmp_path: Path) -> None:
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    table = pl.read_csv(run / "counterfactual_pairwise.csv")
    table.with_columns(p_bh=pl.lit(float("nan"))).write_csv(run / "counterfactual_pairwise.csv")
    assert main([f"run_dir={run}"]) == 2
    table.drop("p_bh").write_csv(run / "counterfactual_pairwise.csv")
    with pytest.raises(AuditError, match="PairwiseSchema"):
        judge_run(run, VerdictConfig())
    assert not (run / "verdict_junit.xml").exists()


def test_a_counterfactual_run_without_its_table_is_bad_input(tmp_path: Path) -> None:
    """The method comes from config.yaml, so a run that recorded `counterfactual` but lost its
    table is named as unfinished (the old file sniffing said "no finished run" for any dir)."""
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    (run / "counterfactual_pairwise.csv").unlink()
    with pytest.raises(AuditError, match="counterfactual pairwise table not found"):
        judge_run(run, VerdictConfig())
