"""`python -m audit.plan`: settings refused or said before any simulation, and each attribute's
false-alarm rate its own (plan review 2026-12-02)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

import audit.cli.plan as plan_cli
import audit.plan as plan_entry
from audit.config import CONF_DIR
from audit.errors import AuditError
from audit.methods.configs import to_audit_config
from audit.methods.rasch.power import summarise_option


def _config(tmp_path: Path, *overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=[
            *overrides, f"paths.output_dir={tmp_path / 'out'}"]))


@pytest.fixture
def no_simulation(monkeypatch):
    """Any simulation is a failure of the test: these settings are refused or said before."""
    def simulated(*_, **__):
        raise AssertionError("simulated before the settings were checked")

    monkeypatch.setattr(plan_cli, "simulate_power", simulated)


@pytest.mark.parametrize("overrides, message", [
    (['personas.generators=[baseline,"null"]'],
     r"the design's personas hold 0 level\(s\) of race \(none\), and a gap is planted between "
     r"two: add explicit \(or name\) personas to personas.generators"),
    (["plan.simulations=4", "plan.min_simulations=8"],
     r"plan.simulations=4 is below plan.min_simulations=8"),
    (["plan.gap=1e6"], r"plan.gap=1e\+06 logits is an odds ratio above 22,026: plan a gap of "
                       r"at most 10 logits"),
    (["plan.gap=-60", "plan.gap_unit=pp"], r"a gap of -60 percentage points .* leaves the "
                                           r"0-100% range \(at most \d+ points down\)"),
    # Bad-input review 2026-12-05: no hint for a mistyped level.
    (["plan.levels=[Blak,White]"], r"plan.levels=\['Blak', 'White'\] must name two different "
                                   r"levels of race present in the personas: Asian, Black, "
                                   r"Hispanic, White \(did you mean 'Black'\?\)$"),
])
def test_settings_no_plan_can_honour_are_refused_before_any_simulation(
        tmp_path, no_simulation, overrides, message):
    """Bugs caught: a design without explicit personas was "plan.levels=[] must name two levels
    of race present in the personas: " (an empty list); simulations below min_simulations ran
    without a word; a 1e6-logit gap ran in full; a negative gap in pp was "leaves the 0-100%
    range; lower plan.gap" (lowering it made it worse), under the open progress bar."""
    with pytest.raises(AuditError, match=message) as error:
        plan_cli.run_plan(_config(tmp_path, *overrides), tmp_path / "out")
    assert "\n" not in str(error.value)


def test_a_signed_gap_in_points_is_planned(tmp_path, no_simulation, monkeypatch):
    """A negative gap in percentage points puts the planted level below the other: accepted, as
    a negative gap in logits always was."""
    seen = {}

    def simulated(prompts, plan, *_, **__):
        seen["gap"] = plan.gap
        raise AssertionError("stop")

    monkeypatch.setattr(plan_cli, "simulate_power", simulated)
    with pytest.raises(AssertionError, match="stop"):
        plan_cli.run_plan(_config(tmp_path, "plan.gap=-10", "plan.gap_unit=pp"), tmp_path / "out")
    assert seen["gap"] == -10


def test_a_design_replicates_the_plan_does_not_size_is_said(tmp_path, monkeypatch, caplog):
    """Bug caught: `audit.plan design.replicates=3` sized 1, 2 and 4 replicates without a word,
    where `python -m audit design.replicates=3` asks 3."""
    monkeypatch.setattr(plan_cli, "simulate_power", lambda *_, **__: (_ for _ in ()).throw(
        AssertionError("stop")))
    with caplog.at_level(logging.WARNING), pytest.raises(AssertionError, match="stop"):
        plan_cli.run_plan(_config(tmp_path, "design.replicates=3"), tmp_path / "out")
    assert "design.replicates=3 is not among plan.replicates=[1, 2, 4]" in caplog.text


