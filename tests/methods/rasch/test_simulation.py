"""Simulated audits (methods/rasch/simulation.py) and a past run's components (pilot.py)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import xarray as xr

from audit.errors import AuditError
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch
from audit.methods.rasch.irt.engines import sample_posterior
from audit.methods.rasch.pilot import (
    judge_components,
    posterior_component_draws,
    posterior_components,
    run_components,
)
from audit.methods.rasch.simulation import (
    CompiledSampler,
    VarianceComponents,
    default_shaped_prompts,
    simulate_outcomes,
    true_gap,
)

EFFECTS = {"gender": {}, "race": {"Black": 1.0}}


def test_simulated_labels_carry_the_planted_gap_in_the_fit_columns():
    prompts = default_shaped_prompts(texts_per_cell=25, items=20, replicates=2, null_count=4)
    components = VarianceComponents(item_sd=0.0, text_sd=0.0, null_sd=0.0, base_rate=0.5)
    outcomes = simulate_outcomes(prompts, components, EFFECTS, np.random.default_rng(1))
    assert outcomes.columns == ["respondent", "item", "y", "model_name", "persona_kind",
                                "gender", "race"]
    assert outcomes.height == prompts.height
    rates = outcomes.group_by("race").agg(pl.col("y").mean()).drop_nulls("race")
    rate = dict(rates.iter_rows())
    # A 1-logit gap at 50%: 73.1% against 50%; 2,000 labels a race level.
    assert rate["Black"] == pytest.approx(1 / (1 + math.exp(-1)), abs=0.04)
    assert rate["White"] == pytest.approx(0.5, abs=0.04)
    assert true_gap(EFFECTS, "race", "Black", "White") == 1.0
    assert true_gap(EFFECTS, "race", "Asian", "Black") == -1.0


def test_labels_pass_through_the_judges_errors():
    prompts = default_shaped_prompts(texts_per_cell=10, items=20, replicates=4)
    exact = VarianceComponents(item_sd=0.0, text_sd=0.0, null_sd=0.0, base_rate=0.9)
    noisy = VarianceComponents(item_sd=0.0, text_sd=0.0, null_sd=0.0, base_rate=0.9,
                               sensitivity=0.7, specificity=0.9, gold_per_class=10_000)
    truth = simulate_outcomes(prompts, exact, {"race": {}}, np.random.default_rng(2))
    judged = simulate_outcomes(prompts, noisy, {"race": {}}, np.random.default_rng(2))
    # P(label 1) = 0.9 * 0.7 + 0.1 * 0.1 = 0.64 under the judge, 0.9 without it.
    assert truth.get_column("y").mean() == pytest.approx(0.9, abs=0.02)
    assert judged.get_column("y").mean() == pytest.approx(0.64, abs=0.02)
    counts = noisy.gold_counts("favourable")
    assert counts.true_1_judged_1 == 7000 and counts.true_0_judged_1 == 1000


def test_components_refuse_a_judge_no_better_than_a_coin():
    with pytest.raises(AuditError, match="coin"):
        VarianceComponents(sensitivity=0.5)
    with pytest.raises(AuditError, match="base_rate"):
        VarianceComponents(base_rate=1.0)


def posterior_of(theta: np.ndarray, b: np.ndarray, respondents: list[str],
                 discrimination: float | None = None) -> xr.Dataset:
    """A posterior Dataset (chain, draw, ...) of a plain Rasch fit with the given draws (log-odds
    theta - b); with ``discrimination``, the 2PL of the same log-odds: theta and b divided by a,
    every item's a that figure."""
    if discrimination is None:
        return xr.Dataset({
            "theta": (("chain", "draw", "respondent"), theta),
            "b": (("chain", "draw", "item"), b)},
            coords={"respondent": respondents, "item": [f"i{k}" for k in range(b.shape[-1])]})
    posterior = posterior_of(theta / discrimination, b / discrimination, respondents)
    return posterior.assign(a=(("chain", "draw", "item"), np.full(b.shape, discrimination)))


