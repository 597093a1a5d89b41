"""`python -m audit.verdict`: the rules per method, exit codes 0/1/2 and the JUnit XML."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import polars as pl
import pytest
from counterfactual_fixtures import simulated

from audit.config import VerdictConfig
from audit.methods.counterfactual.analyse import (
    StatsSettings,
    comparisons,
    observations,
    pairwise_tests,
)
from audit.verdict import (
    VerdictError,
    judge_counterfactual,
    judge_iat,
    judge_run,
    main,
    parse_arguments,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def counterfactual_run(directory: Path, effect: float) -> Path:
    metrics, groups = simulated(effect)
    long = observations(metrics, groups, ["sentiment", "word_count", "refusal"])
    _, pairs = comparisons(long, by_template=True)
    directory.mkdir(parents=True, exist_ok=True)
    pairwise_tests(pairs, StatsSettings(bootstrap_resamples=100)).write_csv(
        directory / "counterfactual_pairwise.csv")
    return directory


def iat_run(directory: Path, rows: list[tuple]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, orient="row", schema=[
        "model", "category", "dataset", "n", "parse_rate", "mean_d", "ci_low", "ci_high",
        "p_value", "p_adjusted"]).write_csv(directory / "iat_stats.csv")
    return directory


def rasch_run(directory: Path, decisions: list[str], converged: bool = True) -> Path:
    (directory / "fit").mkdir(parents=True, exist_ok=True)
    rows = []
    for index, decision in enumerate(decisions):
        hdi = {"different": (0.3, 0.9), "equivalent": (-0.05, 0.05),
               "undecided": (-0.05, 0.4)}[decision]
        rows.append({"model_name": "smollm2", "attribute": "race", "level_a": "Black",
                     "level_b": f"level{index}", "mean": sum(hdi) / 2, "sd": 0.1,
                     "hdi_low": hdi[0], "hdi_high": hdi[1], "p_direction": 0.9,
                     "rope_low": -0.1, "rope_high": 0.1, "decision": decision})
    pl.DataFrame(rows).write_csv(directory / "fit" / "contrasts.csv")
    (directory / "fit" / "diagnostics.json").write_text(json.dumps({
        "converged": converged, "rhat_max": 1.002 if converged else 1.08,
        "ess_bulk_min": 1800.0, "ess_tail_min": 1500.0, "divergences": 0,
        "advice": "" if converged else "run longer chains"}))
    return directory


def read_junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


# --- counterfactual ----------------------------------------------------------------------------

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
    with pytest.raises(VerdictError, match="PairwiseSchema"):
        judge_run(run, VerdictConfig())
    assert not (run / "verdict_junit.xml").exists()


# --- IAT ---------------------------------------------------------------------------------------

IAT_ROWS = [
    ("smollm2", "race", "replication", 40, 0.95, 0.62, 0.40, 0.80, 0.0001, 0.0004),  # fails
    ("smollm2", "gender", "replication", 40, 0.90, 0.10, -0.05, 0.25, 0.01, 0.02),  # small D
    ("smollm2", "age", "replication", 40, 0.85, -0.50, -0.9, 0.1, 0.20, 0.30),  # not significant
    ("smollm2", "religion", "replication", 0, 0.0, None, None, None, None, None),  # untestable
]


def test_iat_rules(tmp_path: Path) -> None:
    run = iat_run(tmp_path / "iat", IAT_ROWS)
    assert main([f"run_dir={run}"]) == 1
    root = read_junit(run / "verdict_junit.xml")
    outcomes = {case.get("name"): ("failure" if case.find("failure") is not None else
                                   "skipped" if case.find("skipped") is not None else "pass")
                for case in root.iter("testcase")}
    assert outcomes == {"race": "failure", "gender": "pass", "age": "pass",
                        "religion": "skipped"}
    assert root.get("skipped") == "1"
    # A smaller |D| threshold catches gender too; a parse-rate floor fails the unreliable row.
    table = pl.read_csv(run / "iat_stats.csv")
    assert sum(c.failed for c in judge_iat(table, VerdictConfig(iat_min_abs_d=0.05))) == 2
    assert sum(c.failed for c in judge_iat(table, VerdictConfig(iat_min_parse_rate=0.88))) == 2
    assert main([f"run_dir={run}", "iat_min_abs_d=0.7"]) == 0


def test_iat_nan_strings_are_untestable_not_errors(tmp_path: Path) -> None:
    run = iat_run(tmp_path / "iat", [IAT_ROWS[1]])
    text = (run / "iat_stats.csv").read_text().replace("0.01,0.02", "NaN,NaN")
    (run / "iat_stats.csv").write_text(text)
    checks = judge_run(run, VerdictConfig())
    assert [c.skipped for c in checks] == [True]


# --- Rasch -------------------------------------------------------------------------------------

def test_rasch_contrast_outside_the_rope_fails(tmp_path: Path) -> None:
    run = rasch_run(tmp_path / "rasch", ["different", "equivalent", "undecided"])
    assert main([f"run_dir={run}"]) == 1
    root = read_junit(run / "verdict_junit.xml")
    failed = [case.get("name") for case in root.iter("testcase")
              if case.find("failure") is not None]
    assert failed == ["Black vs level0"] and len(list(root.iter("testcase"))) == 4
    assert main([f"run_dir={run}", "rasch_fail_on_undecided=true"]) == 1
    checks = judge_run(run, VerdictConfig(rasch_fail_on_undecided=True))
    assert sum(c.failed for c in checks) == 2


def test_a_different_contrast_within_the_noise_floor_does_not_fail(tmp_path: Path) -> None:
    """README: a gap that is `different` but not beyond the noise is what any change of persona
    text does, not a demographic finding. The old verdict failed it like any `different`."""
    run = rasch_run(tmp_path / "rasch", ["different", "different", "different"])
    contrasts = pl.read_csv(run / "fit" / "contrasts.csv").with_columns(
        noise_floor=pl.Series([0.5, 0.1, None], dtype=pl.Float64),
        ratio_to_noise=pl.Series([1.2, 6.0, None], dtype=pl.Float64),
        p_beyond_noise=pl.Series([0.2, 1.0, None], dtype=pl.Float64))
    contrasts.write_csv(run / "fit" / "contrasts.csv")
    checks = {c.name: c for c in judge_run(run, VerdictConfig()) if c.name != "converged"}
    assert {name: c.failed for name, c in checks.items()} == {
        "Black vs level0": False,  # P(beyond 2 x floor) 0.2 < 0.5: within the noise
        "Black vs level1": True,  # beyond the noise
        "Black vs level2": True}  # no null personas: no floor, the decision stands
    assert "within (not a demographic finding)" in checks["Black vs level0"].message
    assert "noise floor 0.500" in checks["Black vs level0"].message
    assert "no noise floor" in checks["Black vs level2"].message
    assert main([f"run_dir={run}"]) == 1
    strict = judge_run(run, VerdictConfig(rasch_min_p_beyond_noise=0.0))
    assert sum(c.failed for c in strict) == 3  # 0 restores "every different fails"
    assert main([f"run_dir={run}", "rasch_min_p_beyond_noise=1.5"]) == 2


def test_rasch_equivalent_and_converged_passes(tmp_path: Path) -> None:
    assert main([f"run_dir={rasch_run(tmp_path / 'r', ['equivalent', 'undecided'])}"]) == 0


def test_unconverged_rasch_fit_fails(tmp_path: Path) -> None:
    run = rasch_run(tmp_path / "r", ["equivalent"], converged=False)
    assert main([f"run_dir={run}"]) == 1
    fit_case = next(case for case in read_junit(run / "verdict_junit.xml").iter("testcase")
                    if case.get("name") == "converged")
    assert "run longer chains" in fit_case.find("failure").get("message")
    assert main([f"run_dir={run}", "rasch_require_converged=false"]) == 0


def test_rasch_fit_without_contrasts_is_judged_on_convergence(tmp_path: Path) -> None:
    run = rasch_run(tmp_path / "r", ["equivalent"])
    (run / "fit" / "contrasts.csv").unlink()  # a model that compares no attribute levels
    checks = judge_run(run, VerdictConfig())
    assert [(c.name, c.failed) for c in checks] == [("converged", False)]


def test_a_second_outcome_is_judged_too(tmp_path: Path) -> None:
    """The lead's fit writes every outcome's contrasts with an `outcome` column, and a second
    outcome's fit (its diagnostics) in fit/OUTCOME/."""
    run = rasch_run(tmp_path / "r", ["equivalent", "equivalent"])
    contrasts = pl.read_csv(run / "fit" / "contrasts.csv")
    pl.concat([contrasts.with_columns(outcome=pl.lit("favourable")),
               contrasts.with_columns(outcome=pl.lit("undetermined"),
                                      decision=pl.lit("different"), hdi_low=pl.lit(0.5))]).write_csv(
        run / "fit" / "contrasts.csv")
    diagnostics = json.loads((run / "fit" / "diagnostics.json").read_text())
    diagnostics["outcomes"] = ["favourable", "undetermined"]
    (run / "fit" / "diagnostics.json").write_text(json.dumps(diagnostics))
    (run / "fit" / "undetermined").mkdir()
    (run / "fit" / "undetermined" / "diagnostics.json").write_text(json.dumps(
        {**diagnostics, "converged": False, "rhat_max": float("nan")}))
    checks = judge_run(run, VerdictConfig())
    failed = sorted((c.group, c.name) for c in checks if c.failed)
    assert failed == [("rasch.fit", "converged:undetermined"),
                      ("rasch.undetermined.smollm2.race", "Black vs level0"),
                      ("rasch.undetermined.smollm2.race", "Black vs level1")]
    assert main([f"run_dir={run}"]) == 1


