"""The report tells an estimated noise floor from one read off its prior (fast: fake posteriors)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import numpy as np
import pytest
import xarray as xr

from audit.methods.rasch.irt.noise_floor import noise_floor_plot, noise_floor_table

DRAWS = 2000


def _posterior() -> xr.Dataset:
    rng = np.random.default_rng(3)
    # m_prior: sigma_null drawn from its HalfNormal(0.5) prior (the data said nothing);
    # m_data: concentrated near 0.2 (the data pinned it).
    from_prior = np.abs(rng.normal(0.0, 0.5, (2, DRAWS)))
    from_data = np.abs(rng.normal(0.2, 0.04, (2, DRAWS)))
    sigma = np.stack([from_data, from_prior], axis=-1)
    return xr.Dataset(
        {"sigma_null": (("chain", "draw", "model"), sigma),
         "sigma_residual": (("chain", "draw", "model"), sigma[..., ::-1])},
        coords={"model": ["m_data", "m_prior"]})


def test_a_floor_read_off_its_prior_is_flagged_per_model():
    table = noise_floor_table(_posterior(), hdi_prob=0.94)
    null = {row["model_name"]: row for row in
            table.filter(table["parameter"] == "sigma_null").iter_rows(named=True)}
    assert null["m_data"]["estimated"] and null["m_data"]["width_ratio"] < 0.2
    assert not null["m_prior"]["estimated"] and 0.8 < null["m_prior"]["width_ratio"] < 1.2
    # The prior's central 94%: HalfNormal(0.5) quantiles 0.03 and 0.97.
    assert np.isclose(null["m_data"]["prior_low"], 0.5 * 0.0376, atol=1e-3)
    assert np.isclose(null["m_data"]["prior_high"], 0.5 * 2.170, atol=1e-3)
    residual = table.filter(table["parameter"] == "sigma_residual")
    assert residual.filter(residual["model_name"] == "m_prior")["estimated"].item()


def test_fits_without_an_estimated_floor_get_no_table():
    rasch_like = xr.Dataset({"theta": (("chain", "draw", "respondent"), np.zeros((2, 10, 3)))})
    assert noise_floor_table(rasch_like, 0.94).height == 0


def test_the_plot_has_one_panel_per_model():
    figure = noise_floor_plot(_posterior())
    assert [axis.get_title() for axis in figure.axes] == ["sigma_null, m_data",
                                                         "sigma_null, m_prior"]


def test_the_page_says_whether_labels_were_read_through_the_judge():
    template = (Path(__file__).parents[4] / "src/audit/methods/rasch/report/templates/report.html.j2").read_text()
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=True)
    section = template[template.index('<section id="judge-error">'):
                       template.index("</section>", template.index('<section id="judge-error">'))]
    rates = [{"parameter": "judge_sensitivity", "mean": 0.71, "hdi_low": 0.6, "hdi_high": 0.8}]
    corrected = environment.from_string(section).render(judge_rates=rates, hdi_label="94%",
                                                        fit={"judge_imputations": 3}, rule_agreement=None)
    assert "judge_sensitivity" in corrected and "[0.60, 0.80]" in corrected
    assert "ran 3 times" in corrected
    plain = environment.from_string(section).render(judge_rates=None, hdi_label="94%",
                                                    fit={"judge_imputations": 3}, rule_agreement=None)
    assert "read the judge's labels as truth" in plain


def test_the_rule_check_table_shows_the_smallest_p_its_sizes_allow():
    """Bug caught: the table gave only the adjusted p, so a sample that could never reach 0.05
    read like a working alarm; each row now shows the smallest p its sizes allow."""
    template = (Path(__file__).parents[4]
                / "src/audit/methods/rasch/report/templates/report.html.j2").read_text()
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=True)
    section = template[template.index('<section id="judge-error">'):
                       template.index("</section>", template.index('<section id="judge-error">'))]
    row = {"attribute": "gender", "level": "woman", "n": 2.0, "agree": 0.0, "agreement": 0.0,
           "agreement_low": 0.0, "agreement_high": 0.6, "p_adjusted": 0.5, "p_min_adjusted": 1 / 3}
    page = environment.from_string(section).render(
        judge_rates=None, hdi_label="94%", fit={"judge_imputations": 3}, rule_agreement=[row],
        judge={"rule_check_per_group": 2})
    assert "smallest p" in page and "<td class=\"num\">0.333</td>" in page


def test_the_floor_counts_as_estimated_only_below_half_the_prior_width_at_hdi_prob():
    """Bugs caught: the HDI taken at a fixed 94% whatever fit.hdi_prob, and a floor whose HDI
    is 0.65 of its prior's width (barely narrowed) called estimated (a threshold above 0.5).
    sigma_null's prior here is HalfNormal(0.5) (the explanatory model's); its central 50% runs
    from 0.5 z(0.625) to 0.5 z(0.875) (scipy). The posterior: 4000 evenly spaced draws on
    [0, w], whose every 50% interval is 0.5 w wide; w = 1.3 x prior width makes the ratio 0.65."""
    from scipy import stats

    prior_low, prior_high = stats.halfnorm.ppf([0.25, 0.75], scale=0.5)
    width = 1.3 * (prior_high - prior_low)
    draws = np.linspace(0.0, width, 2 * DRAWS).reshape(2, DRAWS, 1)
    posterior = xr.Dataset({"sigma_null": (("chain", "draw", "model"), draws)},
                           coords={"model": ["m"]})
    row = noise_floor_table(posterior, hdi_prob=0.5).row(0, named=True)
    assert row["prior_low"] == pytest.approx(prior_low, abs=0.002)
    assert row["prior_high"] == pytest.approx(prior_high, abs=0.002)
    assert row["hdi_high"] - row["hdi_low"] == pytest.approx(0.5 * width, abs=0.002)
    assert row["width_ratio"] == pytest.approx(0.65, abs=0.005)
    assert row["estimated"] is False


def test_only_sigma_null_read_off_its_prior_flags_a_model():
    """Bug caught: a model whose sigma_null was estimated was flagged as ranked against a prior
    because its sigma_residual (not the noise floor) was not estimated."""
    import polars as pl

    from audit.methods.rasch.irt.noise_floor import floor_from_prior

    table = pl.DataFrame({"model_name": ["a", "a", "b", "b"],
                          "parameter": ["sigma_null", "sigma_residual"] * 2,
                          "estimated": [True, False, False, True]})
    assert floor_from_prior(table) == frozenset({"b"})


def test_a_population_fit_is_compared_with_the_population_models_prior():
    """Bug caught: a population fit's spreads compared with the explanatory model's priors
    (HalfNormal(0.5) for sigma_residual) instead of its own (HalfNormal(1.0), the text spread's
    prior), so the prior interval, the width ratio and the "estimated" flag were another
    model's. The population posterior is told by its sigma_null_log_ratio; at 94% the prior's
    central interval runs from 1.0 z(0.515) to 1.0 z(0.985) (scipy)."""
    from scipy import stats

    draws = np.linspace(0.1, 0.3, 2 * DRAWS).reshape(2, DRAWS, 1)
    posterior = xr.Dataset({"sigma_residual": (("chain", "draw", "model"), draws),
                            "sigma_null_log_ratio": (("chain", "draw"), np.zeros((2, DRAWS)))},
                           coords={"model": ["m"]})
    row = noise_floor_table(posterior, hdi_prob=0.94).row(0, named=True)
    low, high = stats.halfnorm.ppf([0.03, 0.97], scale=1.0)
    assert (row["prior_low"], row["prior_high"]) == pytest.approx((low, high), abs=0.003)


def _even_floor(width_ratio: float) -> dict:
    """noise_floor_table's sigma_null row (50% HDI) for evenly spaced posterior draws whose 50%
    HDI is ``width_ratio`` times the HalfNormal(0.5) prior's central 50% interval."""
    from scipy import stats

    prior_low, prior_high = stats.halfnorm.ppf([0.25, 0.75], scale=0.5)
    width = 2.0 * width_ratio * (prior_high - prior_low)
    draws = np.linspace(0.0, width, 2 * DRAWS).reshape(2, DRAWS, 1)
    posterior = xr.Dataset({"sigma_null": (("chain", "draw", "model"), draws)},
                           coords={"model": ["m"]})
    return noise_floor_table(posterior, hdi_prob=0.5).row(0, named=True)