@pytest.mark.parametrize("discrimination", [None, 2.5], ids=["rasch", "twopl"])
def test_a_past_rasch_runs_posterior_gives_its_own_spreads_not_the_defaults(discrimination):
    """Plain Rasch draws with known spreads: item sd 2, null sd 1.2, text sd 0.7 around an
    additive gender + race pattern. A planner that kept its defaults (issue 34: item sd 1.0,
    persona sd 0.2) predicts intervals far too narrow. Every theta sits 1 logit up and the
    items 0.5 up, so the null personas' base logit is 0.5 (a rate of 0.622); the demographic
    texts sit 0.3 below the null ones besides their pattern, whose mean over the texts is 0.2 +
    0.2, so the real-persona shift is 0.4 - 0.3 = 0.1. Bugs caught: the base rate read from the
    demographic thetas (0.646) or without the items (0.731); the shift's sign turned (-0.1); a
    twopl run (the same log-odds, every item's a 2.5) read in theta's units, every spread 2.5
    times too small."""
    rng = np.random.default_rng(4)
    prompts = default_shaped_prompts(texts_per_cell=3, null_count=8, items=40, replicates=1)
    respondents = sorted(prompts.get_column("respondent_id").unique().to_list())
    frame = prompts.unique("respondent_id").sort("respondent_id")
    race_shift = {"Asian": 0.0, "Black": 1.0, "Hispanic": -0.5, "White": 0.3, None: 0.0}
    gender_shift = {"man": 0.4, "woman": 0.0, None: 0.0}
    kind = frame.get_column("persona_kind").to_list()
    pattern = np.array([race_shift[race] + gender_shift[gender] for race, gender in zip(
        frame.get_column("race").to_list(), frame.get_column("gender").to_list(), strict=True)])
    draws = (2, 400)
    sd = np.where(np.array(kind) == "null", 1.2, np.where(np.array(kind) == "baseline", 0, 0.7))
    shift = np.where(np.array(kind) == "null", 0.0, -0.3)
    theta = 1.0 + pattern + shift + sd * rng.normal(size=(*draws, len(respondents)))
    b = 0.5 + 2.0 * rng.normal(size=(*draws, 40))
    defaults = VarianceComponents(item_sd=1.0, text_sd=0.2, null_sd=0.2)
    found = posterior_components(posterior_of(theta, b, respondents, discrimination), prompts,
                                 ("gender", "race"), defaults)
    assert found.item_sd == pytest.approx(2.0, rel=0.05)
    assert found.null_sd == pytest.approx(1.2, rel=0.1)
    assert found.text_sd == pytest.approx(0.7, rel=0.1)
    assert found.base_rate == pytest.approx(1 / (1 + math.exp(-0.5)), abs=0.01)
    assert found.real_shift == pytest.approx(0.1, abs=0.04)


def test_an_explanatory_posterior_gives_its_spread_parameters():
    draws = np.ones((2, 50))
    posterior = xr.Dataset({
        "b": (("chain", "draw", "item"), np.tile([-1.5, 0.0, 1.5], (2, 50, 1))),
        "sigma_residual": (("chain", "draw", "model"), 0.8 * draws[..., None]),
        "sigma_null": (("chain", "draw", "model"), 1.1 * draws[..., None]),
        "model_effect": (("chain", "draw", "model"), math.log(3) * draws[..., None]),
        "real_effect": (("chain", "draw", "model"), -0.2 * draws[..., None])})
    found = posterior_components(posterior, default_shaped_prompts(), ("gender", "race"),
                                 VarianceComponents())
    assert (found.item_sd, found.text_sd, found.null_sd) == pytest.approx((1.5, 0.8, 1.1))
    assert found.base_rate == pytest.approx(0.75)
    assert found.real_shift == pytest.approx(-0.2)


def gold_table(pairs: list[tuple[str, str, int]]) -> pl.DataFrame:
    rows = [{"true_label": truth, "label": label} for truth, label, n in pairs for _ in range(n)]
    return pl.DataFrame(rows)


def test_the_runs_gold_counts_become_the_planned_judge():
    gold = gold_table([("favourable", "favourable", 14), ("favourable", "unfavourable", 6),
                       ("unfavourable", "unfavourable", 19), ("unfavourable", "favourable", 1)])
    found = judge_components(gold, "favourable", VarianceComponents())
    counts = found.gold_counts("favourable")
    assert (counts.true_1_judged_1, counts.true_1_judged_0) == (14, 6)
    assert (counts.true_0_judged_0, counts.true_0_judged_1) == (19, 1)
    assert found.sensitivity == pytest.approx(15 / 22)
    assert judge_components(None, "favourable", VarianceComponents()).gold_counts() is None