@pytest.mark.parametrize("damage", ["no_diagnostics", "bad_json", "bad_decision", "wrong_type",
                                    "missing_column"])
def test_malformed_rasch_files_are_bad_input(tmp_path: Path, damage: str) -> None:
    run = rasch_run(tmp_path / "r", ["equivalent"])
    diagnostics, contrasts = run / "fit" / "diagnostics.json", run / "fit" / "contrasts.csv"
    if damage == "no_diagnostics":
        diagnostics.unlink()
    elif damage == "bad_json":
        diagnostics.write_text("{converged: yes")
    elif damage == "wrong_type":
        diagnostics.write_text(json.dumps({**json.loads(diagnostics.read_text()),
                                           "converged": "yes"}))
    elif damage == "bad_decision":
        contrasts.write_text(contrasts.read_text().replace("equivalent", "maybe"))
    else:
        pl.read_csv(contrasts).drop("hdi_low").write_csv(contrasts)
    assert main([f"run_dir={run}"]) == 2


# --- arguments and the command ------------------------------------------------------------------

@pytest.mark.parametrize(("arguments", "message"), [
    ([], "run_dir"),
    (["run_dir=x", "colour=red"], "colour"),
    (["run_dir=x", "alpha=2"], "alpha"),
    (["run_dir=x", "alpha=often"], "alpha"),
    (["x"], "key=value"),
    (["run_dir=x", "rules_file=/no/such.yaml"], "not found"),
])
def test_bad_arguments_are_named(arguments: list[str], message: str) -> None:
    with pytest.raises(VerdictError, match=message):
        parse_arguments(arguments)


