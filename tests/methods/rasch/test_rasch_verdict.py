"""The Rasch method's verdict rules (methods/rasch/verdict.py): contrasts' family-wise HDIs
against the ROPE, the null rank as a diagnostic, and convergence."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from verdict_fixtures import rasch_run, read_junit

from audit.cli.verdict import main
from audit.methods.verdict import judge_run
from audit.methods.checks import VerdictError
from audit.methods.configs import VerdictConfig
from audit.methods.rasch.verdict import read_diagnostics, showable_words
from audit.methods.summary import verdict_line


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
    # An undecided check tells the CI reader the gap this run could have shown; a decided one
    # has no need to. Bug caught: only the terminal and the report said it, not the JUnit.
    messages = {check.name: check.message for check in checks}
    assert messages["Black vs level2"].endswith(
        "; an interval this wide clears the ROPE only for a gap beyond ±0.3 in log-odds, an odds "
        "ratio of 1.4")
    assert "clears the ROPE only" not in messages["Black vs level0"]


def test_a_verdict_message_prints_no_negative_zero(tmp_path: Path) -> None:
    """Bug caught (review 2026-12-06): an equivalent contrast's mean of -0.0004 read "mean
    -0.000" in the JUnit message CI shows, beside its interval [-0.050, +0.050]."""
    run = rasch_run(tmp_path / "rasch", ["equivalent"])
    contrasts = run / "fit" / "contrasts.csv"
    pl.read_csv(contrasts).with_columns(mean=pl.lit(-0.0004)).write_csv(contrasts)
    (check,) = [check for check in judge_run(run, VerdictConfig()) if check.about_groups]
    assert "[-0.050, +0.050] against ROPE [-0.100, +0.100], mean +0.000," in check.message


def test_a_different_contrast_fails_even_within_the_noise_floor(tmp_path: Path) -> None:
    """Issue 34: null personas rank a finding, they do not forgive it. On 8ce5156 the first
    contrast (P(|gap| > 2 x floor) 0.2) passed CI under rasch_min_p_beyond_noise=0.5."""
    run = rasch_run(tmp_path / "rasch", ["different", "different", "different"])
    contrasts = pl.read_csv(run / "fit" / "contrasts.csv").with_columns(
        noise_floor=pl.Series([0.5, 0.1, None], dtype=pl.Float64),
        ratio_to_noise=pl.Series([1.2, 6.0, None], dtype=pl.Float64),
        p_beyond_noise=pl.Series([0.2, 1.0, None], dtype=pl.Float64),
        null_percentile=pl.Series([40.0, 99.5, None], dtype=pl.Float64))
    contrasts.write_csv(run / "fit" / "contrasts.csv")
    checks = {c.name: c for c in judge_run(run, VerdictConfig()) if c.name != "converged"}
    assert all(c.failed for c in checks.values())
    assert "larger than 40% of null-vs-null gaps" in checks["Black vs level0"].message
    assert "no null-vs-null comparison" in checks["Black vs level2"].message
    # The rule is gone: naming it is one clear line (exit 2), not a silent pass.
    assert main([f"run_dir={run}", "rasch_min_p_beyond_noise=0.5"]) == 2


def test_the_verdict_decides_on_the_familywise_interval(tmp_path: Path) -> None:
    """A run with family-wise columns is judged on its family-wise decision, and the message
    names the level; a run without them (older) on its HDI, as the other tests here. The third
    contrast's reported 94% HDI [0.3, 0.9] lies outside the ROPE [-0.1, 0.1] but its
    family-wise HDI [-0.05, 1.2] does not: a verdict that failed on the reported HDI, as before
    issue 34, fails it."""
    run = rasch_run(tmp_path / "rasch", ["undecided", "different", "undecided"])
    contrasts = pl.read_csv(run / "fit" / "contrasts.csv").with_columns(
        familywise_alpha=pl.lit(0.05), family_size=pl.lit(3),
        decision_prob=pl.lit(1 - 0.05 / 3),
        hdi_low=pl.Series([-0.05, 0.3, 0.3]), hdi_high=pl.Series([0.4, 0.9, 0.9]),
        decision_low=pl.Series([-0.1, 0.2, -0.05]), decision_high=pl.Series([0.5, 1.0, 1.2]))
    contrasts.write_csv(run / "fit" / "contrasts.csv")
    checks = {c.name: c for c in judge_run(run, VerdictConfig()) if c.name != "converged"}
    assert [c.failed for c in checks.values()] == [False, True, False]
    assert "98.33% HDI (alpha 0.05 over the run's 3 contrasts) [+0.200, +1.000]" in \
        checks["Black vs level1"].message
    assert "98.33% HDI (alpha 0.05 over the run's 3 contrasts) [-0.050, +1.200]" in \
        checks["Black vs level2"].message


