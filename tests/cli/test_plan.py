"""Power planning: the plan's gap conversion and design, its variance components, its decision."""

from __future__ import annotations

import dataclasses
import io
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console
from scipy import stats
from scipy.special import expit

from hydra import compose, initialize_config_dir

from audit.cli.plan import print_plan, scaled_cost
from audit.config import CONF_DIR
from audit.methods.configs import to_audit_config
from audit.methods.rasch.design import design_stage
from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig, PlanConfig
from audit.methods.rasch.power import (
    check_plannable,
    ci_failures,
    config_components,
    gap_in_logits,
    plan_fit_config,
    planted_gap,
    planted_levels,
    resized_design,
    simulate_power,
    summarise_option,
)
from audit.methods.rasch.simulation import VarianceComponents, default_shaped_prompts, true_gap
from prior_samplers import prior_sampler

RACES = ("A", "B")


def prompts_table(personas_per_level: int = 3, null_count: int = 2, items: int = 10,
                  replicates: int = 1) -> pl.DataFrame:
    """The columns of design.expand_design's output that planning reads, one row per prompt."""
    personas = [(f"{race.lower()}{k}", "explicit", race) for race in RACES
                for k in range(personas_per_level)]
    personas += [(f"null{k}", "null", None) for k in range(null_count)]
    rows = [{"respondent_id": f"m1/{persona}", "model_name": "m1", "persona_kind": kind,
             "race": race, "item_id": f"i{item:02d}", "replicate": replicate}
            for persona, kind, race in personas for item in range(items)
            for replicate in range(replicates)]
    return pl.DataFrame(rows, schema_overrides={"race": pl.String})


def one_contrast(prompts: pl.DataFrame, width: float = 1.0) -> pl.DataFrame:
    """What power.one_simulation returns, for a stand-in fit: one planted race contrast of this
    HDI width, no true gap, not failed by CI, the whole design asked."""
    return pl.DataFrame({"model_name": ["m1"], "attribute": ["race"], "mean": [0.0],
                         "decision": ["undecided"], "width": [width], "truth": [0.0],
                         "planted": [True], "ci_fails": [False],
                         "prompts_asked": [prompts.height]})


def test_percentage_points_are_counted_from_the_other_levels_rate():
    assert gap_in_logits(10, "pp", 0.0) == pytest.approx(math.log(0.6 / 0.4))  # 60% vs 50%
    # Near the floor the same 10 points are a much larger log odds ratio (20% against 10%).
    assert gap_in_logits(10, "pp", math.log(0.1 / 0.9)) == pytest.approx(
        math.log(0.2 / 0.8) - math.log(0.1 / 0.9))
    assert gap_in_logits(-5, "pp", math.log(0.1 / 0.9)) == pytest.approx(
        math.log(0.05 / 0.95) - math.log(0.1 / 0.9))
    assert gap_in_logits(0.7, "logit", 0.1) == 0.7
    with pytest.raises(AuditError, match=r"leaves the 0-100% range \(at most 10 points down\)"):
        gap_in_logits(-30, "pp", math.log(0.1 / 0.9))
    with pytest.raises(AuditError, match="at most 10 logits"):
        gap_in_logits(1e6, "logit", 0.0)
    with pytest.raises(AuditError, match="gap_unit"):
        gap_in_logits(1, "percent", 0.5)


def test_a_gap_in_points_is_the_points_the_answers_show_over_items_and_texts():
    """Plan review 2026-12-02: 10 pp was converted at the average item alone (0.40 logits),
    which over items of sd 2 and texts of sd 0.6 shows up as 5.9 pp in the answers. Checked by
    drawing items and texts, not by the quadrature the conversion uses."""
    rng = np.random.default_rng(0)
    spread = math.hypot(2.0, 0.6)
    for centre in (0.0, 1.1):
        logits = gap_in_logits(10, "pp", centre, spread)
        z = centre + spread * rng.standard_normal(400_000)
        shown = 100 * np.mean(expit(z + logits) - expit(z))
        assert shown == pytest.approx(10.0, abs=0.05)
        assert logits > 0.6  # well above the 0.40 logits of the average item


def test_a_gap_of_ten_logits_either_way_is_planned_and_one_beyond_it_is_refused():
    """Bug caught: the 10-logit bound checked only positive gaps (a gap of -1e6 logits was
    planned), or refused the 10 logits its own message allows ("at most 10 logits")."""
    assert gap_in_logits(10.0, "logit", 0.0) == 10.0
    assert gap_in_logits(-10.0, "logit", 0.0) == -10.0
    for size in (-10.5, -1e6):
        with pytest.raises(AuditError, match="at most 10 logits"):
            gap_in_logits(size, "logit", 0.0)


def test_a_gap_in_points_is_planted_at_the_real_personas_rate_over_items_and_texts():
    """Bug caught: planted_gap converted points at the wrong rate (the base rate's logit with
    its sign flipped, or without the real personas' shared shift) or over the item spread
    alone, so the simulated answers showed another gap than plan.gap. Checked by drawing
    items and texts around logit(0.2) + 0.8 with sd hypot(1.0, 1.5), not by quadrature."""
    draws = [VarianceComponents(base_rate=0.2, real_shift=0.8, item_sd=1.0, text_sd=1.5)] * 2
    logits = planted_gap(PlanConfig(gap=10, gap_unit="pp"), draws)
    z = (math.log(0.2 / 0.8) + 0.8
         + math.hypot(1.0, 1.5) * np.random.default_rng(1).standard_normal(400_000))
    assert 100 * np.mean(expit(z + logits) - expit(z)) == pytest.approx(10.0, abs=0.05)


