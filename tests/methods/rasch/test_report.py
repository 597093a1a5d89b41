"""The report's tables and figures are built from the fit summary by name, never by position."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
from scipy import stats
from rich.console import Console

from audit.methods.rasch.report.summary import (
    forest_plot,
    item_difficulty_plot,
    label_rate_tests,
    label_rates,
    print_ranking,
    theta_table,
)

SUMMARY = pl.DataFrame({
    "parameter": ["theta[m/a]", "theta[m/b]", "theta[m/null_x]", "b[hiring_01]", "b[lending_01]"],
    "mean": [0.4, -0.3, -0.1, 1.0, -2.0],
    "sd": [0.1] * 5,
    "hdi_low": [0.2, -0.5, -0.3, 0.8, -2.2],
    "hdi_high": [0.6, -0.1, 0.1, 1.2, -1.8],
    "r_hat": [1.0] * 5,
    "ess_bulk": [1000.0] * 5,
})
RESPONDENTS = pl.DataFrame({"respondent_id": ["m/null_x", "m/b", "m/a"],
                            "persona_kind": ["null", "explicit", "explicit"]})


def test_theta_table_ranks_respondents_and_keeps_what_they_are() -> None:
    thetas = theta_table(SUMMARY, RESPONDENTS)
    assert thetas["respondent_id"].to_list() == ["m/a", "m/null_x", "m/b"]
    assert thetas["persona_kind"].to_list() == ["explicit", "null", "explicit"]


def test_the_printed_ranking_lists_every_respondent_in_order() -> None:
    buffer = io.StringIO()
    print_ranking(theta_table(SUMMARY, RESPONDENTS), 0.94, Console(file=buffer, width=120))
    text = buffer.getvalue()
    assert "94% HDI" in text
    assert text.index("m/a") < text.index("m/null_x") < text.index("m/b")
    assert "+0.40" in text and "+0.20" in text and "+0.60" in text


def test_the_printed_ranking_puts_each_bound_under_its_own_heading() -> None:
    """Bug caught: the HDI's bounds swapped columns, so "HDI low" read +0.60 and "HDI high"
    +0.20 for m/a. By hand: theta[m/a] has mean 0.4 and HDI [0.2, 0.6]."""
    buffer = io.StringIO()
    print_ranking(theta_table(SUMMARY, RESPONDENTS), 0.94, Console(file=buffer, width=120))
    lines = buffer.getvalue().splitlines()
    header = next(line for line in lines if "HDI low" in line)
    assert header.index("theta") < header.index("HDI low") < header.index("HDI high")
    row = next(line for line in lines if " m/a " in line)
    assert [cell.strip() for cell in row.split("│")][-4:-1] == ["+0.40", "+0.20", "+0.60"]


def test_an_interval_mass_is_written_as_the_report_writes_it() -> None:
    """Bug caught: the terminal ranking and the figures formatted fit.hdi_prob with ":.0%", so a
    99.5% HDI read "100% HDI" there and "99.5% HDI" in the report."""
    buffer = io.StringIO()
    thetas = theta_table(SUMMARY, RESPONDENTS)
    print_ranking(thetas, 0.995, Console(file=buffer, width=120))
    assert "99.5% HDI" in buffer.getvalue() and "100%" not in buffer.getvalue()
    figure = forest_plot(thetas, 0.995)
    assert "99.5% HDI" in figure.axes[0].get_xlabel()
    plt.close(figure)


def test_one_models_ranking_names_whole_personas_in_80_columns() -> None:
    """Bug caught: the model's name before every respondent cut the names to "woman_id…" in an
    80-column terminal (the default audit, 2026-11-28), so the ranking could not be read; the
    figure's labels carried the same prefix."""
    personas = ["woman_identifying_hispanic", "man_identifying_white", "null_vjimhlsydv"]
    thetas = pl.DataFrame({
        "respondent_id": [f"qwen_coder_0_5b/{name}" for name in personas],
        "model_name": ["qwen_coder_0_5b"] * 3, "persona_id": personas,
        "persona_kind": ["explicit", "explicit", "null"], "mean": [0.5, 0.2, -0.1],
        "hdi_low": [-1.0, -1.2, -1.5], "hdi_high": [2.0, 1.6, 1.3]})
    buffer = io.StringIO()
    print_ranking(thetas, 0.94, Console(file=buffer, width=80))
    text = buffer.getvalue()
    assert "Personas of qwen_coder_0_5b" in text and "qwen_coder_0_5b/" not in text
    assert all(f" {name} " in text for name in personas) and "…" not in text
    figure = forest_plot(thetas, 0.94)
    assert sorted(tick.get_text() for tick in figure.axes[0].get_yticklabels()) == \
        sorted(personas)
    assert "qwen_coder_0_5b" in figure.axes[0].get_title()
    plt.close(figure)
    # Two models: each row keeps its model.
    two = pl.concat([thetas, thetas.with_columns(model_name=pl.lit("other"),
                                                 respondent_id=pl.lit("other/") + pl.col("persona_id"))])
    buffer = io.StringIO()
    print_ranking(two, 0.94, Console(file=buffer, width=120))
    assert "qwen_coder_0_5b/null_vjimhlsydv" in buffer.getvalue()
    assert "other/null_vjimhlsydv" in buffer.getvalue()