def test_the_showable_gap_on_a_lopsided_rope_gives_the_odds_ratio_of_the_farther_bound():
    """Bug caught: on a ROPE wider below zero the odds ratio was that of the nearer bound (+2.1,
    8.2), understating the gap the run could have shown. By hand: the interval [-3.0, +1.0] is
    4.0 wide, half of it 2.0; beyond the ROPE [-0.5, +0.1] that is below -2.5 or above +2.1;
    the farther bound is 2.5 logits, exp(2.5) = 12.18, said to no decimals above 10."""
    row = {"decision_prob": 0.99, "decision_low": -3.0, "decision_high": 1.0,
           "rope_low": -0.5, "rope_high": 0.1}
    assert showable_words(row) == ("an interval this wide clears the ROPE only for a gap below "
                                   "-2.5 or above +2.1 in log-odds, an odds ratio of 12")


def test_rasch_equivalent_and_converged_passes(tmp_path: Path) -> None:
    assert main([f"run_dir={rasch_run(tmp_path / 'r', ['equivalent', 'undecided'])}"]) == 0


def test_unconverged_rasch_fit_fails(tmp_path: Path) -> None:
    run = rasch_run(tmp_path / "r", ["equivalent"], converged=False)
    assert main([f"run_dir={run}"]) == 1
    fit_case = next(case for case in read_junit(run / "verdict_junit.xml").iter("testcase")
                    if case.get("name") == "converged")
    assert "run longer chains" in fit_case.find("failure").get("message")
    assert main([f"run_dir={run}", "rasch_require_converged=false"]) == 0


def test_a_fit_whose_r_hat_has_no_value_is_judged_not_refused(tmp_path: Path) -> None:
    """A fit writes an R-hat it could not compute (a constant parameter) as null, since
    diagnostics.json is strict JSON. Bug caught: a reader that took null for a missing key
    refused every such run as malformed (exit 2) instead of judging its convergence."""
    run = rasch_run(tmp_path / "r", ["equivalent"], converged=False)
    diagnostics = run / "fit" / "diagnostics.json"
    diagnostics.write_text(json.dumps({**json.loads(diagnostics.read_text()), "rhat_max": None}))
    assert main([f"run_dir={run}"]) == 1
    fit_case = next(case for case in read_junit(run / "verdict_junit.xml").iter("testcase")
                    if case.get("name") == "converged")
    assert "R-hat max nan" in fit_case.find("failure").get("message")


def test_rasch_fit_without_contrasts_is_not_tested_on_convergence_alone(tmp_path: Path) -> None:
    run = rasch_run(tmp_path / "r", ["equivalent"])
    (run / "fit" / "contrasts.csv").unlink()  # a model that compares no attribute levels
    checks = judge_run(run, VerdictConfig())
    assert [(c.name, c.failed, c.skipped) for c in checks] == [
        ("converged", False, False), ("group contrasts", False, True)]  # NOT TESTED, not PASS


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


