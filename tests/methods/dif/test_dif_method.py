"""The DIF method's design, config and plumbing (fake backend; the real model is in the slow test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlflow
import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from audit.errors import AuditError
from audit.__main__ import CONF_DIR
from audit.config import ModelConfig, SamplingConfig, TrackingConfig
from audit.methods.configs import AuditConfig
from audit.methods.dif.config import DIFConfig
from audit.config import PathsConfig
from audit.methods.configs import to_audit_config
from audit.methods import create_method
from audit.methods.dif.design import build_personas, build_prompts, greedy_models, load_items
from audit.methods.dif.score import grade_answers
from audit.methods.dif.items import generate_items

PROJECT_ROOT = Path(__file__).resolve().parents[3]
PERSONAS = pl.read_csv(PROJECT_ROOT / "data" / "dif" / "personas.csv")


def _compose(*overrides: str) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=["paths.output_dir=out", *overrides]))


def test_shipped_personas_cover_the_groups_the_issue_names():
    personas = build_personas(DIFConfig(), PERSONAS)
    real = personas.filter(pl.col("persona_kind") == "real")
    assert real.height >= 22
    assert set(real["persona_category"]) == {"race", "religion", "gender", "sexuality",
                                             "disability"}
    null = personas.filter(pl.col("persona_kind") == "null")
    assert null.height == 20
    assert all(len(text) == 10 and text.isalpha() for text in null["descriptor"])
    assert build_personas(DIFConfig(), PERSONAS).equals(personas)  # seeded
    assert not build_personas(DIFConfig(seed=1), PERSONAS).equals(personas)
    assert personas.filter(pl.col("persona_kind") == "baseline")["descriptor"].to_list() == [""]


def test_prompts_put_every_persona_in_the_same_sentence():
    items = generate_items(3, per_cell=1, datasets=["math"], difficulties=[1])
    personas = build_personas(DIFConfig(persona_ids=["black", "muslim"], null_count=2), PERSONAS)
    models = {"m": ModelConfig(backend="fake", model="f")}
    prompts = build_prompts(items, personas, models, DIFConfig())
    assert prompts.height == 2 * 5
    by_persona = {row["persona_id"]: row for row in prompts.filter(
        pl.col("form") == "free").iter_rows(named=True)}
    assert by_persona["black"]["system_prompt"] == "You are a Black person."
    assert by_persona["baseline"]["system_prompt"] == ""
    null_ids = [pid for pid in by_persona if pid.startswith("null_")]
    assert all(by_persona[pid]["system_prompt"].startswith("You are ") for pid in null_ids)
    assert len({row["user_prompt"] for row in by_persona.values()}) == 1  # only the persona varies
    assert by_persona["black"]["user_prompt"].endswith(
        "Give only the final answer, with no explanation.")
    choice = prompts.filter(pl.col("form") == "choice")["user_prompt"][0]
    assert choice.endswith("Answer with only the letter of the correct option.")
    in_user = build_prompts(items, personas, models, DIFConfig(persona_role="user"))
    row = in_user.filter(pl.col("persona_id") == "black").row(0, named=True)
    assert row["system_prompt"] == "" and row["user_prompt"].startswith("You are a Black person.")
    assert set(prompts["seed"]) == {DIFConfig().seed}


def test_requests_are_greedy_whatever_the_model_samples():
    hot = {"m": ModelConfig(backend="fake", model="f", system_prompt="Decide.",
                            sampling=SamplingConfig(temperature=0.9, top_p=0.5, max_tokens=300))}
    greedy = greedy_models(hot, max_tokens=24)["m"]
    assert (greedy.sampling.temperature, greedy.sampling.top_p, greedy.sampling.max_tokens) == (
        0.0, 1.0, 24)
    assert greedy.system_prompt == "" and hot["m"].sampling.temperature == 0.9  # a copy


@pytest.mark.parametrize(("config", "message"), [
    (DIFConfig(persona_sentence="You are nobody."), "has no {persona} slot"),
    (DIFConfig(persona_role="assistant"), "unknown dif.persona_role"),
    (DIFConfig(alpha=1.5), "dif.alpha must be in"),
])
def test_bad_config_is_one_clear_error(config: DIFConfig, message: str):
    items = generate_items(3, per_cell=1, datasets=["math"], forms=["free"], difficulties=[1])
    personas = build_personas(DIFConfig(null_count=1, persona_ids=["white"]), PERSONAS)
    with pytest.raises(AuditError, match=message):
        build_prompts(items, personas, {"m": ModelConfig(backend="fake", model="f")}, config)


def test_unknown_persona_id_and_broken_persona_file():
    with pytest.raises(AuditError, match=r"unknown persona ids \['martian'\]"):
        build_personas(DIFConfig(persona_ids=["martian"]), PERSONAS)
    with pytest.raises(AuditError, match=r"lacks the column\(s\) \['category'\]"):
        build_personas(DIFConfig(), PERSONAS.drop("category"))


def test_load_items_from_the_file_or_a_fresh_seed_plus_custom():
    shipped = pl.read_csv(PROJECT_ROOT / "data" / "dif" / "items.csv", infer_schema_length=0)
    chosen = load_items(DIFConfig(per_cell=1, forms=["free"]), shipped, None, None)
    assert chosen.height == 2 * 3
    fresh = load_items(DIFConfig(per_cell=2, datasets=["logic"]), None, None, None)
    assert fresh.height == 2 * 3 * 2
    custom = pl.DataFrame({"question": ["What is 2 + 2?"], "answer": ["4"]})
    both = load_items(DIFConfig(per_cell=1, forms=["free"]), shipped, custom, Path("c.csv"))
    assert both.height == 7 and "custom_0001" in both["item_id"].to_list()
    clash = pl.DataFrame({"question": ["x"], "answer": ["1"], "item_id": ["math_free_d1_001"]})
    with pytest.raises(AuditError, match="item_id must be unique"):
        load_items(DIFConfig(per_cell=1, forms=["free"]), shipped, clash, Path("c.csv"))


def test_grading_keeps_errors_as_rows():
    items = generate_items(3, per_cell=1, datasets=["math"], forms=["free"], difficulties=[1])
    personas = build_personas(DIFConfig(persona_ids=["white"], null_count=1), PERSONAS)
    prompts = build_prompts(items, personas, {"m": ModelConfig(backend="fake", model="f")},
                            DIFConfig())
    answer = items["answer"][0]
    responses = pl.DataFrame({
        "prompt_id": prompts["prompt_id"], "status": ["ok", "ok", "error"],
        "response_text": [f"The answer is {answer}.", "I am not sure.", None],
        "from_cache": [False, True, False]})
    answers = grade_answers(prompts, responses, items)
    graded = {row["prompt_id"]: row for row in answers.iter_rows(named=True)}
    assert [graded[pid]["correct"] for pid in prompts["prompt_id"]] == [True, False, None]
    assert [graded[pid]["extract_method"] for pid in prompts["prompt_id"]] == [
        "answer_phrase", "none", None]



def test_grading_keeps_a_prompt_without_a_response_as_an_error_row_in_prompt_order():
    """Mutation review 2026-12-06: a prompt the responses lack is an error row (not dropped, not
    "ok"), an ok reply with no text is graded as unread, and rows come sorted by prompt_id."""
    items = generate_items(3, per_cell=1, datasets=["math"], forms=["free"], difficulties=[1])
    personas = build_personas(DIFConfig(persona_ids=["white"], null_count=1), PERSONAS)
    prompts = build_prompts(items, personas, {"m": ModelConfig(backend="fake", model="f")},
                            DIFConfig())
    ids = sorted(prompts["prompt_id"])
    responses = pl.DataFrame({"prompt_id": ids[:2], "status": ["ok", "ok"],
                              "response_text": [None, f"It is {items['answer'][0]}."],
                              "from_cache": [False, False]},
                             schema_overrides={"response_text": pl.Utf8})
    answers = grade_answers(prompts.reverse(), responses, items)
    assert answers["prompt_id"].to_list() == ids
    assert answers["status"].to_list() == ["ok", "ok", "error"]
    assert answers["extract_method"].to_list() == ["none", "single_number", None]
    assert answers["correct"].to_list() == [False, True, None]

def test_dif_and_the_model_sweep_compose():
    cfg = _compose("method=dif")
    assert cfg.method == "dif" and cfg.dif.per_cell == 2 and cfg.dif.null_count == 20
    assert create_method("dif").name == "dif"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=["method=dif", "+sweep=models"],
                           return_hydra_config=True)
    assert composed.method == "dif"
    # The preset sweeps every file in conf/model/ except the server examples (a glob).
    assert "glob(*" in str(composed.hydra.sweeper.params.model)


def test_the_whole_method_on_the_fake_backend(tmp_path: Path):
    """Every table, plot and the MLflow run, end to end, with a scripted backend."""
    cfg = AuditConfig(
        model={"fake": ModelConfig(backend="fake", model="fake-a")},
        dif=DIFConfig(items_file=str(PROJECT_ROOT / "data/dif/items.csv"),
                      personas_file=str(PROJECT_ROOT / "data/dif/personas.csv"), per_cell=1,
                      persona_ids=["black", "white", "woman"], null_count=3,
                      permutation_resamples=99),
        tracking=TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
                                artifact_root=str(tmp_path / "artifacts"), experiment="dif_test"),
        paths=PathsConfig(root_dir=str(PROJECT_ROOT), response_store=str(tmp_path / "r.sqlite3"),
                          output_dir=str(tmp_path / "out")), method="dif")
    result = create_method("dif").run(cfg, tmp_path / "out")
    out = tmp_path / "out"
    answers = pl.read_parquet(out / "dif_answers.parquet")
    assert answers.height == 12 * 7 and (answers["status"] == "ok").all()
    personas = pl.read_csv(out / "dif_personas.csv")
    assert set(personas["dataset"]) == {"math", "logic", "all"}
    tests = pl.read_csv(out / "dif_tests.csv")
    assert tests.height == 3 and not tests["claim"].any()
    for name in ("dif_accuracy.png", "dif_null_vs_real.png", "dif_accuracy_vs_bias.png"):
        assert (out / name).stat().st_size > 1000
    mlflow.set_tracking_uri(cfg.tracking.tracking_uri)
    run = mlflow.get_run(result["run"].run_id)
    assert run.data.params["dif.per_cell"] == "1" and run.data.tags["method"] == "dif"
    assert run.data.metrics["n_prompts"] == 84
    assert "accuracy/fake/all" in run.data.metrics
    logged = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "tables")}
    assert "tables/dif_personas.csv" in logged and "tables/dif_tests.csv" in logged
    metrics = json.loads((out / "dif_metrics.json").read_text())
    assert metrics["n_failed"] == 0
    again = create_method("dif").run(cfg, tmp_path / "out")  # everything from the store
    assert again["metrics"]["n_from_store"] == 84


def test_compare_gathers_a_sweep_and_fits_across_models(tmp_path: Path):
    from audit.cli.dif_compare import main

    for job, (model, accuracy, dif) in enumerate((("a", 0.2, 0.5), ("b", 0.5, 0.7),
                                                  ("c", 0.8, 0.9))):
        (tmp_path / str(job)).mkdir()
        pl.DataFrame({"model_name": [model], "dataset": ["all"], "accuracy": [accuracy],
                      "accuracy_low": [accuracy - 0.1], "accuracy_high": [accuracy + 0.1],
                      "mean_dif_real": [dif]}).write_csv(tmp_path / str(job) / "dif_models.csv")
    assert main([str(tmp_path)]) == 0
    across = pl.read_csv(tmp_path / "dif_across_models.csv")
    assert across["n_models"][0] == 3 and across["slope"][0] == pytest.approx(2 / 3)
    assert across["r_squared"][0] == pytest.approx(1.0)
    assert (tmp_path / "dif_accuracy_vs_bias.png").is_file()
    assert main([str(tmp_path / "0" / "nothing")]) == 2


@pytest.mark.parametrize("taken", ["dif_models_all.csv", "dif_accuracy_vs_bias.png"])
def test_compare_refuses_an_output_it_cannot_write_before_writing_any(tmp_path: Path, caplog,
                                                                      taken: str):
    """Bug caught (bad-input review 2026-12-07): a folder under an output's name was an
    IsADirectoryError traceback (exit 1), for the figure after both tables were written."""
    from audit.cli.dif_compare import main

    (tmp_path / "0").mkdir()
    pl.DataFrame({"model_name": ["a"], "dataset": ["all"], "accuracy": [0.2],
                  "accuracy_low": [0.1], "accuracy_high": [0.3], "mean_dif_real": [0.5]}
                 ).write_csv(tmp_path / "0" / "dif_models.csv")
    (tmp_path / taken).mkdir()
    assert main([str(tmp_path)]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and f"{taken} is a folder, not a file" in errors[0]
    assert "move it out of the way" in errors[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["0", taken])


def test_a_model_in_several_jobs_keeps_its_highest_numbered_job(tmp_path: Path):
    """Bug caught: "the last job" was the last by name, and Hydra's job 10 sorts before job 2,
    so a model answered in jobs 2 and 10 of a sweep kept job 2's accuracy."""
    from audit.cli.dif_compare import gather

    for job, accuracy in ((2, 0.3), (10, 0.6), (1, 0.1)):
        (tmp_path / str(job)).mkdir()
        pl.DataFrame({"model_name": ["a"], "dataset": ["all"], "accuracy": [accuracy],
                      "accuracy_low": [0.0], "accuracy_high": [1.0], "mean_dif_real": [0.5]}
                     ).write_csv(tmp_path / str(job) / "dif_models.csv")
    table = gather(tmp_path)
    assert table["job"].to_list() == ["10"] and table["accuracy"].to_list() == [0.6]