def test_from_run_reads_a_run_directory(tmp_path, caplog):
    """The files a Rasch run writes (fit/posterior.nc, prompts.parquet, judge_gold.parquet). The
    log line names what the plan uses: it printed the components' repr, with the config's
    gold_per_class (25) beside the run's own 20 gold answers, which the plan uses instead."""
    import arviz as az

    rng = np.random.default_rng(5)
    prompts = default_shaped_prompts(items=10)
    respondents = sorted(prompts.get_column("respondent_id").unique().to_list())
    theta = rng.normal(size=(2, 100, len(respondents))) * 0.9
    b = rng.normal(size=(2, 100, 10)) * 1.8
    idata = az.from_dict({"posterior": {"theta": theta, "b": b}},
                         dims={"theta": ["respondent"], "b": ["item"]},
                         coords={"respondent": respondents, "item": [f"i{k}" for k in range(10)]})
    (tmp_path / "fit").mkdir()
    idata.to_netcdf(str(tmp_path / "fit" / "posterior.nc"))
    prompts.write_parquet(tmp_path / "prompts.parquet")
    gold_table([("favourable", "favourable", 9), ("favourable", "unfavourable", 1),
                ("unfavourable", "unfavourable", 8), ("unfavourable", "favourable", 2)]
               ).write_parquet(tmp_path / "judge_gold.parquet")
    with caplog.at_level("INFO", logger="audit.methods.rasch.pilot"):
        found = run_components(str(tmp_path), "sqlite:///unused.db", ("gender", "race"),
                               "favourable", VarianceComponents(item_sd=1.0, gold_per_class=25),
                               count=30, seed=1)
    assert len(found) == 30
    (line,) = [record.getMessage() for record in caplog.records if "posterior means" in
               record.getMessage()]
    assert "item sd 1.79" in line and "of the run's 20 gold answers" in line, line
    assert "gold_per_class" not in line and "VarianceComponents" not in line, line
    assert np.mean([draw.item_sd for draw in found]) == pytest.approx(1.8, rel=0.1)
    assert {draw.gold_counts().true_0_judged_1 for draw in found} == {2}
    with pytest.raises(AuditError, match="neither a run directory nor an MLflow run"):
        run_components(str(tmp_path / "missing"), f"sqlite:///{tmp_path}/mlflow.db",
                       ("race",), "favourable", VarianceComponents(), count=30, seed=1)


def test_a_plan_takes_the_runs_posterior_draws_not_only_their_means():
    """A population posterior that cannot tell a text sd of 0.3 from 1.2 (half its draws each):
    the plan's components must keep both (a plan from the mean, 0.75, predicts neither), each
    draw's figures together (text sd 1.2 comes with its own null sd 1.5), and be reproducible
    from the seed. The planner plugged in posterior means until this test (issue 34: 19% too
    narrow at a text sd of 1.0)."""
    wide = np.arange(400) % 2 == 1
    one = np.ones((2, 200, 1))
    posterior = xr.Dataset({
        "b": (("chain", "draw", "item"), np.tile([-1.0, 0.0, 1.0], (2, 200, 1))),
        "sigma_residual": (("chain", "draw", "model"),
                           np.where(wide, 1.2, 0.3).reshape(2, 200, 1)),
        "sigma_null": (("chain", "draw", "model"), np.where(wide, 1.5, 0.4).reshape(2, 200, 1)),
        "model_effect": (("chain", "draw", "model"), 0.0 * one)})
    args = (posterior, default_shaped_prompts(), ("gender", "race"), VarianceComponents())
    draws = posterior_component_draws(*args, count=60, seed=7)
    pairs = {(draw.text_sd, draw.null_sd) for draw in draws}
    assert pairs == {(0.3, 0.4), (1.2, 1.5)}
    assert 15 < sum(draw.text_sd == 1.2 for draw in draws) < 45
    assert posterior_component_draws(*args, count=60, seed=7) == draws
    assert posterior_components(*args).text_sd == pytest.approx(0.75)
    with pytest.raises(AuditError, match="plan.simulations"):
        posterior_component_draws(*args, count=0, seed=7)