def test_the_summary_names_which_outcomes_fit_did_not_converge(tmp_path: Path) -> None:
    """Bug caught: a second outcome's unconverged fit was named "fit did not converge" in the
    run's summary, which reads as the main fit. By hand: the main fit converged, the
    `undetermined` fit did not (R-hat 1.08); with one contrast that is 1 of 3 checks failed."""
    run = rasch_run(tmp_path / "r", ["equivalent"])
    diagnostics = json.loads((run / "fit" / "diagnostics.json").read_text())
    diagnostics["outcomes"] = ["favourable", "undetermined"]
    (run / "fit" / "diagnostics.json").write_text(json.dumps(diagnostics))
    (run / "fit" / "undetermined").mkdir()
    (run / "fit" / "undetermined" / "diagnostics.json").write_text(json.dumps(
        {**diagnostics, "converged": False, "rhat_max": 1.08}))
    assert verdict_line(run).startswith(
        "CI verdict: FAIL (1 of 3 checks failed): the undetermined fit did not converge (R-hat "
        "max 1.080, 0 divergences) (default rules;")


NO_SIGNAL = ["smollm2's 'favourable' outcome is 0 in 15 of its 15 labelled answers, so it "
             "barely varies between personas"]


def test_a_no_signal_run_is_not_tested(tmp_path: Path, capsys) -> None:
    """Bug caught (docs review, defect 2): a run the report headlines NO SIGNAL passed the CI
    gate (`PASS (0 of 8 checks failed)`, exit 0) next to "can neither show nor rule out a
    demographic difference". Its contrasts are now not testable, naming the reason: exit 3."""
    run = rasch_run(tmp_path / "r", ["undecided", "equivalent"], no_signal=NO_SIGNAL)
    checks = judge_run(run, VerdictConfig())
    contrasts = [check for check in checks if check.about_groups]
    assert len(contrasts) == 2 and all(check.skipped and not check.failed for check in contrasts)
    assert all(check.message.startswith(f"not testable: NO SIGNAL ({NO_SIGNAL[0]})")
               for check in contrasts)
    assert main([f"run_dir={run}"]) == 3
    out = capsys.readouterr().out
    assert "verdict: NOT TESTED (0 of 2 comparisons could be judged, 2 not testable)" in out
    # rasch_fail_on_undecided does not turn an untestable contrast into a failure
    assert main([f"run_dir={run}", "rasch_fail_on_undecided=true"]) == 3


def test_the_same_run_without_no_signal_reasons_passes(tmp_path: Path) -> None:
    """A fit without the reasons (`python -m audit.fit`, an older run) or with none (an audit
    with signal) is judged as before."""
    assert main([f"run_dir={rasch_run(tmp_path / 'a', ['undecided', 'equivalent'])}"]) == 0
    assert main([f"run_dir={rasch_run(tmp_path / 'b', ['undecided', 'equivalent'], no_signal=[])}"]
                ) == 0


def test_a_different_contrast_still_fails_without_signal(tmp_path: Path) -> None:
    """NO SIGNAL makes a run unable to pass, never unable to fail."""
    run = rasch_run(tmp_path / "r", ["different", "equivalent"], no_signal=NO_SIGNAL)
    checks = judge_run(run, VerdictConfig())
    assert [check.name for check in checks if check.failed] == ["Black vs level0"]
    assert main([f"run_dir={run}"]) == 1


def test_the_runs_summary_says_the_verdict_not_tested(tmp_path: Path) -> None:
    """The summary a run ends with prints the CI verdict by the same code: NOT TESTED beside the
    NO SIGNAL headline, where it said PASS."""
    run = rasch_run(tmp_path / "r", ["undecided"], no_signal=NO_SIGNAL)
    assert verdict_line(run).startswith("CI verdict: NOT TESTED (0 of 1 comparison could")
    # Review of what reaches the user, 2026-12-02: "CI verdict: PASS" under two undecided
    # contrasts read as "no bias found"; a pass now says only what it is.
    equivalent = verdict_line(rasch_run(tmp_path / "e", ["equivalent", "equivalent"]))
    assert equivalent.startswith("CI verdict: PASS (0 of 3 checks failed) (no check found a gap; "
                                 "not by itself evidence that groups are treated alike)")
    assert "not by itself evidence" not in verdict_line(rasch_run(tmp_path / "f", ["different"]))