def test_figures_have_one_row_per_parameter() -> None:
    forest = forest_plot(theta_table(SUMMARY, RESPONDENTS), 0.94)
    assert [tick.get_text() for tick in forest.axes[0].get_yticklabels()] == ["m/b", "m/null_x",
                                                                             "m/a"]
    items = pl.DataFrame({"item_id": ["hiring_01", "lending_01"], "domain": ["hiring", "lending"]})
    difficulty = item_difficulty_plot(SUMMARY, items, 0.94)
    assert len(difficulty.axes[0].get_yticklabels()) == 2


def _persona_labels(counts: dict[str, tuple[int, int]], label: str = "refusal") -> pl.DataFrame:
    """persona -> (answers with `label`, answers with `favourable`)."""
    rows = [{"model_name": "m", "persona_id": persona, "persona_kind": "explicit", "label": value}
            for persona, (hits, others) in counts.items()
            for value in [label] * hits + ["favourable"] * others]
    return pl.DataFrame(rows)


def test_label_rates_are_per_persona_with_every_label_and_a_jeffreys_interval() -> None:
    rates = label_rates(_persona_labels({"a": (1, 2), "b": (0, 3)}), 0.94)
    assert rates.height == 2 * 5  # every label for every persona, zero counts included
    refusal_a = rates.filter((pl.col("persona_id") == "a") & (pl.col("label") == "refusal")).row(
        0, named=True)
    assert (refusal_a["count"], refusal_a["n"], refusal_a["rate"]) == (1, 3, 1 / 3)
    assert refusal_a["rate_low"] == pytest.approx(stats.beta.ppf(0.03, 1.5, 2.5))
    assert refusal_a["rate_high"] == pytest.approx(stats.beta.ppf(0.97, 1.5, 2.5))
    refusal_b = rates.filter((pl.col("persona_id") == "b") & (pl.col("label") == "refusal"))
    assert refusal_b.select("rate", "rate_low").row(0) == (0.0, 0.0)


def test_label_rate_intervals_have_the_mass_asked_for() -> None:
    """Bug caught: the Jeffreys interval kept a 94% mass whatever mass the report asked for. By
    hand: 1 refusal in 3 answers is Beta(1.5, 2.5) under the Jeffreys prior; its central 80%
    interval runs from the 10th to the 90th percentile."""
    rates = label_rates(_persona_labels({"a": (1, 2), "b": (0, 3)}), 0.80)
    refusal_a = rates.filter((pl.col("persona_id") == "a") & (pl.col("label") == "refusal")).row(
        0, named=True)
    assert refusal_a["rate_low"] == pytest.approx(stats.beta.ppf(0.10, 1.5, 2.5))
    assert refusal_a["rate_high"] == pytest.approx(stats.beta.ppf(0.90, 1.5, 2.5))