def _reused_and_fresh(first: pl.DataFrame, second: pl.DataFrame, fit: FitConfig, **options):
    """Both audits through one CompiledSampler, then the second fitted on a fresh compile."""
    sampler = CompiledSampler()
    reused_first = fit_rasch(first, fit, sample=sampler, **options)
    reused_second = fit_rasch(second, fit, sample=sampler, **options)
    fresh_second = fit_rasch(second, fit, sample=sample_posterior, **options)
    return sampler, reused_first, reused_second, fresh_second


@pytest.mark.slow
def test_a_reused_compiled_model_gives_the_draws_of_a_fresh_fit():
    """Two simulated audits of one design through one CompiledSampler: the second fit swaps its
    data in and must draw what a fresh compile of its own data draws (same seed). A sampler that
    kept the first data set's values would return the first audit's posterior."""
    prompts = default_shaped_prompts(items=6, replicates=2, null_count=3)
    components = VarianceComponents(item_sd=1.0, text_sd=0.3, null_sd=0.5)
    rng = np.random.default_rng(6)
    first, second = (simulate_outcomes(prompts, components, EFFECTS, rng) for _ in range(2))
    fit = FitConfig(model="rasch", draws=100, tune=100, chains=1, cores=1, seed=9,
                    attributes=["gender", "race"])
    sampler, _, reused, fresh = _reused_and_fresh(first, second, fit)
    assert len(sampler.compiled) == 1
    np.testing.assert_allclose(reused.idata.posterior["theta"].values,
                               fresh.idata.posterior["theta"].values)
    # The judge-corrected model is a second compile; the cut fixes the rates as pm.Data
    # (irt/judge_cut.py), so other gold counts reuse it with their rates swapped in.
    for per_class in (20, 40):
        judged = VarianceComponents(sensitivity=0.8, specificity=0.8, gold_per_class=per_class)
        fit_rasch(second, fit, sample=sampler, confusion=judged.gold_counts())
    assert len(sampler.compiled) == 2


@pytest.mark.slow
def test_a_compiled_sampler_refits_when_only_the_personas_levels_moved():
    """The explanatory and population models index each respondent's levels with constant
    arrays compiled into the log density, which coords and data shapes do not show: two audits
    whose respondents carry the same names but other levels (here the Black and the White texts
    swapped) must not share a compiled model, or the second fit reads its labels through the
    first one's levels and its race contrast comes out with the first audit's sign."""
    prompts = default_shaped_prompts(items=6, replicates=2, null_count=3)
    components = VarianceComponents(item_sd=1.0, text_sd=0.3, null_sd=0.5)
    first = simulate_outcomes(prompts, components, {"gender": {}, "race": {"Black": 2.0}},
                              np.random.default_rng(7))
    swapped = {"Black": "White", "White": "Black"}
    second = first.with_columns(pl.col("race").replace(swapped))
    fit = FitConfig(model="explanatory", draws=100, tune=100, chains=1, cores=1, seed=9,
                    attributes=["gender", "race"])
    sampler, _, reused, fresh = _reused_and_fresh(first, second, fit)
    np.testing.assert_allclose(reused.idata.posterior["effect_race"].values,
                               fresh.idata.posterior["effect_race"].values)
    assert len(sampler.compiled) == 2


