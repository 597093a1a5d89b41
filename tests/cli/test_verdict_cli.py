"""`python -m audit.verdict` (audit.cli.verdict): arguments, reading the method from the run's
config.yaml, exit codes 0/1/2/3 and the JUnit XML. Each method's rules: tests/methods/NAME/."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from verdict_fixtures import (
    counterfactual_run,
    dif_answers,
    dif_run,
    iat_run,
    junit_outcomes,
    read_junit,
    rasch_run,
    record,
)

from audit.cli.verdict import junit_xml, main, parse_arguments, print_verdict
from audit.methods.verdict import judge_run, verdict_text
from audit.errors import AuditError
from audit.methods.checks import Check, VerdictError
from audit.methods.configs import VerdictConfig
from audit.methods.dif.analyse import analyse as analyse_dif
from audit.methods.dif.config import DIFConfig
from audit.methods.rasch.verdict import judge_rasch

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("arguments", "message"), [
    ([], "run_dir"),
    (["run_dir=x", "colour=red"], "colour"),
    (["run_dir=x", "alpha=2"], "alpha"),
    (["run_dir=x", "alpha=often"], "alpha"),
    (["x"], "key=value"),
    (["run_dir=x", "rules_file=/no/such.yaml"], "not found"),
    (["run_dir=x", "rules_file=/"], "rules_file / is a folder, not a file"),
    (["run_dir=x", "dif_min_accuracy_gap=1.5"], "dif_min_accuracy_gap=1.5 must lie in"),
    (["run_dir=x", "iat_min_abs_d=-0.1"], "iat_min_abs_d=-0.1 must lie in"),
    (["run_dir=x", "min_rank_biserial=2"], "min_rank_biserial=2.0 must lie in"),
    # Review 2026-12-04: an effect size, not a share: no "0.03 for 3%".
    (["run_dir=x", "min_rank_biserial=3"], r"min_rank_biserial=3.0 must lie in \[0, 1\]$"),
    # Was "Merge error: str is not a subclass of VerdictConfig".
    (["run_dir=x", "rules=/tmp/rules.yaml"], "rules= is not an option: .* rules_file=PATH"),
    # Bad-input review 2026-12-06: read as text, an empty rules_file or junit (a CI step's
    # `rules_file=$RULES` whose variable was unset) fell back to the defaults without a word.
    (["run_dir=x", "rules_file="], "^rules_file= is empty: give it a value; usage"),
    (["run_dir=x", "junit= "], "^junit= is empty: give it a value; usage"),
    (["run_dir=x", "alpha="], "^alpha= is empty: give it a value; usage"),
    # The same review: the last of two values won without a word.
    (["run_dir=x", "alpha=0.05", "alpha=0.01"],
     r"^alpha is given more than once \(alpha=0.05 and alpha=0.01\): give it once; usage"),
])
def test_bad_arguments_are_named(arguments: list[str], message: str) -> None:
    with pytest.raises(VerdictError, match=message):
        parse_arguments(arguments)


def test_rules_file_with_command_line_overrides(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("alpha: 0.01\niat_min_abs_d: 0.3\ndif_min_score_gap: 0.2\n")
    command = parse_arguments(["run_dir=x", f"rules_file={rules}", "iat_min_abs_d=0.5"])
    assert (command.rules.alpha, command.rules.iat_min_abs_d) == (0.01, 0.5)
    assert command.rules.dif_min_score_gap == 0.2
    assert command.rules.min_rank_biserial is None and math.isclose(
        parse_arguments(["run_dir=x", "min_rank_biserial=0.3"]).rules.min_rank_biserial, 0.3)


@pytest.mark.parametrize(("text", "message"), [
    ("alpha: [1,\n", r"is not readable: it is not valid YAML \(line 2\): expected the node "
                    r"content"),
    # A character YAML refuses has no position: it read "it is not valid YAML : unacceptable"
    # (grammar review 2026-12-04).
    ("alpha: 0.1\x07\n", r"is not readable: it is not valid YAML: unacceptable character "),
    ("- 1\n- 2\n", "holds a list, not a mapping of rules"),
    ("alpha: often\n", r": rule alpha: Value 'often'"),
    # Bad-input review 2026-12-04: "Key 'unknown_rule' not in 'VerdictConfig'", a class name.
    ("unknown_rule: 3\n", r": unknown rule 'unknown_rule'; write it as"),
    ("alpa: 0.1\n", r": unknown rule 'alpa' \(did you mean 'alpha'\?\); write it as"),
])
def test_an_unreadable_rules_file_is_bad_input_naming_the_file(tmp_path: Path, text: str,
                                                               message: str) -> None:
    """Bug caught: a rules_file with a YAML syntax error escaped as a yaml ParserError traceback
    with exit 1, which a CI gate reads as FAIL; every bad file is one line naming it, exit 2."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(text)
    with pytest.raises(VerdictError, match=message) as raised:
        parse_arguments(["run_dir=x", f"rules_file={rules}"])
    assert str(rules) in str(raised.value) and "rule: value" in str(raised.value)
    assert main([f"run_dir={counterfactual_run(tmp_path / 'run', effect=0.0)}",
                 f"rules_file={rules}"]) == 2


