"""`python -m audit.compare`: run directories in, one line per contrast, files, JUnit, exit codes.

The joint fit's sampler is swapped for prior draws (as tests/methods/rasch/irt/test_fit_outputs.py
does), so this checks the command around the fit; the fit itself is in
tests/methods/rasch/test_comparison.py."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
import pymc as pm
import pytest
from omegaconf import OmegaConf

from audit.cli import compare
from audit.methods.configs import AuditConfig
from audit.methods.rasch import comparison
from prior_samplers import prior_sampler
from audit.methods.rasch.simulation import (
    VarianceComponents,
    default_shaped_prompts,
    simulate_pair,
)


def two_chain_prior_sampler(model: pm.Model, fit):
    """Independent prior draws as two chains of 200: they pass the convergence check at the
    config's ess_min of 100 and R-hat limit of 1.1 (write_run), so the gate alone decides the
    exit code."""
    idata = prior_sampler(model, fit, draws=400)
    idata["posterior"] = idata["prior"].to_dataset().isel(chain=0, drop=True).drop_vars(
        "draw").coarsen(draw=200).construct(draw=("chain", "draw")).assign_coords(
        chain=[0, 1], draw=range(200))
    return idata


def write_run(directory: Path, outcomes: pl.DataFrame, side: str, system_prompt: str,
              seed: int = 5, attributes: tuple[str, ...] = ("gender",)) -> Path:
    """A finished run's tables: prompts, labels and config.yaml, for one side of the simulation
    (its race column null unless the simulation drew one)."""
    rows = outcomes.filter(pl.col("model_name") == side).with_columns(
        pl.int_range(pl.len()).over("respondent", "item").alias("replicate"))
    prompts = rows.select(
        pl.format("{}-{}-{}-{}", pl.lit(side), "persona_id", "item", "replicate")
        .alias("prompt_id"),
        pl.col("persona_id").alias("respondent_id"), pl.lit("qwen").alias("model_name"),
        "persona_id", "persona_kind", "gender",
        pl.col("race") if "race" in rows.columns else pl.lit(None, pl.String).alias("race"),
        pl.col("item").alias("item_id"), pl.lit("loans").alias("domain"), "replicate",
        pl.lit(seed).alias("seed"), pl.lit("Approve?").alias("question"),
        pl.lit("yes").alias("favourable_option"), pl.lit("no").alias("unfavourable_option"),
        pl.lit(system_prompt).alias("system_prompt"),
        pl.format("{} asks about {}", "persona_id", "item").alias("user_prompt"))
    labels = prompts.select("prompt_id").with_columns(
        rows.get_column("y").replace_strict({1: "favourable", 0: "unfavourable"}).alias("label"),
        pl.lit("rule").alias("label_source"), pl.lit("").alias("rationale"),
        *[pl.lit(None, pl.Float64).alias(name) for name in ("agreement", "p_favourable",
                                                           "decision_mass")])
    directory.mkdir(parents=True)
    prompts.write_parquet(directory / "prompts.parquet")
    labels.write_parquet(directory / "labels.parquet")
    config = OmegaConf.structured(AuditConfig)
    config.fit.attributes = list(attributes)
    config.fit.ess_min, config.fit.rhat_max = 100, 1.1
    (directory / "config.yaml").write_text(OmegaConf.to_yaml(config))
    return directory


@pytest.fixture
def two_runs(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setattr(comparison, "sample_posterior", two_chain_prior_sampler)
    prompts = default_shaped_prompts(texts_per_cell=2, null_count=0, items=4, replicates=2,
                                     races=("White",))
    outcomes = simulate_pair(prompts, VarianceComponents(), {"gender": {}},
                             {"gender": {"man": 0.5}}, np.random.default_rng(1))
    return (write_run(tmp_path / "a", outcomes, "A", "You are helpful."),
            write_run(tmp_path / "b", outcomes, "B", "You are fair."))


def test_two_system_prompts_compare_paired_with_one_line_per_contrast(two_runs, tmp_path,
                                                                      capsys):
    run_a, run_b = two_runs
    out = tmp_path / "out"
    code = compare.main([str(run_a), str(run_b), f"output={out}", "tracking=false",
                         "max_worsening=100"])
    printed = capsys.readouterr().out
    # Would fail if a system-prompt change broke the pairing, or the gate failed a 100-logit limit.
    assert code == 0
    assert "paired: the same 40 prompts" in printed  # 5 personas (with the baseline) x 4 x 2
    assert printed.count("gender man vs woman:") == 1 and "verdict: PASS" in printed
    changes = pl.read_csv(out / "changes.csv")
    assert changes.height == 1 and changes["paired"].to_list() == [True]
    # Bug caught: 40 prompts a side cannot place the change inside the ROPE, and the PASS read
    # as a change shown not to matter.
    assert changes["decision"].to_list() == ["undecided"]
    assert ("verdict: PASS (0 of 2 checks failed; 1 of 1 comparison undecided, a difference "
            "neither shown nor ruled out)") in printed
    assert (out / "changes_forest.png").is_file() and (out / "report.html").is_file()
    junit = ET.parse(out / "compare_junit.xml").getroot()
    # One testcase per contrast and one for the joint fit's convergence.
    assert junit.get("tests") == "2" and junit.get("failures") == "0"


def test_the_report_is_one_page_that_carries_its_figure_and_shows_the_failed_gate(two_runs,
                                                                                 tmp_path):
    """Bugs caught: report.html linked changes_forest.png beside it, so the page a release
    reviewer is sent (or opens from MLflow's artifact view) showed no figure; a failed gate
    drawn like a passed one; a change's row missing from the page."""
    from html.parser import HTMLParser

    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.sources, self.alerts = [], []

        def handle_starttag(self, tag, attrs):
            attributes = dict(attrs)
            self.sources += [attributes[key] for key in ("src", "href") if key in attributes]
            if attributes.get("role") == "alert":
                self.alerts.append(attributes.get("id"))

    run_a, run_b = two_runs
    out = tmp_path / "out"
    # Both sides hold the same answers, so the gap grows by more than 0 with probability about
    # one half: above 0.01, so the gate fails.
    code = compare.main([str(run_a), str(run_b), f"output={out}", "tracking=false",
                         "max_worsening=0", "worsening_prob=0.01"])
    assert code == 1
    page = (out / "report.html").read_text(encoding="utf-8")
    links = Links()
    links.feed(page)
    assert links.sources and all(source.startswith("data:") for source in links.sources), \
        links.sources
    assert "Content-Security-Policy" in page and "gate-banner" in links.alerts
    assert "gender: man vs woman" in page and "WORSENS" in page
    assert str(run_a.resolve()) in page and str(run_b.resolve()) in page


def test_a_run_reproduced_by_dvc_compares_from_its_stage_folders(two_runs, tmp_path):
    """Bug caught: a run laid out as `dvc repro` writes it (each stage's tables in its folder,
    config.yaml under report/) refused as having no prompts table, or its gold results missed."""
    run_a, run_b = two_runs
    for name, stage in (("prompts.parquet", "design"), ("labels.parquet", "score"),
                        ("config.yaml", "report")):
        (run_b / stage).mkdir()
        (run_b / name).rename(run_b / stage / name)
    gold_results(0).write_parquet(run_b / "score" / "judge_gold.parquet")
    gold_results(0).write_parquet(run_a / "judge_gold.parquet")
    code = compare.main([str(run_a), str(run_b), f"output={tmp_path / 'out'}",
                         "tracking=false", "max_worsening=100"])
    assert code == 0


def test_an_attribute_no_persona_has_is_named_not_compared_instead_of_crashing(
        tmp_path, monkeypatch, capsys):
    """Bug caught: with fit.attributes = [gender, race] and no race level on either side (the
    fit leaves race out), compare crashed after the fit with KeyError 'effect_race' and exit 1,
    which a CI gate reads as a worsening, and wrote nothing."""
    monkeypatch.setattr(comparison, "sample_posterior", two_chain_prior_sampler)
    prompts = default_shaped_prompts(texts_per_cell=2, null_count=0, items=4, replicates=2,
                                     races=("White",))
    outcomes = simulate_pair(prompts, VarianceComponents(), {"gender": {}}, {"gender": {}},
                             np.random.default_rng(2))
    runs = [write_run(tmp_path / side, outcomes, side.upper(), "Decide.",
                      attributes=("gender", "race")) for side in "ab"]
    out = tmp_path / "out"
    assert compare.main([*map(str, runs), f"output={out}", "tracking=false",
                         "max_worsening=100"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("gender man vs woman:") == 1
    assert "not compared: race: no level labelled on both sides" in printed
    assert pl.read_csv(out / "changes.csv").get_column("attribute").to_list() == ["gender"]


def test_nothing_to_compare_is_refused_before_the_fit(two_runs, tmp_path, monkeypatch, caplog):
    # Would fail if a run whose only attribute has no level on both sides were fitted first.
    run_a, run_b = two_runs
    for run in (run_a, run_b):
        config = OmegaConf.load(run / "config.yaml")
        config.fit.attributes = ["race"]
        (run / "config.yaml").write_text(OmegaConf.to_yaml(config))
    monkeypatch.setattr(comparison, "fit_joint", lambda *args, **kwargs: pytest.fail("fitted"))
    assert compare.main([str(run_a), str(run_b), "tracking=false"]) == 2
    assert "nothing to compare: race: no level labelled on both sides" in caplog.text


def test_ctrl_c_or_sigterm_in_the_joint_fit_is_one_line(two_runs, monkeypatch, caplog):
    """Bugs caught: Ctrl-C during the comparison's joint fit (minutes on real runs) was a
    KeyboardInterrupt traceback, and SIGTERM ended it with no line at all."""
    import signal

    handled = []

    def interrupted(*arguments, **options):
        handled.append(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        raise KeyboardInterrupt

    monkeypatch.setattr(comparison, "fit_joint", interrupted)
    assert compare.main([str(path) for path in two_runs] + ["tracking=false"]) == 130
    assert handled == [True]
    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == [
        "interrupted before the comparison was finished; rerun the same command to compare"]


def test_a_level_one_side_never_asked_about_is_not_contrasted(tmp_path, monkeypatch, capsys):
    """Bug caught: with every Asian persona dropped from run A, compare still printed `race Asian
    vs ...` gaps for A (an effect made of the zero-sum constraint and the prior alone) and counted
    them in the Bonferroni family (K 7 instead of 4)."""
    monkeypatch.setattr(comparison, "sample_posterior", two_chain_prior_sampler)
    prompts = default_shaped_prompts(texts_per_cell=1, null_count=0, items=3, replicates=2,
                                     races=("Asian", "Black", "White"))
    outcomes = simulate_pair(prompts, VarianceComponents(), {"gender": {}, "race": {}},
                             {"gender": {}, "race": {}}, np.random.default_rng(3))
    no_asian = outcomes.filter(~((pl.col("model_name") == "A") & (pl.col("race") == "Asian")))
    runs = [write_run(tmp_path / side, no_asian, side.upper(), "Decide.",
                      attributes=("gender", "race")) for side in "ab"]
    out = tmp_path / "out"
    assert compare.main([*map(str, runs), f"output={out}", "tracking=false"]) == 0
    printed = capsys.readouterr().out
    assert "Asian vs" not in printed and "vs Asian" not in printed
    assert "not compared: race Asian: labelled on side B only" in printed
    changes = pl.read_csv(out / "changes.csv")
    # gender man vs woman, race Black vs White: K = 2, each decided on the 1 - 0.05 / 2 HDI.
    assert changes.select("level_a", "level_b").rows() == [("man", "woman"), ("Black", "White")]
    assert changes["decision_prob"].to_list() == pytest.approx([1 - 0.05 / 2] * 2)


def gold_results(mislabelled: int) -> pl.DataFrame:
    """A judge's gold-set results: 20 answers, the first ``mislabelled`` of them misread."""
    truth = ["favourable", "unfavourable"] * 10
    flipped = {"favourable": "unfavourable", "unfavourable": "favourable"}
    return pl.DataFrame({
        "gold_id": [f"gold_{index:02d}" for index in range(20)], "category": ["plain"] * 20,
        "domain": ["loans"] * 20, "true_label": truth,
        "label": [flipped[label] if index < mislabelled else label
                  for index, label in enumerate(truth)],
        "label_source": ["rule"] * 20, "rationale": [""] * 20})


def test_judge_error_false_compares_runs_labelled_by_different_judges(two_runs, tmp_path):
    """Bug caught: the "different judges" check ran before judge_error was read, so
    judge_error=false, the way out its own message names, was refused with exit 2."""
    run_a, run_b = two_runs
    gold_results(1).write_parquet(run_a / "judge_gold.parquet")
    gold_results(4).write_parquet(run_b / "judge_gold.parquet")
    arguments = [str(run_a), str(run_b), f"output={tmp_path / 'out'}", "tracking=false"]
    assert compare.main(arguments) == 2  # without the option: refused, as before
    assert compare.main([*arguments, "judge_error=false"]) == 0


@pytest.mark.parametrize("gold_b", ["missing", "empty"])
def test_a_run_without_gold_results_is_refused_whether_missing_or_empty(
        two_runs, tmp_path, monkeypatch, caplog, gold_b):
    """Bug caught: a run whose gold table was never logged (an MLflow id: no artifact) skipped
    the same-judge check and was read through the other run's judge, while a run directory with
    an empty gold table was refused as labelled by a different judge."""
    run_a, run_b = two_runs
    gold_results(1).write_parquet(run_a / "judge_gold.parquet")
    if gold_b == "empty":
        gold_results(0).clear().write_parquet(run_b / "judge_gold.parquet")
    monkeypatch.setattr(comparison, "fit_joint", lambda *args, **kwargs: pytest.fail("fitted"))
    assert compare.main([str(run_a), str(run_b), "tracking=false"]) == 2
    assert ("run B has no judge gold-set results and run A has" in caplog.text
            and "judge_error=false" in caplog.text)


def test_the_change_figure_draws_the_interval_decided_on_in_the_decisions_colour():
    """Bugs caught: the figure drew the 94% HDI alone, in one colour, so the undecided change
    below (94% HDI clear of the ROPE) looked like a finding; the ROPE band not drawn."""
    import matplotlib.pyplot as plt

    from audit.methods.rasch.report.changes import change_figure
    from audit.methods.rasch.report.plots import DECISION_COLOURS

    changes = pl.DataFrame({
        "attribute": ["race", "race"], "level_a": ["Asian", "Black"], "level_b": ["White"] * 2,
        "change": [1.1, 1.0], "hdi_low": [0.3, 0.4], "hdi_high": [1.9, 1.6],
        "decision_prob": [1 - 0.05 / 2] * 2, "decision_low": [-0.1, 0.25],
        "decision_high": [2.3, 1.8], "decision": ["undecided", "different"], "rope": [0.18] * 2})
    figure = change_figure(changes, 0.94)
    axis = figure.axes[0]
    drawn = {(tuple(line.get_xdata()), line.get_color()) for line in axis.lines}
    assert ((-0.1, 2.3), DECISION_COLOURS["undecided"]) in drawn
    assert ((0.3, 1.9), DECISION_COLOURS["undecided"]) in drawn
    assert ((0.25, 1.8), DECISION_COLOURS["different"]) in drawn
    bands = [patch.get_paths()[0].vertices[:, 0] for patch in axis.collections]
    assert bands and all(np.isclose(band.min(), -0.18) and np.isclose(band.max(), 0.18)
                         for band in bands)
    plt.close(figure)


def test_a_gate_of_zero_fails_a_worsening_contrast_with_exit_1(two_runs, tmp_path):
    run_a, run_b = two_runs
    # Prior draws: |gap_B| > |gap_A| for about half the draws, so a worsening_prob of 0.3 flags it.
    code = compare.main([str(run_a), str(run_b), f"output={tmp_path / 'out'}", "tracking=false",
                         "max_worsening=0", "worsening_prob=0.3"])
    assert code == 1
    junit = ET.parse(tmp_path / "out" / "compare_junit.xml").getroot()
    assert junit.get("failures") == "1"


@pytest.mark.parametrize("arguments, message", [
    (["only_one"], "model_a=NAME and model_b=NAME"),
    (["a", "b", "colour=red"], "unknown option colour"),
    # Bad-input review 2026-12-05: no hint, where fit and verdict give one.
    (["a", "b", "maxworsening=1"], "unknown option maxworsening (did you mean 'max_worsening'?)"),
    (["a", "b", "max_worsening=lots"], "max_worsening=lots is not a number"),
    (["a", "b", "draws=many"], "draws=many is not an integer"),
    (["a", "b", "judge_error=no"], "judge_error=no must be true or false"),
    # Bad-input review 2026-12-04: `output=` was the current folder.
    (["a", "b", "output="], "output= is empty: give it a value"),
    # Bug caught: a key given twice, the last value won without a word (a CI gate's
    # max_worsening=0.5 beside a later max_worsening=2 gated at 2).
    (["a", "b", "max_worsening=0.5", "max_worsening=2"],
     "max_worsening is given more than once (max_worsening=0.5 and max_worsening=2): give it "
     "once; usage"),
    # Bug caught: draws=0 sampled 35 s, then raised ValueError (exit 1, read as a worsening).
    (["a", "b", "draws=0"], "draws=0 must be at least 1"),
    (["a", "b", "chains=-1"], "chains=-1 must be at least 1"),
    (["a", "b", "target_accept=1.5"], "target_accept=1.5 must lie between 0 and 1"),
    # Bug caught: a flag counted as a third run, "give one or two runs".
    (["a", "b", "--max_worsening", "0.5"],
     "--max_worsening is not an option: options are key=value (write max_worsening=VALUE)"),
    (["a", "b", "--verbose"], "--verbose is not an option: options are key=value;"),
    # Bug caught (mutation review 2026-12-06): a pp gap grows by less than 100pp, so 100pp or
    # more was a gate that could not fail, accepted without a word.
    (["a", "b", "max_worsening=100pp"], "max_worsening=100pp can never be exceeded, so it gates "
                                        "nothing: a gap in percentage points grows by less than "
                                        "100pp; give less"),
    # Checks loosened at their edges (mutation review 2026-12-06): three runs, or none (an
    # IndexError traceback), taken; one run with model_a= alone accepted (`and` read as `or`);
    # tune=0 accepted; target_accept or worsening_prob of exactly 0 or 1 accepted (`<` read as
    # `<=`); a negative max_worsening accepted.
    (["a", "b", "c"], "give one or two runs"),
    (["tracking=false"], "give one or two runs"),
    (["only_one", "model_a=x"], "one run needs model_a=NAME and model_b=NAME"),
    (["a", "b", "tune=0"], "tune=0 must be at least 1"),
    (["a", "b", "target_accept=1"], "target_accept=1.0 must lie between 0 and 1"),
    (["a", "b", "target_accept=0"], "target_accept=0.0 must lie between 0 and 1"),
    (["a", "b", "max_worsening=-0.5"], "max_worsening=-0.5 must be >= 0"),
    (["a", "b", "worsening_prob=1"], "worsening_prob=1.0 must lie between 0 and 1"),
    (["a", "b", "worsening_prob=0"], "worsening_prob=0.0 must lie between 0 and 1"),
])
def test_bad_input_is_one_line_and_exit_2(arguments, message, caplog):
    assert compare.main(arguments) == 2
    assert message in caplog.text


def test_one_runs_two_models_are_compared_by_model_a_and_model_b(two_runs, tmp_path, capsys):
    """Catches model_b= read for side A or model_a= for side B (`RUN model_a=X model_b=Y`
    compared a model with itself, or refused as the same run and model)."""
    run_a, run_b = two_runs
    both = tmp_path / "both"
    both.mkdir()
    pl.concat([pl.read_parquet(run_a / "prompts.parquet"),
               pl.read_parquet(run_b / "prompts.parquet").with_columns(
                   pl.lit("llama").alias("model_name"))]).write_parquet(both / "prompts.parquet")
    pl.concat([pl.read_parquet(run / "labels.parquet") for run in (run_a, run_b)]).write_parquet(
        both / "labels.parquet")
    (both / "config.yaml").write_text((run_a / "config.yaml").read_text())
    assert compare.main([str(both), "model_a=qwen", "model_b=llama", f"output={tmp_path / 'o'}",
                         "tracking=false"]) == 0
    assert f"Result: compare qwen ({both.resolve()}) -> llama ({both.resolve()})" \
        in capsys.readouterr().out

def test_without_max_worsening_the_output_says_no_contrast_was_gated(two_runs, tmp_path, capsys,
                                                                      caplog):
    """Bug caught: without max_worsening no contrast can fail, yet compare exited 0 with a plain
    `verdict: PASS`, as if a gate had been applied; junit= wrote a JUnit file that always passes
    its contrasts without a warning."""
    run_a, run_b = two_runs
    assert compare.main([str(run_a), str(run_b), f"output={tmp_path / 'out'}", "tracking=false",
                         f"junit={tmp_path / 'gate.xml'}"]) == 0
    assert "no max_worsening given: no contrast was gated" in capsys.readouterr().out
    assert "junit= without max_worsening" in caplog.text


def test_a_run_id_without_a_store_names_the_missing_store_and_creates_none(tmp_path,
                                                                           monkeypatch, caplog):
    """Bugs caught: `python -m audit.compare deadbeef cafebabe` in a folder without a store
    created an empty mlflow.db there; the hint named audit.runs' --tracking-uri, an option this
    command does not take."""
    monkeypatch.chdir(tmp_path)
    assert compare.main(["deadbeef", "cafebabe"]) == 2
    assert not (tmp_path / "mlflow.db").exists()
    assert "no MLflow store at sqlite:///mlflow.db" in caplog.text
    assert "pass tracking_uri=URI" in caplog.text and "--tracking-uri" not in caplog.text


def test_a_mistyped_run_directory_is_named_as_one(tmp_path, caplog):
    # Bug caught: it read "0 runs in experiment 'audit' ... start with '../runs/nonexist'".
    assert compare.main([str(tmp_path / "runs" / "nonexist"), str(tmp_path)]) == 2
    assert f"{tmp_path / 'runs' / 'nonexist'}: no such run directory" in caplog.text
    # Bad-input review 2026-12-04: a file was "no such run directory" too.
    (tmp_path / "a_file.csv").write_text("x\n")
    caplog.clear()
    assert compare.main([str(tmp_path / "a_file.csv"), str(tmp_path)]) == 2
    assert f"{tmp_path / 'a_file.csv'}: is a file, not a run directory" in caplog.text


def test_a_missing_run_names_the_source(tmp_path, caplog):
    (tmp_path / "empty").mkdir()
    assert compare.main([str(tmp_path / "empty"), str(tmp_path / "empty"),
                         "tracking=false"]) == 2
    assert "has no prompts table" in caplog.text


@pytest.mark.slow
def test_a_finished_audit_compares_from_the_command_line_by_run_id_and_directory(tmp_path):
    # A real smoke audit (scripted loopback model, rules-only judge) compared with itself: an
    # MLflow run id on one side and the run directory on the other, through `python -m
    # audit.compare` with nutpie. Would fail if a run id's logged tables could not be read back,
    # the same prompts were not paired, or the comparison's own MLflow run lacked its sources.
    import subprocess
    import sys

    import mlflow
    from smoke_audit import run_smoke_audit

    run_smoke_audit(tmp_path)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(store)
    (run_a,) = client.search_runs([client.get_experiment_by_name("audit").experiment_id])
    done = subprocess.run(
        [sys.executable, "-m", "audit.compare", run_a.info.run_id[:8], str(tmp_path / "run"),
         # 3000 draws: this 30-answer fit's tail ESS is sampler luck at 1500 (750-1,400 over 8
         # seeds, but 362 < 400 in the whole suite's CI on this machine, where the compiled log
         # density differs in its last bits); the test is about reading runs back, not luck.
         f"tracking_uri={store}", "max_worsening=0.5", "draws=3000", "tune=1000", "chains=4",
         "target_accept=0.95",
         f"output={tmp_path / 'compare'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1500:]
    assert "paired: the same" in done.stdout and "verdict: PASS" in done.stdout
    assert done.stdout.count("WORSENS") == 0 and done.stdout.count(": ok") >= 2
    compare_runs = client.search_runs([run_a.info.experiment_id], "tags.method = 'compare'")
    assert len(compare_runs) == 1
    tags = compare_runs[0].data.tags
    assert tags["compare.run_a"] == run_a.info.run_id  # the prefix resolved to the full id
    assert tags["compare.run_b"] == str((tmp_path / "run").resolve())
    assert tags["compare.paired"] == "true"


def test_a_fit_that_did_not_converge_fails_the_gate(two_runs, tmp_path):
    # Would fail if the gate passed on draws that do not describe the posterior.
    run_a, run_b = two_runs
    config = OmegaConf.load(run_a / "config.yaml")
    config.fit.ess_min = 100_000
    (run_a / "config.yaml").write_text(OmegaConf.to_yaml(config))
    assert compare.main([str(run_a), str(run_b), f"output={tmp_path / 'out'}", "tracking=false",
                         "max_worsening=100"]) == 1
    junit = ET.parse(tmp_path / "out" / "compare_junit.xml").getroot()
    assert junit.find(".//testcase[@name='convergence']/failure") is not None


def test_the_comparisons_mlflow_run_records_its_gate_and_provenance(two_runs, tmp_path):
    """Bug caught: the comparison's MLflow run held two metrics and its sources only: not the
    gate it applied (max_worsening, unit, worsening_prob), the sampler's draws and chains,
    whether labels went through the judge's errors, whether the fit converged, nor the tool's
    version and commit every other run records."""
    import mlflow

    run_a, run_b = two_runs
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert compare.main([str(run_a), str(run_b), f"output={tmp_path / 'out'}",
                         f"tracking_uri={store}", "max_worsening=5pp", "draws=300"]) == 0
    client = mlflow.MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("audit").experiment_id],
                                "tags.method = 'compare'")
    params, tags = run.data.params, run.data.tags
    assert (params["max_worsening"], params["unit"], params["worsening_prob"]) == \
        ("5", "pp", "0.95")
    assert params["draws"] == "300" and params["judge_error"] == "false"
    assert params["items"] == "shared"  # re-created by audit.runs show with items=shared
    assert tags["converged"] == "true" and "audit.version" in tags
    assert "package.pymc" in tags
    # Catches compare.run_b tagged with run A's source (only the slow test read the tags).
    assert (tags["compare.run_a"], tags["compare.run_b"]) == \
        (str(run_a.resolve()), str(run_b.resolve()))
    assert (tags["compare.model_a"], tags["compare.model_b"]) == ("qwen", "qwen")
    assert run.info.run_name == "compare qwen: a vs b"  # one model, two system prompts


def test_the_comparison_is_named_by_its_two_runs_when_the_model_is_the_same():
    # Would fail on the old MLflow run name, "compare qwen vs qwen", which told two system
    # prompts' comparisons apart from nothing in the runs list; the report's title is this name.
    from audit.methods.rasch.report.changes import comparison_name

    def side(label: str, source: str, model: str) -> comparison.Side:
        return comparison.Side(label, source, model, pl.DataFrame(), pl.DataFrame())

    assert comparison_name((side("A", "runs/a", "qwen"), side("B", "/x/runs/b", "qwen"))) \
        == "qwen: a vs b"
    assert comparison_name((side("A", "runs/a", "qwen"), side("B", "runs/a", "llama"))) \
        == "qwen vs llama"


class Fitted(Exception):
    """Raised where the joint fit would sample."""


@pytest.mark.parametrize("option", ["output", "junit", "default output", "file in output"])
def test_an_output_that_cannot_be_written_is_exit_2_before_the_fit(two_runs, tmp_path, monkeypatch,
                                                                   caplog, option):
    """Bug caught: output=FILE (FileExistsError) and junit=FOLDER (IsADirectoryError) crashed
    after the joint fit with exit 1, the code of a failed gate, so CI read a crash as a
    worsening; the default output folder, compare/A_vs_B, was not checked either, nor a folder
    inside output= under the name of a file the comparison writes (IsADirectoryError after the
    fit, found in the bad-input review of 2026-12-01)."""
    def fitted(*args, **kwargs):
        raise Fitted

    monkeypatch.setattr(comparison, "fit_joint", fitted)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text("a\n")
    if option == "default output":
        (tmp_path / "compare").write_text("")  # where compare/a_vs_b would go
    (tmp_path / "out" / "report.html").mkdir(parents=True)
    argument = {"output": ["output=good.csv"], "junit": [f"junit={tmp_path}"],
                "default output": [], "file in output": ["output=out"]}[option]
    run_a, run_b = two_runs
    assert compare.main([str(run_a), str(run_b), "tracking=false", *argument]) == 2
    assert {"output": "output=good.csv is a file", "junit": f"junit={tmp_path} is a folder",
            "default output": "compare is a file",
            "file in output": "output=out/report.html is a folder, not a file"}[option] \
        in caplog.text
    # Bad-input review 2026-12-04: junit=FOLDER without max_worsening printed the warning
    # that the gate cannot fail first; a refused command says one line.
    assert len(caplog.records) == 1, [record.getMessage() for record in caplog.records]


def test_runs_that_recorded_different_judges_are_refused_even_with_equal_gold_labels():
    """Bug caught: two runs whose configs name different judges were fitted through one judge's
    errors whenever the judges' gold labels happened to agree (the judge-name check inverted)."""
    from audit.errors import AuditError
    from audit.methods.rasch.comparison_sides import check_one_judge

    gold = gold_results(1)
    with pytest.raises(AuditError, match="judge=gpt and judge=claude"):
        check_one_judge(gold, gold, ("gpt", "claude"))
    check_one_judge(gold, gold, ("gpt", "gpt"))  # one judge, same labels: allowed


def test_one_judges_gold_labels_in_another_row_order_are_one_judge():
    """Bug caught: the gold labels were compared row by row as stored, so one judge's labels of
    the same answers written in another order were refused as a different judge."""
    from audit.methods.rasch.comparison_sides import check_one_judge

    gold = gold_results(1)
    check_one_judge(gold, gold.reverse(), ("gpt", "gpt"))


def test_two_judges_read_as_truth_are_named_and_one_judge_is_not():
    """Bug caught: with judge_error=false the note that A and B had different judges was left
    out where they differed and printed where they were the same judge."""
    from audit.methods.rasch.comparison_sides import judges_note

    note = judges_note(("gpt", "claude"))
    assert note is not None and "judge=gpt" in note and "judge=claude" in note
    assert judges_note(("gpt", "gpt")) is None
    assert judges_note((None, "gpt")) is None


def test_run_bs_other_fit_settings_are_named_hdi_mass_included():
    """Bugs caught: run B's settings named where they equal A's and not where they differ, and
    a different hdi_prob (the intervals' mass) of run B dropped without a word."""
    from audit.methods.rasch.comparison_sides import settings_note
    from audit.methods.rasch.config import FitConfig

    fit_a = FitConfig()
    assert settings_note(fit_a, FitConfig()) is None
    note = settings_note(fit_a, FitConfig(rope=0.3, hdi_prob=0.9))
    assert note is not None
    assert f"rope 0.3 against A's {fit_a.rope}" in note
    assert f"hdi_prob 0.9 against A's {fit_a.hdi_prob}" in note
    assert "outcome" not in note and "attributes" not in note


def items_side(label: str, items: list[str]) -> comparison.Side:
    prompts = pl.DataFrame({"prompt_id": [f"{label}{item}" for item in items], "item_id": items})
    return comparison.Side(label, f"runs/{label}", "qwen", prompts, pl.DataFrame())


def test_sides_that_asked_different_items_are_compared_on_the_shared_ones_by_default():
    """Bugs caught: the default (items=shared) fitted every item, so a gap carried by items one
    side alone asked read as a change; items=all cut to the shared items; the shared items
    taken as the union; and sides with no item in common cut to no prompts at all (the pairing
    names that case)."""
    from audit.methods.rasch.comparison_sides import shared_items

    side_a, side_b = items_side("A", ["i1", "i2", "i3"]), items_side("B", ["i2", "i3", "i4"])
    kept_a, kept_b, note = shared_items(side_a, side_b, "shared")
    assert sorted(kept_a.prompts["item_id"]) == sorted(kept_b.prompts["item_id"]) == ["i2", "i3"]
    assert note == "items: compared on the 2 items both runs asked (A asked 3, B asked 3); " \
        "items=all fits every item"
    kept_a, kept_b, note = shared_items(side_a, side_b, "all")
    assert kept_a is side_a and kept_b is side_b
    assert note is not None and note.startswith("items: fitted on all 4 items")
    apart = items_side("B", ["i7", "i8"])
    kept_a, kept_b, note = shared_items(side_a, apart, "shared")
    assert (kept_a.prompts.height, kept_b.prompts.height, note) == (3, 2, None)


def test_attributes_only_run_b_contrasted_are_named():
    """Bug caught: the note named A's attributes missing from B (which the comparison does
    compare) instead of B's attributes missing from A (which it does not)."""
    from audit.methods.rasch.comparison_sides import attributes_note
    from audit.methods.rasch.config import FitConfig

    fit_a, fit_b = FitConfig(attributes=["gender"]), FitConfig(attributes=["gender", "age"])
    assert attributes_note(fit_a, fit_b) == [
        "age: in run B's fit.attributes only (the comparison reads run A's)"]
    assert attributes_note(fit_b, fit_a) == []


def test_the_change_figure_names_each_contrast_in_the_tables_level_order():
    """Bug caught: the figure's rows named the levels the other way round ("White vs Asian"),
    so the change's sign read against the table's "Asian vs White" looked flipped."""
    import matplotlib.pyplot as plt

    from audit.methods.rasch.report.changes import change_figure

    changes = pl.DataFrame({
        "attribute": ["race"], "level_a": ["Asian"], "level_b": ["White"], "change": [1.1],
        "hdi_low": [0.3], "hdi_high": [1.9], "decision_prob": [0.975], "decision_low": [-0.1],
        "decision_high": [2.3], "decision": ["undecided"], "rope": [0.18]})
    figure = change_figure(changes, 0.94)
    assert [label.get_text() for label in figure.axes[0].get_yticklabels()] \
        == ["race: Asian vs White"]
    plt.close(figure)


def test_the_comparison_page_states_the_intervals_mass(tmp_path):
    """Bug caught: the page's table headed its intervals " HDI" with no mass, so a reader of a
    comparison fitted at hdi_prob 0.9 could not tell its intervals from the run report's 94%."""
    from audit.methods.rasch.report.changes import change_report

    changes = pl.DataFrame({
        "attribute": ["race"], "level_a": ["Asian"], "level_b": ["White"], "gap_A": [0.2],
        "gap_B": [0.5], "change": [0.3], "hdi_low": [-0.1], "hdi_high": [0.7], "p_worse": [0.8],
        "decision": ["undecided"], "max_worsening": [None], "hdi_prob": [0.9]})
    figure = tmp_path / "changes_forest.png"
    figure.write_bytes(b"\x89PNG")
    sides = [comparison.Side(label, f"runs/{label}", "qwen", pl.DataFrame(), pl.DataFrame())
             for label in "AB"]
    page = change_report(changes, sides, pairing="paired", verdict="no gate", failed=False,
                         converged=True, figure=figure, lines=["race: Asian vs White"])
    assert "<th>90% HDI</th>" in page and "90% highest-density intervals" in page


def test_the_same_answers_twice_are_warned_of_and_a_relabelled_copy_is_not(two_runs, tmp_path,
                                                                           monkeypatch, caplog):
    """Catches the warning "A and B hold the same prompts and labels" given for the same
    prompts labelled otherwise (`and` read as `or`): a rescored run, the case a comparison of
    the same prompts is for, was told it can only find no change."""
    import shutil

    def fitted(*args, **kwargs):
        raise Fitted

    monkeypatch.setattr(comparison, "fit_joint", fitted)
    run_a, _ = two_runs
    same, relabelled = tmp_path / "same", tmp_path / "relabelled"
    shutil.copytree(run_a, same)
    shutil.copytree(run_a, relabelled)
    pl.read_parquet(run_a / "labels.parquet").with_columns(pl.col("label").replace_strict(
        {"favourable": "unfavourable", "unfavourable": "favourable"})).write_parquet(
        relabelled / "labels.parquet")
    warning = "A and B hold the same prompts and labels"
    with pytest.raises(Fitted):
        compare.main([str(run_a), str(same), f"output={tmp_path / 'o1'}", "tracking=false"])
    assert warning in caplog.text
    caplog.clear()
    with pytest.raises(Fitted):
        compare.main([str(run_a), str(relabelled), f"output={tmp_path / 'o2'}",
                      "tracking=false"])
    assert warning not in caplog.text


def test_a_run_that_turned_tracking_off_logs_no_comparison(two_runs, tmp_path, capsys):
    """Catches the comparison logged to MLflow although run A's config has tracking.enabled=
    false (the `settings.enabled` half of the logging condition dropped): the link line said
    tracking was off while a store was created and written."""
    run_a, run_b = two_runs
    config = OmegaConf.load(run_a / "config.yaml")
    config.tracking.enabled = False
    (run_a / "config.yaml").write_text(OmegaConf.to_yaml(config))
    store = tmp_path / "mlflow.db"
    assert compare.main([str(run_a), str(run_b), f"output={tmp_path / 'out'}",
                         f"tracking_uri=sqlite:///{store}"]) == 0
    assert "MLflow: off (tracking.enabled=false in run A's config)" in capsys.readouterr().out
    assert not store.exists()


def test_each_setting_a_comparison_takes_from_run_a_is_named_where_run_b_differs():
    """Catches: attributes, outcome, drop_labels or familywise_alpha dropped from the settings
    read from run A, so run B's other value of it was left out of the summary."""
    from audit.methods.rasch.comparison_sides import settings_note
    from audit.methods.rasch.config import FitConfig

    fit_a = FitConfig()
    fit_b = FitConfig(attributes=["age"], outcome="undetermined", drop_labels=["refusal"],
                      familywise_alpha=0.1)
    note = settings_note(fit_a, fit_b)
    assert note is not None
    for said in ("attributes ['age'] against A's ['gender', 'race']",
                 "outcome undetermined against A's favourable",
                 "drop_labels ['refusal'] against A's []",
                 "familywise_alpha 0.1 against A's 0.05"):
        assert said in note, said


@pytest.mark.parametrize("column", ["true_label", "label_source"])
def test_gold_sets_that_differ_in_their_truth_or_labelling_path_are_two_judges(column):
    """Catches: true_label or label_source left out of the gold key, so gold sets whose answers
    were read against other truths, or labelled by the rules on one side and the LLM on the
    other, passed as one judge's."""
    from audit.errors import AuditError
    from audit.methods.rasch.comparison_sides import check_one_judge

    gold = gold_results(1)
    other = gold.with_columns(pl.when(pl.col("gold_id") == "gold_04")
                              .then(pl.lit("llm" if column == "label_source" else "unfavourable"))
                              .otherwise(pl.col(column)).alias(column))
    with pytest.raises(AuditError, match="their labels of the gold set differ"):
        check_one_judge(gold, other, ("gpt", "gpt"))


def test_a_run_that_recorded_no_judge_name_is_checked_by_its_gold_labels_alone():
    """Catches: the judge-name check run when one run recorded no judge name (None), which
    refused the pair as "judge=None and judge=gpt" whatever their gold labels said."""
    from audit.methods.rasch.comparison_sides import check_one_judge

    gold = gold_results(1)
    check_one_judge(gold, gold, (None, "gpt"))
    check_one_judge(gold, gold, ("gpt", None))


def test_a_run_a_without_gold_results_is_the_one_named_to_rerun():
    """Catches: the runs named the wrong way round when run A, not run B, lacks gold results."""
    from audit.errors import AuditError
    from audit.methods.rasch.comparison_sides import check_one_judge

    with pytest.raises(AuditError) as refused:
        check_one_judge(None, gold_results(1))
    assert str(refused.value).startswith("run A has no judge gold-set results and run B has: ")
    assert "rerun run A with judge.evaluate_on_gold=true" in str(refused.value)


def test_the_two_judges_note_says_which_run_each_judge_labelled():
    """Catches: the judges named the other way round in the judge_error=false note."""
    from audit.methods.rasch.comparison_sides import judges_note

    assert judges_note(("gpt", "claude")).startswith(
        "judges: run A was labelled by judge=gpt, run B by judge=claude, both read as truth")


def test_the_items_note_counts_each_sides_items_and_the_shared_ones():
    """Catches: A's and B's item counts swapped in the items note, or the shared count of
    items=all replaced by one side's count."""
    from audit.methods.rasch.comparison_sides import shared_items

    side_a, side_b = items_side("A", ["i1", "i2", "i3"]), items_side("B", ["i2", "i3", "i4", "i5"])
    assert shared_items(side_a, side_b, "shared")[2] == (
        "items: compared on the 2 items both runs asked (A asked 3, B asked 4); items=all fits "
        "every item")
    assert shared_items(side_a, side_b, "all")[2].startswith(
        "items: fitted on all 5 items (A asked 3, B asked 4, 2 shared; items=all): ")