@pytest.mark.slow
def test_a_compiled_sampler_refits_when_only_the_labelling_paths_moved():
    """The per-path likelihood bakes each cell's labelling path into the log density (constant
    index sets), so two audits of one shape whose cells other paths labelled share no compiled
    model: reusing the first one's would read the second audit's labels through the first
    audit's paths and return another posterior than a fresh fit of the same data."""
    from audit.methods.rasch.irt.judge_error import JudgeConfusion, JudgeCorrection

    rng = np.random.default_rng(12)
    rows = [(f"r{respondent}", f"i{item}", int(rng.random() < 0.5))
            for respondent in range(6) for item in range(6) for _ in range(2)]
    base = pl.DataFrame(rows, schema=["respondent", "item", "y"], orient="row")
    # Every respondent x item cell is labelled by one path, so both audits have 36 cells.
    by_rule = (pl.col("respondent").str.slice(1).cast(pl.Int32)
               + pl.col("item").str.slice(1).cast(pl.Int32)) % 2 == 0
    first = base.with_columns(label_source=pl.when(by_rule).then(pl.lit("rule"))
                              .otherwise(pl.lit("judge")))
    second = base.with_columns(label_source=pl.when(by_rule).then(pl.lit("judge"))
                               .otherwise(pl.lit("rule")))
    correction = JudgeCorrection("favourable", {
        "rule": JudgeConfusion("favourable", 98, 0, 98, 0),
        "judge": JudgeConfusion("favourable", 30, 20, 90, 10)})
    fit = FitConfig(model="rasch", draws=100, tune=100, chains=1, cores=1, seed=9,
                    judge_imputations=1)
    _, *fits = _reused_and_fresh(first, second, fit, confusion=correction)
    theta = [result.idata.posterior["theta"].values for result in fits]
    assert not np.allclose(theta[0], theta[2])  # the paths change the posterior
    np.testing.assert_allclose(theta[1], theta[2])


@pytest.mark.slow
def test_a_simulated_audit_reads_the_same_contrasts_without_r_hat_or_ess(monkeypatch):
    """The planner's simulated audits skip R-hat and ESS (ArviZ's, a third of a simulated
    audit's time) and must fit the same posterior without them. Fails if the plan computes
    them again (the patched ArviZ call below raises), or if skipping them changes what is fitted:
    a summary or contrasts that differ from the fit with diagnostics (the same seed and
    compiled model), or the judge cut's pooled rates dropped from the summary."""
    from audit.methods.rasch import power
    from audit.methods.rasch.irt import summary

    prompts = default_shaped_prompts(items=6, replicates=2, null_count=3)
    components = VarianceComponents(item_sd=1.0, text_sd=0.3, null_sd=0.5, sensitivity=0.9,
                                    specificity=0.9, gold_per_class=30)
    outcomes = simulate_outcomes(prompts, components, EFFECTS, np.random.default_rng(3))
    fit = FitConfig(model="explanatory", draws=100, tune=100, chains=1, cores=1, seed=9,
                    attributes=["gender", "race"], judge_imputations=2)
    sampler = CompiledSampler()
    checked = fit_rasch(outcomes, fit, sample=sampler, confusion=components.gold_counts())
    bare = fit_rasch(outcomes, fit, sample=sampler, confusion=components.gold_counts(),
                     diagnostics=False)
    assert checked.diagnostics is not None and bare.diagnostics is None
    with pytest.raises(ValueError, match="diagnostics=False"):
        bare.converged  # noqa: B018 (a property: unknown convergence is not False)
    assert bare.summary["r_hat"].null_count() == bare.summary.height
    assert checked.summary["r_hat"].null_count() < checked.summary.height
    columns = ["parameter", "mean", "sd", "hdi_low", "hdi_high"]
    assert bare.summary.select(columns).equals(checked.summary.select(columns))
    assert bare.contrasts.equals(checked.contrasts)

    def computed(*args, **kwargs):
        raise AssertionError("a simulated audit computed R-hat and ESS")

    monkeypatch.setattr(summary, "_diagnostic_columns", computed)
    simulated = power.one_simulation(prompts, components, EFFECTS, fit, sampler,
                                     np.random.default_rng(4), ("race", "Black", "White"))
    assert simulated.filter(pl.col("planted")).height == 1


def test_the_planned_specificity_is_the_beta_mean_of_the_gold_counts():
    """Bug caught: the specificity was the raw share right among true-0 gold answers, not the
    Beta(1, 1) posterior mean the sensitivity is, so a judge right on all of a few such answers
    was planned as never wrong. By hand: 19 of 20 true-unfavourable answers judged
    unfavourable give (1 + 19) / (2 + 20) = 10/11 (not 19/20); 5 of 5 give 6/7 (not 1)."""
    gold = gold_table([("favourable", "favourable", 14), ("favourable", "unfavourable", 6),
                       ("unfavourable", "unfavourable", 19), ("unfavourable", "favourable", 1)])
    assert judge_components(gold, "favourable", VarianceComponents()).specificity == \
        pytest.approx(10 / 11)
    perfect = gold_table([("favourable", "favourable", 4), ("favourable", "unfavourable", 1),
                          ("unfavourable", "unfavourable", 5)])
    assert judge_components(perfect, "favourable", VarianceComponents()).specificity == \
        pytest.approx(6 / 7)


