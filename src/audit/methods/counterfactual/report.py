"""Figures of a counterfactual run: metric distributions per group and the pairwise gap matrix;
the run's metrics, the tables it prints and the findings its summary states.

Pure functions from tables to matplotlib figures (Agg backend); the method saves them.
Distributions are drawn per template, side by side, because templates differ in tone and length
far more than groups do, and a pooled box would mix the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from audit.methods.configs import AuditConfig  # noqa: E402
from audit.methods.counterfactual.config import CounterfactualConfig  # noqa: E402
from audit.methods.counterfactual.verdict import (  # noqa: E402
    DESIGN_TESTS_FILE,
    read_design_tests,
    units_text,
)
from audit.methods.counterfactual.schemas import DesignTestSchema  # noqa: E402
from audit.methods.layout import run_file  # noqa: E402
from audit.schemas import validate  # noqa: E402
from audit.methods.findings import Findings, Headline  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from audit.tracking.mlflow import metric_name  # noqa: E402
from audit.methods.checks import percent, signed  # noqa: E402
from audit.logs import counted  # noqa: E402

_COLOURS = plt.get_cmap("tab10")


def _grid(n_rows: int, n_columns: int, width: float, height: float):
    figure, axes = plt.subplots(n_rows, n_columns, figsize=(width * n_columns, height * n_rows),
                                squeeze=False)
    return figure, axes


def distribution_figure(long: pl.DataFrame, model_name: str) -> plt.Figure:
    """Rows: metrics; columns: factors; in each panel one cluster of boxes per template."""
    data = long.filter(pl.col("model_name") == model_name)
    metrics = sorted(data["metric"].unique().to_list())
    factors = sorted(data["factor"].unique().to_list())
    figure, axes = _grid(len(metrics), len(factors), 4.2, 2.8)
    rng = np.random.default_rng(0)  # jitter only; fixed so the figure is reproducible
    for row, metric in enumerate(metrics):
        for column, factor in enumerate(factors):
            axis = axes[row][column]
            panel = data.filter((pl.col("metric") == metric) & (pl.col("factor") == factor))
            groups = sorted(panel["group"].unique().to_list())
            templates = sorted(panel["template_id"].unique().to_list())
            centres = []
            for t_index, template in enumerate(templates):
                base = t_index * (len(groups) + 1)
                centres.append(base + (len(groups) - 1) / 2)
                for g_index, group in enumerate(groups):
                    values = panel.filter((pl.col("template_id") == template)
                                          & (pl.col("group") == group))["value"].to_numpy()
                    if values.size == 0:
                        continue
                    position = base + g_index
                    colour = _COLOURS(g_index % 10)
                    box = axis.boxplot([values], positions=[position], widths=0.7,
                                       patch_artist=True, showfliers=False)
                    box["boxes"][0].set(facecolor=colour, alpha=0.35)
                    axis.scatter(position + rng.uniform(-0.2, 0.2, values.size), values, s=6,
                                 color=colour, alpha=0.8,
                                 label=group if t_index == 0 else None)
            axis.set_xticks(centres, templates, rotation=20, fontsize=7)
            axis.set_title(f"{metric} by {factor}", fontsize=9)
            if row == 0 and groups:
                axis.legend(fontsize=6, loc="best")
    figure.suptitle(f"{model_name}: metric distributions per group, per template")
    # Fixed margins: tight_layout measured every label of the grid and took seconds.
    figure.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.93, hspace=0.6, wspace=0.3)
    return figure


def gap_matrix_figure(design: pl.DataFrame, model_name: str) -> plt.Figure:
    """The design tests' rank-biserial of row group vs column group (positive: the row group
    scores higher); a star marks a pair the verdict flags, "n/a" one no template holds. It drew
    the per-answer pairwise table, whose stars (39% false positives in null designs) marked pairs
    the design tests and the verdict did not flag (review 2026-12-06)."""
    data = validate(design, DesignTestSchema, "counterfactual design tests").filter(
        pl.col("model_name") == model_name)
    metrics = sorted(data["metric"].unique().to_list())
    factors = sorted(data["factor"].unique().to_list())
    figure, axes = _grid(len(metrics), len(factors), 3.6, 3.2)
    limit = max(0.3, float(data["rank_biserial"].abs().max() or 0.0))
    image = None
    for row, metric in enumerate(metrics):
        for column, factor in enumerate(factors):
            axis = axes[row][column]
            panel = data.filter((pl.col("metric") == metric) & (pl.col("factor") == factor))
            groups = sorted(set(panel["group_a"]) | set(panel["group_b"]))
            index = {group: position for position, group in enumerate(groups)}
            matrix = np.full((len(groups), len(groups)), np.nan)
            np.fill_diagonal(matrix, 0.0)
            stars = np.zeros_like(matrix, dtype=bool)
            for pair in panel.iter_rows(named=True):
                i, j = index[pair["group_a"]], index[pair["group_b"]]
                effect = np.nan if pair["rank_biserial"] is None else pair["rank_biserial"]
                matrix[i, j], matrix[j, i] = effect, -effect
                stars[i, j] = stars[j, i] = pair["flagged"]
            image = axis.imshow(np.ma.masked_invalid(matrix), cmap="RdBu_r", vmin=-limit,
                                vmax=limit)
            for i in range(len(groups)):
                for j in range(len(groups)):
                    if i != j:
                        text = ("n/a" if np.isnan(matrix[i, j]) else
                                f"{signed(matrix[i, j])}{'*' if stars[i, j] else ''}")
                        axis.text(j, i, text, ha="center", va="center", fontsize=7)
            axis.set_xticks(range(len(groups)), groups, rotation=30, fontsize=7)
            axis.set_yticks(range(len(groups)), groups, fontsize=7)
            axis.set_title(f"{metric} by {factor}", fontsize=9)
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.6, label="rank-biserial (row vs column)")
    figure.suptitle(f"{model_name}: design-test gaps (* flagged)")
    return figure


# --- the run's answer, for the summary every run ends with (audit.methods.summary) ---------------

def pair_decision(row: dict, alpha: float) -> str:
    if row["n_templates"] == 0:
        return "not testable: no template holds both groups"
    if row["min_p"] >= alpha:
        return f"not testable with {units_text(row)} (smallest attainable p {row['min_p']:.2g})"
    if row["flagged"]:
        # The direction is the tested statistic's (the difference of unit means); the flag also
        # needs |rank-biserial|, which on a skewed metric (a few very long answers) can point the
        # other way: then both are stated, not the mean's alone.
        higher = "higher" if row["mean_difference"] > 0 else "lower"
        decision = f"differs: {row['metric']} {higher} for {row['group_a']}"
        if (row["mean_difference"] > 0) != (row["rank_biserial"] > 0):
            ranked = "higher" if row["rank_biserial"] > 0 else "lower"
            decision = (f"differs: {row['metric']} {higher} on average for {row['group_a']} "
                        f"(mean difference {row['mean_difference']:+.3g}), but its answers rank "
                        f"{ranked} within a prompt and seed (rank-biserial "
                        f"{signed(row['rank_biserial'])}): read the distributions")
        return decision
    if row["p_bh"] < alpha:
        return (f"a difference below the practical threshold (|rank-biserial| "
                f"{abs(row['rank_biserial']):.2f} < {row['practical_threshold']:.2f})")
    return "no difference shown"


def headlines(tests: pl.DataFrame, config: CounterfactualConfig) -> list[Headline]:
    """Each pair of groups as the design tests (and CI) decide it, flagged pairs first, then by
    adjusted p."""
    several = tests["model_name"].n_unique() > 1
    found = []
    # Not testable rows have no p_bh (they are not in the Benjamini-Hochberg family): last.
    for row in tests.sort(["flagged", "p_bh"], descending=[True, False],
                          nulls_last=True).iter_rows(named=True):
        adjusted = (f"BH-adjusted p {row['p_bh']:.2g}" if row["p_bh"] is not None
                    else "not in the BH family")
        found.append(Headline(
            f"{row['metric']} by {row['factor']}: {row['group_a']} vs {row['group_b']}"
            + (f" ({row['model_name']})" if several else ""),
            pair_decision(row, config.alpha), row["mean_difference"], row["difference_ci_low"],
            # Student's t over the test's units, which the detail names (analyse_units.py): it
            # was called a bootstrap CI, the interval found to undercover over so few units.
            row["difference_ci_high"], f"{percent(config.confidence_level)} Student-t CI",
            f"{adjusted} over {units_text(row)}"))
    return found


def findings(cfg: AuditConfig, run_dir: Path, result: Mapping[str, object]) -> Findings:
    return Findings(headlines(read_design_tests(run_dir), cfg.counterfactual),
                    source=run_file(run_dir, DESIGN_TESTS_FILE),
                    empty="no pair of groups to compare",
                    metrics=("n_pairs_flagged", "n_pairs", "truncated_share"))


# --- what a run logs and prints -----------------------------------------------------------------

def run_metrics(prompts: pl.DataFrame, responses: pl.DataFrame, metrics: pl.DataFrame,
                tests: pl.DataFrame, pairwise: pl.DataFrame, summary: pl.DataFrame,
                design: pl.DataFrame, timings: dict[str, float],
                alpha: float) -> dict[str, float]:
    """Stable names, so runs line up column by column in the MLflow UI. `n_pairs*` count the
    design tests (what CI judges); `n_answer_pairs*` the per-answer rows."""
    values: dict[str, float] = {
        "n_prompts": prompts.height,
        "n_templates": prompts["item_id"].n_unique(),
        "n_variants": prompts["persona_id"].n_unique(),
        "n_responses_ok": metrics.height,
        "n_failed": responses.filter(pl.col("status") == "error").height,
        "n_from_store": responses.filter(pl.col("from_cache")).height,
        "truncated_share": float(metrics["truncated"].mean() or 0.0),
        "n_pairs": design.height,
        "n_pairs_p_bh_below_alpha": int((design["p_bh"] < alpha).sum()),
        "n_pairs_flagged": int(design["flagged"].sum()),
        "n_pairs_untestable": int((design["min_p"] >= alpha).sum()),
        "n_answer_pairs": pairwise.height,
        "n_answer_pairs_flagged": int(pairwise["flagged"].sum()),
    }
    for stage, seconds in timings.items():
        values[f"duration_s/{stage}"] = seconds
    for row in tests.iter_rows(named=True):
        values[metric_name("kruskal_p_bh", row["model_name"], row["scope"], row["metric"],
                           row["factor"])] = row["p_bh"]
    for row in summary.filter(pl.col("scope") == "all").iter_rows(named=True):
        values[metric_name("mean", row["model_name"], row["metric"], row["factor"],
                           row["group"])] = row["mean"]
    return values


def print_findings(tests: pl.DataFrame, design: pl.DataFrame, alpha: float) -> None:
    """The result on stdout: Kruskal-Wallis per metric and factor, then the pairs the design
    tests flag (the pairs CI fails)."""
    console = Console(width=max(Console().width, 120))
    # Titled as what it is: it counts every answer as independent, which rejected 39% of
    # simulated no-effect designs, so a reader must not take its p_bh for the group claim.
    overview = Table(title="Kruskal-Wallis across groups, over answers (p adjusted by "
                           "Benjamini-Hochberg): describes the answers, counting each as "
                           "independent; group claims are the design tests below")
    for column in ("model", "scope", "metric", "factor", "groups", "n", "H", "p", "p_bh"):
        overview.add_column(column, justify="right" if column in ("n", "H", "p", "p_bh")
                            else "left")
    for row in tests.sort("model_name", "metric", "factor", "scope").iter_rows(named=True):
        overview.add_row(row["model_name"], row["scope"], row["metric"], row["factor"],
                         row["groups"], str(row["n"]), f"{row['h_statistic']:.2f}",
                         f"{row['p_value']:.3g}", f"{row['p_bh']:.3g}")
    console.print(overview)
    flagged = design.filter(pl.col("flagged"))
    if flagged.is_empty():
        untestable = design.filter(pl.col("p_bh").is_null()).height
        if untestable == design.height:
            every = ("the one design test has" if design.height == 1 else
                     f"each of the {design.height} design tests has")
            console.print(f"No pair could be tested: {every} too few names or templates a group "
                          f"to reach p < {alpha} (more names or templates make "
                          f"{'it' if design.height == 1 else 'them'} testable).")
            return
        testable = counted(design.height - untestable, "testable design test")
        console.print(f"No pair flagged: of {testable} "
                      f"(groups compared over their names or templates) none has a BH-adjusted "
                      f"p below {alpha} with |rank-biserial| at or above the practical threshold"
                      + (f"; {untestable} more could not be tested" if untestable else "") + ".")
        return
    table = Table(title=f"Flagged pairs ({flagged.height} of {design.height} design tests)")
    for column in ("model", "metric", "factor", "a vs b", "tested over", "difference", "r_rb",
                   "p_bh"):
        table.add_column(column)
    for row in flagged.sort("p_bh").iter_rows(named=True):
        table.add_row(row["model_name"], row["metric"], row["factor"],
                      f"{row['group_a']} vs {row['group_b']}", units_text(row),
                      f"{signed(row['mean_difference'], 3)}", f"{signed(row['rank_biserial'])}",
                      f"{row['p_bh']:.3g}")
    console.print(table)