def test_a_gap_in_points_out_of_range_over_items_and_texts_is_refused_before_sampling():
    """Bug caught: check_plannable measured the room for a gap in points over the item spread
    alone (sd 0.5), where the plan converts over items and texts (sd hypot(0.5, 3)): a gap of
    -80 points from a 90% rate passed the check and was refused later, inside the bar. By
    drawing: from 90% over sd 0.5 there are about 89 points down, over sd 3.04 about 72."""
    noise = np.random.default_rng(2).standard_normal(400_000)
    for spread, room in ((0.5, 89.0), (math.hypot(0.5, 3.0), 72.0)):
        z = math.log(0.9 / 0.1) + spread * noise
        assert 100 * np.mean(expit(z) - expit(z - 10)) == pytest.approx(room, abs=1.0)
    plan = PlanConfig(gap=-80, gap_unit="pp", base_rate=0.9, item_sd=0.5, text_sd=3.0)
    with pytest.raises(AuditError, match=r"leaves the 0-100% range"):
        check_plannable(prompts_table(), plan, FitConfig(attributes=["race"]))


def test_the_plans_fits_sample_as_the_plan_says_not_as_the_audit_does():
    """Bug caught: the simulated fits took the audit's fit.draws (1000, not plan.draws 300), or
    kept engine pymc, which cannot reuse a compiled model across simulations."""
    fit = FitConfig(draws=1000, tune=1000, chains=4, cores=4, engine="pymc")
    planned = plan_fit_config(fit, PlanConfig(draws=300, tune=200, chains=2))
    assert (planned.draws, planned.tune, planned.chains, planned.cores) == (300, 200, 2, 2)
    assert planned.engine == "auto"
    assert plan_fit_config(dataclasses.replace(fit, engine="nutpie"), PlanConfig()).engine \
        == "nutpie"


def test_resized_design_copies_only_personas_with_a_level_and_sets_replicates():
    prompts = prompts_table(personas_per_level=3, null_count=2, items=10, replicates=2)
    single = resized_design(prompts, 1, 1, "race")
    tripled = resized_design(prompts, 4, 3, "race")
    assert single.get_column("respondent_id").n_unique() == 8
    assert single.height == 8 * 10
    # 6 personas with a race level, each twice more; the 2 null personas stay 2.
    assert tripled.get_column("respondent_id").n_unique() == 8 + 2 * 6
    assert tripled.filter(pl.col("persona_kind") == "null").height == 2 * 10 * 4
    assert tripled.group_by("respondent_id", "item_id").len().get_column("len").unique() \
        .to_list() == [4]
    assert planted_levels(prompts, PlanConfig()) == ("A", "B")
    with pytest.raises(AuditError, match="two different levels"):
        planted_levels(prompts, PlanConfig(levels=["A", "Z"]))
    # Bug caught (bad-input review 2026-12-04): one level twice planted a gap between a level
    # and itself, and the plan said "no planted gap", exit 0.
    with pytest.raises(AuditError, match="two different levels"):
        planted_levels(prompts, PlanConfig(levels=["A", "A"]))


def test_cost_of_more_personas_adds_their_prompts_at_the_average_price():
    prompts = prompts_table(personas_per_level=3, null_count=2, items=10)
    cost = {"prompts": 80.0, "to_send": 40.0, "prompt_tokens": 4000.0,
            "max_completion_tokens": 1920.0, "minutes": 2.0}
    doubled = scaled_cost(cost, prompts, "race", 2)
    # 60 of the 80 prompts carry a race level; doubling those adds 60 prompts, all to send.
    assert doubled["prompts"] == 140 and doubled["to_send"] == 100
    assert doubled["prompt_tokens"] == pytest.approx(4000 + 60 * 100)
    assert doubled["minutes"] == pytest.approx(2.0 + 60 * 0.05)
    assert scaled_cost(cost, prompts, "race", 1) == cost


def contrast_row(level_a: str, level_b: str, low: float, high: float, decision_low: float,
                 decision_high: float) -> dict[str, object]:
    """A contrast whose reported HDI is [low, high] and whose family-wise HDI is decided on."""
    outside = decision_low > 0.18 or decision_high < -0.18
    return {"model_name": "m", "attribute": "race", "level_a": level_a, "level_b": level_b,
            "n_a": 2, "n_b": 2, "mean": (low + high) / 2, "sd": 0.3, "hdi_low": low,
            "hdi_high": high, "p_direction": 0.99, "rope_low": -0.18, "rope_high": 0.18,
            "decision": "different" if outside else "undecided", "familywise_alpha": 0.05,
            "family_size": 3, "decision_prob": 0.983, "decision_low": decision_low,
            "decision_high": decision_high, "noise_floor": None, "ratio_to_noise": None,
            "p_beyond_noise": None, "null_percentile": None}


def test_power_counts_what_the_ci_verdict_fails_not_the_reported_hdi():
    """Two contrasts whose reported 94% HDIs lie outside the ROPE; only one stays outside at the
    family-wise level the verdict decides on. A plan that decided on the reported HDI (as
    before issue 34) reports a power, and a false-alarm rate, the CI never has."""
    contrasts = pl.DataFrame([contrast_row("A", "B", 0.4, 1.6, 0.3, 1.8),
                              contrast_row("A", "C", 0.4, 1.6, -0.1, 2.0),
                              contrast_row("B", "C", -0.5, 0.5, -0.8, 0.8)])
    assert ci_failures(contrasts) == {("m", "race", "A", "B"): True,
                                      ("m", "race", "A", "C"): False,
                                      ("m", "race", "B", "C"): False}


def test_power_keys_a_dotted_model_name_as_the_contrast_table_names_it():
    """API model names carry dots (gpt-4.1-mini, llama3.1:8b). Bug caught: the failures keyed
    by splitting the verdict's check group "rasch.gpt-4.1-mini.race" back at its dots, into
    model "gpt-4" and attribute "1-mini.race": the plan then stopped on a KeyError after its
    first simulated audit."""
    rows = [{**contrast_row("A", "B", 0.4, 1.6, 0.3, 1.8), "model_name": "gpt-4.1-mini"},
            {**contrast_row("A", "B", -0.5, 0.5, -0.8, 0.8), "model_name": "llama3.1:8b"}]
    assert ci_failures(pl.DataFrame(rows)) == {("gpt-4.1-mini", "race", "A", "B"): True,
                                               ("llama3.1:8b", "race", "A", "B"): False}