def test_a_floor_just_under_half_the_prior_width_is_estimated_and_just_over_is_not():
    """Catches: ESTIMATED_WIDTH_RATIO 0.5 made 0.4 or 0.6 (ratios 0.45 and 0.55 by hand)."""
    narrower, wider = _even_floor(0.45), _even_floor(0.55)
    assert narrower["width_ratio"] == pytest.approx(0.45, abs=0.005)
    assert wider["width_ratio"] == pytest.approx(0.55, abs=0.005)
    assert narrower["estimated"] is True and wider["estimated"] is False


def test_a_spread_without_a_model_dimension_gets_no_row():
    """Catches: the `"model" not in dims` condition dropped (a floor shared by every model has
    no per-model row to show)."""
    shared = xr.Dataset({"sigma_null": (("chain", "draw"), np.full((2, DRAWS), 0.3))})
    assert noise_floor_table(shared, 0.94).height == 0


def test_the_table_mean_is_the_posterior_mean():
    """Catches: the mean column filled with the draws' median. Draws u^2, u evenly spaced on
    [0, 1]: mean 1/3, median 1/4."""
    draws = (np.linspace(0.0, 1.0, 2 * DRAWS) ** 2).reshape(2, DRAWS, 1)
    posterior = xr.Dataset({"sigma_null": (("chain", "draw", "model"), draws)},
                           coords={"model": ["m"]})
    assert noise_floor_table(posterior, 0.94)["mean"].item() == pytest.approx(1 / 3, abs=1e-3)