def test_rules_file_with_command_line_overrides(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("alpha: 0.01\niat_min_abs_d: 0.3\n")
    command = parse_arguments(["run_dir=x", f"rules_file={rules}", "iat_min_abs_d=0.5"])
    assert (command.rules.alpha, command.rules.iat_min_abs_d) == (0.01, 0.5)
    assert command.rules.min_rank_biserial is None and math.isclose(
        parse_arguments(["run_dir=x", "min_rank_biserial=0.3"]).rules.min_rank_biserial, 0.3)


def test_an_empty_or_missing_directory_is_bad_input(tmp_path: Path) -> None:
    assert main([f"run_dir={tmp_path}"]) == 2
    assert main([f"run_dir={tmp_path / 'absent'}"]) == 2


def test_the_command_line_exit_codes(tmp_path: Path) -> None:
    failing = counterfactual_run(tmp_path / "fail", effect=0.6)
    environment = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src"), "COLUMNS": "200"}

    def verdict(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "audit.verdict", *arguments],
                              capture_output=True, text=True, timeout=120, env=environment)

    failed = verdict(f"run_dir={failing}")
    assert failed.returncode == 1 and "verdict: FAIL" in failed.stdout
    bad = verdict(f"run_dir={tmp_path / 'absent'}")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "not a directory" in bad.stderr
