"""`python -m audit.plan`: settings refused or said before any simulation, and each attribute's
false-alarm rate its own (plan review 2026-12-02)."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

import audit.cli.plan as plan_cli
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
