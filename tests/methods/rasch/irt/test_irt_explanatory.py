"""The explanatory model finds planted persona effects, stays quiet without them, and locates
item-level gaps; the 2PL finds planted discriminations. Real nutpie sampling (slow)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch, parameter_table
from audit.methods.rasch.irt.contrasts import POOLED_MODEL

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import simulate_audit  # noqa: E402

pytestmark = pytest.mark.slow

EXPLANATORY = FitConfig(model="explanatory", draws=600, tune=600, chains=4, seed=3,
                        target_accept=0.95, item_dif=["race"])
DIF_ITEMS = ("i00", "i01", "i02")


def race_contrast(contrasts: pl.DataFrame, model_name: str, a: str, b: str) -> dict:
    return contrasts.filter((pl.col("model_name") == model_name) & (pl.col("attribute") == "race")
                            & (pl.col("level_a") == a) & (pl.col("level_b") == b)).row(0,
                                                                                      named=True)


def test_planted_race_gap_and_its_items_are_found():
    # Black personas 1.2 logits below White ones overall, and 1.5 further below on three items.
    outcomes = simulate_audit({"Black": -0.6, "White": 0.6}, models=("m1", "m2"), items=10,
                              replicates=30, null_count=4,
                              item_dif={("Black", j): -1.5 for j in range(3)}, seed=21)
    # Decided on the reported 94% HDI, not the family-wise one: m1's 99.3% HDI (alpha 0.05 over
    # its own 7 contrasts, as families were then; over the run's 21 now, wider still) ended 0.055
    # logit inside the ROPE's edge here, a tail read from about 17 of 2,400 draws, so the
    # decision flipped with the sampler's floating-point path (CI on 518e3ac: `undecided`). The
    # family-wise rule has its own tests (test_irt_population.py, test_run_family.py).
    fit = fit_rasch(outcomes, dataclasses.replace(EXPLANATORY, familywise_alpha=None))
    assert fit.diagnostics.rhat_max < 1.02, fit.diagnostics
    # The interaction is zero-sum over levels and over items, so the level effects take the
    # whole row mean of the planted interaction: Black's row averages -1.5 * 3 / 10 = -0.45 and
    # White's 0, so the Black - White gap averaged over items is -1.2 - 0.45 = -1.65. (The old
    # expectation, -1.2 - 0.45 * 3/4 = -1.54, was Black's deviation from the mean of the four
    # race levels, forgetting that White moves too; a 0.3-logit slack on each HDI hid it.)
    truth = -1.2 - 1.5 * 3 / 10
    for model_name in ("m1", "m2", POOLED_MODEL):
        gap = race_contrast(fit.contrasts, model_name, "Black", "White")
        assert gap["decision"] == "different", gap
        assert gap["hdi_high"] < 0 and gap["p_direction"] > 0.99
        # the 94% HDI itself must hold the truth, no slack (per model sd about 0.28, pooled 0.20)
        assert gap["hdi_low"] <= truth <= gap["hdi_high"], gap
        assert gap["p_beyond_noise"] > 0.9
    black_white = fit.item_gaps.filter((pl.col("level_a") == "Black") &
                                       (pl.col("level_b") == "White")).sort("mean")
    assert set(black_white["item"].head(3)) == set(DIF_ITEMS), black_white
    # What makes the truth -1.65 and not -1.54, checked exactly rather than through a 0.2-0.28
    # posterior sd: the pooled level gap IS the item-averaged gap, draw by draw, because the
    # interaction sums to zero over items. An interaction centred over levels only (or a contrast
    # read as a deviation from the mean of the levels) breaks this identity by 0.1 logit or more.
    pooled_gap = race_contrast(fit.contrasts, POOLED_MODEL, "Black", "White")["mean"]
    assert black_white["mean"].mean() == pytest.approx(pooled_gap, abs=1e-9)
    assert (black_white["overall_mean"] - pooled_gap).abs().max() < 1e-9
    # Item gaps themselves: -1.2 on plain items, -2.7 on the three with the planted interaction.
    others = black_white.filter(~pl.col("item").is_in(DIF_ITEMS))
    assert abs(others["mean"].mean() + 1.2) < 0.4, others
    assert black_white.filter(pl.col("item").is_in(DIF_ITEMS))["mean"].max() < -2.0


def test_no_planted_effect_gives_no_demographic_claim():
    outcomes = simulate_audit({}, models=("m1",), items=10, replicates=10, null_count=4, seed=22)
    # With no demographic signal sigma_null and sigma_residual sit near zero, where the chains
    # need a longer warm-up (1000 + 1000 gave R-hat 1.011 on sigma_null) and more draws: at 1500
    # the tail ESS was 342 (< 400) on an Intel AVX-512 host and passed on the AMD one it was
    # written on (the same seed samples other paths on other floating-point code); at 3000 it
    # is 933 on that host, and 1882 and 1732 with seeds 5 and 6.
    # The same seed gave 1 divergent transition of 12,000 on this project's AMD EPYC CI host
    # (fresh clone of 5677307, 2026-12-02; reproducible there, 0 on earlier hosts): near
    # sigma = 0 a rare divergence follows the host's floating point. What this test needs is
    # chains that mix (R-hat, both ESS) and divergences that stay rare (at most 12: 0.1% of the
    # draws), not one lucky path.
    fit = fit_rasch(outcomes, FitConfig(model="explanatory", draws=3000, tune=2000, chains=4,
                                        seed=4, target_accept=0.95))
    mixing = fit.diagnostics
    assert mixing.rhat_max <= mixing.rhat_limit, mixing.problems()
    assert min(mixing.ess_bulk_min, mixing.ess_tail_min) >= mixing.ess_limit, mixing.problems()
    assert mixing.divergences <= 12, mixing.problems()
    assert "different" not in fit.contrasts["decision"].to_list(), fit.contrasts
    assert set(fit.contrasts["attribute"]) == {"gender", "race"}


def test_twopl_recovers_discriminations():
    rng = np.random.default_rng(8)
    respondents, items = 40, 12
    theta = rng.normal(0, 1, respondents)
    theta -= theta.mean()
    b = rng.normal(0, 1, items)
    a = np.exp(rng.normal(0, 0.5, items))
    p = 1 / (1 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))
    y = rng.random((8, respondents, items)) < p[None]
    replicate, person, item = np.indices(y.shape).reshape(3, -1)
    outcomes = pl.DataFrame({"respondent": [f"r{i:02d}" for i in person],
                             "item": [f"i{j:02d}" for j in item],
                             "y": y.reshape(-1).astype(np.int64)})
    fit = fit_rasch(outcomes, FitConfig(model="twopl", draws=1000, tune=1000, chains=4, seed=5,
                                        target_accept=0.9))
    assert fit.diagnostics.converged, fit.diagnostics.problems()
    estimated = parameter_table(fit.summary, "a", "item").sort("item")
    assert np.corrcoef(estimated["mean"].to_numpy(), a)[0, 1] > 0.8
    inside = (estimated["hdi_low"].to_numpy() <= a) & (a <= estimated["hdi_high"].to_numpy())
    assert inside.mean() >= 0.75
