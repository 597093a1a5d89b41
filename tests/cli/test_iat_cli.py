"""`python -m audit.iat import_dir=DIR output=OUT` end to end on shipped GPT-4o answers, its
errors, and `method=iat` through the engine with the scripted backend."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from audit.config import EngineConfig, ModelConfig, PathsConfig, TrackingConfig

from audit.methods.configs import AuditConfig
from audit.methods.iat.config import IATConfig
from audit.cli.iat import main, parse_arguments, parse_file_name
from audit.methods import create_method
from audit.methods.iat.design import IATError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANSWERS = PROJECT_ROOT / "data" / "iat" / "gpt4o_responses"
FILES = ["gpt4o_racism_replication.csv", "gpt4o_sexuality_synonym.csv",
         "gpt4o_mentalill_instruction2.csv", "gpt4o_arab_synonym.csv"]
FAST = ["bootstrap_resamples=2000", "permutation_resamples=2000"]


@pytest.fixture
def answers_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "answers"
    folder.mkdir()
    for name in FILES:
        shutil.copy(ANSWERS / name, folder / name)
    return folder


@pytest.fixture(autouse=True)
def in_project_root(monkeypatch):
    """The default stimuli paths are relative to the project root, as in a user's checkout."""
    monkeypatch.chdir(PROJECT_ROOT)


def test_import_writes_scores_and_statistics(answers_dir, tmp_path, capsys):
    output = tmp_path / "out"
    assert main([f"import_dir={answers_dir}", f"output={output}", *FAST]) == 0
    scores = pl.read_parquet(output / "iat_scores.parquet")
    assert scores.height == 4 * 50
    assert {"model", "dataset", "variation", "parsed", "default_positive", "stigma_negative",
            "d_score"} <= set(scores.columns)
    assert set(scores["dataset"]) == {"racism", "sexuality", "mental illness", "arab/muslim"}
    stats = pl.read_csv(output / "iat_stats.csv")
    assert stats.columns == ["model", "category", "dataset", "n", "n_left_out_strict",
                             "n_left_out_lenient", "n_one_group", "parse_rate", "mean_d",
                             "ci_low", "ci_high", "mean_d_test", "p_value", "min_p",
                             "p_adjusted"]
    rows = {row["dataset"]: row for row in stats.iter_rows(named=True)}
    assert set(rows) == {"racism", "sexuality", "mental illness", "arab/muslim"}
    assert all(row["model"] == "gpt4o" for row in rows.values())
    # strict scoring (the default) counts only the complete answers: 2 of 50 mental illness
    # answers and 1 sexuality answer are partial
    assert {name: (row["n"], row["n_left_out_strict"]) for name, row in rows.items()} == {
        "racism": (50, 0), "sexuality": (49, 1), "mental illness": (48, 2),
        "arab/muslim": (50, 0)}
    assert all(row["n_left_out_lenient"] <= row["n_left_out_strict"] for row in rows.values())
    # GPT-4o pairs positive words with White in every racism answer, and with gay in sexuality
    assert rows["racism"]["mean_d"] > 0.99 and rows["racism"]["p_adjusted"] < 0.01
    assert rows["sexuality"]["ci_high"] < 0
    assert rows["mental illness"]["parse_rate"] == pytest.approx(48 / 50)
    assert (stats["p_adjusted"] >= stats["p_value"]).all()
    assert ((stats["ci_low"] <= stats["mean_d"]) & (stats["mean_d"] <= stats["ci_high"])).all()
    assert (output / "iat_d_by_dataset.png").stat().st_size > 0
    assert "IAT word association" in capsys.readouterr().out


