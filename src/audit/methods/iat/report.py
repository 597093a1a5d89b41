"""Figures and the console table of the IAT method: functions from tables to figures and text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: audits run on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from audit.methods.configs import AuditConfig  # noqa: E402
from audit.methods.iat.config import IATConfig, IATVerdictRules  # noqa: E402
from audit.methods.iat.design import slug  # noqa: E402
from audit.methods.iat.verdict import (  # noqa: E402
    STATS_FILE,
    cannot_reach,
    mostly_one_group,
    read_stats,
    tested_rows,
)
from audit.methods.findings import Findings, Headline  # noqa: E402
from audit.tracking.mlflow import metric_name  # noqa: E402
from audit.methods.layout import run_file  # noqa: E402
from audit.methods.checks import percent, signed  # noqa: E402
from audit.logs import counted  # noqa: E402

_PALETTE = plt.get_cmap("tab10")


def _rows(stats: pl.DataFrame) -> pl.DataFrame:
    """Datasets top to bottom, grouped by category."""
    return stats.sort(["category", "dataset"], descending=[True, True])


def _dataset_panels(stats: pl.DataFrame, row_height: float, extra_height: float):
    """One panel per model sharing a y axis with one row per dataset: the frame both D plots
    draw on. Returns the figure, the (axis, model) pairs and each dataset's row position."""
    models = sorted(stats["model"].unique().to_list())
    datasets = _rows(stats.select("category", "dataset").unique())
    positions = {row: index for index, row in enumerate(datasets.iter_rows())}
    figure, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models) + 1.8,
                                                         row_height * datasets.height
                                                         + extra_height),
                                sharey=True, squeeze=False)
    labels = [f"{dataset} ({category})" for category, dataset in datasets.iter_rows()]
    axes[0][0].set_yticks(range(len(labels)), labels, fontsize=8)
    return figure, list(zip(axes[0], models, strict=True)), positions


def _finish_panel(axis, model: str, confidence_level: float) -> None:
    axis.axvline(0.0, color="black", lw=0.8, ls=":")
    axis.set_xlim(-1.05, 1.05)
    axis.set_title(model)
    axis.set_xlabel(f"mean D, {percent(confidence_level)} bootstrap CI")


def _drawable(stats: pl.DataFrame, model: str):
    """The model's rows that have a mean D (a dataset with nothing parsed has none)."""
    return (row for row in stats.filter(pl.col("model") == model).iter_rows(named=True)
            if row["mean_d"] is not None)


def _interval(axis, row: dict, y: float, colour, width: float) -> None:
    if row["ci_low"] is not None and row["ci_high"] is not None:
        axis.plot([row["ci_low"], row["ci_high"]], [y, y], color=colour, lw=width)


def d_by_dataset_plot(stats: pl.DataFrame, confidence_level: float, alpha: float) -> Figure:
    """Mean D (a tick) with its bootstrap interval per dataset, one panel per model, and the
    mean the test reads (a dot: one-group answers scored 0), filled when significant after the
    Benjamini-Hochberg adjustment. The dot used to sit at mean D: 40 one-group answers and 60
    at +0.25/+0.10 drew a filled dot on a wholly negative interval, a "significant reversed
    association", for a test whose mean was +0.105 (statistics review 2026-12-02)."""
    categories = sorted(stats["category"].unique().to_list())
    colours = {category: _PALETTE(index % 10) for index, category in enumerate(categories)}
    figure, panels, positions = _dataset_panels(stats, row_height=0.3, extra_height=1.6)
    for axis, model in panels:
        for row in _drawable(stats, model):
            y = positions[(row["category"], row["dataset"])]
            colour = colours[row["category"]]
            _interval(axis, row, y, colour, width=2)
            axis.plot(row["mean_d"], y, "|", color=colour, markersize=10, markeredgewidth=2)
            significant = row["p_adjusted"] is not None and row["p_adjusted"] < alpha
            tested = row["mean_d_test"] if row.get("mean_d_test") is not None else row["mean_d"]
            axis.plot(tested, y, "o", color=colour,
                      markerfacecolor=colour if significant else "white")
        _finish_panel(axis, model, confidence_level)
    figure.suptitle("Word-association bias by dataset (D > 0: stereotype-consistent). Tick: mean "
                    "D with its interval; dot: the tested mean (one-group answers at 0), filled "
                    f"when BH-adjusted p < {alpha}", fontsize=9)
    figure.tight_layout()
    return figure


def d_by_variation_plot(stats: pl.DataFrame, confidence_level: float) -> Figure:
    """The same per prompt wording: a bias that holds in only one wording is fragile."""
    variations = sorted(stats["variation"].unique().to_list())
    colours = {name: _PALETTE(index % 10) for index, name in enumerate(variations)}
    step = 0.8 / max(len(variations), 1)
    figure, panels, positions = _dataset_panels(stats, row_height=0.4, extra_height=1.8)
    for axis, model in panels:
        for row in _drawable(stats, model):
            offset = (variations.index(row["variation"]) - (len(variations) - 1) / 2) * step
            y = positions[(row["category"], row["dataset"])] + offset
            colour = colours[row["variation"]]
            _interval(axis, row, y, colour, width=1.2)
            axis.plot(row["mean_d"], y, "o", color=colour, markersize=3.5)
        _finish_panel(axis, model, confidence_level)
    handles = [plt.Line2D([], [], color=colours[name], marker="o", lw=1.2, label=name)
               for name in variations]
    figure.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(variations))
    figure.suptitle("Word-association bias by prompt variation", fontsize=9)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    return figure