def test_each_attributes_false_alarm_rate_is_its_own():
    """Bug caught: p_false_fail was one rate for the model, shown on every attribute's row: a
    gender contrast failing in one of two simulations read as race's 0.5 too."""
    runs = pl.DataFrame({
        "model_name": ["m"] * 4, "simulation": [0, 0, 1, 1],
        "attribute": ["gender", "race", "gender", "race"], "mean": [0.1, 1.0, 0.0, 1.2],
        "decision": ["different", "different", "undecided", "different"],
        "width": [2.0, 3.0, 2.0, 3.0], "truth": [0.0, 1.0, 0.0, 1.0],
        "planted": [False, True, False, True], "ci_fails": [True, True, False, True],
        "prompts_asked": [252] * 4})
    table = summarise_option(runs, 1, 1, 21, 1.0, 1.0, ("Black", "White"))
    rates = dict(zip(table["attribute"], table["p_false_fail"]))
    assert rates == {"gender": 0.5, "race": 0.0}
    race = table.filter(pl.col("attribute") == "race").row(0, named=True)
    assert (race["level_a"], race["level_b"]) == ("Black", "White")


def test_a_design_warning_is_said_once_not_once_a_simulated_audit(tmp_path, monkeypatch,
                                                                   caplog):
    """Bug caught: `personas=smoke` printed the same aliasing warning once a simulated fit (8
    lines in 8 simulations, up to 1,100 in a default plan)."""
    from audit.methods.rasch.irt import balance

    def simulated(*_, **__):
        for _ in range(3):
            logging.getLogger(balance.__name__).warning("every gender level goes with one race")
        raise AssertionError("stop")

    monkeypatch.setattr(plan_cli, "simulate_power", simulated)
    with caplog.at_level(logging.WARNING), pytest.raises(AssertionError, match="stop"):
        plan_cli.run_plan(_config(tmp_path), tmp_path / "out")
    assert caplog.text.count("every gender level goes with one race") == 1


def test_a_design_all_in_the_store_keeps_its_cost_at_one_multiple():
    """Catches scaled_cost pricing no extra prompts at the NaN price a prompt of a design with
    nothing to send (`if extra:` dropped): such a size cost NaN minutes and tokens, not 0."""
    prompts = pl.DataFrame({"race": ["A", "B", None, None]})
    cost = {"prompts": 4.0, "to_send": 0.0, "prompt_tokens": 0.0, "max_completion_tokens": 0.0,
            "minutes": 0.0}
    assert plan_cli.scaled_cost(cost, prompts, "race", 1) == cost
    doubled = plan_cli.scaled_cost(cost, prompts, "race", 2)
    assert doubled["to_send"] == 2 and math.isnan(doubled["minutes"])


def test_the_design_cost_is_the_preflight_estimate_in_minutes(tmp_path, monkeypatch):
    """Catches design_cost passing the preflight's seconds off as minutes, or sizing another
    number of replicates than asked."""
    sized = {}

    def design(cfg):
        sized["replicates"] = cfg.design.replicates
        return pl.DataFrame()

    monkeypatch.setattr(plan_cli, "design_stage", design)
    monkeypatch.setattr(plan_cli, "planned_requests", lambda cfg, prompts: ([], {}))
    monkeypatch.setattr(plan_cli, "estimate", lambda planned, store, concurrency: {
        "prompts": 10, "to_send": 4, "prompt_tokens": 400, "max_completion_tokens": 80,
        "seconds": 90.0, "requests": 4})
    cost = plan_cli.design_cost(_config(tmp_path), 3, store=None)
    assert cost == {"prompts": 10, "to_send": 4, "prompt_tokens": 400,
                    "max_completion_tokens": 80, "minutes": 1.5}
    assert sized["replicates"] == 3


def test_a_plan_from_a_past_run_draws_from_its_components(tmp_path, monkeypatch):
    """Catches planning_components ignoring plan.from_run (the plan.* figures used whatever
    run was named)."""
    monkeypatch.setattr(plan_cli, "resolved_source", lambda source, settings: f"runs/{source}")
    monkeypatch.setattr(plan_cli, "run_components",
                        lambda source, *args, **kwargs: ("measured", source, kwargs["count"]))
    cfg = _config(tmp_path, "plan.from_run=abc123", "plan.simulations=50")
    assert plan_cli.planning_components(cfg) == ("measured", "runs/abc123", 50)