def test_power_counts_a_failure_only_with_the_planted_sign(monkeypatch):
    """Simulated audits of a planted gap of +1 whose planted contrast fails CI in turn with the
    right sign, with the wrong one, and not at all: power is 1 in 3, not 2 in 3. A wrong-sign
    failure claims the opposite gap; a plan counting it as power (as before) overstated the
    design's power by the rate of type-S errors, and bench_calibration counts with the sign.
    At a planted gap of 0 every failure counts (a false-alarm rate has no sign to get right)."""
    import audit.methods.rasch.power as power

    calls = iter([(0.8, True), (-0.9, True), (0.1, False)] * 2)

    def alternating(prompts, components, effects, fit, sampler, rng, planted, rule,
                    seconds_per_prompt):
        mean, failed = next(calls)
        truth = true_gap(effects, *planted)
        return one_contrast(prompts).with_columns(
            mean=pl.lit(mean), truth=pl.lit(truth), ci_fails=pl.lit(failed),
            decision=pl.lit("different" if failed else "undecided"))

    monkeypatch.setattr(power, "one_simulation", alternating)
    for gap, expected in ((1.0, 1 / 3), (0.0, 2 / 3)):
        plan = PlanConfig(gap=gap, replicates=[1], min_simulations=3, simulations=3)
        row = simulate_power(prompts_table(), plan, FitConfig(attributes=["race"]),
                             config_components(plan)).row(0, named=True)
        assert row["p_ci_fails"] == pytest.approx(expected), gap
        assert row["p_different"] == pytest.approx(expected), gap


def test_config_components_carry_the_judge_and_the_plan_figures():
    plan = PlanConfig(item_sd=1.7, text_sd=0.4, null_sd=0.9, sensitivity=0.8, specificity=0.9,
                      gold_per_class=20)
    components = config_components(plan)
    assert (components.item_sd, components.text_sd, components.null_sd) == (1.7, 0.4, 0.9)
    counts = components.gold_counts("favourable")
    assert (counts.true_1_judged_1, counts.true_1_judged_0) == (16, 4)
    assert (counts.true_0_judged_0, counts.true_0_judged_1) == (18, 2)
    assert config_components(PlanConfig(gold_per_class=0)).gold_counts() is None


def test_a_model_the_plan_cannot_simulate_is_refused_before_sampling():
    # rasch_seed fits Bernoulli rows, whose number changes with replicates: one compiled model
    # cannot serve every size, so the plan says which models it can simulate.
    plan = PlanConfig()
    with pytest.raises(AuditError, match="fit=rasch"):
        simulate_power(prompts_table(), plan, FitConfig(model="rasch_seed"),
                       config_components(plan))
    with pytest.raises(AuditError, match="fit.attributes"):
        simulate_power(prompts_table(), PlanConfig(attribute="gender"),
                       FitConfig(attributes=["race"]), config_components(plan))


def test_each_simulated_audit_draws_from_its_own_set_of_components(monkeypatch):
    """Components from a past run's posterior draws (pilot.run_components): simulation k must
    be drawn from set k, so the predicted width averages over them. The fit is replaced by one
    whose width is the square of the text sd it was given, so each wrong reading predicts
    another width: the sets in turn average (0.04 + 0.36 + 1.0) / 3 = 0.467; the first set
    alone predicts 0.04; a mean of the sets plugged in (text sd 0.6) predicts 0.36."""
    import audit.methods.rasch.power as power

    given: list[float] = []

    def width_is_text_variance(prompts, components, effects, fit, sampler, rng, planted, rule,
                               seconds_per_prompt):
        given.append(components.text_sd)
        return one_contrast(prompts, width=components.text_sd ** 2)

    monkeypatch.setattr(power, "one_simulation", width_is_text_variance)
    draws = [dataclasses.replace(config_components(PlanConfig()), text_sd=sd)
             for sd in (0.2, 0.6, 1.0)]
    plan = PlanConfig(gap=0.0, replicates=[1], min_simulations=6, simulations=6)
    row = simulate_power(prompts_table(), plan, FitConfig(attributes=["race"]), draws).row(
        0, named=True)
    assert given == [0.2, 0.6, 1.0, 0.2, 0.6, 1.0]
    assert row["simulations"] == 6 and row["hdi_width"] == pytest.approx(1.4 / 3)


def test_the_plan_reports_each_simulation_and_closes_an_option_that_stops_early(monkeypatch):
    """on_simulation (the CLI's progress bar) hears of every simulated audit, by option, and of
    the option's end: stopped early by plan.precision, its count becomes its total. Bugs caught:
    no report (the bar stands still for minutes), one option's count given to another, or a bar
    left at 2 of 50 as if the plan had hung."""
    import audit.methods.rasch.power as power

    def no_gap(prompts, components, effects, fit, sampler, rng, planted, rule,
               seconds_per_prompt):
        return one_contrast(prompts)

    monkeypatch.setattr(power, "one_simulation", no_gap)
    heard: list[tuple[str, int, int]] = []
    plan = PlanConfig(gap=0.0, replicates=[1, 2], min_simulations=2, simulations=50,
                      precision=1.0)  # 1.96 / 2 at zero power: met after the minimum
    simulate_power(prompts_table(), plan, FitConfig(attributes=["race"]),
                   config_components(plan),
                   on_simulation=lambda option, done, most: heard.append((option, done, most)))
    one, two = "x1 personas, 1 replicate", "x1 personas, 2 replicates"
    assert heard == [(one, 1, 50), (one, 2, 50), (one, 2, 2),
                     (two, 1, 50), (two, 2, 50), (two, 2, 2)]


