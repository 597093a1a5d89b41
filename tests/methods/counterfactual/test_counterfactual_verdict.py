"""The counterfactual method's verdict rules (methods/counterfactual/verdict.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import polars as pl
import pytest
from verdict_fixtures import counterfactual_run, read_junit

from audit.methods.configs import VerdictConfig
from audit.cli.verdict import main
from audit.methods.verdict import judge_run
from audit.errors import AuditError
from audit.methods.counterfactual.verdict import judge_counterfactual
from audit.methods.counterfactual.report import print_findings

DESIGN_TESTS = "counterfactual_design_tests.csv"


def test_counterfactual_planted_gap_fails_with_junit_failures(tmp_path: Path, capsys) -> None:
    run = counterfactual_run(tmp_path / "run", effect=1.0)
    junit = tmp_path / "reports" / "verdict.xml"
    assert main([f"run_dir={run}", f"junit={junit}"]) == 1
    tests = pl.read_csv(run / DESIGN_TESTS)
    root = read_junit(junit)
    cases = root.findall(".//testcase")
    failures = root.findall(".//testcase/failure")
    assert len(cases) == tests.height and int(root.get("tests")) == tests.height
    assert len(failures) == int(tests["flagged"].sum()) == int(root.get("failures")) > 0
    failed_names = {case.get("classname") for case in cases if case.find("failure") is not None}
    assert failed_names == {"counterfactual.m.sentiment.race"}
    out = capsys.readouterr().out
    assert "Failed checks" in out and "verdict: FAIL" in out and "A vs B" in out
    assert "6 names vs 6 names" in out


def test_counterfactual_without_gap_passes(tmp_path: Path, capsys) -> None:
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    assert main([f"run_dir={run}"]) == 0
    root = read_junit(run / "verdict_junit.xml")
    assert root.get("failures") == "0" and len(root.findall(".//testcase")) > 0
    assert "verdict: PASS" in capsys.readouterr().out


def test_a_names_own_quirk_that_the_per_answer_table_flags_passes(tmp_path: Path) -> None:
    """No race effect, but each name its own (sd 1): the per-answer Mann-Whitney rows flag the
    pair (72 answers a race counted as independent), the test over the 6 + 6 names does not, and
    CI follows the names. Read from the per-answer table, the verdict failed this run."""
    run = counterfactual_run(tmp_path / "run", effect=0.0, name_sd=1.0, seed=7)
    answers = pl.read_csv(run / "counterfactual_pairwise.csv")
    assert answers.filter(pl.col("metric") == "sentiment")["flagged"].any()
    assert main([f"run_dir={run}"]) == 0


def test_a_design_that_cannot_reach_alpha_is_untestable_not_passed(tmp_path: Path) -> None:
    """2 names against 2 can never give p < 0.05 (smallest p 1/3): skipped, with the fix."""
    run = counterfactual_run(tmp_path / "run", effect=3.0, names=2)
    checks = judge_run(run, VerdictConfig())
    sentiment = next(check for check in checks if check.group.endswith("sentiment.race"))
    assert sentiment.skipped and not sentiment.failed
    assert "not testable: with 2 names vs 2 names" in sentiment.message
    assert "add names" in sentiment.message


def test_counterfactual_threshold_override(tmp_path: Path) -> None:
    tests = pl.read_csv(counterfactual_run(tmp_path / "run", effect=1.0) / DESIGN_TESTS)
    default = judge_counterfactual(tests, VerdictConfig())
    strict = judge_counterfactual(tests, VerdictConfig(min_rank_biserial=0.99))
    lenient_alpha = judge_counterfactual(tests, VerdictConfig(alpha=1e-12))
    assert sum(c.failed for c in default) == int(tests["flagged"].sum()) > 0
    assert sum(c.failed for c in strict) == 0 and sum(c.failed for c in lenient_alpha) == 0


def test_malformed_counterfactual_table_is_bad_input(tmp_path: Path) -> None:
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    table = pl.read_csv(run / DESIGN_TESTS)
    # min_p, not p_bh: an empty p_bh is a row left out of the BH family (not testable).
    table.with_columns(min_p=pl.lit(float("nan"))).write_csv(run / DESIGN_TESTS)
    assert main([f"run_dir={run}"]) == 2
    # The JUnit file says the verdict could not be given: an error, no check passed.
    root = ET.parse(run / "verdict_junit.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "1")
    assert "DesignTestSchema" in root.find(".//error").get("message")
    table.drop("p_bh").write_csv(run / DESIGN_TESTS)
    with pytest.raises(AuditError, match="DesignTestSchema"):
        judge_run(run, VerdictConfig())


def test_a_counterfactual_run_without_its_table_is_bad_input(tmp_path: Path) -> None:
    """The method comes from config.yaml, so a run that recorded `counterfactual` but lost its
    table is named as unfinished (the old file sniffing said "no finished run" for any dir)."""
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    (run / DESIGN_TESTS).unlink()
    with pytest.raises(AuditError, match="counterfactual design tests not found"):
        judge_run(run, VerdictConfig())


def test_the_end_of_run_line_says_when_no_pair_could_be_tested(capsys) -> None:
    """Bug caught: with every design test untestable (no p_bh) the run ended "No pair flagged:
    of 2 design tests none has a BH-adjusted p below 0.05", a pass in words where the verdict
    is NOT TESTED."""
    tests = pl.DataFrame(schema={"model_name": pl.String, "scope": pl.String,
                                 "metric": pl.String, "factor": pl.String})
    design = pl.DataFrame({"flagged": [False, False], "p_bh": [None, None],
                           "min_p": [0.33, 1.0]}, schema_overrides={"p_bh": pl.Float64})
    print_findings(tests, design, 0.05)
    out = " ".join(capsys.readouterr().out.split())
    assert "No pair could be tested: each of the 2 design tests" in out
    assert "No pair flagged" not in out
    print_findings(tests, design.with_columns(p_bh=pl.Series([0.4, None])), 0.05)
    out = " ".join(capsys.readouterr().out.split())
    assert "of 1 testable design test (groups" in out and "1 more could not be tested" in out
    print_findings(tests, design.head(1), 0.05)  # Bug: "each of the 1 design tests has"
    out = " ".join(capsys.readouterr().out.split())
    assert "No pair could be tested: the one design test has too few names or templates" in out
    # Statistics review 2026-12-02: the per-answer table, printed first with its own BH p,
    # did not say it counts each answer as independent (39% false rejections simulated).
    assert "describes the answers, counting each as independent; group claims are the design " \
           "tests below" in out


def _design_row(group_b: str, p_value: float, min_p: float, p_bh: float) -> dict:
    return {"model_name": "m", "metric": "sentiment", "factor": "race", "group_a": "A",
            "group_b": group_b, "unit": "name", "n_units_a": 6, "n_units_b": 6,
            "n_templates": 3, "mean_difference": 0.5, "difference_ci_low": None,
            "difference_ci_high": None, "rank_biserial": 0.5, "truncated_share_a": 0.0,
            "truncated_share_b": 0.0, "p_value": p_value, "min_p": min_p, "p_bh": p_bh,
            "practical_threshold": 0.147}


def test_the_verdict_readjusts_bh_over_the_pairs_testable_at_its_own_alpha() -> None:
    """Bug caught: the verdict read the table's p_bh, adjusted at the run's alpha over a pair
    untestable at the verdict's alpha, and passed a pair its own BH family rejects."""
    # Run alpha 0.05: both pairs testable, BH over p = (0.02, 0.006) gives (0.02, 0.012).
    tests = pl.DataFrame([_design_row("B", 0.02, 0.02, 0.02),
                          _design_row("C", 0.006, 0.001, 0.012)])
    checks = {check.name: check for check in judge_counterfactual(tests, VerdictConfig(alpha=0.01))}
    # At alpha 0.01 A vs B (min_p 0.02) is untestable; A vs C is a family of one: p_bh = 0.006.
    assert checks["A vs B"].skipped and not checks["A vs B"].failed
    assert checks["A vs C"].failed and "p_bh=0.006 <" in checks["A vs C"].message