def test_answers_whose_judge_failed_are_in_no_label_rate() -> None:
    """A judge request that failed for half of one persona's answers lowered every one of its
    label rates (the failures stayed in the denominator), so equal rates read as unequal."""
    from audit.methods.rasch.schemas import JUDGE_FAILED

    labels = pl.concat([_persona_labels({"a": (2, 8), "b": (1, 4)}),
                        _persona_labels({"b": (5, 0)}, label=JUDGE_FAILED)])
    rates = label_rates(labels, 0.94).filter(pl.col("label") == "favourable")
    assert rates.sort("persona_id").select("n", "rate").rows() == [(10, 0.8), (5, 0.8)]
    assert JUDGE_FAILED not in label_rates(labels, 0.94)["label"].to_list()


def test_equal_rates_are_not_flagged_and_very_unequal_ones_are() -> None:
    equal = label_rate_tests(label_rates(_persona_labels({"a": (10, 30), "b": (10, 30)}), 0.94))
    refusal = equal.filter(pl.col("label") == "refusal").row(0, named=True)
    assert refusal["p_value"] == pytest.approx(1.0) and refusal["method"] == "chi-square"
    unequal = label_rate_tests(label_rates(_persona_labels({"a": (9, 1), "b": (0, 10)}), 0.94))
    refusal = unequal.filter(pl.col("label") == "refusal").row(0, named=True)
    assert refusal["method"] == "permutation" and refusal["p_value"] < 0.01
    never = unequal.filter(pl.col("label") == "needs_more_information").row(0, named=True)
    assert never["p_value"] is None


def test_label_rate_p_values_against_hand_computed_ones() -> None:
    """Bugs caught (test review 2026-12-05), each passing every other test: Yates's correction
    in the chi-square (p 0.041 instead of 0.028 below), and a permutation count that dropped
    the arrangements tying the observed statistic (p 0.0002 for 2 of 5 against 0 of 5).
    By hand: 30/100 against 45/100 expects 37.5 and 62.5 a persona, chi2 = 2 x 7.5^2 / 37.5
    + 2 x 7.5^2 / 62.5 = 4.80, p = 2 (1 - Phi(sqrt 4.8)) = 0.0285 (one degree of freedom).
    2 of 5 against 0 of 5: the two refusals fall in one persona with probability
    2 C(5,2) / C(10,2) = 20/45, and every such split ties the observed statistic."""
    large = label_rate_tests(label_rates(_persona_labels({"a": (30, 70), "b": (45, 55)}), 0.94))
    refusal = large.filter(pl.col("label") == "refusal").row(0, named=True)
    assert refusal["method"] == "chi-square"
    assert (refusal["chi2"], refusal["p_value"]) == pytest.approx((4.80, 0.0285), abs=5e-4)
    small = label_rate_tests(label_rates(_persona_labels({"a": (2, 3), "b": (0, 5)}), 0.94))
    refusal = small.filter(pl.col("label") == "refusal").row(0, named=True)
    assert refusal["method"] == "permutation"
    # 4,999 shuffles: the standard error of the estimate is 0.007.
    assert refusal["p_value"] == pytest.approx(20 / 45, abs=0.025)


def test_a_label_every_answer_has_is_a_constant_rate_not_a_test() -> None:
    """Bug caught: a label every answer of every persona carried (all favourable: a rate of 1
    for both personas, no answer without it) was sent to the chi-square test, whose table has a
    column of zeros, instead of being reported as a constant rate with no p-value."""
    tests = label_rate_tests(label_rates(_persona_labels({"a": (0, 4), "b": (0, 6)}), 0.94))
    favourable = tests.filter(pl.col("label") == "favourable").row(0, named=True)
    assert (favourable["chi2"], favourable["p_value"], favourable["method"]) == (
        None, None, "undefined (rate constant)")


def test_one_personas_rate_is_compared_with_nothing() -> None:
    """Bug caught: a model with one persona got a chi-square p-value of 1 for each label, a test
    of homogeneity across a single row that compares nothing."""
    tests = label_rate_tests(label_rates(_persona_labels({"a": (2, 3)}), 0.94))
    refusal = tests.filter(pl.col("label") == "refusal").row(0, named=True)
    assert (refusal["n_personas"], refusal["p_value"], refusal["method"]) == (
        1, None, "undefined (rate constant)")


