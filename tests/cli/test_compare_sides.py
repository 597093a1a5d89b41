"""What `python -m audit.compare` does where the two sides differ beyond the change it measures:
the same run twice, other items, other fit settings, other judges; and its options' parsing.

The joint fit's sampler is swapped for prior draws, as in test_compare_cli.py."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from omegaconf import OmegaConf

from audit.cli import compare
from test_compare_cli import gold_results, two_runs  # noqa: F401 (a fixture)


@pytest.fixture
def runs(two_runs, tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)  # the default output folder and any MLflow store land here
    return two_runs


def _set(run: Path, **values) -> None:
    config = OmegaConf.load(run / "config.yaml")
    for key, value in values.items():
        OmegaConf.update(config, key.replace("__", "."), value)
    (run / "config.yaml").write_text(OmegaConf.to_yaml(config))


def _drop_item(run: Path, item: str) -> None:
    prompts = pl.read_parquet(run / "prompts.parquet")
    kept = prompts.filter(pl.col("item_id") != item)
    kept.write_parquet(run / "prompts.parquet")
    labels = pl.read_parquet(run / "labels.parquet")
    labels.filter(pl.col("prompt_id").is_in(kept["prompt_id"].to_list())).write_parquet(
        run / "labels.parquet")


def test_a_run_compared_with_itself_is_refused(runs, caplog):
    """Bug caught: `compare a a max_worsening=0.5` fitted and printed PASS, exit 0."""
    run_a, _ = runs
    assert compare.main([str(run_a), str(run_a), "tracking=false", "max_worsening=0.5"]) == 2
    assert "A and B are the same run and model" in caplog.text


def test_items_one_side_alone_asked_are_left_out_unless_items_all(runs, capsys):
    """Bug caught: a gap carried by items only run B asked read as a change (a review's
    simulation: +0.16 -> +1.77 logits, WORSENS), said only in an INFO line."""
    run_a, run_b = runs
    item = pl.read_parquet(run_b / "prompts.parquet")["item_id"].sort()[0]
    _drop_item(run_b, item)
    assert compare.main([str(run_a), str(run_b), "tracking=false", "output=shared"]) == 0
    printed = capsys.readouterr().out
    assert "items: compared on the 3 items both runs asked (A asked 4, B asked 3)" in printed
    assert "paired: the same 30 prompts" in printed  # A's extra item is not fitted
    assert compare.main([str(run_a), str(run_b), "tracking=false", "items=all",
                         "output=all"]) == 0
    printed = capsys.readouterr().out
    assert "unpaired: the items differ (3 shared of 4)" in printed
    assert "items: fitted on all 4 items" in printed
    assert compare.main([str(run_a), str(run_b), "tracking=false", "items=some"]) == 2


def test_run_bs_other_fit_settings_and_attributes_are_named(runs, capsys):
    """Bug caught: run B's recorded settings were dropped without a word, so swapping A and B
    changed the ROPE, the interval mass and the contrasts, and B's race was not listed."""
    run_a, run_b = runs
    _set(run_b, fit__rope=2.0, fit__attributes=["gender", "race"])
    assert compare.main([str(run_a), str(run_b), "tracking=false"]) == 0
    printed = capsys.readouterr().out
    assert "settings: run B recorded other fit settings (attributes ['gender', 'race'] " in printed
    assert "rope 2.0 against A's 0.1814" in printed and "swap A and B" in printed
    assert "not compared: race: in run B's fit.attributes only" in printed


def test_two_judges_are_refused_and_one_judges_rewording_is_not(runs, caplog, capsys):
    """Bugs caught: runs whose recorded judges differ passed when neither had gold results;
    the same judge's labels with another rationale text, or in another row order, were refused
    as different judges."""
    run_a, run_b = runs
    gold = gold_results(2)
    gold.write_parquet(run_a / "judge_gold.parquet")
    gold.with_columns(pl.lit("worded anew").alias("rationale")).reverse().write_parquet(
        run_b / "judge_gold.parquet")
    assert compare.main([str(run_a), str(run_b), "tracking=false", "output=same"]) == 0
    _set(run_a, judge__name="qwen_coder_1_5b")
    _set(run_b, judge__name="openai_gpt4o_mini")
    assert compare.main([str(run_a), str(run_b), "tracking=false"]) == 2
    assert "different judges (judge=qwen_coder_1_5b and judge=openai_gpt4o_mini)" in caplog.text
    capsys.readouterr()
    assert compare.main([str(run_a), str(run_b), "tracking=false", "judge_error=false",
                         "output=truth"]) == 0
    assert "a change may be the judges' difference" in capsys.readouterr().out


