"""The report's tables and figures are built from the fit summary by name, never by position."""

from __future__ import annotations

import io

import polars as pl
from rich.console import Console

from audit.report import forest_plot, item_difficulty_plot, label_rates, print_ranking, theta_table

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


def test_figures_have_one_row_per_parameter() -> None:
    forest = forest_plot(theta_table(SUMMARY, RESPONDENTS), 0.94)
    assert [tick.get_text() for tick in forest.axes[0].get_yticklabels()] == ["m/b", "m/null_x",
                                                                             "m/a"]
    items = pl.DataFrame({"item_id": ["hiring_01", "lending_01"], "domain": ["hiring", "lending"]})
    difficulty = item_difficulty_plot(SUMMARY, items, 0.94)
    assert len(difficulty.axes[0].get_yticklabels()) == 2


def test_label_rates_are_shares_within_each_persona_kind() -> None:
    labels = pl.DataFrame({"persona_kind": ["null", "null", "explicit", "explicit", "explicit"],
                           "label": ["refusal", "favourable", "favourable", "favourable",
                                     "refusal"]})
    rates = label_rates(labels)
    explicit = dict(rates.filter(pl.col("persona_kind") == "explicit")
                    .select("label", "share").iter_rows())
    assert explicit == {"favourable": 2 / 3, "refusal": 1 / 3}


def test_judge_top_label_share_counts_only_the_judges_labels() -> None:
    from audit.publish import judge_top_label_share

    labels = pl.DataFrame({"label": ["unfavourable"] * 3 + ["favourable"] * 5,
                           "label_source": ["judge"] * 3 + ["judge"] + ["rule"] * 4})
    assert judge_top_label_share(labels) == (0.75, "unfavourable", 4)
    share, top, judged = judge_top_label_share(labels.filter(pl.col("label_source") == "rule"))
    assert judged == 0 and top == "" and share != share  # NaN when the judge labelled nothing
