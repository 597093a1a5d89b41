"""A path's rates drawn from its gold Betas conditioned on a better-than-coin labeller, and the
mean and HDI the report gives them."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
from scipy import optimize, stats

from audit.methods.rasch.irt.gold_rates import ConditionedRate, coin_or_worse_mass
from audit.methods.rasch.irt.judge_cut import with_gold_rates
from audit.methods.rasch.irt.judge_error import JudgeConfusion, JudgeCorrection


def _rates(counts: JudgeConfusion):
    return JudgeCorrection(counts.coding, {"judge": counts}).for_cells(np.array(["judge"]))


def test_rate_draws_never_put_a_path_at_or_below_a_coin():
    """Bug caught: a path with no gold answer of a true class (a flat Beta(1, 1) for that rate)
    got draws with sensitivity + specificity <= 1, which reverse the likelihood: on the review's
    12 respondents one imputation of four drew sens 0.156, spec 0.227 and put the lowest
    respondent at theta +2.18 (truth -1.5). Before the fix 19 of 40 draws (no gold at all) and 6
    of 40 (no truly-0 gold answer) were at or below the coin line; now none, and the
    sensitivity still takes one draw per stratum of its conditioned marginal."""
    for counts in (JudgeConfusion("imported", 0, 0, 0, 0), JudgeConfusion("imported", 9, 1, 0, 0)):
        sensitivity, specificity = _rates(counts).rate_draws(40, 5)
        assert (sensitivity + specificity > 1).all(), counts
        marginal = ConditionedRate(*counts.rate_betas())
        strata = np.floor([marginal.cdf(value) * 40 for value in sensitivity[:, 0]]).astype(int)
        assert sorted(strata) == list(range(40))


def test_conditioned_rates_match_the_triangle_in_closed_form():
    """Two flat Betas conditioned on s + p > 1 are uniform on a triangle: each rate has density
    2x, mean 2/3, sd sqrt(1/18), and its 94% HDI is [sqrt(0.06), 1]. Catches a wrong
    normalisation, the truncation on the wrong side, or the unconditioned Beta reported."""
    assert abs(coin_or_worse_mass((1, 1), (1, 1)) - 0.5) < 1e-6
    mean, sd, low, high = ConditionedRate((1, 1), (1, 1)).mean_sd_hdi(0.94)
    assert abs(mean - 2 / 3) < 1e-4 and abs(sd - np.sqrt(1 / 18)) < 1e-4
    assert abs(low - np.sqrt(0.06)) < 1e-3 and high == 1.0


def test_report_gives_each_rate_the_hdi_of_its_gold_posterior():
    """Bug caught: the summary (and the report's judge-rate table) gave each rate the HDI of the
    four imputations' draws, about 75% of its gold posterior: a real run showed sensitivity
    [0.676, 0.963] where Beta(8, 2)'s 94% HDI is [0.581, 0.990]. The specificity's gold here is
    so sure (Beta(201, 1)) that conditioning changes nothing, so the sensitivity's row must be
    Beta(8, 2)'s own mean and shortest 94% interval."""
    rates = _rates(JudgeConfusion("imported", 7, 1, 200, 0))
    pooled = pl.DataFrame({"parameter": ["theta[a]", "judge_sensitivity[judge]"],
                           "mean": [0.1, 0.80], "sd": [1.0, 0.1], "hdi_low": [-1.0, 0.676],
                           "hdi_high": [1.0, 0.963], "r_hat": [1.0, None]})
    summary = with_gold_rates(pooled, rates.rate_summary(0.94))
    assert summary.row(0) == pooled.row(0)
    _, mean, sd, low, high, _ = summary.row(1)

    def width(start: float) -> float:
        return stats.beta.ppf(start + 0.94, 8, 2) - stats.beta.ppf(start, 8, 2)

    start = optimize.minimize_scalar(width, bounds=(0, 0.06), method="bounded",
                                     options={"xatol": 1e-9}).x
    assert abs(mean - 0.8) < 1e-4 and abs(sd - stats.beta.std(8, 2)) < 1e-4
    assert abs(low - stats.beta.ppf(start, 8, 2)) < 1e-3
    assert abs(high - stats.beta.ppf(start + 0.94, 8, 2)) < 1e-3


def test_a_barely_measured_path_is_warned_and_recorded(caplog):
    """Bug caught: a path with no truly-0 gold answer (its specificity a flat Beta(1, 1)) was
    pooled silently. Now the fit warns and diagnostics.json (as_dict) records why."""
    counts = JudgeConfusion("imported", 9, 1, 0, 0)
    with caplog.at_level(logging.WARNING):
        rates = _rates(counts)
    assert "no gold answer is truly 0" in caplog.text
    recorded = rates.correction.as_dict()["weak_gold"]["judge"]
    assert recorded[0] == "no gold answer is truly 0"
    assert "17% probability" in recorded[1]  # P(s + p <= 1) = E[1 - s] for s ~ Beta(10, 2)
    assert JudgeConfusion("imported", 16, 4, 9, 1).weak_gold() == []