def _bars(axis) -> list:
    from matplotlib.patches import Rectangle

    return [patch for patch in axis.patches if isinstance(patch, Rectangle)]


def test_each_panel_shows_its_own_models_posterior_over_the_priors_99_percent_range():
    """Catches: every panel drawn from the first model's draws, the range cut at the prior's
    median instead of its 99% quantile (HalfNormal(0.5): 0.5 z(0.995) = 1.288), and the
    legend's "prior" label. m_data's draws sit near 0.2, m_prior's pile up at 0."""
    figure = noise_floor_plot(_posterior())
    peaks = []
    for axis in figure.axes:
        bars = _bars(axis)
        assert bars[-1].get_x() + bars[-1].get_width() == pytest.approx(1.288, abs=0.003)
        tallest = max(bars, key=lambda bar: bar.get_height())
        peaks.append(tallest.get_x() + tallest.get_width() / 2)
        assert [text.get_text() for text in axis.get_legend().get_texts()] == ["posterior",
                                                                              "prior"]
    assert peaks[0] == pytest.approx(0.2, abs=0.05) and peaks[1] < 0.1


def test_a_population_fits_plot_uses_its_sigma_null_prior():
    """Catches: the plot's prior drawn for sigma_residual. The population model's sigma_null is
    HalfNormal(1.0) times LogNormal(0, 0.5), whose 99% quantile (about 4.3, by simulation here)
    is well past the text spread's own 2.576."""
    rng = np.random.default_rng(11)
    size = 400_000
    draws = np.abs(rng.normal(0.0, 1.0, size)) * np.exp(rng.normal(0.0, 0.5, size))
    expected = np.quantile(draws, 0.99)
    posterior = xr.Dataset({"sigma_null": (("chain", "draw", "model"),
                                           np.full((2, DRAWS, 1), 0.3)),
                            "sigma_null_log_ratio": (("chain", "draw"), np.zeros((2, DRAWS)))},
                           coords={"model": ["m"]})
    bars = _bars(noise_floor_plot(posterior).axes[0])
    assert bars[-1].get_x() + bars[-1].get_width() == pytest.approx(expected, abs=0.1)
