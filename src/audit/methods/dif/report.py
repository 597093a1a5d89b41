"""DIF figures: functions from the result tables to matplotlib figures (no file I/O but `save`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: audits run on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from audit.methods.configs import AuditConfig  # noqa: E402
from audit.tables import RUN_UNFINISHED, read_table  # noqa: E402
from audit.methods.dif.analyse import ALL_DATASETS, DIFResults  # noqa: E402
from audit.methods.dif.config import DIFVerdictRules  # noqa: E402
from audit.methods.dif.schemas import DIFTestSchema  # noqa: E402
from audit.methods.dif.verdict import TESTS_FILE  # noqa: E402
from audit.methods.findings import Findings, Headline  # noqa: E402
from audit.tracking.mlflow import metric_name  # noqa: E402
from audit.methods.layout import run_file  # noqa: E402
from audit.methods.checks import percent  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

CATEGORY_COLOURS = {"baseline": "#000000", "race": "#1f77b4", "religion": "#ff7f0e",
                    "gender": "#2ca02c", "sexuality": "#d62728", "disability": "#9467bd",
                    "null": "#b0b0b0"}
KIND_ORDER = {"baseline": 0, "real": 1, "null": 2}


def _overall(table: pl.DataFrame) -> pl.DataFrame:
    """The pooled rows when there are several datasets, else the one dataset's rows."""
    if (table["dataset"] == ALL_DATASETS).any():
        return table.filter(pl.col("dataset") == ALL_DATASETS)
    return table


def accuracy_plot(personas: pl.DataFrame, interval_prob: float) -> Figure:
    """Accuracy under each persona with its interval; the dashed line is the baseline."""
    table = _overall(personas).filter(pl.col("accuracy").is_not_null())
    models = sorted(table["model_name"].unique().to_list()) or ["(none)"]
    height = 0.2 * max(table.group_by("model_name").len()["len"].max() or 1, 1) + 1.5
    figure, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), height), squeeze=False)
    for axis, model in zip(axes[0], models):
        part = table.filter(pl.col("model_name") == model).with_columns(
            order=pl.col("persona_kind").replace_strict(KIND_ORDER, default=3)
        ).sort(["order", "persona_category", "persona_id"], descending=[True, True, True])
        for position, row in enumerate(part.iter_rows(named=True)):
            colour = CATEGORY_COLOURS.get(row["persona_category"], "#17becf")
            axis.plot([row["accuracy_low"], row["accuracy_high"]], [position, position],
                      color=colour, lw=1.6)
            axis.plot(row["accuracy"], position, "o", color=colour, ms=4)
            if row["persona_kind"] == "baseline":
                axis.axvline(row["accuracy"], color="black", lw=0.8, ls="--")
        axis.set_yticks(range(part.height), part["persona_id"].to_list(), fontsize=7)
        axis.set_xlim(-0.02, 1.02)
        axis.set_xlabel(f"accuracy with {percent(interval_prob)} Jeffreys interval")
        axis.set_title(f"{model}: accuracy by persona", fontsize=10)
    handles = [plt.Line2D([], [], color=colour, marker="o", lw=1.6, label=name)
               for name, colour in CATEGORY_COLOURS.items()]
    figure.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7,
                  frameon=False)
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    return figure


def null_vs_real_plot(personas: pl.DataFrame, tests: pl.DataFrame) -> Figure:
    """DIF scores of real and null personas (1 = persona changed no answer); hollow markers
    rest on a small intersection. The tests ask whether real scores sit lower."""
    cells = tests.select("model_name", "dataset").rows()
    figure, axes = plt.subplots(1, max(len(cells), 1), figsize=(2.8 * max(len(cells), 1), 4),
                                squeeze=False, sharey=True)
    rng = np.random.default_rng(0)  # jitter only; fixed so the figure is reproducible
    for axis, (model, dataset) in zip(axes[0], cells):
        part = personas.filter((pl.col("model_name") == model) & (pl.col("dataset") == dataset))
        for position, kind in enumerate(("real", "null")):
            scores = part.filter((pl.col("persona_kind") == kind)
                                 & pl.col("dif_score").is_not_null()
                                 & pl.col("dif_score").is_not_nan())
            x = position + rng.uniform(-0.15, 0.15, scores.height)
            colours = [CATEGORY_COLOURS.get(category, "#17becf")
                       for category in scores["persona_category"].to_list()]
            small = scores["small_intersection"].to_numpy().astype(bool)
            y = scores["dif_score"].to_numpy()
            axis.scatter(x[~small], y[~small], c=[c for c, s in zip(colours, small) if not s], s=18)
            axis.scatter(x[small], y[small], facecolors="none",
                         edgecolors=[c for c, s in zip(colours, small) if s], s=18)
            if scores.height:
                axis.hlines(y.mean(), position - 0.3, position + 0.3, color="black", lw=1.5)
        test = tests.filter((pl.col("model_name") == model)
                            & (pl.col("dataset") == dataset)).row(0, named=True)
        axis.set_xticks([0, 1], ["real", "null"])
        axis.set_xlim(-0.6, 1.6)
        axis.set_title(f"{model} / {dataset}\nWelch p={_p(test['p_welch'])}, "
                       f"perm. p={_p(test['p_permutation'])}", fontsize=8)
    axes[0][0].set_ylabel("DIF score |C_i and C_b| / |C_i or C_b|")
    figure.text(0.5, 0.01, "bar: mean; hollow: fewer than dif.min_intersection items correct "
                "under both persona and baseline", ha="center", fontsize=7, color="#555555")
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    return figure


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def accuracy_vs_bias_plot(models: pl.DataFrame, across: pl.DataFrame) -> Figure:
    """Across models: accuracy against the mean DIF score of the real personas, with the
    least-squares line and R^2 when at least three models were audited."""
    figure, axis = plt.subplots(figsize=(5.5, 4.2))
    table = _overall(models)
    datasets = sorted(table["dataset"].unique().to_list())
    palette = plt.get_cmap("tab10")
    for index, dataset in enumerate(datasets):
        part = table.filter(pl.col("dataset") == dataset)
        colour = palette(index % 10)
        x, y = part["accuracy"].to_numpy(), part["mean_dif_real"].to_numpy().astype(float)
        errors = np.vstack([x - part["accuracy_low"].to_numpy(),
                            part["accuracy_high"].to_numpy() - x])
        axis.errorbar(x, y, xerr=errors, fmt="o", color=colour, capsize=3, label=dataset)
        for model, xi, yi in zip(part["model_name"].to_list(), x, y):
            axis.annotate(model, (xi, yi), fontsize=7, xytext=(4, 4), textcoords="offset points")
        fit = across.filter(pl.col("dataset") == dataset)
        if fit.height and fit["slope"][0] is not None:
            line = np.linspace(0, 1, 50)
            axis.plot(line, fit["intercept"][0] + fit["slope"][0] * line, color=colour, lw=1,
                      label=f"fit: slope {fit['slope'][0]:.2f}, R^2 {fit['r_squared'][0]:.2f}")
    if across["slope"].is_null().all():
        axis.text(0.5, 0.04, "no line: fitting needs three models or more", ha="center",
                  transform=axis.transAxes, fontsize=8, color="#555555")
    axis.set_xlim(-0.02, 1.02)
    axis.set_ylim(-0.02, 1.05)
    axis.set_xlabel("accuracy (all personas), with interval")
    axis.set_ylabel("mean DIF score of real personas (1 = no bias)")
    axis.set_title("Accuracy against bias across models", fontsize=10)
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


