"""Plots and the console summary: functions from tables to figures and text, no file I/O."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: audits run on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from scipy import stats  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from audit.stats.intervals import jeffreys_interval  # noqa: E402
from audit.methods.rasch.irt import parameter_table  # noqa: E402
from audit.methods.rasch.report.reading import respondent_names  # noqa: E402
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE  # noqa: E402
from audit.methods.checks import percent, signed  # noqa: E402

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
    names, model = respondent_names(ordered)
    figure, axis = plt.subplots(figsize=(7, 0.32 * ordered.height + 1.4))
    for position, row in enumerate(ordered.iter_rows(named=True)):
        colour = KIND_COLOURS.get(row.get("persona_kind") or "", "#1f77b4")
        axis.plot([row["hdi_low"], row["hdi_high"]], [position, position], color=colour, lw=2)
        axis.plot(row["mean"], position, "o", color=colour)
    axis.set_yticks(range(ordered.height), names, fontsize=8)
    axis.axvline(0.0, color="black", lw=0.8, ls=":")
    axis.set_xlabel(f"theta (favourability), posterior mean and {percent(hdi_prob)} HDI")
    axis.set_title(f"{model}: favourability by persona (grey: null personas)" if model
                   else "Favourability by respondent (grey: null personas)", fontsize=10)
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
    axis.set_xlabel(f"b (item difficulty), posterior mean and {percent(hdi_prob)} HDI")
    axis.set_title("Item difficulty by scenario, coloured by domain")
    figure.tight_layout()
    return figure


RATE_KEYS = ["model_name", "persona_id", "persona_kind"]


def label_rates(labels: pl.DataFrame, interval_prob: float) -> pl.DataFrame:
    """Each label's rate per respondent (model x persona) with a Jeffreys interval. `labels`
    carries the RATE_KEYS columns joined from the prompts. An answer whose judge request failed
    was never read, so it is in no label's denominator: failures that follow some personas'
    answers (long ones timing out) would otherwise show as a persona's rates differing."""
    labels = labels.filter(pl.col("label") != JUDGE_FAILED)
    counts = labels.group_by([*RATE_KEYS, "label"]).len("count")
    totals = labels.group_by(RATE_KEYS).len("n")
    grid = totals.join(pl.DataFrame({"label": [*LABELS, UNPARSEABLE]}), how="cross")
    table = (grid.join(counts, on=[*RATE_KEYS, "label"], how="left")
             .with_columns(pl.col("count").fill_null(0))
             .with_columns(rate=pl.col("count") / pl.col("n")))
    low, high = jeffreys_interval(table["count"].to_numpy(), table["n"].to_numpy(), interval_prob)
    return (table.with_columns(rate_low=pl.Series(low), rate_high=pl.Series(high))
            .sort(["model_name", "label", "persona_id"]))


LABEL_RATE_RESAMPLES = 4999
LABEL_RATE_SEED = 20251123


def label_rate_tests(rates: pl.DataFrame) -> pl.DataFrame:
    """Does a label's rate differ between one model's personas? A chi-square test of homogeneity
    on the personas x (label, not label) table, per model (models differ for reasons of their
    own). With few answers per persona the chi-square approximation is rough, so the p-value
    comes from the statistic's permutation distribution when any expected count is below 5:
    SciPy's Monte Carlo draws of tables with the observed margins, which is shuffling the
    answers' labels between personas while each keeps its number of answers."""
    rows = []
    for (model_name, label), subset in rates.group_by(["model_name", "label"], maintain_order=True):
        subset = subset.sort("persona_id")
        hits = subset["count"].to_numpy()
        table = np.stack([hits, subset["n"].to_numpy() - hits], axis=1)
        row = {"model_name": model_name, "label": label, "n_personas": subset.height,
               "chi2": None, "p_value": None, "method": "undefined (rate constant)"}
        if subset.height >= 2 and (table.sum(axis=0) > 0).all():
            result = stats.chi2_contingency(table, correction=False)
            row.update(chi2=float(result.statistic), p_value=float(result.pvalue),
                       method="chi-square")
            if (result.expected_freq < 5).any():
                drawn = stats.MonteCarloMethod(n_resamples=LABEL_RATE_RESAMPLES,
                                               rng=np.random.default_rng(LABEL_RATE_SEED))
                result = stats.chi2_contingency(table, correction=False, method=drawn)
                row.update(p_value=float(result.pvalue), method="permutation")
        rows.append(row)
    return pl.DataFrame(rows, schema={"model_name": pl.Utf8, "label": pl.Utf8,
                                      "n_personas": pl.Int64, "chi2": pl.Float64,
                                      "p_value": pl.Float64, "method": pl.Utf8})


def print_ranking(thetas: pl.DataFrame, hdi_prob: float, console: Console | None = None) -> None:
    """The ranking on stdout; the run's answer (a no-signal headline first, when there is one)
    follows it in the summary every run ends with (audit.methods.summary). Names as
    respondent_names gives them, never cut."""
    console = console or Console()
    ranked = thetas.sort("mean", descending=True)
    names, model = respondent_names(ranked)
    who = f"Personas of {model}" if model else "Respondents ranked"
    title = f"{who} by posterior favourability (theta, {percent(hdi_prob)} HDI)"
    table = Table(title=title, min_width=len(title))  # a title wider than the table wraps
    for column in ("rank", "persona" if model else "respondent", "kind", "theta", "HDI low",
                   "HDI high"):
        text = column in ("persona", "respondent", "kind")
        table.add_column(column, justify="left" if text else "right",
                         overflow="fold" if text else "ellipsis")
    for rank, (name, row) in enumerate(zip(names, ranked.iter_rows(named=True)), 1):
        table.add_row(str(rank), name, str(row.get("persona_kind") or ""),
                      signed(row["mean"]), signed(row["hdi_low"]), signed(row["hdi_high"]))
    console.print(table)