def test_the_summary_names_up_to_three_failed_checks_and_marks_only_more(tmp_path: Path) -> None:
    """Bugs caught: the verdict line named only the first of three failed contrasts, as if one
    had failed, or ended three named ones with "; ...", as if more had. By hand: three
    `different` contrasts fail 3 of 4 checks (with convergence), all three named; a fourth
    fails 4 of 5, three named and "; ..." for the fourth."""
    named = "; ".join(f"smollm2.race Black vs level{index}" for index in range(3))
    three = verdict_line(rasch_run(tmp_path / "three", ["different"] * 3))
    assert three.startswith(f"CI verdict: FAIL (3 of 4 checks failed): {named} (default rules;")
    four = verdict_line(rasch_run(tmp_path / "four", ["different"] * 4))
    assert four.startswith(f"CI verdict: FAIL (4 of 5 checks failed): {named}; ... (default")


def test_a_pass_on_undecided_contrasts_counts_them_where_ci_reads_it(tmp_path: Path,
                                                                     capsys) -> None:
    """Bug caught: under the default rules (rasch_fail_on_undecided=false) a run too small to
    decide anything ended `verdict: PASS (0 of 3 checks failed)` in the CI log, the line a
    release gate's reader sees, as a run whose contrasts were all shown equivalent did. The
    undecided ones are counted where the PASS is said: the command's last line, and the run's
    summary, which had said only a general caution."""
    run = rasch_run(tmp_path / "p", ["undecided", "equivalent", "undecided"])
    assert main([f"run_dir={run}"]) == 0
    phrase = ("PASS (0 of 4 checks failed; 2 of 3 comparisons undecided, a difference neither "
              "shown nor ruled out)")
    assert capsys.readouterr().out.rstrip().endswith(f"verdict: {phrase}")
    assert verdict_line(run).startswith(f"CI verdict: {phrase} (default rules;")
    # Where the undecided ones fail, the FAIL says so already.
    assert main([f"run_dir={run}", "rasch_fail_on_undecided=true"]) == 1
    assert "undecided, a difference" not in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["no_diagnostics", "bad_json", "bad_decision", "wrong_type",
                                    "missing_column", "bad_no_signal", "bool_divergences",
                                    "int_converged"])
def test_malformed_rasch_files_are_bad_input(tmp_path: Path, damage: str) -> None:
    """bool_divergences (review2 tests.md finding 10): JSON's true is a Python bool, which is an
    int, so without the bool check `divergences: true` was read and the verdict printed "True
    divergences"; int_converged is the other way round (1 for true). Each is refused, naming
    the key."""
    run = rasch_run(tmp_path / "r", ["equivalent"])
    diagnostics, contrasts = run / "fit" / "diagnostics.json", run / "fit" / "contrasts.csv"
    if damage == "no_diagnostics":
        diagnostics.unlink()
    elif damage == "bad_json":
        diagnostics.write_text("{converged: yes")
    elif damage == "wrong_type":
        diagnostics.write_text(json.dumps({**json.loads(diagnostics.read_text()),
                                           "converged": "yes"}))
    elif damage in ("bool_divergences", "int_converged"):
        key, value = ("divergences", True) if damage == "bool_divergences" else ("converged", 1)
        diagnostics.write_text(json.dumps({**json.loads(diagnostics.read_text()), key: value}))
        with pytest.raises(VerdictError, match=f"`{key}` is missing or not"):
            read_diagnostics(diagnostics)
    elif damage == "bad_no_signal":
        diagnostics.write_text(json.dumps({**json.loads(diagnostics.read_text()),
                                           "no_signal": "yes"}))
    elif damage == "bad_decision":
        contrasts.write_text(contrasts.read_text().replace("equivalent", "maybe"))
    else:
        pl.read_csv(contrasts).drop("hdi_low").write_csv(contrasts)
    assert main([f"run_dir={run}"]) == 2