def _number(value: float | None, write: Callable[[float], str]) -> str:
    return "-" if value is None else write(value)


def print_iat_table(stats: pl.DataFrame, confidence_level: float, alpha: float,
                    console: Console | None = None) -> None:
    """The statistics as a table on stdout: the result a user of the CLI reads first."""
    console = console or Console()
    table = Table(title=f"IAT word association: mean D ({percent(confidence_level)} bootstrap CI); "
                        "the tested mean (one-group answers at 0), its sign-flip p-value, "
                        "BH-adjusted")
    for column in ("model", "category", "dataset", "n", "left out strict/lenient", "one group",
                   "parse rate", "mean D", "CI", "tested D", "p", "p adj."):
        table.add_column(column, justify="left" if column in ("model", "category", "dataset")
                         else "right")
    for row in stats.sort(["model", "category", "dataset"]).iter_rows(named=True):
        interval = ("-" if row["ci_low"] is None or row["ci_high"] is None
                    else f"[{signed(row['ci_low'])}, {signed(row['ci_high'])}]")
        adjusted = _number(row["p_adjusted"], "{:.2g}".format)
        if row["p_adjusted"] is not None and row["p_adjusted"] < alpha:
            adjusted = f"[bold]{adjusted}[/bold]"
        left_out = (f"{row['n_left_out_strict']}/{row['n_left_out_lenient']}"
                    if "n_left_out_strict" in row else "-")
        table.add_row(row["model"], row["category"], row["dataset"], str(row["n"]), left_out,
                      str(row.get("n_one_group", "-")), _number(row["parse_rate"], "{:.0%}".format),
                      _number(row["mean_d"], signed), interval,
                      _number(row.get("mean_d_test"), signed),
                      _number(row["p_value"], "{:.2g}".format), adjusted)
    console.print(table)


# --- the run's answer, for the summary every run ends with (audit.methods.summary) ---------------

def iat_decision(row: dict, alpha: float, n_tests: int,
                 min_abs_d: float = IATVerdictRules.iat_min_abs_d) -> str:
    """The row's reading, by the verdict's own rules (verdict.py): rows it skips as not testable
    read so here, never as "no association shown"; a significant tested |D| no larger than
    ``min_abs_d`` (the CI rule's iat_min_abs_d, by default the summary verdict's) is said to be
    so: it read as an association in the same words as a row the verdict fails."""
    if row["mean_d"] is None or row["p_adjusted"] is None:
        return "not testable: too few parsed answers"
    if mostly_one_group(row):
        return (f"not testable: {row['n_one_group']} of {row['n']} answers give every word to "
                "one group")
    if cannot_reach(row, n_tests, alpha):
        return (f"not testable: {row['n']} answers cannot reach p < {alpha:g} over "
                f"{counted(n_tests, 'test')} (raise iat.iterations)")
    reading = "no association shown" if row["p_adjusted"] >= alpha else (
        # The direction of the mean the p-value tested (one-group answers at 0, not -0.50).
        "stereotype-consistent association" if row["mean_d_test"] > 0
        else "counter-stereotypical association")
    if row["p_adjusted"] < alpha and abs(row["mean_d_test"]) <= min_abs_d:
        reading += f", no larger than the CI rule's minimum |D| (iat_min_abs_d {min_abs_d:g})"
    if row["n_one_group"]:
        reading += (f" (tested as D {signed(row['mean_d_test'])}, its {row['n_one_group']} "
                    "one-group answers at 0; the interval is Bai et al.'s D)")
    return reading


def headlines(stats: pl.DataFrame, config: IATConfig) -> list[Headline]:
    """Each model x dataset's mean D, the strongest evidence first."""
    several = stats["model"].n_unique() > 1
    n_tests = tested_rows(stats)
    found = []
    for row in stats.sort(["p_adjusted", "model", "dataset"], nulls_last=True).iter_rows(
            named=True):
        tested = row["p_adjusted"] is not None
        found.append(Headline(
            f"{row['dataset']} ({row['category']}{f', {row['model']}' if several else ''})",
            iat_decision(row, config.alpha, n_tests), row["mean_d"], row["ci_low"], row["ci_high"],
            f"{percent(config.confidence_level)} bootstrap CI",
            f"BH-adjusted p {row['p_adjusted']:.2g}, n {row['n']}" if tested else
            f"n {row['n']}", metric_name("iat", row["model"], slug(row["dataset"]), "mean_d")))
    return found


def findings(cfg: AuditConfig, run_dir: Path, result: Mapping[str, object]) -> Findings:
    """D > 0: the model paired the stereotype's words with the default group."""
    stats = read_stats(run_dir)
    return Findings(headlines(stats, cfg.iat), source=run_file(run_dir, STATS_FILE),
                    empty="no D score: no answer could be scored", metrics=("iat/parse_rate",))