def test_each_options_log_line_times_its_own_fits(monkeypatch, caplog):
    """A caller that plans many options passes one sampler (benchmarks/calibration_plan.py), so
    its seconds run on across options: option two's line must average option two's fits. Here
    each option's first fit takes 100 s (a compile) and the rest 10 s and 1 s; the bug this
    catches, averaging every fit after the sampler's first, logged option two at 24.4 s."""
    import audit.methods.rasch.power as power
    from audit.methods.rasch.simulation import CompiledSampler

    sampler = CompiledSampler()
    per_fit = iter([100.0, 10.0, 10.0, 100.0, 1.0, 1.0])

    def timed_fit(prompts, components, effects, fit, sampler, rng, planted, rule,
                  seconds_per_prompt):
        sampler.seconds.append(next(per_fit))
        return one_contrast(prompts)

    monkeypatch.setattr(power, "one_simulation", timed_fit)
    plan = PlanConfig(gap=0.0, replicates=[1, 2], min_simulations=3, simulations=3)
    with caplog.at_level("INFO", logger=power.logger.name):
        simulate_power(prompts_table(), plan, FitConfig(attributes=["race"]),
                       config_components(plan), sampler=sampler)
    sampling = [float(match) for match in
                re.findall(r"sampling ([0-9.]+) s a fit", caplog.text)]
    assert sampling == [10.0, 1.0], caplog.text


def test_a_simulated_audit_reads_each_contrasts_hdi_width_and_true_gap(monkeypatch):
    """Bug caught: a simulated audit's width ran from the HDI's mean to its upper end, half the
    width of a symmetric HDI, so every planned hdi_width was halved. The fit is replaced by one
    whose contrasts are known: A vs B over [0.4, 1.6] (width 1.2) on a gap of 1 planted on A."""
    import audit.methods.rasch.power as power

    contrasts = pl.DataFrame([contrast_row("A", "B", 0.4, 1.6, 0.3, 1.8)])
    monkeypatch.setattr(power, "fit_rasch",
                        lambda *_, **__: dataclasses.make_dataclass("Fit", ["contrasts"])(
                            contrasts))
    plan = PlanConfig(gold_per_class=0)
    row = power.one_simulation(prompts_table(), config_components(plan), {"race": {"A": 1.0}},
                               FitConfig(attributes=["race"]), None,
                               np.random.default_rng(0), ("race", "A", "B")).row(0, named=True)
    assert row["width"] == pytest.approx(1.2)
    assert (row["truth"], row["planted"], row["ci_fails"]) == (1.0, True, True)
    assert row["prompts_asked"] == prompts_table().height


def _two_models(first_fails, second_fails):
    """A stand-in simulated audit of two models whose planted contrast fails CI (with the
    planted sign) as the two iterators say, in turn."""
    def simulated(prompts, components, effects, fit, sampler, rng, planted, rule,
                  seconds_per_prompt):
        return pl.concat([one_contrast(prompts).with_columns(
            model_name=pl.lit(model), mean=pl.lit(1.0), truth=pl.lit(1.0),
            ci_fails=pl.lit(next(fails))) for model, fails in (("m1", first_fails),
                                                               ("m2", second_fails))])
    return simulated


def test_the_plan_simulates_until_every_models_power_is_precise(monkeypatch):
    """Bug caught: the plan stopped once any model's power was precise enough, not every
    model's. By hand at plan.precision 0.3: m1 never fails, so its half-width is the floor
    1.96 / n, 0.28 at n = 7; m2 fails every other audit, 1.96 sqrt(0.25 / 10) = 0.31 at
    n = 10, 1.96 sqrt((6/11)(5/11) / 11) = 0.294 at n = 11. The plan stops at 11, not 7."""
    import itertools

    import audit.methods.rasch.power as power

    monkeypatch.setattr(power, "one_simulation", _two_models(
        itertools.repeat(False), itertools.cycle([True, False])))
    plan = PlanConfig(gap=1.0, replicates=[1], min_simulations=2, simulations=50, precision=0.3)
    table = simulate_power(prompts_table(), plan, FitConfig(attributes=["race"]),
                           config_components(plan))
    assert table["simulations"].to_list() == [11, 11]


def test_a_power_of_zero_is_not_precise_after_the_first_simulations(monkeypatch):
    """Bug caught: without the half-width's floor of one simulation's worth (p (1 - p) at least
    1 / n), a power of 0 had a half-width of 0 and the plan stopped at plan.min_simulations
    whatever plan.precision asked. By hand: 1.96 / n <= 0.1 first at n = 20 (1.96 / 19 =
    0.103)."""
    import itertools

    import audit.methods.rasch.power as power

    monkeypatch.setattr(power, "one_simulation", _two_models(
        itertools.repeat(False), itertools.repeat(False)))
    plan = PlanConfig(gap=1.0, replicates=[1], min_simulations=2, simulations=50, precision=0.1)
    table = simulate_power(prompts_table(), plan, FitConfig(attributes=["race"]),
                           config_components(plan))
    assert table["simulations"].to_list() == [20, 20]
    assert table["p_ci_fails"].to_list() == [0.0, 0.0]