def test_a_permutation_p_value_is_never_zero_and_is_drawn_4999_times() -> None:
    """Bugs caught: a count that left out the observed arrangement said p = 0 when no draw
    reached the observed statistic, and fewer draws than the documented 4,999 made the least
    reportable p larger. By hand: one persona's 10 answers all favourable against another's 30
    all refusals is a perfect association, which a draw reaches with probability
    1 / C(40, 10), about 1e-9: no draw reaches it, and p = 1 / (4,999 + 1)."""
    tests = label_rate_tests(label_rates(_persona_labels({"a": (0, 10), "b": (30, 0)}), 0.94))
    refusal = tests.filter(pl.col("label") == "refusal").row(0, named=True)
    assert refusal["method"] == "permutation"
    assert refusal["p_value"] == pytest.approx(1 / 5000)


def test_judge_top_label_share_counts_only_the_judges_labels() -> None:
    from audit.methods.rasch.no_signal import judge_top_label_share

    labels = pl.DataFrame({"label": ["unfavourable"] * 3 + ["favourable"] * 5,
                           "label_source": ["judge"] * 3 + ["judge"] + ["rule"] * 4})
    assert judge_top_label_share(labels) == (0.75, "unfavourable", 4)
    share, top, judged = judge_top_label_share(labels.filter(pl.col("label_source") == "rule"))
    assert judged == 0 and top == "" and share != share  # NaN when the judge labelled nothing


def test_panel_metrics_need_two_judges_and_report_agreement_per_item() -> None:
    from audit.methods.rasch.report.metrics import agreement_by_item, judge_metrics

    prompts = pl.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4"],
                            "item_id": ["i1", "i1", "i2", "i1"]})
    # p4's judge request failed: no reading of the answer, so no (dis)agreement to average.
    labels = pl.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4"],
                           "label": ["favourable", "unparseable", "favourable", "judge_failed"],
                           "label_source": ["judge", "judge", "rule", "judge"],
                           "agreement": [1.0, 0.5, None, 0.5]})
    by_item = agreement_by_item(labels, prompts)
    assert by_item.rows() == [("i1", 2, 0.75)]
    votes = pl.DataFrame({"answer_id": ["p1", "p1", "p2", "p2"], "judge": ["a", "b", "a", "b"],
                          "label": ["favourable", "favourable", "favourable", "unfavourable"],
                          "rationale": [""] * 4})
    metrics = judge_metrics(votes, by_item)
    assert metrics["judge/n_judges"] == 2 and metrics["judge/agreement/i1"] == 0.75
    assert "judge/krippendorff_alpha" in metrics and "judge/fleiss_kappa" in metrics
    assert judge_metrics(votes.filter(pl.col("judge") == "a"), by_item) == {}


def test_audit_metrics_count_answers_labels_and_parameters_by_hand() -> None:
    """Catches audit_metrics counting the wrong source, skipping the judge share or b means."""
    from types import SimpleNamespace

    from audit.methods.rasch.irt import Diagnostics
    from audit.methods.rasch.report.metrics import audit_metrics

    prompts = pl.DataFrame({"respondent_id": ["m/a", "m/a", "m/b", "m/b"],
                            "item_id": ["i1", "i2", "i1", "i2"]})
    responses = pl.DataFrame({"status": ["ok", "ok", "ok", "error"],
                              "from_cache": [True, False, False, False]})
    labels = pl.DataFrame({"label": ["favourable", "refusal", "refusal"],
                           "label_source": ["rule", "judge", "judge"],
                           "decision_mass": [None, 0.9, 0.5],
                           "p_favourable": [None, 0.2, 0.4]})
    fit = SimpleNamespace(summary=SUMMARY, converged=True,
                          diagnostics=Diagnostics(1.003, 900.0, 800.0, 0, 1.01, 400.0))
    metrics = audit_metrics(prompts, responses, labels, fit, {"fit": 12.5})
    assert (metrics["n_prompts"], metrics["n_respondents"], metrics["n_items"]) == (4, 2, 2)
    assert (metrics["n_responses_ok"], metrics["n_failed"], metrics["n_from_store"]) == (3, 1, 1)
    assert metrics["rule_share"] == pytest.approx(1 / 3)
    assert metrics["judge_top_label_share"] == 1.0
    assert metrics["label_count/refusal"] == 2
    assert metrics["label_rate/refusal"] == pytest.approx(2 / 3)
    assert metrics["label_rate/favourable"] == pytest.approx(1 / 3)
    assert metrics["decision_mass_mean"] == pytest.approx(0.7)
    assert metrics["p_favourable_mean"] == pytest.approx(0.3)
    assert metrics["duration_s/fit"] == 12.5 and metrics["converged"] == 1.0
    assert metrics["theta_mean/m/a"] == 0.4 and metrics["b_mean/lending_01"] == -2.0


