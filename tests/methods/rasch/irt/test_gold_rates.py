"""A path's rates drawn from its gold Betas conditioned on a better-than-coin labeller, and the
mean and HDI the report gives them."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest
from scipy import optimize, stats

from audit.methods.rasch.irt.gold_rates import ConditionedRate, coin_or_worse_mass
from audit.methods.rasch.irt.judge_cut import with_gold_rates
from audit.errors import AuditError
from audit.methods.rasch.irt.judge_error import (
    JudgeConfusion,
    JudgeCorrection,
    check_better_than_coin,
    resolve_confusion,
)
from audit.methods.rasch.simulation import VarianceComponents, judge_rates


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

    assert abs(mean - 0.8) < 1e-4 and abs(sd - stats.beta.std(8, 2)) < 1e-4
    assert (low, high) == pytest.approx(_beta_hdi(8, 2, 0.94), abs=1e-3)


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


def _gold(right: int, wrong: int, path: str = "judge") -> pl.DataFrame:
    """Gold results of one path: per true class, ``right`` read right and ``wrong`` flipped."""
    true = ["favourable"] * (right + wrong) + ["unfavourable"] * (right + wrong)
    judged = (["favourable"] * right + ["unfavourable"] * wrong
              + ["unfavourable"] * right + ["favourable"] * wrong)
    return pl.DataFrame({"true_label": true, "label": judged, "label_source": [path] * len(true)})


def test_gold_of_a_labeller_worse_than_a_coin_is_refused_naming_the_way_out():
    """Bug caught: an inverted label mapping (2 of 52 gold answers right) was corrected anyway:
    the coin-line mass, 1 - V(1), came out -2e-8, every imputation sat on the coin line where the
    labels say nothing, and only a warning was logged. Now one line names the path and the
    setting that reads labels as truth (compare's own option name there)."""
    assert coin_or_worse_mass((1, 51), (1, 51)) == 1.0  # not round-off around it
    with pytest.raises(AuditError, match=r"'judge' labeller is no better than a coin.*"
                       r"pass fit\.judge_error=false"):
        resolve_confusion(None, "population", "favourable", _gold(1, 25))
    with pytest.raises(AuditError, match=r"pass judge_error=false"):
        resolve_confusion(True, "population", "favourable", _gold(1, 25), option="judge_error")
    with pytest.raises(AuditError, match=r"^judge_error=true needs.*or judge_error=false$"):
        resolve_confusion(True, "population", "favourable", None, option="judge_error")
    kept = resolve_confusion(None, "population", "favourable", _gold(20, 5))
    assert kept is not None and set(kept.by_path) == {"judge"}


def test_a_simulated_judge_is_drawn_from_the_distribution_the_fit_corrects_with():
    """Bug caught: planning drew a simulated judge's rates from the unconditioned gold Betas,
    so with little gold about one simulated judge in four (flat Betas: one in two) was no better
    than a coin, a judge the fit's correction rules out. Where the gold is informative the draws
    are the earlier ones, pair for pair (nothing is rejected), so past plans replay."""
    flat = VarianceComponents(gold=JudgeConfusion("favourable", 0, 0, 0, 0))
    rng = np.random.default_rng(3)
    draws = np.array([judge_rates(flat, rng) for _ in range(400)])
    assert (draws.sum(axis=1) > 1).all()
    informative = VarianceComponents(gold=JudgeConfusion("favourable", 24, 1, 23, 2))
    ours, theirs = np.random.default_rng(8), np.random.default_rng(8)
    for _ in range(50):
        assert judge_rates(informative, ours) == (float(theirs.beta(25, 2)),
                                                  float(theirs.beta(24, 3)))


def test_the_specificity_row_is_its_own_gold_posterior():
    """The report's judge-rate table reads each path's specificity from rate_summary. With 200
    truly-0 gold answers all judged right its gold posterior is Beta(201, 1) (conditioning on
    sens + spec > 1 moves it by less than 1e-6 here): mean 201/202, sd sqrt(201 / (202^2 203)),
    and as its density rises to 1 the 94% HDI is [0.06^(1/201), 1]. Bug it catches: the
    sensitivity and specificity Betas swapped for the specificity's row (the only other test
    reads the sensitivity's row), which reports 0.80 for a judge that never erred on a 0."""
    summary = _rates(JudgeConfusion("imported", 7, 1, 200, 0)).rate_summary(0.94)
    mean, sd, low, high = summary["judge_specificity[judge]"]
    assert mean == pytest.approx(201 / 202, abs=1e-5)
    assert sd == pytest.approx(np.sqrt(201 / (202 ** 2 * 203)), abs=1e-5)
    assert low == pytest.approx(0.06 ** (1 / 201), abs=1e-4) and high == pytest.approx(1.0)


def test_the_coin_mass_is_exact_to_nine_places_and_never_negative():
    """Catches the coin-line mass rounded coarser than 1e-9, and the kept mass left uncapped at
    1: with 4999 of 4999 gold answers right per class the trapezoid overshoots 1 by 2e-4, and
    the mass came out negative. By hand: a flat specificity keeps P(p > 1 - s) = s, so the
    coin mass of Beta(10, 2) against Beta(1, 1) is E[1 - s] = 2/12."""
    assert coin_or_worse_mass((10, 2), (1, 1)) == pytest.approx(1 / 6, abs=1e-8)
    assert coin_or_worse_mass((5000, 1), (5000, 1)) == 0.0


def _beta_hdi(a: float, b: float, prob: float) -> tuple[float, float]:
    """The shortest ``prob`` interval of Beta(a, b), by hand (unimodal: the narrowest window)."""
    def width(start: float) -> float:
        return stats.beta.ppf(start + prob, a, b) - stats.beta.ppf(start, a, b)

    start = optimize.minimize_scalar(width, bounds=(0, 1 - prob), method="bounded",
                                     options={"xatol": 1e-10}).x
    return float(stats.beta.ppf(start, a, b)), float(stats.beta.ppf(start + prob, a, b))


def test_against_a_flat_other_rate_the_conditioned_rate_is_the_next_beta():
    """Catches a wrong coin-line integral (the two Betas swapped in it, or the condition
    dropped), unnormalised cell weights, a loose inverse, and a wrong value at u = 0 and 1. By
    hand: the other rate flat gives P(other > 1 - x) = x, so Beta(10, 2) times x is
    Beta(11, 2)."""
    rate = ConditionedRate((10, 2), (1, 1))
    for x in (0.5, 0.7, 0.85, 0.95):
        assert rate.cdf(x) == pytest.approx(stats.beta.cdf(x, 11, 2), abs=1e-6)
    for u in (0.03, 0.5, 0.97):
        assert rate.ppf(u) == pytest.approx(stats.beta.ppf(u, 11, 2), abs=1e-6)
    assert (rate.ppf(0.0), rate.ppf(1.0)) == (0.0, 1.0)
    mean, sd, low, high = rate.mean_sd_hdi(0.94)
    assert mean == pytest.approx(11 / 13, abs=1e-7)
    assert sd == pytest.approx(stats.beta.std(11, 2), abs=1e-7)
    assert (low, high) == pytest.approx(_beta_hdi(11, 2, 0.94), abs=1e-4)


@pytest.mark.parametrize("answers", [100_000, 1_000_000, 10_000_000])
def test_a_judge_measured_on_a_huge_gold_set_is_neither_warned_nor_refused(answers: int):
    """Bug caught: the integrals ran over a grid of rates 1e-5 apart, and the gold Beta of a
    judge wrong on 1 of 100,000 answers per class is 1e-5 wide: the grid missed its peak. Such a
    judge was warned with 8% on the coin line at 100,000 answers and refused as no better than
    a coin at a million. Its rates must be its gold Betas' own (conditioning moves nothing here),
    to within 1e-9 of their means and a tenth of their sd at the interval's ends."""
    counts = JudgeConfusion("imported", answers - 1, 1, answers - 1, 1)
    assert coin_or_worse_mass(*counts.rate_betas()) == 0.0
    assert counts.weak_gold() == []
    check_better_than_coin(JudgeCorrection("imported", {"judge": counts}), "or not")
    a, b = counts.rate_betas()[0]
    beta_sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))  # scipy's std cancels digits here
    mean, sd, low, high = _rates(counts).rate_summary(0.94)["judge_sensitivity[judge]"]
    assert mean == pytest.approx(a / (a + b), abs=1e-9)
    assert sd == pytest.approx(beta_sd, rel=1e-3)
    assert (low, high) == pytest.approx(_beta_hdi(a, b, 0.94), abs=beta_sd / 10)


