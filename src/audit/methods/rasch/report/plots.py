"""The report's figures beyond the ranking: pure functions from tables (or a posterior) to figures.

Contrasts with their region of practical equivalence, the Wright map, favourable rates per
respondent and item, the label distribution, and ArviZ trace and rank plots of the parameters
that converged worst (where a sampling problem shows first).
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")  # headless: audits run on servers and in CI

import arviz as az  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import xarray as xr  # noqa: E402
from scipy import optimize  # noqa: E402
from xarray import DataTree  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from audit.methods.rasch.irt import parameter_table  # noqa: E402
from audit.methods.rasch.irt.diagnostics import checked  # noqa: E402
from audit.methods.rasch.irt.judge_cut import imputation_chains  # noqa: E402
from audit.methods.checks import percent  # noqa: E402
from audit.methods.rasch.verdict import family_interval, interval_word  # noqa: E402
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE  # noqa: E402

LABEL_COLOURS = {"favourable": "#2ca02c", "unfavourable": "#d62728",
                 "needs_more_information": "#ff7f0e", "refusal": "#9467bd", UNPARSEABLE: "#bbbbbb"}
_INDEXED = re.compile(r"^(?P<name>[^\[]+)\[(?P<labels>.*)\]$")


def contrast_label(row: dict, with_model: bool) -> str:
    text = f"{row['attribute']}: {row['level_a']} vs {row['level_b']}"
    return f"{row['model_name']} | {text}" if with_model else text


# A contrast's colour is its decision: the 94% HDI alone coloured a contrast red when it cleared
# the ROPE, also under an `undecided` family-wise decision (the embedded default's Hispanic vs
# White, 2026-11-28: 94% HDI -3.89 to -0.33, decided on the 99.29% HDI -4.92 to +0.46).
DECISION_COLOURS = {"different": "#d62728", "equivalent": "#2ca02c", "undecided": "#1f77b4"}


def decision_forest(rows: list[dict], labels: list[str], hdi_prob: float, *, estimate: str,
                    title: str, xlabel: str) -> Figure:
    """Rows (top to bottom) with an estimate, its HDI (thick), the HDI it was decided on where
    that is another (family-wise: thin, drawn on top, since with fit.familywise_alpha above 0.06
    and one contrast it is the narrower), over the ROPE, coloured by decision: a run's contrasts
    and compare's changes alike (rows carry hdi_*, decision*, rope_low and rope_high)."""
    figure, axis = plt.subplots(figsize=(7.5, 0.42 * len(rows) + 2.0))
    family_masses = set()
    for position, row in enumerate(reversed(rows)):
        if row.get("rope_low") is not None and row.get("rope_high") is not None:
            axis.fill_betweenx([position - 0.4, position + 0.4], row["rope_low"],
                               row["rope_high"], color="#dddddd", lw=0)
        colour = DECISION_COLOURS[row["decision"]]
        axis.plot([row["hdi_low"], row["hdi_high"]], [position, position], color=colour, lw=3.5,
                  solid_capstyle="butt", alpha=0.6)
        family = family_interval(row, hdi_prob)
        if family is not None:
            family_masses.add(f"{percent(family[0])} {interval_word(row)}")
            axis.plot([family[1], family[2]], [position, position], color=colour, lw=1.2)
        axis.plot(row[estimate], position, "o", color="white", markeredgecolor=colour)
    axis.set_yticks(range(len(rows)), list(reversed(labels)), fontsize=8)
    axis.axvline(0.0, color="black", lw=0.8, ls=":")
    axis.set_xlabel(xlabel)
    axis.set_title(title)
    handles = [Line2D([], [], color="grey", lw=3.5, label=f"{percent(hdi_prob)} HDI")]
    if family_masses:  # one mass a family; families of other sizes are named together
        mass = family_masses.pop() if len(family_masses) == 1 else "family-wise interval"
        handles.append(Line2D([], [], color="grey", lw=1.2, label=f"decided on: {mass}"))
    handles += [Line2D([], [], color=colour, lw=3.5, label=decision)
                for decision, colour in DECISION_COLOURS.items()]
    figure.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7,
                  frameon=False)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    return figure