def test_audit_metrics_log_no_judge_share_when_rules_labelled_everything() -> None:
    """Catches the judge's top-label share logged (as NaN) for a run the judge never read."""
    from types import SimpleNamespace

    from audit.methods.rasch.irt import Diagnostics
    from audit.methods.rasch.report.metrics import audit_metrics

    prompts = pl.DataFrame({"respondent_id": ["m/a"], "item_id": ["i1"]})
    responses = pl.DataFrame({"status": ["ok"], "from_cache": [False]})
    labels = pl.DataFrame({"label": ["favourable"], "label_source": ["rule"],
                           "decision_mass": [None], "p_favourable": [None]},
                          schema_overrides={"decision_mass": pl.Float64,
                                            "p_favourable": pl.Float64})
    fit = SimpleNamespace(summary=SUMMARY, converged=True,
                          diagnostics=Diagnostics(1.003, 900.0, 800.0, 0, 1.01, 400.0))
    metrics = audit_metrics(prompts, responses, labels, fit, {})
    assert "judge_top_label_share" not in metrics and "decision_mass_mean" not in metrics
    assert metrics["rule_share"] == 1.0 and metrics["label_rate/favourable"] == 1.0


def test_panel_kappa_and_alpha_against_hand_computed_values() -> None:
    """Catches judge_metrics logging Krippendorff's alpha under the Fleiss kappa name. By hand:
    two judges agree on one answer and split on the other; Fleiss: P = 0.5, Pe = 0.625,
    kappa = -1/3; Krippendorff (nominal): Do = De = 0.5, alpha = 0."""
    from audit.methods.rasch.report.metrics import judge_metrics

    votes = pl.DataFrame({"answer_id": ["p1", "p1", "p2", "p2"], "judge": ["a", "b", "a", "b"],
                          "label": ["favourable", "favourable", "favourable", "unfavourable"],
                          "rationale": [""] * 4})
    by_item = pl.DataFrame({"item_id": ["i1"], "n_judged": [2], "mean_agreement": [0.75]})
    metrics = judge_metrics(votes, by_item)
    assert metrics["judge/fleiss_kappa"] == pytest.approx(-1 / 3)
    assert metrics["judge/krippendorff_alpha"] == pytest.approx(0.0, abs=1e-12)


def test_agreement_by_item_is_a_mean_sorted_by_item() -> None:
    """Catches per-item agreement taken as a median, or rows left in join order."""
    from audit.methods.rasch.report.metrics import agreement_by_item

    items = ["i9", "i8", "i7", "i6", "i5", "i4", "i3", "i2", "i1", "i1", "i1"]
    prompts = pl.DataFrame({"prompt_id": [f"p{index}" for index in range(11)], "item_id": items})
    labels = pl.DataFrame({"prompt_id": [f"p{index}" for index in range(11)],
                           "label": ["favourable"] * 11, "label_source": ["judge"] * 11,
                           "agreement": [1.0] * 8 + [0.5, 0.5, 1.0]})
    by_item = agreement_by_item(labels, prompts)
    assert by_item["item_id"].to_list() == [f"i{index}" for index in range(1, 10)]
    assert by_item.row(0) == ("i1", 3, pytest.approx(2 / 3))