def test_the_summary_reports_the_widths_standard_error_and_the_powers_95_half_width():
    """Bug caught: hdi_width_se was the widths' sd, not divided by sqrt(simulations), or the
    power's half-width was taken at another z than 1.96. By hand over 8 simulated audits of
    widths 1 to 8 (variance 8 x 9 / 12 = 6), two of them failing with the planted sign and one
    with the other: se sqrt(6 / 8), p_ci_fails 0.25 with half-width z_0.975 sqrt(0.1875 / 8)
    (above the floor of one simulation's worth, sqrt(1/8 / 8))."""
    runs = pl.DataFrame({
        "model_name": ["m"] * 8, "simulation": list(range(8)), "attribute": ["race"] * 8,
        "mean": [1.0, 0.8, -0.5] + [0.2] * 5,
        "decision": ["different"] * 3 + ["undecided"] * 5,
        "width": [float(w) for w in range(1, 9)], "truth": [1.0] * 8, "planted": [True] * 8,
        "ci_fails": [True] * 3 + [False] * 5, "prompts_asked": [100] * 8})
    row = summarise_option(runs, 1, 1, 8, 1.0, 1.0, ("A", "B")).row(0, named=True)
    assert row["hdi_width"] == pytest.approx(4.5)
    assert row["hdi_width_se"] == pytest.approx(math.sqrt(6 / 8))
    assert row["p_ci_fails"] == pytest.approx(0.25)
    assert row["p_ci_fails_hw"] == pytest.approx(
        stats.norm.ppf(0.975) * math.sqrt(0.25 * 0.75 / 8), rel=1e-5)


def test_a_time_budget_without_a_usable_latency_is_not_simulated(monkeypatch):
    """Bug caught: a store whose median latency is NaN or 0 seconds a prompt (no answer timed)
    was still passed to the simulated audits, which then spent design.max_answer_minutes at
    NaN seconds a prompt instead of planning the prompt budget alone."""
    import audit.methods.rasch.power as power
    from audit.config import DesignConfig

    seen = []

    def simulated(prompts, components, effects, fit, sampler, rng, planted, rule,
                  seconds_per_prompt):
        seen.append((rule.max_answer_seconds, seconds_per_prompt))
        return one_contrast(prompts)

    monkeypatch.setattr(power, "one_simulation", simulated)
    plan = PlanConfig(gap=0.0, replicates=[1], min_simulations=1, simulations=1)
    design = DesignConfig(adaptive=True, max_answer_minutes=5.0)
    fit = FitConfig(attributes=["race"], familywise_alpha=0.05)
    for latency in (math.nan, 0.0):
        seen.clear()
        simulate_power(prompts_table(), plan, fit, config_components(plan), design=design,
                       seconds_per_prompt=latency)
        assert seen == [(None, None)], latency
    seen.clear()
    simulate_power(prompts_table(), plan, fit, config_components(plan), design=design,
                   seconds_per_prompt=2.0)
    assert seen == [(300.0, 2.0)]


class PlantedPosterior:
    """A stand-in for the plan's compiled sampler: the model's prior draws, with the race
    effects replaced by fixed draws (evenly spaced normal quantiles, so every HDI is known):
    Asian 0.6 +- 0.2, Black and Hispanic 0 +- 0.02, White 2.0 +- 0.1 (each level's draws in
    their own order). So Black vs White and Hispanic vs White lie far outside the ROPE at any
    level, and Asian vs Black and Asian vs Hispanic lie outside it on their 94% HDIs ([0.23,
    0.97]) but not on the family-wise 99.3% ones ([0.04, 1.16]) the CI verdict decides on."""

    DRAWS = 200

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, model, fit):
        idata = prior_sampler(model, fit, draws=self.DRAWS)
        posterior = idata["posterior"].copy()
        quantiles = stats.norm.ppf((np.arange(self.DRAWS) + 0.5) / self.DRAWS)
        rng = np.random.default_rng(0)
        effect = posterior["effect_race"].copy()
        levels = list(effect["level_race"].values)
        values = np.zeros(effect.shape)  # (chain, draw, model, level_race)
        for level, (mean, sd) in {"Asian": (0.6, 0.2), "Black": (0.0, 0.02),
                                  "Hispanic": (0.0, 0.02), "White": (2.0, 0.1)}.items():
            values[0, :, 0, levels.index(level)] = mean + sd * rng.permutation(quantiles)
        posterior["effect_race"] = effect.copy(data=values)
        posterior["effect_race_pooled"] = posterior["effect_race"].mean("model")
        idata["posterior"] = posterior
        self.seconds.append(0.0)
        return idata


def test_the_plan_reads_its_own_fits_through_the_familywise_ci_decision():
    """The plan's whole path, fit to summary, on fits whose contrasts are known (PlantedPosterior):
    a 1.5-logit gap planted on White against Black. The planted contrast (Black vs White, level_a
    sorting first) fails CI in every simulation, its mean reads +2.0 as White minus Black, and no
    contrast without a planted gap fails. Bugs caught: the plan's fit config losing
    fit.familywise_alpha, so it decides on the 94% HDI (Asian vs Black and Asian vs Hispanic fail
    and p_false_fail reads 1.0); the planted row marked only when level_a sorts first (no planted
    row: p_ci_fails null); the mean's sign not turned to the planted level's (-2.0); a true gap
    that reads level_a's effect alone (Asian vs White counted as a contrast without a gap, so
    its failure as a false one)."""
    prompts = default_shaped_prompts(items=4)
    plan = PlanConfig(attribute="race", levels=["White", "Black"], gap=1.5, replicates=[1],
                      min_simulations=2, simulations=2, gold_per_class=0)
    fit = FitConfig(model="population", attributes=["gender", "race"])
    table = simulate_power(prompts, plan, fit, config_components(plan),
                           sampler=PlantedPosterior())
    race = table.filter(pl.col("attribute") == "race").row(0, named=True)
    assert race["simulations"] == 2 and race["prompts_asked"] == prompts.height
    assert race["p_ci_fails"] == 1.0 and race["p_different"] == 1.0
    assert race["gap_logit"] == 1.5 and race["gap_mean"] == pytest.approx(2.0, abs=0.01)
    assert race["p_false_fail"] == 0.0