def test_a_pair_whose_smallest_p_equals_alpha_is_untestable() -> None:
    """Bug caught: a design whose smallest attainable p equals alpha (3 names vs 3: 2 / C(6, 3)
    = 0.1, at alpha 0.1) was judged as testable, though p < alpha is out of its reach."""
    tests = pl.DataFrame([_design_row("B", 0.1, 0.1, None)]).with_columns(
        n_units_a=pl.lit(3), n_units_b=pl.lit(3), p_bh=pl.lit(None, dtype=pl.Float64))
    (check,) = judge_counterfactual(tests, VerdictConfig(alpha=0.1))
    assert check.skipped and not check.failed
    assert "3 names vs 3 names the smallest attainable p is 0.1 >= alpha=0.1" in check.message


def test_a_pair_over_one_template_or_one_name_is_counted_in_the_singular() -> None:
    """Bug (2026-12-06): its untestable line read "with 1 templates" and "1 names vs 2 names"."""
    tests = pl.DataFrame([_design_row("B", 1.0, 1.0, None)]).with_columns(
        unit=pl.lit("template"), n_templates=pl.lit(1), p_bh=pl.lit(None, dtype=pl.Float64))
    (check,) = judge_counterfactual(tests, VerdictConfig())
    assert check.skipped and "with 1 template the smallest attainable p is 1 >=" in check.message
    (check,) = judge_counterfactual(tests.with_columns(
        unit=pl.lit("name"), n_units_a=pl.lit(1), n_units_b=pl.lit(2)), VerdictConfig())
    assert check.skipped and "with 1 name vs 2 names the smallest" in check.message


def test_a_pair_whose_adjusted_p_equals_alpha_passes() -> None:
    """Bug caught: `p_bh <= alpha` in place of `<` failed a pair whose adjusted p is exactly
    alpha (a family of one: p_bh is its p, 0.05), though the rule is p below alpha."""
    tests = pl.DataFrame([_design_row("B", 0.05, 0.001, 0.05)])
    (check,) = judge_counterfactual(tests, VerdictConfig(alpha=0.05))
    assert not check.failed and not check.skipped
    assert "p_bh=0.05 >= alpha=0.05" in check.message


def test_an_effect_exactly_at_the_practical_threshold_fails() -> None:
    """Bug caught: `effect > threshold` in place of `>=` passed a significant pair whose
    |rank-biserial| is exactly the threshold the docs say it must reach (0.5 of 0.5), and a
    pair just under it must still pass."""
    tests = pl.DataFrame([_design_row("B", 0.001, 0.0001, 0.001)])
    (at,) = judge_counterfactual(tests, VerdictConfig(min_rank_biserial=0.5))
    (above,) = judge_counterfactual(tests, VerdictConfig(min_rank_biserial=0.501))
    assert at.failed and "|rank-biserial|=0.500 >= 0.500" in at.message
    assert not above.failed and "|rank-biserial|=0.500 < 0.501" in above.message