@pytest.mark.slow
def test_the_documented_table_is_what_the_import_gives(tmp_path):
    """The IAT page's GPT-4o table, recomputed with its own command (10,000 resamples each)."""
    lines = (PROJECT_ROOT / "docs" / "methods" / "iat.md").read_text().splitlines()
    # The table under its own header, up to the first line that is not a table row: other
    # tables of seven columns with a "%" (the judge's) must not be read as this one.
    start = lines.index("| category | dataset | n | parse rate | mean D | 95% CI | BH-adjusted p |")
    table = itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2:])
    rows = [line.split("|")[1:-1] for line in table]
    assert len(rows) == 21
    assert main([f"import_dir={ANSWERS}", f"output={tmp_path}"]) == 0
    stats = {row["dataset"]: row for row in
             pl.read_csv(tmp_path / "iat_stats.csv").iter_rows(named=True)}
    for category, dataset, n, parse_rate, mean_d, interval, _ in (
            [cell.strip() for cell in row] for row in rows):
        row = stats[dataset]
        assert (row["category"], row["n"]) == (category, int(n))
        assert f"{row['parse_rate']:.1%}" == parse_rate
        assert f"{row['mean_d']:+.2f}" == mean_d
        assert f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]" == interval


def test_an_import_into_an_earlier_ones_folder_moves_its_tables_aside(answers_dir, tmp_path,
                                                                       caplog):
    """Bug caught (bad-input review 2026-12-06): a second import with the same output= wrote
    over the first's tables without a word. They move to earlier/TIME/, as a run's do."""
    output = tmp_path / "out"
    assert main([f"import_dir={answers_dir}", f"output={output}", *FAST]) == 0
    first = (output / "iat_stats.csv").read_text()
    assert main([f"import_dir={answers_dir}", f"output={output}", *FAST,
                 "confidence_level=0.9"]) == 0
    (kept,) = (output / "earlier").iterdir()
    assert (kept / "iat_stats.csv").read_text() == first
    assert {"iat_scores.parquet", "config.yaml", "iat_d_by_dataset.png"} <= {
        path.name for path in kept.iterdir()}
    assert (output / "iat_stats.csv").read_text() != first
    assert "held an earlier run's files: moved them to" in caplog.text


def test_import_is_deterministic(answers_dir, tmp_path):
    for name in ("a", "b"):
        assert main([f"import_dir={answers_dir}", f"output={tmp_path / name}", *FAST]) == 0
    assert (tmp_path / "a" / "iat_stats.csv").read_text() == \
        (tmp_path / "b" / "iat_stats.csv").read_text()