def test_options_are_parsed_as_they_read(runs, tmp_path, caplog, capsys):
    """Bugs caught: tracking=False logged an MLflow run (only lowercase false turned it off);
    max_worsening=nan passed every gate; a run's report/ folder was "has no prompts table"."""
    run_a, run_b = runs
    assert compare.main([str(run_a), str(run_b), "tracking=False"]) == 0
    assert not (tmp_path / "mlflow.db").exists()
    assert "MLflow: off (tracking=false)" in capsys.readouterr().out
    assert compare.main([str(run_a), str(run_b), "tracking=no"]) == 2
    assert compare.main([str(run_a), str(run_b), "max_worsening=nan"]) == 2
    assert "max_worsening=nan must be a finite number" in caplog.text
    (run_b / "report").mkdir()
    assert compare.main([str(run_a), str(run_b / "report"), "tracking=false"]) == 2
    assert f"pass the run's own folder, {run_b}" in caplog.text


def test_one_runs_two_models_name_the_default_folder():
    """Bug caught: `RUN model_a=x model_b=y`, then `model_b=z`, both wrote
    compare/RUN_vs_RUN/, the second replacing the first."""
    first, _ = compare.output_paths({"model_a": "x", "model_b": "y"}, ["runs/r1"])
    second, _ = compare.output_paths({"model_a": "x", "model_b": "z"}, ["runs/r1"])
    assert first != second and first.name == "r1_vs_r1_x_vs_y"
    assert compare.output_paths({}, ["runs/r1", "runs/r2"])[0].name == "r1_vs_r2"


def test_a_run_that_contrasted_no_groups_is_named_as_such(runs, caplog):
    """Bug caught: with run A's fit.attributes=[] the line read "nothing to compare: . A contrast
    needs ... fit.attributes ()"."""
    run_a, run_b = runs
    _set(run_a, fit__attributes=[])
    assert compare.main([str(run_a), str(run_b), "tracking=false"]) == 2
    assert "run A's fit.attributes is empty (a run that contrasted no groups)" in caplog.text