def test_the_plan_rounds_its_counts_but_not_its_minutes(tmp_path, monkeypatch):
    """Catches the minutes rounded and cast to whole numbers with the counts (1.25 minutes
    shown as 1) in plan_table."""
    cfg = _config(tmp_path)

    def simulated(prompts, plan, *_, **__):
        return pl.DataFrame([{"model_name": "m", "attribute": "race", "replicates": replicates,
                              "persona_multiple": multiple} for replicates in plan.replicates
                             for multiple in plan.persona_multiples])

    monkeypatch.setattr(plan_cli, "simulate_power", simulated)
    monkeypatch.setattr(plan_cli, "seconds_per_prompt", lambda *_: 1.0)
    monkeypatch.setattr(plan_cli, "design_cost", lambda cfg, replicates, store: {
        "prompts": 10.4, "to_send": 10.4, "prompt_tokens": 400.2,
        "max_completion_tokens": 80.0, "minutes": 1.25})
    table = plan_cli.plan_table(cfg, store=None)
    assert table.schema["prompts"] == pl.Int64 and table["prompts"][0] == 10
    assert table.schema["minutes"] == pl.Float64 and table["minutes"][0] == 1.25


def test_planning_in_a_fresh_project_creates_no_response_store(tmp_path, monkeypatch):
    """Catches run_plan opening paths.response_store whether or not it exists: a plan in a fresh
    project left an empty store there (planning reads latencies; it sends nothing)."""
    store = tmp_path / "responses.sqlite3"
    monkeypatch.setattr(plan_cli, "simulate_power", lambda *_, **__: (_ for _ in ()).throw(
        AssertionError("stop")))
    with pytest.raises(AssertionError, match="stop"):
        plan_cli.run_plan(_config(tmp_path, f"paths.response_store={store}"), tmp_path / "out")
    assert not store.exists()


def test_an_output_folder_or_store_that_cannot_be_used_is_refused_before_any_simulation(
        tmp_path, no_simulation):
    """Bugs caught (bad-input review 2026-12-06): paths.output_dir naming a file was a
    FileExistsError traceback, and a store that is no database a sqlite3 one, each after the
    minutes of simulation were spent; an empty file given as the store got the store's tables
    written into it, though a plan sends nothing."""
    (tmp_path / "afile.txt").write_text("x")
    with pytest.raises(AuditError, match=r"^paths.output_dir=.*afile.txt is a file, not a "
                                         r"folder"):
        plan_cli.run_plan(_config(tmp_path), tmp_path / "afile.txt")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database at all, just bytes")
    with pytest.raises(AuditError, match=r"garbage.sqlite3 is not an SQLite database, not a "
                                         r"response store"):
        plan_cli.run_plan(_config(tmp_path, f"paths.response_store={garbage}"), tmp_path / "o")
    with pytest.raises(AuditError, match=r"is a folder, not a response store"):
        plan_cli.run_plan(_config(tmp_path, f"paths.response_store={tmp_path}"), tmp_path / "o")
    empty = tmp_path / "empty.sqlite3"
    empty.touch()
    with pytest.raises(AssertionError, match="simulated before"):
        plan_cli.run_plan(_config(tmp_path, f"paths.response_store={empty}"), tmp_path / "o")
    assert empty.stat().st_size == 0


def _composed(tmp_path: Path, *overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=[*overrides, f"paths.output_dir={tmp_path / 'out'}"])


def test_the_command_prints_a_gap_in_points_and_exits_2_on_a_refusal(tmp_path, monkeypatch,
                                                                     caplog):
    """Catches the command printing a gap in points as logits (print_plan's pp left out), and
    a refusal ending with another exit status than 2, every command's status for bad input."""
    printed = {}
    monkeypatch.setattr(plan_cli, "run_plan", lambda cfg, output_dir: pl.DataFrame())
    monkeypatch.setattr(plan_cli, "print_plan",
                        lambda table, path, hdi, adaptive, pp=None: printed.update(pp=pp))
    plan_entry.app(_composed(tmp_path, "plan.gap=10", "plan.gap_unit=pp"))
    assert printed["pp"] == 10
    plan_entry.app(_composed(tmp_path, "plan.gap=0.5"))
    assert printed["pp"] is None

    def refused(cfg, output_dir):
        raise AuditError("plan.levels=[Blak, White] must name two levels")

    monkeypatch.setattr(plan_cli, "run_plan", refused)
    with pytest.raises(SystemExit) as exited:
        plan_entry.app(_composed(tmp_path))
    assert exited.value.code == 2 and "must name two levels" in caplog.text