def test_the_planned_judge_leaves_out_the_gold_answers_of_dropped_labels():
    """Bug caught: fit.drop_labels was not passed on to the gold counts, so a plan counted the
    gold answers the judge called a refusal as judged unfavourable, though the fit drops them.
    By hand: true favourable 14 judged favourable, 6 unfavourable, 4 refusal; with refusal
    dropped, true_1_judged_0 = 6 and the sensitivity (1 + 14) / (2 + 20) = 15/22, where
    counting the refusals gives 10 and 15/26."""
    gold = gold_table([("favourable", "favourable", 14), ("favourable", "unfavourable", 6),
                       ("favourable", "refusal", 4), ("unfavourable", "unfavourable", 19),
                       ("unfavourable", "favourable", 1)])
    found = judge_components(gold, "favourable", VarianceComponents(), drop_labels=("refusal",))
    assert found.gold_counts("favourable").true_1_judged_0 == 6
    assert found.sensitivity == pytest.approx(15 / 22)


def test_an_explanatory_posterior_of_several_models_gives_their_average_spreads():
    """Bug caught: a run of two audited models planned with the first model's spreads alone.
    By hand: text sd 0.6 and 1.0 average 0.8, null sd 0.9 and 1.3 average 1.1, base logits
    log(3) - 1 and log(3) + 1 average log(3) (a rate of 0.75), shifts -0.4 and 0 average -0.2."""
    ones = np.ones((2, 50, 1))

    def per_model(first: float, second: float) -> tuple[tuple[str, ...], np.ndarray]:
        return ("chain", "draw", "model"), np.concatenate([first * ones, second * ones], axis=2)

    posterior = xr.Dataset({
        "b": (("chain", "draw", "item"), np.tile([-1.5, 0.0, 1.5], (2, 50, 1))),
        "sigma_residual": per_model(0.6, 1.0), "sigma_null": per_model(0.9, 1.3),
        "model_effect": per_model(math.log(3) - 1, math.log(3) + 1),
        "real_effect": per_model(-0.4, 0.0)})
    found = posterior_components(posterior, default_shaped_prompts(), ("gender", "race"),
                                 VarianceComponents())
    assert (found.text_sd, found.null_sd) == pytest.approx((0.8, 1.1))
    assert found.base_rate == pytest.approx(0.75)
    assert found.real_shift == pytest.approx(-0.2)


def test_a_persona_without_levels_is_not_a_demographic_text():
    """Bug caught: the baseline persona (no gender, no race) counted among the personas with
    levels, so its theta moved the real personas' shift (and took a level of its own in the
    text sd's additive fit). By hand: the 16 demographic texts sit at 1.0, the null personas at
    -0.5, 0 and 0.5 (mean 0, sd 0.5), the baseline at 5.0 and the items at 0 on average, so
    the shift is 1.0 - 0 = 1.0 (with the baseline, 21/17 = 1.24), the text sd 0, the null sd
    0.5 and the base rate logistic(0) = 0.5."""
    prompts = default_shaped_prompts(texts_per_cell=2, null_count=3, items=4, replicates=1)
    frame = prompts.unique("respondent_id").sort("respondent_id")
    respondents = frame.get_column("respondent_id").to_list()
    kinds = frame.get_column("persona_kind").to_list()
    nulls = iter([-0.5, 0.0, 0.5])
    values = np.array([next(nulls) if kind == "null" else 5.0 if kind == "baseline" else 1.0
                       for kind in kinds])
    assert kinds.count("baseline") == 1 and kinds.count("explicit") == 16
    theta = np.broadcast_to(values, (2, 10, values.size)).copy()
    b = np.broadcast_to(np.array([-1.0, 0.0, 1.0, 0.0]), (2, 10, 4)).copy()
    found = posterior_components(posterior_of(theta, b, respondents), prompts,
                                 ("gender", "race"), VarianceComponents())
    assert found.real_shift == pytest.approx(1.0)
    assert found.text_sd == pytest.approx(0.0, abs=1e-9)
    assert found.null_sd == pytest.approx(0.5)
    assert found.base_rate == pytest.approx(0.5)
