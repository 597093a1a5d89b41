"""The interval a contrast is decided on (stats.intervals.decision_bounds)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.stats.intervals import MIN_DRAWS_OUTSIDE, decision_bounds, hdi_bounds

# An adaptive run's interim look: 1% of alpha 0.05 over three looks, seven contrasts.
INTERIM_MASS = 1 - 0.0005 / 3 / 7
EXACT_Z = float(stats.norm.ppf(1 - (1 - INTERIM_MASS) / 2))  # 4.23


@pytest.mark.parametrize("draws", [1_600, 32_000])
def test_an_unresolvable_mass_is_decided_on_the_same_interval_whatever_the_draws(draws):
    """The sample HDI at 99.998% is the range of the draws: 3.4 sds from the mean with a
    benchmark's 1,600 draws, 4.1 with an audit's 32,000, so an interim decision depended on
    how many draws the fit kept and a fast-fit benchmark measured a laxer rule than the audit's.
    The normal interval is 4.23 sds at both (to the sampling error of the sd)."""
    sample = np.random.default_rng(7).normal(1.0, 0.5, size=draws)
    low, high, kind = decision_bounds(sample, INTERIM_MASS)
    assert kind == "normal"
    assert (1.0 - low) / 0.5 == pytest.approx(EXACT_Z, abs=0.15)
    assert (high - 1.0) / 0.5 == pytest.approx(EXACT_Z, abs=0.15)


def test_a_mass_the_draws_resolve_is_the_sample_hdi():
    """A guard: the fixed design's 1 - 0.05 / 7 on 32,000 draws (228 outside) is ArviZ's HDI, so
    a reviewer can recompute it with arviz.hdi."""
    sample = np.random.default_rng(8).gamma(2.0, size=32_000)  # skewed: HDI != normal interval
    mass = 1 - 0.05 / 7
    assert sample.size * (1 - mass) >= MIN_DRAWS_OUTSIDE
    low, high, kind = decision_bounds(sample, mass)
    assert kind == "hdi" and (low, high) == hdi_bounds(sample, mass)