def contrast_forest_plot(contrasts: pl.DataFrame, hdi_prob: float) -> Figure:
    """Each contrast's posterior mean (decision_forest); a second outcome's rows (hurdle,
    fit.second_outcome) are named with their outcome, which their labels lacked."""
    with_model = contrasts["model_name"].n_unique() > 1
    with_outcome = "outcome" in contrasts.columns and contrasts["outcome"].n_unique() > 1
    rows = list(contrasts.iter_rows(named=True))
    labels = [contrast_label(row, with_model) + (f" ({row['outcome']})" if with_outcome else "")
              for row in rows]
    return decision_forest(rows, labels, hdi_prob,
                           estimate="mean", xlabel="difference between groups (logit)",
                           title="Demographic contrasts (grey band: region of practical "
                                 "equivalence)")


LABELLED_STRIP_MAX = 40
_LABEL_POINTS = 7  # the names' font size; a name takes 1.5 times its size in height


def spread_labels(values: np.ndarray, spacing: float, low: float, high: float) -> np.ndarray:
    """Heights for the names of sorted values, each at least `spacing` above the one below and
    inside [low, high], as close to its value as that allows (least squares).

    Names placed at their own values overlapped wherever thetas crowd (most of a default audit's
    21 lie within half a logit). z_i = i * spacing + u_i with u non-decreasing is exactly the
    spacing constraint, so the closest such heights are an isotonic regression of
    values_i - i * spacing; with the same bounds on every u_i the bounded solution is the
    unbounded one clipped (scipy's pool-adjacent-violators, no hand-written solver)."""
    if len(values) == 0:
        return values
    steps = spacing * np.arange(len(values))
    upper = max(low, high - steps[-1])
    shifted = optimize.isotonic_regression(np.asarray(values, float) - steps).x
    return np.clip(shifted, low, upper) + steps


def _labelled_strip(axis: plt.Axes, table: pl.DataFrame, key: str, colour: str, marker: str,
                    limits: tuple[float, float], axis_inches: float) -> None:
    """Points on the logit scale at x = 0, each name to the right at a height spread_labels
    keeps clear of the others, joined to its point by a thin line where the two differ."""
    ordered = table.sort("mean", key)
    values = ordered["mean"].to_numpy()
    low, high = limits
    spacing = 1.5 * _LABEL_POINTS / 72 * (high - low) / axis_inches
    heights = spread_labels(values, spacing, low + spacing / 2, high - spacing / 2)
    for name, value, height in zip(ordered[key].to_list(), values, heights):
        axis.plot([0.0], [value], marker, color=colour, markersize=5)
        axis.plot([0.0, 0.25, 0.45], [value, value, height], color="#999999", lw=0.5)
        axis.annotate(name, (0.5, height), va="center", fontsize=_LABEL_POINTS)
    axis.set_xlim(-0.2, 3.0)
    axis.set_xticks([])


def _without_shared_model(respondents: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """With one model under audit its name led every respondent's label (`model/persona`, at
    most 60 characters of it repeated 21 times); the axis names it once instead."""
    models = respondents["respondent"].str.extract(r"^(.*)/[^/]*$").unique().to_list()
    if len(models) != 1 or models[0] is None:
        return respondents, None
    return respondents.with_columns(pl.col("respondent").str.extract(r"/([^/]*)$")), models[0]


def _scale(means: pl.Series) -> tuple[float, float]:
    """The logit axis: every mean with a margin of 5% of their range (at least 0.05 logit)."""
    if means.is_empty():
        return -1.0, 1.0
    low, high = float(means.min()), float(means.max())
    margin = 0.05 * max(high - low, 1.0)
    return low - margin, high + margin


def wright_map(summary: pl.DataFrame) -> Figure:
    """Respondents (theta) and items (b) on one logit scale: a respondent is likely to get a
    favourable answer on the items below it and unlikely on those above. Many respondents are
    shown as a histogram, few by name."""
    # Finite means only: a NaN one made the axis limits NaN, which matplotlib refuses (the
    # histograms leave NaN out by themselves).
    finite = pl.col("mean").is_finite()
    thetas, model = _without_shared_model(
        parameter_table(summary, "theta", "respondent").filter(finite))
    items = parameter_table(summary, "b", "item").filter(finite)
    height = max(4.0, 0.2 * min(max(thetas.height, items.height), 60) + 1.5)
    figure, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(9, height))
    limits = _scale(pl.concat([thetas["mean"], items["mean"]]))
    left.set_ylim(*limits)
    axis_inches = height - 1.4  # the title and the x labels take about 1.4 inches
    if thetas.height <= LABELLED_STRIP_MAX:
        _labelled_strip(left, thetas, "respondent", "#1f77b4", "o", limits, axis_inches)
    else:
        left.hist(thetas["mean"].to_numpy(), bins=20, orientation="horizontal", color="#1f77b4",
                  alpha=0.8)
        left.invert_xaxis()
    left.set_xlabel("respondents (posterior mean theta)" if model is None
                    else f"respondents (posterior mean theta)\nof {model}")
    left.set_ylabel("logit scale")
    if items.height <= LABELLED_STRIP_MAX:
        _labelled_strip(right, items, "item", "#d62728", "s", limits, axis_inches)
    else:
        right.hist(items["mean"].to_numpy(), bins=20, orientation="horizontal", color="#d62728",
                   alpha=0.8)
    right.set_xlabel("items (posterior mean difficulty b)")
    figure.suptitle("Wright map: respondents and items on one scale")
    figure.tight_layout()
    return figure