def test_a_store_that_is_down_stops_the_comparison_before_its_fit(runs, tmp_path, caplog,
                                                                  monkeypatch):
    """Bug caught: the store was first reached when the comparison was logged, after the fit
    had written its files: the result and verdict lines were never printed, and the exit code
    2 of the store's failure replaced the gate's 0 or 1. Then its fix named
    tracking.tracking_uri, which audit.compare does not take (its option is tracking_uri=)."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    run_a, run_b = runs
    out = tmp_path / "out"
    dead = "http://127.0.0.1:9"  # nothing listens on the discard port
    code = compare.main([str(run_a), str(run_b), f"output={out}", f"tracking_uri={dead}",
                         "max_worsening=100"])
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert code == 2
    assert errors == [f"MLflow store {dead} unreachable (connection refused): start the server, "
                      "fix tracking_uri, or pass tracking=false"]
    assert not (out / "changes.csv").exists()


@pytest.mark.parametrize(("content", "problem"), [
    ("fit: {}\n".encode("utf-16"), "it is UTF-16 text"),
    (b"fit: &x [*x]\n", "an alias in it contains itself"),
    # Bad-input review 2026-12-04: an empty config compared the run under the default fit
    # settings without a word, and a broken one named no fix.
    (b"# nothing\n", "it holds no settings; rerun the audit, or compare its MLflow run by id"),
    (b"fit: [1,\n", r"it is not valid YAML .*; rerun the audit, or compare its MLflow run"),
], ids=["utf16", "recursive", "empty", "broken"])
def test_a_run_config_that_is_not_utf8_or_recurses_is_one_line(tmp_path: Path, content: bytes,
                                                               problem: str):
    """Bug caught: a side's config.yaml saved as UTF-16 was a UnicodeDecodeError traceback, and
    one with an alias inside itself a RecursionError thousands of lines long."""
    from audit.cli.compare_sources import recorded_config
    from audit.errors import AuditError

    config = tmp_path / "config.yaml"
    config.write_bytes(content)
    with pytest.raises(AuditError, match=f"{config} is not a run's config.yaml: {problem}"):
        recorded_config(config)


def test_a_day_folder_of_runs_is_named_with_its_latest_run(runs, tmp_path, caplog):
    """Bug caught (bad-input review 2026-12-05): `compare outputs/DATE B` said the day's folder
    "has no prompts table", as if a run had lost it; it holds runs, and the line names one."""
    import shutil

    run_a, run_b = runs
    day = tmp_path / "outputs" / "2026-12-05"
    shutil.copytree(run_a, day / "07-28-05")
    shutil.copytree(run_a, day / "07-33-56")
    assert compare.main([str(day), str(run_b), "tracking=false"]) == 2
    assert (f"{day} is not one run: it holds 2 runs (folders of finished runs inside it): pass "
            f"one, e.g. the latest, {day / '07-33-56'}") in caplog.text


def test_the_default_folder_is_named_by_the_runs_eight_character_prefixes():
    """Catches the default folder named by the sources' whole names (`name[:8]` dropped): a
    full MLflow run id is 32 characters, and `python -m audit.runs` shows its first 8."""
    ids = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]
    out, junit = compare.output_paths({}, ids)
    assert out == Path("compare") / "01234567_vs_fedcba98"
    assert junit == out / "compare_junit.xml"


def test_a_run_directory_whose_path_holds_an_equals_sign_is_a_run_not_an_option(tmp_path: Path):
    """Bug caught (mutation review 2026-12-06): every argument with `=` was read as key=value,
    so a run written to paths.output_dir=runs/temperature=0.7 was refused as "unknown option
    .../temperature", with no way to pass the folder. A known option still wins, and a
    misspelt one that names no path is still refused."""
    run_a, run_b = tmp_path / "runs" / "temperature=0.2", tmp_path / "runs" / "temperature=0.7"
    run_b.mkdir(parents=True)
    run_a.mkdir()
    sources, options = compare.parse_arguments([str(run_a), str(run_b), "tracking=false"])
    assert sources == [str(run_a), str(run_b)] and options == {"tracking": "false"}
    from audit.errors import AuditError

    with pytest.raises(AuditError, match=r"^unknown option trackin \(did you mean 'tracking'"):
        compare.parse_arguments([str(run_a), str(run_b), "trackin=false"])


def test_a_side_is_read_as_the_source_named_it_and_its_missing_tables_are_named(runs):
    """Catches: the side named by its folder instead of the source given; the labels table's
    check dropped; a missing config.yaml not named."""
    from audit.cli.compare_sources import read_side
    from audit.errors import AuditError

    run_a, _ = runs
    side, cfg, gold = read_side("A", "run-a", run_a, None)
    assert (side.source, side.model, gold) == ("run-a", "qwen", None)
    (run_a / "config.yaml").unlink()
    with pytest.raises(AuditError, match="^run-a has no config.yaml: pass a run made by python"):
        read_side("A", "run-a", run_a, None)
    (run_a / "labels.parquet").unlink()
    with pytest.raises(AuditError, match="^run-a has no labels table: pass a finished Rasch"):
        read_side("A", "run-a", run_a, None)


@pytest.mark.parametrize("folder", ["judge", "data"])
def test_a_folder_inside_a_run_names_the_run_to_pass(runs, folder):
    """Catches: a run's judge/ or data/ folder not named as a folder inside a run, or the
    folder itself given as the one to pass instead of its run."""
    from audit.cli.compare_sources import read_side
    from audit.errors import AuditError

    run_a, _ = runs
    (run_a / folder).mkdir()
    with pytest.raises(AuditError) as refused:
        read_side("A", "inside", run_a / folder, None)
    assert str(refused.value).startswith(
        f"inside has no prompts table (a folder inside a run: pass the run's own folder, "
        f"{run_a}): ")


def test_a_run_of_two_models_names_them_and_the_option_to_choose(runs):
    """Catches: the models left out of the message, model_A= for model_a=, and a model_b= that
    the run did not audit taken (or named as model_a=)."""
    from audit.cli.compare_sources import read_side
    from audit.errors import AuditError

    run_a, _ = runs
    prompts = pl.read_parquet(run_a / "prompts.parquet")
    llama = prompts.with_columns(pl.lit("llama").alias("model_name"),
                                 pl.col("prompt_id") + "-llama")
    pl.concat([prompts, llama]).write_parquet(run_a / "prompts.parquet")
    with pytest.raises(AuditError, match=r"^both audited 2 models \(llama, qwen\): name one with "
                                         r"model_b=NAME$"):
        read_side("B", "both", run_a, None)
    with pytest.raises(AuditError, match=r"^model_b=mistral is not in both; it audited llama, "
                                         r"qwen$"):
        read_side("B", "both", run_a, "mistral")
    assert read_side("B", "both", run_a, "llama")[0].prompts["model_name"].unique().to_list() \
        == ["llama"]


def test_a_config_without_a_judge_name_records_none_and_a_bad_value_is_one_line(tmp_path):
    """Catches: a missing judge.name read as the judge "None", and a config error's
    several-line message printed whole. Bug caught: its first line alone named no setting (the
    key, fit.rope, was on a later line)."""
    from audit.cli.compare_sources import recorded_config
    from audit.errors import AuditError

    config = tmp_path / "config.yaml"
    config.write_text("fit:\n  rope: 0.2\n")
    assert recorded_config(config).judge is None
    config.write_text("fit:\n  rope: wide\n")
    with pytest.raises(AuditError) as refused:
        recorded_config(config)
    assert "\n" not in str(refused.value)
    assert "(fit.rope: Value 'wide' of type 'str' could not be converted to Float); rerun" \
        in str(refused.value)


def test_a_run_whose_prompts_table_holds_no_rows_is_refused_in_one_line(runs):
    """Bug caught: read_side took models[0] of a prompts table with no rows, so `python -m
    audit.compare` ended in an IndexError traceback with exit 1 (a failed gate to CI) instead
    of a one-line refusal with exit 2."""
    from audit.cli.compare_sources import read_side
    from audit.errors import AuditError

    run_a, _ = runs
    pl.read_parquet(run_a / "prompts.parquet").clear().write_parquet(run_a / "prompts.parquet")
    with pytest.raises(AuditError, match="^run-a has no prompts"):
        read_side("A", "run-a", run_a, None)


def test_a_run_directory_given_relative_is_named_by_its_full_path(runs, tmp_path):
    """Catches: a run directory named as typed ("a"), so the summary and the comparison's
    provenance could not tell which run it was."""
    from audit.cli.compare_sources import fetch_run

    run_a, _ = runs
    found, name = fetch_run("a", f"sqlite:///{tmp_path / 'mlflow.db'}", "audit",
                            tmp_path / "scratch")
    assert found.resolve() == run_a.resolve() and name == str(run_a.resolve())
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.parametrize("gold", [True, False], ids=["gold", "no gold"])
def test_an_mlflow_run_is_read_from_its_artifacts_gold_results_included(runs, tmp_path,
                                                                        monkeypatch, gold):
    """Catches: the gold-set results looked for at the wrong artifact path (a run that measured
    its judge read as one that did not), or a missing artifact stopping the download."""
    import shutil

    from audit.cli import compare_sources

    run_a, _ = runs
    gold_results(1).write_parquet(run_a / "judge_gold.parquet")
    logged = {"config.yaml": "config.yaml", "data/prompts.parquet": "prompts.parquet",
              "data/labels.parquet": "labels.parquet",
              **({"judge/judge_gold.parquet": "judge_gold.parquet"} if gold else {})}

    def download(uri, run_id, artifact, folder):  # as MLflow: the file under its own name
        if artifact not in logged:
            raise OSError(f"no artifact {artifact}")
        folder.mkdir(parents=True, exist_ok=True)
        return shutil.copy(run_a / logged[artifact], folder / Path(artifact).name)

    monkeypatch.setattr(compare_sources, "run_source", lambda *args: "0123abcd")
    monkeypatch.setattr(compare_sources.tracking, "check_artifacts", lambda *args: None)
    monkeypatch.setattr(compare_sources.tracking, "download_artifact", download)
    found, name = compare_sources.fetch_run("0123", "sqlite:///x.db", "audit", tmp_path / "s")
    side, _, read = compare_sources.read_side("A", "0123", found, None)
    assert (found, name, side.prompts.height) == (tmp_path / "s" / "0123abcd", "0123abcd", 40)
    assert (read is not None and read.equals(gold_results(1))) if gold else read is None
