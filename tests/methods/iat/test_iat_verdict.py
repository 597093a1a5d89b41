"""The IAT method's verdict rules (methods/iat/verdict.py), read with the method's own schema."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from verdict_fixtures import iat_run, junit_outcomes, read_junit

from audit.cli.iat import main as import_iat
from audit.cli.verdict import judge_run, main
from audit.methods.configs import VerdictConfig
from audit.errors import AuditError
from audit.methods.iat.verdict import judge_iat

PROJECT_ROOT = Path(__file__).resolve().parents[3]

IAT_ROWS = [
    ("smollm2", "race", "replication", 40, 0.95, 0.62, 0.40, 0.80, 0.0001, 0.0004),  # fails
    ("smollm2", "gender", "replication", 40, 0.90, 0.10, -0.05, 0.25, 0.01, 0.02),  # small D
    ("smollm2", "age", "replication", 40, 0.85, -0.50, -0.9, 0.1, 0.20, 0.30),  # not significant
    ("smollm2", "religion", "replication", 0, 0.0, None, None, None, None, None),  # untestable
]


def test_iat_rules(tmp_path: Path) -> None:
    run = iat_run(tmp_path / "iat", IAT_ROWS)
    assert main([f"run_dir={run}"]) == 1
    assert junit_outcomes(run / "verdict_junit.xml") == {
        "race": "failure", "gender": "pass", "age": "pass", "religion": "skipped"}
    assert read_junit(run / "verdict_junit.xml").get("skipped") == "1"
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


def test_the_methods_own_schema_rejects_an_impossible_p_value(tmp_path: Path) -> None:
    """The verdict reads iat_stats.csv with IATStatsSchema, whose p-values lie in [0, 1]; the
    re-declared verdict schema it replaces had no range checks and judged p = 1.7 as a pass."""
    run = iat_run(tmp_path / "iat", [IAT_ROWS[2][:-1] + (1.7,)])
    with pytest.raises(AuditError, match="IATStatsSchema"):
        judge_run(run, VerdictConfig())
    assert main([f"run_dir={run}"]) == 2


def test_an_imported_iat_run_records_its_method_and_is_judged(tmp_path: Path) -> None:
    """`python -m audit.iat import_dir=... output=OUT` then `python -m audit.verdict run_dir=OUT`:
    the import records config.yaml (method iat), without which the verdict could not tell what
    OUT holds."""
    answers = tmp_path / "answers"
    answers.mkdir()
    source = PROJECT_ROOT / "data" / "iat" / "gpt4o_responses"
    for path in sorted(source.glob("*.csv"))[:2]:
        (answers / path.name).write_bytes(path.read_bytes())
    output = tmp_path / "out"
    assert import_iat([f"import_dir={answers}", f"output={output}", "bootstrap_resamples=200",
                       "permutation_resamples=200",
                       f"stimuli_file={PROJECT_ROOT / 'data/iat/iat_stimuli.csv'}",
                       f"synonym_file={PROJECT_ROOT / 'data/iat/iat_stimuli_synonym.csv'}",
                       f"aliases_file={PROJECT_ROOT / 'data/iat/group_aliases.csv'}"]) == 0
    assert (output / "config.yaml").is_file()
    assert main([f"run_dir={output}"]) in (0, 1)
    stats = pl.read_csv(output / "iat_stats.csv")
    assert len(junit_outcomes(output / "verdict_junit.xml")) == stats.height > 0