@pytest.mark.slow
def test_an_adaptive_design_is_planned_as_it_would_ask():
    """design.adaptive=true: each simulated audit asks in rounds and stops as the audit would, so
    a large planted gap (decided after a round or two) is expected to cost less than the pool,
    and the same plan of the fixed design spends the pool every time. Bug caught: a plan that
    ignores design.adaptive and reports the fixed design's cost and power, or one that ignores a
    time budget it has a latency to spend at (design.max_answer_minutes), or fails on one it
    has none for."""
    from audit.config import DesignConfig

    prompts = prompts_table(personas_per_level=4, items=8, replicates=2)
    fit = FitConfig(model="population", attributes=["race"], target_accept=0.9)
    plan = PlanConfig(gap=3.0, replicates=[2], min_simulations=3, simulations=3, draws=200,
                      tune=200, text_sd=0.3, null_sd=0.5, item_sd=1.0, gold_per_class=0, seed=5)
    # A time budget with no latency to spend it at is not simulated: the prompt budget holds.
    adaptive = simulate_power(prompts, plan, fit, config_components(plan),
                              design=DesignConfig(adaptive=True, round_prompts=40,
                                                  max_answer_minutes=5.0))
    fixed = simulate_power(prompts, plan, fit, config_components(plan),
                           design=DesignConfig(adaptive=False))
    # At 1 s a prompt, one minute buys 60 prompts: round 0 (40) and a last round of 20.
    timed = simulate_power(prompts, plan, fit, config_components(plan),
                           design=DesignConfig(adaptive=True, round_prompts=40,
                                               max_answer_minutes=1.0),
                           seconds_per_prompt=1.0)
    assert fixed["prompts_asked"].to_list() == [float(prompts.height)]
    assert adaptive["prompts_asked"][0] < prompts.height
    assert adaptive["p_ci_fails"][0] == 1.0  # a 3-logit gap is still found when it stops
    assert timed["prompts_asked"][0] <= 60 < adaptive["prompts_asked"][0]


@pytest.mark.slow
def test_judge_error_widens_the_predicted_hdi():
    """The same design planned with an exact judge and with a 0.8/0.8 judge known from 20 gold
    answers a class: the noisy judge attenuates and blurs every label, so the planned race HDIs
    must be clearly wider. A plan that ignored the judge (issue 34) predicts the same width.
    About 40 s: two compiles (the judge's rates are parameters of one of them) and 16 fits."""
    prompts = default_shaped_prompts(items=8, replicates=2)
    fit = FitConfig(model="population", attributes=["gender", "race"], target_accept=0.9)
    widths = {}
    for name, (rate, gold) in {"exact": (1.0, 0), "noisy": (0.8, 20)}.items():
        plan = PlanConfig(gap=0.0, replicates=[2], sensitivity=rate, specificity=rate,
                          gold_per_class=gold, min_simulations=8, simulations=8, draws=200,
                          tune=200, text_sd=0.3, null_sd=0.5, item_sd=1.0, seed=3)
        table = simulate_power(prompts, plan, fit, config_components(plan))
        widths[name] = table.filter(pl.col("attribute") == "race").row(0, named=True)
    exact, noisy = widths["exact"], widths["noisy"]
    assert exact["simulations"] == noisy["simulations"] == 8
    spread = 3 * math.hypot(exact["hdi_width_se"], noisy["hdi_width_se"])
    assert noisy["hdi_width"] > 1.2 * exact["hdi_width"] + spread, widths


def test_default_shaped_prompts_have_the_default_audits_shape():
    """The planner and the calibration benchmark simulate `default_shaped_prompts()`; it must be
    the design `python -m audit` really builds (caught: the default went to one replicate while
    the simulator kept two, so every default-shaped figure described a design nobody ran)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=["paths.output_dir=out"]))
    real = design_stage(cfg)
    simulated = default_shaped_prompts()
    assert real.height == simulated.height

    def shape(table: pl.DataFrame) -> tuple:
        per_kind = table.group_by("persona_kind").agg(pl.col("respondent_id").n_unique())
        cells = table.drop_nulls("race").group_by("gender", "race").agg(
            pl.col("respondent_id").n_unique().alias("texts"))
        return (table.get_column("item_id").n_unique(), table.get_column("replicate").n_unique(),
                sorted(per_kind.rows()), sorted(cells.get_column("texts").to_list()),
                sorted(table.get_column("gender").drop_nulls().unique().to_list()),
                len(table.get_column("race").drop_nulls().unique()))
    assert shape(simulated) == shape(real)


def test_a_time_budget_is_planned_at_the_stores_median_latency_a_prompt(items, personas,
                                                                        fake_models):
    """audit.plan spends design.max_answer_minutes at seconds_per_prompt. Two models, one with
    answers at 3 s in the store and max_concurrency 3, the other at 1 s: 1 s a prompt for
    both. Bugs caught: a model's concurrency ignored (2 s), the
    time divided by the prompts still to send rather than the design's, or a model with no
    stored answer timed as free instead of NaN."""
    from types import SimpleNamespace

    from audit.cli.plan import seconds_per_prompt
    from audit.config import DesignConfig
    from audit.design import expand_design
    from audit.llm.backends import create_backend
    from audit.llm.engine import plan_requests
    from audit.llm.store import ResponseStore

    models = {"fake_a": dataclasses.replace(fake_models["fake_a"], max_concurrency=3),
              "fake_b": fake_models["fake_b"]}
    cfg = SimpleNamespace(model=models)
    prompts = expand_design(items, personas, models, DesignConfig(replicates=1, seed=3))
    backends = {name: create_backend(config) for name, config in models.items()}
    planned = plan_requests(prompts, backends, models)
    with ResponseStore(":memory:") as store:
        assert math.isnan(seconds_per_prompt(cfg, prompts, store))
        for item in planned[::2]:  # every other prompt answered, each model some
            latency = 3.0 if item.model_name == "fake_a" else 1.0
            store.put_ok(item.key, backends[item.model_name].identity(),
                         item.request.as_payload(), "APPROVE", 1, latency)
        assert seconds_per_prompt(cfg, prompts, store) == pytest.approx(1.0)


def plan_rows(models=("qwen_coder_0_5b",), multiples=(1,), replicates=(1, 2)) -> pl.DataFrame:
    """A plan table as plan_table returns it: power columns and the preflight's cost columns."""
    rows = []
    for model in models:
        for multiple in multiples:
            for reps in replicates:
                for attribute in ("gender", "race"):
                    planted = attribute == "race"
                    rows.append({
                        "model_name": model, "persona_multiple": multiple, "replicates": reps,
                        "respondents": 21, "simulations": 1070, "attribute": attribute,
                        "hdi_width": 4.4137 / reps, "hdi_width_se": 0.0123,
                        "gap_logit": 1.0 if planted else None,
                        "level_a": "Asian" if planted else None,
                        "level_b": "Black" if planted else None,
                        "gap_mean": 0.93 if planted else None,
                        "p_different": 0.31 if planted else None,
                        "p_ci_fails": 0.3084 if planted else None,
                        "p_ci_fails_hw": 0.0277 if planted else None, "p_false_fail": 0.0187,
                        "prompts_asked": 126.4 * reps, "prompts": 252 * reps * multiple,
                        "to_send": 252 * reps * multiple, "prompt_tokens": 7735,
                        "max_completion_tokens": 756,
                        "minutes": 1.358 * reps, "budget_prompts": 150 * reps,
                        "asked_minutes": 1.358 * reps * 126.4 / 252})
    return pl.DataFrame(rows)