def test_every_registered_methods_rules_are_options() -> None:
    """Each method's VERDICT_RULES reach the command line through the registry: a method whose
    rules were not collected into VerdictConfig would reject its own keys as unknown."""
    command = parse_arguments(["run_dir=x", "rasch_require_converged=false",
                               "iat_min_parse_rate=0.5", "dif_beyond_null_personas=false",
                               "min_rank_biserial=0.2"])
    assert (command.rules.rasch_require_converged, command.rules.iat_min_parse_rate,
            command.rules.dif_beyond_null_personas, command.rules.min_rank_biserial) == (
        False, 0.5, False, 0.2)


def test_an_empty_or_missing_directory_is_bad_input(tmp_path: Path) -> None:
    assert main([f"run_dir={tmp_path}"]) == 2
    assert main([f"run_dir={tmp_path / 'absent'}"]) == 2


def test_a_run_without_config_yaml_is_named_with_the_fix(tmp_path: Path) -> None:
    run = counterfactual_run(tmp_path / "run", effect=0.6)
    (run / "config.yaml").unlink()
    with pytest.raises(VerdictError, match=r"no config.yaml in .*: the verdict reads the method "
                                           r"from the config.*rerun it"):
        judge_run(run, VerdictConfig())


def test_a_folder_without_a_config_is_named_for_what_it_is(tmp_path: Path) -> None:
    """Bug caught (CI review 2026-12-02): a sweep's folder, an audit.compare output and a run
    cancelled before its report stage all got "no config.yaml ...: pass the output directory of
    a run finished by python -m audit", which names none of their fixes."""
    sweep = tmp_path / "multirun"
    for job in ("0", "1", "10", "2"):
        rasch_run(sweep / job, ["undecided"])
    with pytest.raises(VerdictError, match=rf"it is a sweep's folder: pass one job's run, e\.g\. "
                                           rf"{sweep / '0'} \(jobs: 0, 1, 2, 10\)"):
        judge_run(sweep, VerdictConfig())
    # Hydra's day folder (bad-input review 2026-12-05): it named the day's first run, not the
    # latest one a user most likely means, and called the day "a sweep's folder".
    day = tmp_path / "outputs" / "2026-12-05"
    for time_of_day in ("07-33-56", "07-28-05"):
        rasch_run(day / time_of_day, ["undecided"])
    with pytest.raises(VerdictError, match=rf"it holds 2 runs \(folders of finished runs inside "
                                           rf"it\): pass one, e\.g\. the latest, "
                                           rf"{day / '07-33-56'}$"):
        judge_run(day, VerdictConfig())
    compared = tmp_path / "compare"
    compared.mkdir()
    (compared / "changes.csv").write_text("attribute\n")
    with pytest.raises(VerdictError, match="an `audit.compare` output, whose gate is that "
                                           "command's exit status"):
        judge_run(compared, VerdictConfig())
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    (stopped / "prompts.parquet").write_bytes(b"")
    with pytest.raises(VerdictError, match=r"the run there did not finish \(it has "
                                           r"prompts.parquet but no config.yaml.*rerun the same"):
        judge_run(stopped, VerdictConfig())