def favourable_rates(prompts: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Favourable share per (respondent, item) among answers that carry a decision label."""
    decided = (labels.filter(pl.col("label").is_in(LABELS))
               .join(prompts.select("prompt_id", "respondent_id", "item_id"), on="prompt_id"))
    return (decided.group_by("respondent_id", "item_id")
            .agg(n=pl.len(), favourable=(pl.col("label") == LABELS[0]).sum())
            .with_columns(rate=pl.col("favourable") / pl.col("n"))
            .sort("respondent_id", "item_id"))


def favourable_heatmap(rates: pl.DataFrame) -> Figure:
    """Persona x item: where a respondent's answers turn favourable (grey: no decided answer)."""
    respondents = sorted(rates["respondent_id"].unique().to_list())
    items = sorted(rates["item_id"].unique().to_list())
    grid = np.full((len(respondents), len(items)), np.nan)
    row_of = {name: index for index, name in enumerate(respondents)}
    column_of = {name: index for index, name in enumerate(items)}
    for respondent, item, rate in rates.select("respondent_id", "item_id", "rate").iter_rows():
        grid[row_of[respondent], column_of[item]] = rate
    figure, axis = plt.subplots(figsize=(max(5.0, 0.38 * len(items) + 3),
                                         max(3.0, 0.3 * len(respondents) + 1.5)))
    colours = plt.get_cmap("RdYlGn").with_extremes(bad="#cccccc")
    image = axis.imshow(np.ma.masked_invalid(grid), cmap=colours, vmin=0, vmax=1, aspect="auto")
    axis.set_yticks(range(len(respondents)), respondents, fontsize=7)
    axis.set_xticks(range(len(items)), items, fontsize=7, rotation=60, ha="right")
    figure.colorbar(image, ax=axis, label="favourable share")
    axis.set_title("Favourable share by respondent and item")
    figure.tight_layout()
    return figure


def label_distribution_plot(prompts: pl.DataFrame, labels: pl.DataFrame) -> Figure:
    """Each respondent's answers split by label, unparseable included: unequal abstention or
    refusal is a finding of its own, and a large unparseable share is a warning about the judge."""
    joined = (labels.filter(pl.col("label") != JUDGE_FAILED)  # never read: no label's share
              .join(prompts.select("prompt_id", "respondent_id"), on="prompt_id"))
    respondents = sorted(joined["respondent_id"].unique().to_list())
    counts = joined.group_by("respondent_id", "label").len()
    totals = {name: count for name, count in joined.group_by("respondent_id").len().iter_rows()}
    figure, axis = plt.subplots(figsize=(7.5, 0.3 * len(respondents) + 1.8))
    left = np.zeros(len(respondents))
    for label in (*LABELS, UNPARSEABLE):
        shares = np.array([
            (counts.filter((pl.col("respondent_id") == name) & (pl.col("label") == label))
             ["len"].sum()) / totals[name] for name in respondents])
        axis.barh(range(len(respondents)), shares, left=left, color=LABEL_COLOURS[label],
                  label=label)
        left += shares
    axis.set_yticks(range(len(respondents)), respondents, fontsize=7)
    axis.set_xlim(0, 1)
    axis.set_xlabel("share of answers")
    axis.legend(fontsize=7, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    axis.set_title("Label distribution by respondent")
    figure.tight_layout()
    return figure


def worst_parameters(summary: pl.DataFrame, count: int = 4) -> list[str]:
    """The parameters with the highest R-hat (then the lowest bulk ESS), of those the convergence
    check reads (`irt.diagnostics`). A null R-hat is a rate the fit held fixed (the judge's rates
    within each imputation of the cut); a NaN one is a parameter with no spread in any chain
    (ArviZ's 0/0; draws that are not numbers never get here: the summary stops on them).
    Neither has convergence to show: the fixed rates were plotted as flat lines at rank p = 0.00."""
    ranked = summary.filter(checked("r_hat")).sort(["r_hat", "ess_bulk"],
                                                   descending=[True, False], nulls_last=True)
    return ranked["parameter"].head(count).to_list()


def _draws_of(posterior: xr.Dataset, parameter: str) -> xr.DataArray | None:
    """The (chain, draw) array of one summary row, e.g. `theta[smollm2/white_man]`."""
    match = _INDEXED.match(parameter)
    name = match["name"] if match else parameter
    if name not in posterior:
        return None
    values = posterior[name]
    if not match:
        return values if set(values.dims) == {"chain", "draw"} else None
    labels = match["labels"].split(", ")
    dims = [dim for dim in values.dims if dim not in ("chain", "draw")]
    if len(dims) != len(labels):
        return None
    try:
        return values.sel({dim: label for dim, label in zip(dims, labels)})
    except (KeyError, ValueError):
        return None


def _r_hat(draws: xr.DataArray) -> float:
    value = float(az.rhat(draws.transpose("chain", "draw").to_numpy(), chain_axis=0, draw_axis=1))
    return np.inf if np.isnan(value) else value


def diagnosed_draws(posterior: xr.Dataset, summary: pl.DataFrame,
                    count: int = 4) -> xr.Dataset | None:
    """The draws the trace and rank plots show: of each worst-converged parameter, the chains of
    the judge imputation where its R-hat is highest (the figure the summary reports, since the
    cut's R-hat is the worst within any imputation; judge_cut.py), numbered 0, 1, ... Chains of
    different imputations sample different posteriors (each holds the judge's rates at another
    draw), so pooled they disagree by design and a rank plot would flag every parameter the
    rates move. None when no summary row maps to a variable."""
    groups = imputation_chains(posterior)
    chosen = {}
    for parameter in worst_parameters(summary, count):
        draws = _draws_of(posterior, parameter)
        if draws is None:
            continue
        parts = [draws.sel(chain=chains) for chains in groups]
        # One group (no cut): nothing to choose, and no R-hat to compute (a single chain's
        # is 0/0, which numpy warns of).
        worst = max(parts, key=_r_hat) if len(parts) > 1 else parts[0]
        # ArviZ 1 plots through a DataTree, whose variable names cannot hold "/" (respondents
        # are "model/persona"): shown with U+2215, which looks the same.
        chosen[parameter.replace("/", "\u2215")] = worst.drop_vars(
            [coord for coord in worst.coords if coord not in ("chain", "draw")]).assign_coords(
            chain=np.arange(worst.sizes["chain"]))
    return xr.Dataset(chosen) if chosen else None


def _small_labels(figure: Figure) -> None:
    """Panel titles that fit their panels: parameter names run long ("theta[model/persona]")."""
    for axis in figure.axes:
        axis.title.set_fontsize(9)
        axis.xaxis.label.set_fontsize(8)
        axis.yaxis.label.set_fontsize(8)
        axis.tick_params(labelsize=7)


def sampling_plots(idata: DataTree, summary: pl.DataFrame,
                   count: int = 4) -> dict[str, Figure]:
    """ArviZ trace and rank plots of the worst-converged parameters (diagnosed_draws); empty when
    none maps."""
    if "posterior" not in idata.children:
        return {}
    posterior = idata["posterior"].to_dataset()
    dataset = diagnosed_draws(posterior, summary, count)
    if dataset is None:
        return {}
    where = (" (each in the judge imputation where it is highest)"
             if len(imputation_chains(posterior)) > 1 else "")
    # ArviZ 1 draws through arviz-plots and returns a PlotCollection; its figure is the "figure"
    # entry of the collection's viz tree.
    trace = az.plot_trace(dataset, backend="matplotlib").viz["figure"].item()
    trace.set_size_inches(9, 2.0 * len(dataset.data_vars))
    _small_labels(trace)
    trace.suptitle("Trace of the parameters with the highest R-hat" + where)
    trace.tight_layout()
    # Its default (method "mtc_c") tests the chains' ranks for uniformity: about 3 s for 4
    # chains of 2000 draws, 34 s for the cut's 16 pooled chains (2026-12-01).
    rank = az.plot_rank(dataset, backend="matplotlib").viz["figure"].item()
    rank.set_size_inches(9, 2.6 * ((len(dataset.data_vars) + 1) // 2))
    _small_labels(rank)
    rank.suptitle("Rank ECDF of the same chains, each minus the uniform's (chains agree: lines "
                  "near zero, p above alpha)")
    rank.tight_layout()
    return {"trace_plot.png": trace, "rank_plot.png": rank}