def printed(table: pl.DataFrame, adaptive: bool, pp: float | None = None) -> str:
    console = Console(file=io.StringIO(), width=80, record=True)
    print_plan(table, Path("outputs/plan.csv"), 0.94, adaptive, console, pp=pp)
    return console.export_text()


def test_the_printed_plan_fits_80_columns_with_the_power_and_its_error():
    """Bugs caught: polars' print of the raw table (headers cut to eight letters, each row
    wrapped over two lines, six decimals), a number cut with an ellipsis at 80 columns, the
    power shown without its Monte Carlo half-width (0.31 from 1,070 simulations reads as exact),
    the expected prompts of an adaptive plan left out, a model's rows unnamed when the plan has
    two, or the whole design's cost columns passed off as one model's. An adaptive plan's
    minutes were the whole fixed design's (defect 6 of the adaptive review): it shows the
    minutes of the prompts it is expected to ask (0.68 and 1.36), and says so."""
    text = printed(plan_rows(), adaptive=True)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    # One line, not wrapped at the table's width.
    assert "Plan: race gap of 1.00 logit, Asian - Black planted, 1070 simulations an option" \
        in text.splitlines()
    race = [line.split() for line in text.splitlines() if line.split()[3:4] == ["race"]]
    assert race == [["1", "252", "126", "race", "4.41", "0.31", "±", "0.03", "0.02", "0.7"],
                    ["2", "504", "253", "race", "2.21", "0.31", "±", "0.03", "0.02", "1.4"]]
    assert "outputs/plan.csv" in text and "asked" in text
    footnote = " ".join(text.split())
    assert "minutes: answering the prompts it is expected to ask" in footnote
    assert "budget_minutes" in footnote
    fixed = printed(plan_rows(), adaptive=False)
    assert "asked" not in fixed and "budget_minutes" not in fixed
    fixed_race = [line.split() for line in fixed.splitlines() if line.split()[2:3] == ["race"]]
    assert fixed_race[0] == ["1", "252", "race", "4.41", "0.31", "±", "0.03", "0.02", "1.4"]
    three = printed(plan_rows().with_columns(
        gap_logit=pl.when(pl.col("gap_logit").is_not_null()).then(3.0)), adaptive=False)
    assert "race gap of 3.00 logits, Asian - Black planted" in three  # not "3.00 logit"
    two = printed(plan_rows(models=("qwen_coder_0_5b", "smollm2"), multiples=(1, 2),
                            replicates=(1,)), adaptive=False)
    assert "…" not in two and max(len(line) for line in two.splitlines()) <= 80
    header = next(line for line in two.splitlines() if "replicates" in line)
    assert header.split() == ["texts", "replicates", "prompts", "attribute", "width", "power",
                              "false", "minutes"]
    titles = [line.strip() for line in two.splitlines() if "race gap of" in line]
    assert [title.split(":")[0] for title in titles] == ["qwen_coder_0_5b", "smollm2"]
    # The cost columns are the whole design's: a model's table must not pass them off as its own.
    assert "prompts, minutes count the whole design, all 2 models together" in " ".join(
        two.split())
    assert "models together" not in text
    # Plan review 2026-12-02: the pooled "all models" table counted as a third model.
    pooled = printed(plan_rows(models=("all models", "qwen_coder_0_5b", "smollm2"),
                               replicates=(1,)), adaptive=False)
    assert "all 2 models together" in " ".join(pooled.split())
    in_points = printed(plan_rows().with_columns(
        gap_logit=pl.when(pl.col("gap_logit").is_not_null()).then(0.7321)), adaptive=False,
        pp=10.0)
    assert "race gap of 10 pp (0.73 logits), Asian - Black planted" in " ".join(
        in_points.split())
    negative_zero = printed(plan_rows().with_columns(
        gap_logit=pl.when(pl.col("gap_logit").is_not_null()).then(-0.001)), adaptive=False)
    assert "-0.00" not in negative_zero