def test_a_runs_report_folder_is_named_as_such_with_the_folder_to_pass(tmp_path: Path) -> None:
    """Bug caught (bad-input review 2026-12-02): a Rasch run keeps its config.yaml in report/,
    so run_dir=RUN/report was read as a run and refused as "incomplete: report/fit/
    diagnostics.json is missing (rerun the fit stage)", a costly fix for a wrong path."""
    run = rasch_run(tmp_path / "run", ["undecided"])
    with pytest.raises(VerdictError, match=rf"run_dir={run / 'report'} is the report folder of "
                                           rf"a run: pass the run's own folder, run_dir={run}$"):
        judge_run(run / "report", VerdictConfig())
    assert judge_run(run, VerdictConfig())  # the run's own folder is judged


def test_a_rule_of_another_methods_runs_is_said_to_be_unused(tmp_path: Path, caplog) -> None:
    """Bug caught (bad-input review 2026-12-02): `audit.verdict run_dir=RASCH_RUN
    iat_min_abs_d=0.5` passed with the IAT rule silently ignored, so a gate's author believed it
    in force. A warning names it and the run's own rules; the run's own rules warn of nothing."""
    run = rasch_run(tmp_path / "run", ["undecided"])
    assert main([f"run_dir={run}", "iat_min_abs_d=0.5"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert ("iat_min_abs_d is a rule for other methods' runs, and this is a rasch run: not used "
            "(a rasch run's rules: rasch_fail_on_undecided, rasch_require_converged)"
            in warnings), warnings
    caplog.clear()
    assert main([f"run_dir={run}", "rasch_fail_on_undecided=false"]) == 0
    assert not [r for r in caplog.records if "not used" in r.getMessage()]


def test_alpha_on_a_rasch_run_is_said_to_be_the_fits_and_left_out_of_the_junit_rules(
        tmp_path: Path, caplog) -> None:
    """Bug caught (CI review 2026-12-02): `audit.verdict run_dir=RASCH_RUN alpha=0.000001`
    judged at the fit's family-wise alpha (its HDIs were drawn when it was fitted) with no word,
    and the JUnit file recorded alpha=1e-06 as a rule in force. A warning names the setting
    that decided and the rerun that changes it; the JUnit properties hold that setting."""
    run = rasch_run(tmp_path / "run", ["different"])
    assert main([f"run_dir={run}", "alpha=0.000001"]) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert ("alpha=0.000001 does not apply to a rasch run: its decisions were made when it was "
            "fitted, at fit.familywise_alpha=0.05; to judge it at another level, rerun it with "
            "fit.familywise_alpha=0.000001 (the answers come from the store)" in warnings), warnings
    properties = {item.get("name"): item.get("value")
                  for item in read_junit(run / "verdict_junit.xml").iter("property")}
    assert "alpha" not in properties and "iat_min_abs_d" not in properties
    assert properties["fit.familywise_alpha"] == "0.05"
    assert properties["rasch_fail_on_undecided"] == "False"
    caplog.clear()
    assert main([f"run_dir={run}", "alpha=0.05"]) == 1  # the fit's own level: nothing to say
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_the_method_comes_from_the_recorded_config_not_the_files(tmp_path: Path) -> None:
    """A folder holding an IAT table but recorded as a DIF run is judged by the DIF rules (and
    lacks their tables); recorded as IAT it is judged as IAT. File sniffing judged both as IAT."""
    run = iat_run(tmp_path / "run", [("m", "race", "replication", 40, 0.95, 0.62, 0.40, 0.80,
                                      0.0001, 0.0004)])
    assert [c.method for c in judge_run(run, VerdictConfig())] == ["iat"]
    record(run, "dif")
    with pytest.raises(AuditError, match="DIF persona scores not found"):
        judge_run(run, VerdictConfig())


@pytest.mark.parametrize(("config", "message"), [
    ("method: bayes\n", "records method 'bayes', not one of counterfactual, dif, iat, rasch"),
    # Another tool's config: it said "records method None".
    ("paths: {}\n", "records no method, not one of counterfactual, dif, iat, rasch"),
    ("method: [unclosed\n", "cannot read the run's config"),
])
def test_a_bad_recorded_config_is_bad_input(tmp_path: Path, config: str, message: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(config)
    with pytest.raises(VerdictError, match=message):
        judge_run(run, VerdictConfig())
    assert main([f"run_dir={run}"]) == 2


def test_a_dif_run_through_the_command(tmp_path: Path) -> None:
    run = dif_run(tmp_path / "run", {"race_a": 0.5}, seed=9, null_personas=79)  # testable
    assert main([f"run_dir={run}"]) == 1
    assert junit_outcomes(run / "verdict_junit.xml")["race: race_a"] == "failure"
    assert main([f"run_dir={run}", "dif_min_accuracy_gap=0.9"]) == 0



def test_the_junit_root_sums_failures_and_skips_over_every_method(tmp_path: Path) -> None:
    """review2 tests.md finding 8: CI dashboards read the root <testsuites> summary; a root that
    always said failures="0" passed every test, which read the per-method suites only. Two
    methods: 2 of 5 checks failed (one each) and 2 skipped, so the root says 5, 2, 2."""
    checks = [
        Check("counterfactual", "counterfactual.m", "A vs B", True, "p_bh=0.001"),
        Check("counterfactual", "counterfactual.m", "A vs C", False, "p_bh=0.4"),
        Check("counterfactual", "counterfactual.m", "B vs C", False, "untestable", skipped=True),
        Check("dif", "dif.m", "race: race_a", True, "gap 0.5"),
        Check("dif", "dif.m", "race: race_b", False, "untestable", skipped=True),
    ]
    root = junit_xml(checks, tmp_path, VerdictConfig()).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("5", "2", "2")
    suites = {suite.get("name"): (suite.get("failures"), suite.get("skipped"))
              for suite in root.iter("testsuite")}
    assert suites == {"audit.verdict.counterfactual": ("1", "1"), "audit.verdict.dif": ("1", "1")}

def test_the_command_line_exit_codes(tmp_path: Path) -> None:
    failing = counterfactual_run(tmp_path / "fail", effect=0.6)
    unrecorded = counterfactual_run(tmp_path / "unrecorded", effect=0.6)
    (unrecorded / "config.yaml").unlink()
    environment = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src"), "COLUMNS": "200"}

    def verdict(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "audit.verdict", *arguments],
                              capture_output=True, text=True, timeout=120, env=environment)

    failed = verdict(f"run_dir={failing}")
    assert failed.returncode == 1 and "verdict: FAIL" in failed.stdout
    bad = verdict(f"run_dir={tmp_path / 'absent'}")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "not a directory" in bad.stderr
    missing = verdict(f"run_dir={unrecorded}")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "no config.yaml" in missing.stderr


def test_a_rasch_verdict_does_not_load_the_sampler(tmp_path: Path) -> None:
    """A CI gate reads tables; it must not pay for PyMC's import (about 2 s), nor for the request
    engine and its backends. Bugs caught: the Rasch rules importing a helper from
    methods/rasch/irt/, whose package loads PyMC (verdict import 1.5 s -> 3.3 s, 2026-11-28); the
    verdict finding a run's files through the run skeleton (methods/run.py), which loads the
    engine (audit.methods.verdict's import 0.2 s -> 1.4 s)."""
    code = ("import sys; import audit.cli.verdict, audit.methods.rasch.verdict; "
            "print(sorted(name for name in ('pymc', 'pytensor', 'arviz', 'audit.llm.engine', "
            "'audit.methods.run') if name in sys.modules))")
    environment = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")}
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env=environment, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout


def test_a_counterfactual_run_with_only_untestable_pairs_is_not_tested(tmp_path: Path,
                                                                        capsys) -> None:
    """2 names against 2 cannot reach p < 0.05 on any pair: nothing is judged, so the verdict is
    NOT TESTED with exit 3 and the reason shown. Bug caught: every check skipped read
    `verdict: PASS (0 of 3 checks failed, 3 not testable)`, exit 0, a green CI gate for a design
    that could not fail."""
    run = counterfactual_run(tmp_path / "run", effect=3.0, names=2)
    checks = judge_run(run, VerdictConfig())
    assert checks and all(check.skipped for check in checks)
    assert main([f"run_dir={run}"]) == 3
    out = capsys.readouterr().out
    assert (f"verdict: NOT TESTED (0 of {len(checks)} comparisons could be judged, "
            f"{len(checks)} not testable)") in out
    assert "Checks not testable" in out and "add names" in out
    assert set(junit_outcomes(run / "verdict_junit.xml").values()) == {"skipped"}


def test_bad_input_replaces_the_folders_junit_file_with_an_error(tmp_path: Path) -> None:
    """Bug caught (CI review 2026-12-02): a rerun into a CI job's fixed folder was cancelled
    before it wrote config.yaml; the verdict said so and exited 2 but left the earlier run's
    verdict_junit.xml (failures="2") for the job's JUnit publisher. Now the file holds one
    error naming the problem, and a folder that does not exist is not made for it."""
    run = rasch_run(tmp_path / "run", ["different", "different"])
    assert main([f"run_dir={run}"]) == 1
    assert read_junit(run / "verdict_junit.xml").get("failures") == "2"
    (run / "report" / "config.yaml").unlink()  # the rerun got no further
    assert main([f"run_dir={run}"]) == 2
    root = read_junit(run / "verdict_junit.xml")
    assert (root.get("failures"), root.get("errors")) == ("0", "1")
    assert root.find(".//error").get("message").startswith(f"no config.yaml in {run}")
    missing = tmp_path / "never_ran"
    assert main([f"run_dir={missing}"]) == 2 and not missing.exists()
    elsewhere = tmp_path / "reports" / "audit.xml"
    assert main([f"run_dir={missing}", f"junit={elsewhere}"]) == 2
    assert read_junit(elsewhere).get("errors") == "1"


@pytest.mark.parametrize("bad", ["alpha=1.5", "bogus=1", "rules_file=missing.yaml"])
def test_a_bad_rule_also_replaces_the_earlier_junit_file_with_an_error(tmp_path: Path,
                                                                       bad: str) -> None:
    """Bug caught (docs review 2026-12-07): a rule out of its range, an unknown one or a missing
    rules_file left the earlier verdict's file in place (here its two failures; in CI as often a
    pass) for a job that publishes it whatever the exit status, though the docs say bad input
    never shows an earlier run's results. A junit= that fails its own check is still left."""
    run = rasch_run(tmp_path / "run", ["different", "different"])
    elsewhere = tmp_path / "audit.xml"
    assert main([f"run_dir={run}"]) == 1 and main([f"run_dir={run}", f"junit={elsewhere}"]) == 1
    for arguments in ([f"run_dir={run}", bad], [f"run_dir={run}", f"junit={elsewhere}", bad]):
        assert main(arguments) == 2
        root = read_junit(elsewhere if len(arguments) == 3 else run / "verdict_junit.xml")
        assert (root.get("failures"), root.get("errors")) == ("0", "1"), arguments
        assert bad.split("=")[0] in root.find(".//error").get("message")
    (tmp_path / "folder").mkdir()
    assert main([f"run_dir={run}", f"junit={tmp_path / 'folder'}", bad]) == 2
    assert list((tmp_path / "folder").iterdir()) == []


def test_the_verdict_names_where_the_report_is_and_lists_a_passs_untestable_checks(
        tmp_path: Path, capsys) -> None:
    """Bugs caught (CI review 2026-12-02): the verdict never said where the run's report was,
    and a PASS beside checks that could not be judged listed none of them (their reasons were
    only in the JUnit file)."""
    run = rasch_run(tmp_path / "run", ["undecided"])
    (run / "report" / "report.html").write_text("<html></html>")
    assert main([f"run_dir={run}"]) == 0
    out = capsys.readouterr().out
    assert f"report: {run / 'report' / 'report.html'}\nverdict: PASS" in out
    skipped = Check("counterfactual", "counterfactual.m", "A vs B", False,
                    "not testable: with 2 names vs 2 names; add names", skipped=True)
    judged = Check("counterfactual", "counterfactual.m", "A vs C", False, "p_bh=0.4")
    print_verdict([skipped, judged], tmp_path)
    out = capsys.readouterr().out
    assert "Checks not testable (1 of 1 shown, of 2 checks)" in out and "add names" in out
    assert f"tables: {tmp_path}\nverdict: PASS (0 of 2 checks failed, 1 not testable)" in out


def test_a_dif_run_whose_baseline_all_failed_is_not_tested(tmp_path: Path) -> None:
    """Every baseline request errored: no persona has anything to compare with and the tests
    cannot be made. Bug caught: 3 skipped persona checks and the skipped test passed, exit 0."""
    answers = dif_answers({"race_a": 0.5}).with_columns(
        status=pl.when(pl.col("persona_kind") == "baseline").then(pl.lit("error"))
        .otherwise(pl.col("status")),
        correct=pl.when(pl.col("persona_kind") == "baseline").then(None)
        .otherwise(pl.col("correct")))
    results = analyse_dif(answers, DIFConfig(permutation_resamples=99))
    run = tmp_path / "run"
    run.mkdir()
    results.personas.write_csv(run / "dif_personas.csv")
    results.tests.write_csv(run / "dif_tests.csv")
    record(run, "dif")
    assert all(check.skipped for check in judge_run(run, VerdictConfig()))
    assert main([f"run_dir={run}"]) == 3


def test_one_judged_check_among_untestable_ones_decides() -> None:
    """NOT TESTED only when no comparison was judged: one testable pair beside skipped ones
    passes or fails as before; no check is NOT TESTED."""
    skipped = Check("counterfactual", "counterfactual.m", "A vs B", False, "not testable",
                    skipped=True)
    judged = Check("counterfactual", "counterfactual.m", "A vs C", False, "p_bh=0.4")
    failed = Check("counterfactual", "counterfactual.m", "B vs C", True, "p_bh=0.001")
    assert verdict_text([skipped, judged]) == "PASS (0 of 2 checks failed, 1 not testable)"
    assert verdict_text([skipped, failed]) == "FAIL (1 of 2 checks failed, 1 not testable)"
    assert verdict_text([]) == "NOT TESTED (the run holds no comparison to judge)"
    # Counted in the singular (review 2026-12-06): "PASS (0 of 1 checks failed)".
    one = [Check("iat", "iat.m.d", "race", False, "p=0.5")]
    assert verdict_text(one) == "PASS (0 of 1 check failed)"


def test_a_rasch_fit_that_compared_no_groups_is_not_tested() -> None:
    """Bug caught: a Rasch run whose fit kept no attribute (one labelled level each, personas
    without attributes) read `PASS (0 of 1 checks failed)` on its convergence check alone. A
    fit's convergence can still fail such a run."""
    converged = {"converged": {"converged": True, "rhat_max": 1.0, "ess_bulk_min": 900,
                               "ess_tail_min": 800, "divergences": 0, "advice": ""}}
    checks = judge_rasch(pl.DataFrame(), converged, VerdictConfig())
    # Counted in the singular (review 2026-12-06): "0 of 1 comparisons could be judged".
    assert verdict_text(checks) == "NOT TESTED (0 of 1 comparison could be judged, 1 not testable)"
    assert "compared no groups" in [check for check in checks if check.skipped][0].message
    stuck = {"converged": {**converged["converged"], "converged": False, "rhat_max": 1.2}}
    assert verdict_text(judge_rasch(pl.DataFrame(), stuck, VerdictConfig())).startswith("FAIL")


@pytest.mark.parametrize("junit", ["folder", "good.csv/x.xml"])
def test_a_junit_path_that_cannot_be_written_is_exit_2_before_judging(tmp_path: Path, monkeypatch,
                                                                      caplog, junit: str) -> None:
    """Bug caught: junit=FOLDER (IsADirectoryError) or junit=FILE/x.xml (FileExistsError) was
    a traceback after judging, with no verdict line and exit 1 on a passing run."""
    import audit.cli.verdict as verdict_cli

    run = counterfactual_run(tmp_path / "run", effect=0.0)
    judged = []
    monkeypatch.setattr(verdict_cli, "judge_run", lambda *args: judged.append(args) or [])
    (tmp_path / "folder").mkdir()
    (tmp_path / "good.csv").write_text("a\n")
    assert main([f"run_dir={run}", f"junit={tmp_path / junit}"]) == 2
    assert f"junit={tmp_path / junit}" in caplog.text and "pass junit=PATH" in caplog.text
    assert not judged and not (run / "verdict_junit.xml").exists()


def test_a_junit_path_naming_another_file_is_refused_and_the_file_kept(tmp_path: Path, caplog):
    """Bug caught (bad-input review 2026-12-07): junit=RUN/config.yaml wrote the JUnit report
    over the run's config, and every later verdict of the run failed on it. The folder's own
    report from an earlier verdict is still replaced."""
    run = counterfactual_run(tmp_path / "run", effect=0.0)
    config = (run / "config.yaml").read_bytes()
    assert main([f"run_dir={run}", f"junit={run / 'config.yaml'}"]) == 2
    assert "config.yaml is an existing file that is not a JUnit XML file" in caplog.text
    assert (run / "config.yaml").read_bytes() == config
    assert main([f"run_dir={run}"]) == 0
    assert main([f"run_dir={run}", f"junit={run / 'verdict_junit.xml'}"]) == 0