def test_the_rate_summary_uses_the_interval_mass_asked_for():
    """Catches rate_mean_sd_hdi ignoring its ``prob`` (always 94%). By hand: on the triangle
    (two flat Betas) the density is 2x, so the 50% HDI is [sqrt(0.5), 1]."""
    from audit.methods.rasch.irt.gold_rates import rate_mean_sd_hdi

    _, _, low, high = rate_mean_sd_hdi((1, 1), (1, 1), 0.5)
    assert low == pytest.approx(np.sqrt(0.5), abs=1e-3) and high == 1.0


def test_conditioned_draws_are_the_triangles_rosenblatt_transform():
    """Catches the specificity's stratum turned over (u read as 1 - u). By hand, two flat
    Betas: the sensitivity's conditioned CDF is x^2, so u 0.25 and 0.64 give 0.5 and 0.8; given
    s the specificity is uniform on (1 - s, 1], so v gives 1 - (1 - v) s: 0.625 and 0.6."""
    from audit.methods.rasch.irt.gold_rates import conditioned_draws

    sensitivities, specificities = conditioned_draws((1, 1), (1, 1), np.array([0.25, 0.64]),
                                                     np.array([0.25, 0.5]))
    assert sensitivities == pytest.approx([0.5, 0.8], abs=1e-6)
    assert specificities == pytest.approx([0.625, 0.6], abs=1e-6)


def test_the_coin_warning_is_at_one_percent_and_the_refusal_at_one_half():
    """Catches the warning and refusal thresholds moved up. By hand (coin masses from the
    Betas): 4 of 5 right per class leaves 4% on the coin line, warned; 6 of 7 leaves 0.5%, not
    warned; 2 of 5 right per class leaves 72%, refused."""
    warned = JudgeConfusion("imported", 4, 1, 4, 1).weak_gold()
    assert len(warned) == 1 and "4% probability" in warned[0]
    assert JudgeConfusion("imported", 6, 1, 6, 1).weak_gold() == []
    with pytest.raises(AuditError, match="no better than a coin"):
        resolve_confusion(None, "population", "favourable", _gold(2, 3))


def test_a_coin_mass_in_a_far_tail_is_computed_without_a_warning():
    """Catches quad's IntegrationWarning reaching the user's terminal: where the coin-line mass
    of the gold (here about 2e-6, 4.6 sd out) lies in a far tail, quad cannot meet its 1e-12
    tolerance, and said so in a warning above the fit's own lines."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mass = coin_or_worse_mass((208.0, 141.0), (1997.0, 1770.0))
    assert 0.0 <= mass < 1e-5