# --- the table printed at the end of the analyse stage -----------------------------------------

def print_summary(results: DIFResults, console: Console | None = None) -> None:
    table = Table(title="DIF: accuracy and bias (DIF score: 1 = persona changes nothing)")
    for column in ("model", "dataset", "accuracy", "baseline", "DIF real", "DIF null",
                   "p Welch", "p perm.", "claim"):
        table.add_column(column)
    tests = {(row["model_name"], row["dataset"]): row
             for row in results.tests.iter_rows(named=True)}

    def fmt(value: float | None) -> str:
        return "-" if value is None or value != value else f"{value:.3f}"

    for row in results.models.iter_rows(named=True):
        test = tests.get((row["model_name"], row["dataset"]), {})
        table.add_row(row["model_name"], row["dataset"],
                      f"{fmt(row['accuracy'])} [{fmt(row['accuracy_low'])}, "
                      f"{fmt(row['accuracy_high'])}]", fmt(row["baseline_accuracy"]),
                      fmt(row["mean_dif_real"]), fmt(row["mean_dif_null"]),
                      fmt(test.get("p_welch")), fmt(test.get("p_permutation")),
                      "yes" if test.get("claim") else "no")
    (console or Console()).print(table)


# --- the run's answer, for the summary every run ends with (audit.methods.summary) ---------------

def headlines(tests: pl.DataFrame,
              min_score_gap: float = DIFVerdictRules.dif_min_score_gap) -> list[Headline]:
    """Per model x dataset: do real personas change answers more than random strings do? The
    estimate is the mean DIF score of null minus real personas (positive: real personas keep
    fewer of the baseline's answers). A significant difference below ``min_score_gap`` (the CI
    rule's dif_min_score_gap; by default the summary verdict's) is said to be below it: the
    headline claimed it on significance alone, beside a verdict that passed it as too small."""
    several = tests["model_name"].n_unique() > 1
    found = []
    for row in tests.sort(["p_claim_holm", "model_name", "dataset"], nulls_last=True).iter_rows(
            named=True):
        testable = row["p_claim_holm"] is not None and row["difference"] is not None
        decision = ("not testable: too few personas scored, or no variation" if not testable
                    else "no evidence that real personas change answers more than random "
                         "strings do"
                    if not row["claim"]
                    else "real personas change answers more than random strings do"
                    if row["difference"] >= min_score_gap
                    else f"real personas change answers more than random strings do, by less "
                         f"than the CI rule's minimum (dif_min_score_gap {min_score_gap:g})")
        found.append(Headline(
            f"{row['dataset']}: DIF score, null minus real personas"
            + (f" ({row['model_name']})" if several else ""),
            decision, row["difference"] if testable else None,
            detail=(f"Holm-adjusted p {row['p_claim_holm']:.2g}; " if testable else "")
            + f"{row['n_real']} real, {row['n_null']} null personas",
            metric=metric_name("mean_dif_real", row["model_name"], row["dataset"])))
    return found


def findings(cfg: AuditConfig, run_dir: Path, result: Mapping[str, object]) -> Findings:
    tests = read_table(run_file(run_dir, TESTS_FILE), DIFTestSchema, "DIF real-vs-null tests",
                       RUN_UNFINISHED, nan_as_null=True)
    cells = tests.select("model_name", "dataset").rows()
    return Findings(headlines(tests), source=run_file(run_dir, TESTS_FILE),
                    empty="no real-vs-null test: no persona was scored",
                    metrics=[metric_name(key, model, dataset) for key in ("claim", "accuracy")
                             for model, dataset in cells])