@pytest.mark.parametrize("override, message", [
    ("design.max_prompts=50", "design.max_prompts applies to an adaptive Rasch audit only, and "
                              "this plan would simulate the whole design"),
    ("method=iat", "audit.plan sizes Rasch audits only; method=iat has no planner: drop method="),
])
def test_settings_the_plan_would_ignore_are_refused(override, message, tmp_path: Path):
    """Refused in one line before the design is built; nothing is written. Bugs caught: defect 3
    of the adaptive review, in the planner (design.max_prompts without design.adaptive was
    ignored, and the plan simulated and priced the whole design); and, from the bad-input review
    of 2026-12-01, `audit.plan method=iat` exiting 0 with a Rasch plan, as if it were the
    IAT's."""
    from audit.cli.plan import run_plan

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=[
            override, f"paths.output_dir={tmp_path / 'out'}"]))
    with pytest.raises(AuditError, match=message):
        run_plan(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_mistyped_plan_attribute_is_refused_before_the_progress_bar(tmp_path: Path,
                                                                      monkeypatch):
    """One line with a did-you-mean, before any bar is drawn. Bug caught: the check ran inside
    simulate_power, under the open progress bar, so the refusal came below an empty line the
    bar left on the terminal, and it named no close attribute."""
    import audit.cli.plan as plan_cli

    def no_bar(**_):
        raise AssertionError("the progress bar started before the settings were checked")

    monkeypatch.setattr(plan_cli, "progress_bar", no_bar)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=[
            "plan.attribute=rac", f"paths.output_dir={tmp_path / 'out'}"]))
    with pytest.raises(AuditError, match=r"plan.attribute='rac' is not in fit.attributes "
                                         r".*\(did you mean 'race'\?\)"):
        plan_cli.run_plan(cfg, tmp_path / "out")


def test_an_adaptive_plan_prices_its_budget_and_the_prompts_it_expects_to_ask():
    """Defect 6 of the adaptive review: with design.max_prompts=150 an adaptive plan priced the
    whole design (252 prompts, 40.8 minutes). Its budget and its expected 126 prompts are priced
    at the design's average prompt; a time budget caps the budget's minutes."""
    from types import SimpleNamespace

    from audit.cli.plan import adaptive_costs
    from audit.config import DesignConfig

    table = pl.DataFrame({"prompts": [252.0, 504.0], "prompts_asked": [126.0, 126.0],
                          "prompt_tokens": [25200.0, 50400.0],
                          "max_completion_tokens": [12096.0, 24192.0],
                          "minutes": [40.8, 81.6]})
    cfg = SimpleNamespace(design=DesignConfig(adaptive=True, max_prompts=150),
                          fit=FitConfig(familywise_alpha=0.05))
    priced = adaptive_costs(table, cfg, tokens_per_prompt=148.0)
    assert priced["budget_prompts"].to_list() == [150, 150]
    assert priced["budget_minutes"].to_list() == pytest.approx([40.8 * 150 / 252] * 2)
    assert priced["budget_prompt_tokens"].to_list() == pytest.approx([15000.0] * 2)
    assert priced["asked_minutes"].to_list() == pytest.approx([20.4, 20.4])
    assert priced["asked_max_completion_tokens"].to_list() == pytest.approx([6048.0] * 2)
    timed = SimpleNamespace(design=DesignConfig(adaptive=True, max_prompts=150,
                                                max_answer_minutes=10.0),
                            fit=FitConfig(familywise_alpha=0.05))
    assert adaptive_costs(table, timed, 148.0)["budget_minutes"].to_list() == [10.0, 10.0]


def test_a_nan_half_width_or_minutes_is_printed_as_nothing():
    """Catches _plus_minus printing what is not a number: a power with a NaN Monte Carlo
    half-width as `0.31 ± nan`, and NaN minutes (a size with no price a prompt) as `nan`."""
    def race_rows(table: pl.DataFrame) -> list[list[str]]:
        text = printed(table, adaptive=False)
        assert "nan" not in text, text
        return [line.split() for line in text.splitlines() if line.split()[2:3] == ["race"]]

    no_error = plan_rows().with_columns(
        p_ci_fails_hw=pl.when(pl.col("p_ci_fails_hw").is_not_null()).then(math.nan))
    assert race_rows(no_error)[0] == ["1", "252", "race", "4.41", "0.31", "0.02", "1.4"]
    no_minutes = plan_rows().with_columns(minutes=pl.lit(math.nan))
    assert race_rows(no_minutes)[0] == ["1", "252", "race", "4.41", "0.31", "±", "0.03", "0.02"]


def test_one_model_with_its_pooled_table_is_not_several_models():
    """Catches the "all N models together" note counting the pooled "all models" table: one
    audited model with it was said to be "all 1 models together"."""
    text = printed(plan_rows(models=("all models", "qwen_coder_0_5b"), replicates=(1,)),
                   adaptive=False)
    assert "models together" not in text


def test_the_printed_rows_are_sorted_whatever_the_tables_order():
    """Catches print_plan printing the rows in the table's order (the sort dropped): the
    options come from a join, in no order a reader can follow."""
    text = printed(plan_rows(replicates=(1, 2, 4)).reverse(), adaptive=False)
    rows = [line.split()[:3] for line in text.splitlines() if line.split()[2:3] in (
        ["race"], ["gender"])]
    assert rows == [["1", "252", "gender"], ["1", "252", "race"], ["2", "504", "gender"],
                    ["2", "504", "race"], ["4", "1008", "gender"], ["4", "1008", "race"]]


def test_options_simulated_a_different_number_of_times_show_the_range():
    """Catches the title giving the fewest simulations as every option's count: an option that
    stopped early (400) beside one that ran on (1070) is "400-1070 simulations an option"."""
    table = plan_rows().with_columns(
        simulations=pl.when(pl.col("replicates") == 1).then(400).otherwise(1070))
    assert "400-1070 simulations an option" in " ".join(printed(table, adaptive=False).split())


def test_a_title_too_long_for_the_screen_breaks_after_the_gap():
    """Catches rich wrapping an 84-character title at 80 columns mid-phrase ("... an" /
    "option"): the simulation counts go to a line of their own."""
    table = plan_rows().with_columns(
        simulations=pl.when(pl.col("replicates") == 1).then(400).otherwise(1070))
    lines = printed(table, adaptive=False).splitlines()
    assert lines[:2] == ["Plan: race gap of 1.00 logit, Asian - Black planted,",
                         "400-1070 simulations an option"]