def test_rate_metrics_log_abstention_and_refusal_rates_and_only_defined_p_values() -> None:
    """Catches rate_metrics logging the wrong labels' rates or a p-value that is undefined."""
    from audit.methods.rasch.report.metrics import rate_metrics

    rates = pl.DataFrame({"model_name": ["m"] * 4, "persona_id": ["a"] * 4,
                          "label": ["favourable", "unfavourable", "needs_more_information",
                                    "refusal"], "rate": [0.4, 0.3, 0.2, 0.1]})
    tests = pl.DataFrame({"model_name": ["m", "m"], "label": ["refusal", "favourable"],
                          "p_value": [0.04, None]})
    assert rate_metrics(rates, tests) == {"label_rate/needs_more_information/m/a": 0.2,
                                          "label_rate/refusal/m/a": 0.1,
                                          "label_rate_p_value/refusal/m": 0.04}


def test_a_second_outcomes_contrasts_are_named_after_it_and_the_first_keeps_its_names() -> None:
    """Catches the outcome prefix put on the configured outcome or after the contrast."""
    from audit.methods.rasch.report.metrics import contrast_metric_names

    contrasts = pl.DataFrame({"model_name": ["m", "m"], "outcome": ["favourable", "abstention"],
                              "attribute": ["race", "race"], "level_a": ["Black", "Black"],
                              "level_b": ["White", "White"]})
    assert contrast_metric_names(contrasts) == ["contrast/race/Black_vs_White",
                                                "contrast/abstention/race/Black_vs_White"]
    two_models = pl.concat([contrasts, contrasts.with_columns(model_name=pl.lit("n"))])
    assert contrast_metric_names(two_models)[1] == "contrast/abstention/m/race/Black_vs_White"


def test_gold_metrics_are_aliased_under_the_judge_names() -> None:
    """Catches judge/accuracy logged from the kappa (or the other way round)."""
    from audit.methods.rasch.report.metrics import gold_alias_metrics

    assert gold_alias_metrics({"gold/cohen_kappa": 0.6, "gold/accuracy": 0.8, "gold/n": 50}) == {
        "judge/kappa": 0.6, "judge/accuracy": 0.8}


def test_the_printed_ranking_counts_ranks_from_one_and_shows_each_kind() -> None:
    """Catches ranks printed from 0 and the kind column left blank."""
    buffer = io.StringIO()
    print_ranking(theta_table(SUMMARY, RESPONDENTS), 0.94, Console(file=buffer, width=120))
    rows = [[cell.strip() for cell in line.split("│")[1:-1]]
            for line in buffer.getvalue().splitlines() if " m/" in line]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("1", "m/a", "explicit"), ("2", "m/null_x", "null"), ("3", "m/b", "explicit")]


def test_theta_table_keeps_a_respondent_missing_from_the_respondents_table() -> None:
    """Catches an inner join that drops a respondent whose kind is unknown."""
    thetas = theta_table(SUMMARY, RESPONDENTS.filter(pl.col("respondent_id") != "m/b"))
    assert thetas["respondent_id"].to_list() == ["m/a", "m/null_x", "m/b"]
    assert thetas["persona_kind"].to_list() == ["explicit", "null", None]


def test_the_difficulty_plot_groups_items_by_domain_then_difficulty() -> None:
    """Catches items sorted by difficulty alone, which scatters a domain's items."""
    summary = pl.DataFrame({"parameter": ["b[h1]", "b[l1]", "b[h2]", "b[l2]"],
                            "mean": [0.0, 1.0, 2.0, -1.0], "sd": [0.1] * 4,
                            "hdi_low": [-0.2, 0.8, 1.8, -1.2], "hdi_high": [0.2, 1.2, 2.2, -0.8]})
    items = pl.DataFrame({"item_id": ["h1", "h2", "l1", "l2"],
                          "domain": ["hiring", "hiring", "lending", "lending"]})
    figure = item_difficulty_plot(summary, items, 0.94)
    ticks = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    plt.close(figure)
    assert ticks == ["h1", "h2", "l2", "l1"]


def test_label_rates_come_ordered_by_model_label_and_persona() -> None:
    """Catches label_rates returning rows in group-by order rather than sorted."""
    labels = _persona_labels({f"p{index}": (index % 2, 1) for index in range(9, 0, -1)})
    rates = label_rates(labels, 0.94)
    assert rates.select("model_name", "label", "persona_id").rows() == sorted(
        rates.select("model_name", "label", "persona_id").rows())
    assert rates["persona_id"].to_list()[:9] == [f"p{index}" for index in range(1, 10)]