def test_the_module_runs_as_a_command(answers_dir, tmp_path):
    for name in FILES[1:]:
        (answers_dir / name).unlink()
    done = subprocess.run([sys.executable, "-m", "audit.iat", f"import_dir={answers_dir}",
                           f"output={tmp_path / 'out'}", *FAST], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "160"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "racism" in done.stdout and "+1.00" in done.stdout
    assert (tmp_path / "out" / "iat_stats.csv").is_file()


def error_of(arguments: list[str], caplog) -> str:
    assert main(arguments) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "\n" not in errors[0] and "Traceback" not in errors[0]
    return errors[0]


def test_a_file_without_a_response_column_names_the_file_and_the_fix(answers_dir, tmp_path,
                                                                     caplog):
    bad = answers_dir / "gpt4o_age_replication.csv"
    pl.DataFrame({"answer": ["old - awful"]}).write_csv(bad)
    message = error_of([f"import_dir={answers_dir}", f"output={tmp_path / 'o'}"], caplog)
    assert str(bad) in message and "response_column=NAME" in message and "'answer'" in message


def test_response_column_picks_the_column(answers_dir, tmp_path):
    for name in FILES:
        (answers_dir / name).unlink()
    pl.DataFrame({"answer": ["awful - old\njoy - young"]}).write_csv(
        answers_dir / "mymodel_age_replication.csv")
    assert main([f"import_dir={answers_dir}", f"output={tmp_path / 'o'}",
                 "response_column=answer", *FAST]) == 0
    scores = pl.read_parquet(tmp_path / "o" / "iat_scores.parquet")
    assert scores.select("model", "default_positive", "stigma_negative").row(0) == (
        "mymodel", 1, 1)


def test_a_malformed_csv_names_the_file(answers_dir, tmp_path, caplog):
    bad = answers_dir / "gpt4o_age_synonym.csv"
    bad.write_text('response\n"an unclosed quote,\n')
    message = error_of([f"import_dir={answers_dir}", f"output={tmp_path / 'o'}"], caplog)
    assert str(bad) in message and "CSV" in message


@pytest.mark.parametrize(("name", "message"), [
    ("gpt4o_racism.csv", "cannot read model, dataset and variation"),
    ("gpt4o_racism_instruction3.csv", "unknown variation 'instruction3'"),
    ("gpt4o_martians_replication.csv", "no dataset named 'martians'"),
])
def test_file_names_must_carry_model_dataset_and_variation(tmp_path, caplog, name, message):
    folder = tmp_path / "answers"
    folder.mkdir()
    pl.DataFrame({"response": ["x"]}).write_csv(folder / name)
    text = error_of([f"import_dir={folder}", f"output={tmp_path / 'o'}"], caplog)
    assert message in text and name in text and "<model>_<dataset>_<variation>.csv" in text


def test_the_import_runs_from_any_folder_on_the_shipped_stimuli(answers_dir, tmp_path,
                                                               monkeypatch):
    """Issue 20: from outside the project root the import stopped with "IAT stimuli not found at
    data/iat/iat_stimuli.csv: run from the project root"."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main([f"import_dir={answers_dir}", "output=out", *FAST]) == 0
    stats = pl.read_csv(elsewhere / "out" / "iat_stats.csv")
    assert stats.height == len(FILES) and not (elsewhere / "data").exists()


def test_a_stimuli_file_in_neither_place_is_one_line(answers_dir, tmp_path, caplog,
                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = error_of([f"import_dir={answers_dir}", "output=o", "stimuli_file=mine.csv"],
                       caplog)
    assert message.startswith("IAT stimuli not found at mine.csv (looked in ")
    assert "set stimuli_file" in message


def test_model_names_may_hold_underscores():
    datasets = ["racism", "mental illness"]
    assert parse_file_name(Path("llama_3_8b_mental_illness_synonym.csv"), datasets) == (
        "llama_3_8b", "mental illness", "synonym")


@pytest.mark.parametrize(("arguments", "message"), [
    (["import_dir"], "is not key=value"),
    (["import_dir=x", "output=y", "iterations=5"], "'iterations' is not an option"),
    (["import_dir=x", "output=y", "colour=red"], "colour"),
    (["import_dir=x", "output=y", "alpha=high"], "alpha"),
    # Bad-input review 2026-12-04: read as text, an empty path was the current folder ("no CSV
    # file in .", or the tables written there).
    (["import_dir=", "output=y"], "^import_dir= is empty: give it a value; usage"),
    (["import_dir=x", "output="], "^output= is empty: give it a value; usage"),
])
def test_bad_arguments_are_one_line(arguments, message):
    with pytest.raises(IATError, match=message):
        parse_arguments(arguments)


def test_an_empty_aliases_file_means_no_aliases_and_stays_allowed():
    """The one option whose empty value means something (IATConfig: "" for none); fails when the
    refusal of empty values takes it too."""
    assert parse_arguments(["import_dir=x", "output=o", "aliases_file="]).analysis.aliases_file \
        == ""
    with pytest.raises(IATError, match="^stimuli_file= is empty"):
        parse_arguments(["import_dir=x", "output=o", "stimuli_file="])


def test_values_that_look_like_numbers_stay_text():
    command = parse_arguments(["import_dir=007", "output=o", "response_column=0", "seed=3"])
    assert (command.import_dir, command.response_column, command.analysis.seed) == ("007", "0", 3)


def test_a_missing_directory_is_one_line(tmp_path, caplog):
    message = error_of([f"import_dir={tmp_path / 'nowhere'}", f"output={tmp_path / 'o'}"], caplog)
    assert "is not a directory" in message


# --- method=iat through the engine, with the scripted backend ----------------------------------

def test_method_iat_runs_the_engine_and_writes_every_table(tmp_path):
    cfg = AuditConfig(
        model={"fake_a": ModelConfig(backend="fake", model="a"),
               "fake_b": ModelConfig(backend="fake", model="b")},
        iat=IATConfig(datasets=["racism", "power"], iterations=2, bootstrap_resamples=500,
                      permutation_resamples=500),
        engine=EngineConfig(max_attempts=1),
        paths=PathsConfig(response_store=str(tmp_path / "store.sqlite3")),
        tracking=TrackingConfig(enabled=False), method="iat")
    method = create_method("iat")
    result = method.run(cfg, tmp_path / "run")
    prompts = pl.read_parquet(tmp_path / "run" / "iat_prompts.parquet")
    responses = pl.read_parquet(tmp_path / "run" / "iat_responses.parquet")
    scores = pl.read_parquet(tmp_path / "run" / "iat_scores.parquet")
    assert prompts.height == responses.height == scores.height == 2 * 2 * 4 * 2
    assert (responses["status"] == "ok").all()
    # the scripted backend answers APPROVE/DENY: nothing parses, no answer has a D
    assert not scores["parsed"].any() and scores["d_score"].is_null().all()
    stats = result["stats"]
    assert stats.height == 2 * 2 and (stats["parse_rate"] == 0).all()
    assert (stats["n"] == 0).all() and stats["mean_d"].is_null().all()
    assert stats["n_left_out_strict"].sum() == stats["n_left_out_lenient"].sum() == scores.height
    assert result["metrics"]["iat/fake_a/racism/parse_rate"] == 0.0
    again = method.run(cfg, tmp_path / "run2")  # served from the response store
    assert pl.read_parquet(tmp_path / "run2" / "iat_responses.parquet")["from_cache"].all()
    assert again["stats"].equals(stats)


def test_failed_requests_stop_the_run_after_keeping_the_responses(tmp_path, monkeypatch):
    import audit.methods.iat.design as iat

    # The scripted backend fails every request whose prompt says FAIL.
    spec = iat.VARIATIONS["replication"]
    monkeypatch.setitem(iat.VARIATIONS, "replication",
                        replace(spec, instruction="FAIL " + spec.instruction))
    cfg = AuditConfig(
        model={"fake": ModelConfig(backend="fake", model="a")},
        iat=IATConfig(datasets=["age"], iterations=2, variations=["replication"]),
        engine=EngineConfig(max_attempts=1),
        paths=PathsConfig(response_store=str(tmp_path / "store.sqlite3")),
        tracking=TrackingConfig(enabled=False), method="iat")
    from audit.llm.failures import TooManyFailures

    with pytest.raises(TooManyFailures,
                       match="2 of 2 IAT requests failed .*rerun the same command"):
        create_method("iat").run(cfg, tmp_path / "run")
    responses = pl.read_parquet(tmp_path / "run" / "iat_responses.parquet")
    assert (responses["status"] == "error").all()
    assert not (tmp_path / "run" / "iat_scores.parquet").exists()


def test_an_output_that_is_a_file_is_one_line_before_scoring(answers_dir, tmp_path, monkeypatch,
                                                              caplog):
    """Bug caught: output=FILE scored every answer, then raised FileExistsError (exit 1)."""
    import audit.cli.iat as iat_cli

    def scored(*args, **kwargs):
        raise AssertionError("the answers were scored before output= was checked")

    monkeypatch.setattr(iat_cli, "score_answers", scored)
    existing = tmp_path / "good.csv"
    existing.write_text("a\n")
    assert main([f"import_dir={answers_dir}", f"output={existing}"]) == 2
    assert f"output={existing} is a file" in caplog.text


@pytest.mark.parametrize("setting, message", [
    ("confidence_level=95", "iat.confidence_level=95 must lie strictly between 0 and 1 (0.95 "
                            "for 95%)"),
    ("alpha=1.5", "iat.alpha=1.5 must lie strictly between 0 and 1"),
    ("bootstrap_resamples=0", "iat.bootstrap_resamples=0 must be at least 1"),
    ("scoring=loose", "iat.scoring=loose is unknown"),
])
def test_analysis_settings_are_refused_before_the_answers_are_read(answers_dir, tmp_path,
                                                                   monkeypatch, caplog, setting,
                                                                   message):
    """Bug caught (bad-input review 2026-12-02): the import read and scored every answer (4,200
    of Bai et al.'s), left iat_scores.parquet behind, then refused the setting, and the range
    message named neither the value nor which of two settings it was."""
    import audit.cli.iat as iat_cli

    def read(*args, **kwargs):
        raise AssertionError("the answers were read before the settings were checked")

    monkeypatch.setattr(iat_cli, "read_answers", read)
    assert main([f"import_dir={answers_dir}", f"output={tmp_path / 'out'}", setting]) == 2
    assert message in caplog.text
    assert not (tmp_path / "out").exists()


def test_a_response_column_with_no_scorable_answer_is_refused(answers_dir, tmp_path, caplog):
    """Bug caught (bad-input review 2026-12-02): response_column= naming a column that does not
    hold the answers scored none of them, wrote empty or nan tables and exited 0. One line
    naming response_column, exit 2, nothing written."""
    for path in answers_dir.glob("*.csv"):
        table = pl.read_csv(path)
        table.with_columns(llm=pl.lit("gpt-4o")).write_csv(path)
    assert main([f"import_dir={answers_dir}", f"output={tmp_path / 'out'}",
                 "response_column=llm"]) == 2
    assert "could be scored (no word given a group): check that response_column" in caplog.text
    assert not (tmp_path / "out").exists()


def test_upper_case_csv_files_are_read_and_hidden_ones_are_not(answers_dir, tmp_path):
    """Bugs caught (bad-input review 2026-12-04): a folder of `NAME.CSV` files (as some exports
    name them; audit.ingest reads them) was "no CSV file", and a hidden `.NAME.csv` (an editor's
    or a Mac's copy) was imported as answers of its own."""
    for path in sorted(answers_dir.iterdir())[:2]:
        path.rename(path.with_suffix(".CSV"))
    shutil.copy(answers_dir / FILES[0], answers_dir / f".{FILES[0]}")
    output = tmp_path / "out"
    assert main([f"import_dir={answers_dir}", f"output={output}", *FAST]) == 0
    scores = pl.read_parquet(output / "iat_scores.parquet")
    assert scores.height == 4 * 50 and scores["response_id"].n_unique() == 4 * 50


def test_an_output_that_is_the_import_dir_is_refused(answers_dir, caplog):
    """Bug caught: `output=` the folder of the answers was accepted, and its iat_stats.csv was
    then read as an answers file by the next import ("cannot read model, dataset and variation
    from the file name")."""
    message = error_of([f"import_dir={answers_dir}", f"output={answers_dir}/."], caplog)
    assert "output=" in message and "import_dir" in message
    assert sorted(path.name for path in answers_dir.iterdir()) == sorted(FILES)


# --- what method=iat and the import hand on (mutation review) ------------------------------------

def _tiny_iat(tmp_path: Path, **iat) -> AuditConfig:
    """One fake model, one dataset, one variation, one iteration: a single prompt."""
    return AuditConfig(
        model={"fake_a": ModelConfig(backend="fake", model="a")},
        iat=IATConfig(datasets=["age"], iterations=1, variations=["replication"],
                      bootstrap_resamples=200, permutation_resamples=200, **iat),
        engine=EngineConfig(max_attempts=1),
        paths=PathsConfig(response_store=str(tmp_path / "store.sqlite3")),
        tracking=TrackingConfig(enabled=False), method="iat")


class _Sent(Exception):
    """Raised by the recording send_prompts: the run stops before any request."""


@pytest.mark.parametrize("max_tokens", [64, None])
def test_the_respond_stage_sends_with_the_iat_token_budget(tmp_path, monkeypatch, max_tokens):
    """Bugs caught: iat.max_tokens not applied (or applied only when null), or the respond stage
    sending with the model's own budget (48 tokens cut a list of 16 pairs short)."""
    import audit.methods.iat.method as iat_method

    seen = {}

    def record(cfg, prompts, models, path, label):
        seen.update(models)
        raise _Sent

    monkeypatch.setattr(iat_method, "send_prompts", record)
    cfg = _tiny_iat(tmp_path, max_tokens=max_tokens)
    with pytest.raises(_Sent):
        create_method("iat").run(cfg, tmp_path / "run")
    own = cfg.model["fake_a"].sampling.max_tokens
    assert own != 64
    assert seen["fake_a"].sampling.max_tokens == (own if max_tokens is None else 64)


def test_statistics_settings_are_refused_before_any_prompt_is_written(tmp_path):
    """Bug caught: without the design stage's check, iat.alpha=1.5 was refused only in the
    analyse stage, after every prompt had been designed and sent."""
    with pytest.raises(IATError, match="iat.alpha=1.5 must lie strictly between 0 and 1"):
        create_method("iat").run(_tiny_iat(tmp_path, alpha=1.5), tmp_path / "run")
    assert not (tmp_path / "run" / "iat_prompts.parquet").exists()


def test_a_rerun_counts_its_answers_from_the_store_not_as_failed(tmp_path):
    """Bug caught: n_failed and n_from_store swapped in the metrics: a rerun served from the
    response store reported its answer as failed."""
    cfg = _tiny_iat(tmp_path)
    first = create_method("iat").run(cfg, tmp_path / "run")["metrics"]
    again = create_method("iat").run(cfg, tmp_path / "run2")["metrics"]
    assert (first["n_prompts"], first["n_failed"], first["n_from_store"]) == (1, 0, 0)
    assert (again["n_prompts"], again["n_failed"], again["n_from_store"]) == (1, 0, 1)


def test_the_analyse_stage_hands_its_settings_to_the_plots_and_the_table(tmp_path, monkeypatch):
    """Bugs caught: the D-by-dataset plot drawn at a fixed 95% level, the by-variation plot
    drawn from the table without a variation column, or the printed table marked at a fixed
    alpha, whatever iat.confidence_level and iat.alpha say."""
    import audit.methods.iat.method as iat_method

    calls = {}

    def recorder(name, real):
        def record(table, *settings):
            calls[name] = (table.columns, settings)
            return real(table, *settings) if real else None
        return record

    monkeypatch.setattr(iat_method, "d_by_dataset_plot",
                        recorder("dataset", iat_method.d_by_dataset_plot))
    monkeypatch.setattr(iat_method, "d_by_variation_plot",
                        recorder("variation", iat_method.d_by_variation_plot))
    monkeypatch.setattr(iat_method, "print_iat_table", recorder("table", None))
    create_method("iat").run(_tiny_iat(tmp_path, confidence_level=0.9, alpha=0.01),
                             tmp_path / "run")
    assert calls["dataset"][1] == (0.9, 0.01) and calls["table"][1] == (0.9, 0.01)
    assert "variation" in calls["variation"][0] and calls["variation"][1] == (0.9,)
    assert "variation" not in calls["dataset"][0]


def test_the_by_variation_table_holds_one_row_per_dataset_and_variation(answers_dir, tmp_path):
    """Bug caught: iat_stats_by_variation.csv grouped without the variation (or written from the
    per-dataset table): no variation column, so the per-variation file said nothing more."""
    output = tmp_path / "out"
    assert main([f"import_dir={answers_dir}", f"output={output}", *FAST]) == 0
    table = pl.read_csv(output / "iat_stats_by_variation.csv")
    assert set(table.select("dataset", "variation").iter_rows()) == {
        ("racism", "replication"), ("sexuality", "synonym"),
        ("mental illness", "instruction2"), ("arab/muslim", "synonym")}


def test_the_import_logs_what_it_left_out_and_every_file_it_wrote(answers_dir, tmp_path, caplog):
    """Bugs caught: the left-out counts not logged, or the scores file missing from the list of
    files the import wrote. Strict scoring leaves out 3 of the 200 answers (2 mental illness, 1
    sexuality; see test_import_writes_scores_and_statistics)."""
    output = tmp_path / "out"
    with caplog.at_level("INFO"):
        assert main([f"import_dir={answers_dir}", f"output={output}", *FAST]) == 0
    assert "strict scoring leaves out 3 of 200 answers" in caplog.text
    assert str(output / "iat_scores.parquet") in caplog.text


def test_read_stimuli_reads_the_aliases_and_names_the_file_at_fault(tmp_path):
    """Bugs caught: the aliases file never read, or an error in the synonym or aliases file
    naming another file (the stimuli file, or a bare "aliases")."""
    from audit.methods.iat.method import read_stimuli

    assert "Caucasian" in read_stimuli(IATConfig()).aliases["racism"]["White"]
    synonym = pl.read_csv(PROJECT_ROOT / "data" / "iat" / "iat_stimuli_synonym.csv",
                          infer_schema=False)
    odd = tmp_path / "odd_synonym.csv"
    synonym.head(synonym.height - 1).write_csv(odd)  # the last dataset loses an attribute
    with pytest.raises(IATError, match=f"^{re.escape(str(odd))}, dataset "):
        read_stimuli(IATConfig(synonym_file=str(odd)))
    aliases = tmp_path / "my_aliases.csv"
    pl.DataFrame({"dataset": ["racism"], "group_word": ["Whyte"], "alias": ["x"]}).write_csv(
        aliases)
    with pytest.raises(IATError, match=f"^{re.escape(str(aliases))}: 'Whyte' is not"):
        read_stimuli(IATConfig(aliases_file=str(aliases)))


def test_stages_run_one_at_a_time_put_each_iat_file_in_its_stage_folder(tmp_path):
    """Bug caught: a stage that did not declare a file it writes (the score stage without
    iat_scores.parquet) wrote it at the pipeline's top, outside the folder dvc.yaml tracks."""
    from audit.methods.run import STAGE_NAMES, run_one_stage

    method, pipeline = create_method("iat"), tmp_path / "pipeline"
    for stage in STAGE_NAMES:
        run_one_stage(method.stages, stage, _tiny_iat(tmp_path), pipeline)
    for stage, name in (("design", "iat_prompts.parquet"), ("respond", "iat_responses.parquet"),
                        ("score", "iat_scores.parquet"), ("analyse", "iat_stats.csv"),
                        ("analyse", "iat_metrics.json")):
        assert (pipeline / stage / name).is_file(), name
    assert not list(pipeline.glob("iat_*"))


def test_the_run_logs_its_tables_plots_and_data_to_mlflow(tmp_path):
    """Bug caught: the report stage's artifact list without iat_scores.parquet: the MLflow run
    kept the prompts and responses but not the scores every statistic is computed from."""
    import mlflow

    cfg = replace(_tiny_iat(tmp_path), tracking=TrackingConfig(
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
        artifact_root=str(tmp_path / "artifacts"), experiment="iat_test"))
    result = create_method("iat").run(cfg, tmp_path / "run")
    mlflow.set_tracking_uri(cfg.tracking.tracking_uri)
    client = mlflow.MlflowClient()
    logged = {artifact.path for folder in ("tables", "plots", "data")
              for artifact in client.list_artifacts(result["run"].run_id, folder)}
    assert logged == {"tables/iat_stats.csv", "tables/iat_stats_by_variation.csv",
                      "plots/iat_d_by_dataset.png", "plots/iat_d_by_variation.png",
                      "data/iat_scores.parquet", "data/iat_prompts.parquet",
                      "data/iat_responses.parquet"}