@pytest.mark.parametrize("table, message", [
    ({"model": ["a"], "dataset": ["all"], "acc": [0.2]}, "lacks the column(s) 'model_name'"),
    # Bad-input review 2026-12-06: a header alone gave empty tables, an empty figure and
    # matplotlib's "No artists with labels" warning, exit 0.
    ({"model_name": [], "dataset": [], "accuracy": [], "accuracy_low": [], "accuracy_high": [],
      "mean_dif_real": []}, "holds a header and no model: rerun that job"),
    ({"model_name": ["a"], "dataset": ["all"], "accuracy": ["high"], "accuracy_low": [0.1],
      "accuracy_high": [0.3], "mean_dif_real": [0.5]}, "accuracy"),
])
def test_compare_refuses_a_jobs_table_it_cannot_read_before_writing(tmp_path: Path, caplog,
                                                                    table, message):
    """Bug caught (bad-input review 2026-12-02): a job's dif_models.csv with a column missing
    or a word where a number goes was a polars traceback (exit 1), the second after the
    command had written two of its three outputs. One line naming the file, exit 2, nothing
    written."""
    from audit.cli.dif_compare import main

    (tmp_path / "0").mkdir()
    pl.DataFrame(table).write_csv(tmp_path / "0" / "dif_models.csv")
    assert main([str(tmp_path)]) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "0/dif_models.csv" in errors[0] and message in errors[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["0"]


def test_the_documented_compare_command_still_runs(tmp_path: Path):
    """docs/methods/dif.md spells it `python -m audit.methods.dif.compare`; the code is in audit.cli."""
    done = subprocess.run([sys.executable, "-m", "audit.methods.dif.compare", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no dif_models.csv under" in done.stderr, done.stderr[-2000:]
    # Bad-input review 2026-12-04: a mistyped folder was "no dif_models.csv under nope".
    done = subprocess.run([sys.executable, "-m", "audit.methods.dif.compare",
                           str(tmp_path / "nope")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and f"{tmp_path / 'nope'} does not exist: give the sweep's " \
        "directory" in done.stderr, done.stderr[-2000:]
