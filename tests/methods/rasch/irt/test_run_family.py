"""One family-wise alpha for the whole run: the CI verdict fails on a `different` in any model,
the pooled "all models" rows and any outcome, so all of them share fit.familywise_alpha
(Bonferroni over every contrast the verdict judges). Until the fix each model, the pooled rows and
each outcome was a family of its own at alpha (review docs.md defect 5, model.md defect 6): a
two-model run with no group difference failed CI up to three times as often as alpha.

Hand-built posteriors for the family sizes (exact, fast); the fit stage with prior draws standing
in for sampling for the outcomes (the tests are about which HDI decides, not the posterior)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xarray as xr

import audit.methods.rasch.irt.rasch as rasch
from audit.methods.configs import AuditConfig
from audit.methods.rasch.analyse import fit_stage
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt.contrasts import decide, level_contrasts
from audit.methods.rasch.irt.explanatory import RespondentTable
from audit.stats.intervals import hdi_bounds
from prior_samplers import prior_sampler

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import abstaining_audit_tables  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

GENDERS = ["man", "woman"]
RACES = ["Asian", "Black", "Hispanic", "White"]
ALPHA = 0.05
ROPE = 0.18


def _null_run(models: list[str], seed: int = 0) -> tuple[xr.Dataset, RespondentTable]:
    """An explanatory-style posterior with no true gap: every level effect N(0, 1) independently
    per model (review script docs/family_per_model.py). 7 contrasts a model (1 gender, 6 race)."""
    rng = np.random.default_rng(seed)
    rows = [(f"{model}/{gender}_{race}_{k}", model, "explicit", gender, race)
            for model in models for gender in GENDERS for race in RACES for k in range(2)]
    rows += [(f"{model}/null{k}", model, "null", None, None) for model in models for k in range(4)]
    frame = pl.DataFrame(rows, schema=["respondent", "model_name", "persona_kind", "gender",
                                       "race"], orient="row")
    chains, draws = 2, 2000  # 4,000 draws resolve the 1 - 0.05 / 7 HDI (29 outside)
    gender = rng.normal(size=(chains, draws, len(models), 2))
    race = rng.normal(size=(chains, draws, len(models), 4))
    posterior = xr.Dataset({
        "effect_gender": (("chain", "draw", "model", "level_gender"), gender),
        "effect_gender_pooled": (("chain", "draw", "level_gender"), gender.mean(axis=2)),
        "effect_race": (("chain", "draw", "model", "level_race"), race),
        "effect_race_pooled": (("chain", "draw", "level_race"), race.mean(axis=2)),
        "sigma_null": (("chain", "draw", "model"),
                       np.abs(rng.normal(size=(chains, draws, len(models))))),
        "theta": (("chain", "draw", "respondent"),
                  rng.normal(size=(chains, draws, frame.height))),
    }, coords={"model": models, "level_gender": GENDERS, "level_race": RACES,
               "respondent": frame["respondent"].to_list()})
    return posterior, RespondentTable(frame, ("gender", "race"))


def test_two_models_and_the_pooled_rows_share_one_family():
    """Two models: 7 contrasts each plus 7 pooled rows, all decided at 1 - 0.05 / 21. Before the
    fix each of the three was its own family of 7 (decision_prob 1 - 0.05 / 7 = 0.9929), so the
    run-level false-fail bound was 0.15."""
    posterior, respondents = _null_run(["a", "b"])
    contrasts = level_contrasts(posterior, respondents, rope=ROPE, familywise_alpha=ALPHA)
    assert contrasts.height == 21
    assert sorted(set(contrasts["model_name"])) == ["a", "all models", "b"]
    assert set(contrasts["family_size"]) == {21}
    assert contrasts["decision_prob"].to_list() == pytest.approx([1 - ALPHA / 21] * 21)


def test_a_second_outcome_doubles_the_family():
    """outcomes=2 (fit.second_outcome, the hurdle's two steps): K = 2 x the contrasts of one fit."""
    posterior, respondents = _null_run(["a", "b"])
    contrasts = level_contrasts(posterior, respondents, rope=ROPE, familywise_alpha=ALPHA,
                                outcomes=2)
    assert set(contrasts["family_size"]) == {42}
    assert contrasts["decision_prob"].to_list() == pytest.approx([1 - ALPHA / 42] * 21)


def test_one_model_one_outcome_decides_as_before():
    """A guard, not a bug: the benchmarks and past runs rest on one model and one outcome keeping
    K = its own 7 contrasts, each decided on its 1 - 0.05 / 7 HDI against the ROPE."""
    posterior, respondents = _null_run(["a"])
    contrasts = level_contrasts(posterior, respondents, rope=ROPE, familywise_alpha=ALPHA)
    assert contrasts.height == 7 and set(contrasts["family_size"]) == {7}
    mass = 1 - ALPHA / 7
    effects = {"gender": posterior["effect_gender"], "race": posterior["effect_race"]}
    for row in contrasts.iter_rows(named=True):
        effect = effects[row["attribute"]].sel(model="a")
        level = f"level_{row['attribute']}"
        gap = (effect.sel({level: row["level_a"]}) - effect.sel({level: row["level_b"]}))
        low, high = hdi_bounds(gap.values.reshape(-1), mass)
        assert row["decision_prob"] == pytest.approx(mass)
        assert (row["decision_low"], row["decision_high"]) == pytest.approx((low, high))
        assert row["decision"] == decide(low, high, ROPE)


@pytest.fixture
def tables(monkeypatch) -> tuple[pl.DataFrame, pl.DataFrame]:
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    return abstaining_audit_tables()


@pytest.mark.parametrize("fit", [FitConfig(model="rasch", second_outcome="undetermined",
                                           chains=1),
                                 FitConfig(model="hurdle", chains=1)],
                         ids=["second_outcome", "hurdle"])
def test_every_outcome_of_the_fit_stage_shares_one_family(fit, tables):
    """Both outcomes' contrasts (the verdict reads them all from fit/contrasts.csv) are decided
    over K = all of them. Before the fix each outcome's K was its own 7."""
    contrasts = fit_stage(AuditConfig(fit=fit), *tables).all_contrasts()
    assert contrasts.height == 14 and contrasts["outcome"].n_unique() == 2
    assert set(contrasts["family_size"]) == {14}
    assert contrasts["decision_prob"].to_list() == pytest.approx([1 - ALPHA / 14] * 14)


def test_one_outcome_of_the_fit_stage_keeps_its_own_family(tables):
    """A guard: the default single-outcome fit stage keeps K = its 7 contrasts."""
    contrasts = fit_stage(AuditConfig(fit=FitConfig(chains=1)), *tables).all_contrasts()
    assert contrasts.height == 7 and set(contrasts["family_size"]) == {7}
    assert contrasts["decision_prob"].to_list() == pytest.approx([1 - ALPHA / 7] * 7)
