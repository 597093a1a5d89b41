"""Plots and the console summary: functions from tables to figures and text, no file I/O."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: audits run on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from audit.irt import parameter_table  # noqa: E402

KIND_COLOURS = {"baseline": "#444444", "explicit": "#1f77b4", "null": "#bbbbbb", "name": "#2ca02c"}


def theta_table(summary: pl.DataFrame, respondents: pl.DataFrame) -> pl.DataFrame:
    """Theta rows joined with what each respondent is (model, persona kind), ranked by mean."""
    return (
        parameter_table(summary, "theta", "respondent_id")
        .join(respondents, on="respondent_id", how="left")
        .sort("mean", descending=True)
    )


def forest_plot(thetas: pl.DataFrame, hdi_prob: float) -> Figure:
    """Posterior favourability by respondent, null personas in grey as the noise floor."""
    ordered = thetas.sort("mean")
    figure, axis = plt.subplots(figsize=(7, 0.32 * ordered.height + 1.4))
    for position, row in enumerate(ordered.iter_rows(named=True)):
        colour = KIND_COLOURS.get(row.get("persona_kind") or "", "#1f77b4")
        axis.plot([row["hdi_low"], row["hdi_high"]], [position, position], color=colour, lw=2)
        axis.plot(row["mean"], position, "o", color=colour)
    axis.set_yticks(range(ordered.height), ordered["respondent_id"].to_list(), fontsize=8)
    axis.axvline(0.0, color="black", lw=0.8, ls=":")
    axis.set_xlabel(f"theta (favourability), posterior mean and {hdi_prob:.0%} HDI")
    axis.set_title("Favourability by respondent (grey: null personas)")
    figure.tight_layout()
    return figure


def item_difficulty_plot(summary: pl.DataFrame, items: pl.DataFrame, hdi_prob: float) -> Figure:
    """Item difficulties b: higher means a favourable answer is harder to get."""
    difficulties = (
        parameter_table(summary, "b", "item_id")
        .join(items.select("item_id", "domain"), on="item_id", how="left")
        .sort(["domain", "mean"])
    )
    domains = sorted(set(difficulties["domain"].drop_nulls().to_list()))
    palette = plt.get_cmap("tab10")
    colours = {domain: palette(index % 10) for index, domain in enumerate(domains)}
    figure, axis = plt.subplots(figsize=(7, 0.28 * difficulties.height + 1.4))
    for position, row in enumerate(difficulties.iter_rows(named=True)):
        colour = colours.get(row["domain"], "#1f77b4")
        axis.plot([row["hdi_low"], row["hdi_high"]], [position, position], color=colour, lw=2)
        axis.plot(row["mean"], position, "s", color=colour)
    axis.set_yticks(range(difficulties.height), difficulties["item_id"].to_list(), fontsize=8)
    axis.set_xlabel(f"b (item difficulty), posterior mean and {hdi_prob:.0%} HDI")
    axis.set_title("Item difficulty by scenario, coloured by domain")
    figure.tight_layout()
    return figure


def label_rates(labels: pl.DataFrame) -> pl.DataFrame:
    """Share of each label per persona kind: unequal refusal or abstention is itself a finding."""
    return (
        labels.group_by(["persona_kind", "label"]).len()
        .with_columns((pl.col("len") / pl.col("len").sum().over("persona_kind")).alias("share"))
        .sort(["persona_kind", "label"])
    )


def print_ranking(thetas: pl.DataFrame, hdi_prob: float, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"Respondents ranked by posterior favourability (theta, {hdi_prob:.0%} HDI)")
    for column in ("rank", "respondent", "persona kind", "theta", "HDI low", "HDI high"):
        table.add_column(column, justify="left" if column in ("respondent", "persona kind")
                         else "right")
    for rank, row in enumerate(thetas.sort("mean", descending=True).iter_rows(named=True), 1):
        table.add_row(str(rank), row["respondent_id"], str(row.get("persona_kind") or ""),
                      f"{row['mean']:+.2f}", f"{row['hdi_low']:+.2f}", f"{row['hdi_high']:+.2f}")
    console.print(table)
