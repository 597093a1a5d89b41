"""Group differences in the metrics of counterfactual answers: tests, effect sizes, corrections.

Per model, metric and factor: Kruskal-Wallis across the factor's groups, and Mann-Whitney U for
every pair of groups with rank-biserial correlation, mean difference (with a bootstrap interval)
the ratio of mean word counts and the share of each group's answers cut off at max_tokens (a
word count gap between groups whose answers were all cut off measures tokenisation, not the
model's verbosity). p-values are corrected over the whole run (every pairwise row
is one family, every Kruskal-Wallis row another) with both Bonferroni and Benjamini-Hochberg.

A comparison pools only the templates in which all of its groups appear, so a template's own
tone or length never passes for a group difference (a pronoun only one template uses is compared
within that template). Rank-based tests suit these metrics: word counts are skewed, rates and
refusals pile up at zero, and sentiment is bounded.

Zero variance: when every value in a comparison is the same, the groups cannot differ in rank;
scipy returns NaN for Kruskal-Wallis then, and this module reports H = 0, p = 1 and effects 0.

These per-answer tables describe; the group claims (and the CI verdict) come from the tests on the
units the design samples, in analyse_units.py.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from audit.stats.bootstrap import constant, difference_interval, mean_interval
from audit.stats.multiple_testing import adjust_p_values

POOLED_SCOPE = "all"
LENGTH_METRIC = "word_count"
LENGTH_COLUMN = "length"  # the word count beside every metric's value, for the length ratio


@dataclass(frozen=True)
class StatsSettings:
    alpha: float = 0.05
    min_rank_biserial: float = 0.147
    bootstrap_resamples: int = 999
    confidence_level: float = 0.95
    seed: int = 0
    by_template: bool = True


def kruskal_wallis(samples: list[np.ndarray]) -> tuple[float, float]:
    """H and p across groups; (0, 1) when every value is equal (scipy gives NaN there)."""
    if constant(*samples):
        return 0.0, 1.0
    result = stats.kruskal(*samples)
    return float(result.statistic), float(result.pvalue)


def rank_biserial(u_statistic: float, n_a: int, n_b: int) -> float:
    """P(a > b) - P(a < b) from scipy's U of sample a (ties count half): in [-1, 1]."""
    return 2.0 * u_statistic / (n_a * n_b) - 1.0


def mann_whitney(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided U of sample a and its p; (n_a * n_b / 2, 1) when every value is equal."""
    if constant(a, b):
        return a.size * b.size / 2.0, 1.0
    result = stats.mannwhitneyu(a, b, alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def length_ratio(length_a: np.ndarray, length_b: np.ndarray) -> float:
    """Mean word count of a over that of b: 1 when both are empty, inf when only b is."""
    mean_a, mean_b = float(length_a.mean()), float(length_b.mean())
    if mean_b == 0:
        return 1.0 if mean_a == 0 else float("inf")
    return mean_a / mean_b


# --- the tables ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """The observations one test reads: a model's metric by a factor's groups, in some templates."""

    model_name: str
    scope: str
    templates: tuple[str, ...]
    metric: str
    factor: str
    samples: dict[str, np.ndarray]
    lengths: dict[str, np.ndarray]
    truncated: dict[str, np.ndarray]


def _scopes(templates_by_group: dict[str, set[str]], groups: tuple[str, ...],
            by_template: bool) -> list[tuple[str, tuple[str, ...]]]:
    """Pooled over the templates where all groups appear, and each of them alone when asked
    (a pool of one template is that template's own row, not a second copy)."""
    shared = sorted(set.intersection(*(templates_by_group[group] for group in groups)))
    if not shared:
        return []
    scopes = [(POOLED_SCOPE, tuple(shared))] if len(shared) > 1 else []
    if by_template or len(shared) == 1:
        scopes.extend((template, (template,)) for template in shared)
    return scopes


def _overall_scopes(templates_by_group: dict[str, set[str]],
                    by_template: bool) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """Kruskal-Wallis pools the templates that hold every group of the factor, and tests each
    template on the groups it holds (when asked, or when no pool covers the template)."""
    all_groups = tuple(sorted(templates_by_group))
    templates = sorted(set.union(*templates_by_group.values()))
    held = {template: tuple(group for group in all_groups
                            if template in templates_by_group[group]) for template in templates}
    complete = tuple(template for template in templates if held[template] == all_groups)
    scopes = [(all_groups, POOLED_SCOPE, complete)] if len(complete) > 1 else []
    pooled = set(complete) if scopes else set()
    scopes.extend((held[template], template, (template,)) for template in templates
                  if len(held[template]) > 1 and (by_template or template not in pooled))
    return scopes


def observations(metrics: pl.DataFrame, groups: pl.DataFrame,
                 metric_names: list[str]) -> pl.DataFrame:
    """Long table: one row per (prompt, factor, metric), answered prompts only; each row keeps
    its answer's word count and whether the answer was cut off at max_tokens."""
    truncated = (pl.col("truncated") if "truncated" in metrics.columns
                 else pl.lit(False)).alias("truncated")
    values = metrics.select("prompt_id", pl.col(LENGTH_METRIC).alias(LENGTH_COLUMN), truncated,
                            *metric_names)
    long = values.unpivot(index=["prompt_id", LENGTH_COLUMN, "truncated"], on=metric_names,
                          variable_name="metric", value_name="value")
    return (groups.select("prompt_id", "model_name", "template_id", "factor", "group")
            .join(long, on="prompt_id", how="inner")
            .sort("model_name", "metric", "factor", "group", "template_id", "prompt_id"))


def comparisons(long: pl.DataFrame, by_template: bool) -> tuple[list[Comparison],
                                                                list[Comparison]]:
    """The Kruskal-Wallis comparisons (all groups of a factor) and the pairwise ones."""
    overall, pairs = [], []
    keys = long.select("model_name", "metric", "factor").unique().sort(
        "model_name", "metric", "factor").iter_rows()
    for model_name, metric, factor in keys:
        subset = long.filter((pl.col("model_name") == model_name) & (pl.col("metric") == metric)
                             & (pl.col("factor") == factor))
        templates_by_group = {group: set(frame["template_id"].to_list()) for (group,), frame in
                              subset.group_by(["group"])}
        all_groups = tuple(sorted(templates_by_group))

        def build(groups: tuple[str, ...], scope: str, templates: tuple[str, ...]) -> Comparison:
            frame = subset.filter(pl.col("template_id").is_in(templates)
                                  & pl.col("group").is_in(groups))
            samples = {g: frame.filter(pl.col("group") == g)["value"].to_numpy() for g in groups}
            lengths = {g: frame.filter(pl.col("group") == g)[LENGTH_COLUMN].to_numpy()
                       for g in groups}
            truncated = {g: frame.filter(pl.col("group") == g)["truncated"].to_numpy()
                         for g in groups}
            return Comparison(model_name, scope, templates, metric, factor, samples, lengths,
                              truncated)

        if len(all_groups) < 2:
            continue
        overall.extend(build(groups, scope, templates) for groups, scope, templates in
                       _overall_scopes(templates_by_group, by_template))
        for pair in itertools.combinations(all_groups, 2):
            pairs.extend(build(pair, scope, templates) for scope, templates in
                         _scopes(templates_by_group, pair, by_template))
    return overall, pairs


GROUP_TEST_COLUMNS = ["model_name", "scope", "templates", "metric", "factor", "n_groups", "n",
                      "groups", "constant_groups", "h_statistic", "p_value", "p_bonferroni",
                      "p_bh"]
PAIRWISE_COLUMNS = ["model_name", "scope", "templates", "metric", "factor", "group_a", "group_b",
                    "n_a", "n_b", "mean_a", "mean_b", "mean_difference", "difference_ci_low",
                    "difference_ci_high", "rank_biserial", "length_ratio", "truncated_share_a",
                    "truncated_share_b", "u_statistic", "p_value", "p_bonferroni", "p_bh",
                    "practical_threshold", "meaningful", "flagged"]


def group_tests(overall: list[Comparison]) -> pl.DataFrame:
    rows = []
    for comparison in overall:
        samples = [comparison.samples[g] for g in sorted(comparison.samples)]
        h_statistic, p_value = kruskal_wallis(samples)
        rows.append({"model_name": comparison.model_name, "scope": comparison.scope,
                     "templates": ",".join(comparison.templates), "metric": comparison.metric,
                     "factor": comparison.factor, "n_groups": len(samples),
                     "n": int(sum(sample.size for sample in samples)),
                     "groups": ",".join(sorted(comparison.samples)),
                     "constant_groups": sum(constant(sample) for sample in samples),
                     "h_statistic": h_statistic, "p_value": p_value})
    frame = pl.DataFrame(rows, schema={column: _dtype(column) for column in
                                       GROUP_TEST_COLUMNS if column not in ("p_bonferroni",
                                                                             "p_bh")})
    p_values = frame["p_value"].to_list()
    return frame.with_columns(p_bonferroni=pl.Series(adjust_p_values(p_values, "bonferroni"),
                                                     dtype=pl.Float64),
                              p_bh=pl.Series(adjust_p_values(p_values, "fdr_bh"), dtype=pl.Float64))


def pairwise_tests(pairs: list[Comparison], settings: StatsSettings) -> pl.DataFrame:
    rows = []
    for comparison in pairs:
        group_a, group_b = sorted(comparison.samples)
        a, b = comparison.samples[group_a], comparison.samples[group_b]
        u_statistic, p_value = mann_whitney(a, b)
        low, high = _defined(difference_interval(a, b, settings.bootstrap_resamples,
                                                 settings.confidence_level, settings.seed))
        rows.append({"model_name": comparison.model_name, "scope": comparison.scope,
                     "templates": ",".join(comparison.templates), "metric": comparison.metric,
                     "factor": comparison.factor, "group_a": group_a, "group_b": group_b,
                     "n_a": a.size, "n_b": b.size, "mean_a": float(a.mean()),
                     "mean_b": float(b.mean()), "mean_difference": float(a.mean() - b.mean()),
                     "difference_ci_low": low, "difference_ci_high": high,
                     "rank_biserial": rank_biserial(u_statistic, a.size, b.size),
                     "length_ratio": length_ratio(comparison.lengths[group_a],
                                                  comparison.lengths[group_b]),
                     "truncated_share_a": float(comparison.truncated[group_a].mean()),
                     "truncated_share_b": float(comparison.truncated[group_b].mean()),
                     "u_statistic": u_statistic, "p_value": p_value})
    frame = pl.DataFrame(rows, schema={column: _dtype(column) for column in PAIRWISE_COLUMNS
                                       if column in _PAIR_COMPUTED})
    p_values = frame["p_value"].to_list()
    frame = frame.with_columns(
        p_bonferroni=pl.Series(adjust_p_values(p_values, "bonferroni"), dtype=pl.Float64),
        p_bh=pl.Series(adjust_p_values(p_values, "fdr_bh"), dtype=pl.Float64),
        practical_threshold=pl.lit(settings.min_rank_biserial, dtype=pl.Float64),
        meaningful=pl.col("rank_biserial").abs() >= settings.min_rank_biserial)
    return frame.with_columns(
        flagged=(pl.col("p_bh") < settings.alpha) & pl.col("meaningful")).select(PAIRWISE_COLUMNS)


def _defined(interval: tuple[float, float]) -> tuple[float | None, float | None]:
    """An interval as the tables hold it: empty where it is undefined (one value in a group)."""
    low, high = interval
    return (low, high) if np.isfinite(low) and np.isfinite(high) else (None, None)


def group_summary(long: pl.DataFrame, settings: StatsSettings) -> pl.DataFrame:
    """Mean (with a bootstrap interval), sd and median of each group, per template and pooled."""
    rows = []
    pooled = long.with_columns(template_id=pl.lit(POOLED_SCOPE))
    for (model_name, template, metric, factor, group), frame in pl.concat([long, pooled]).group_by(
            ["model_name", "template_id", "metric", "factor", "group"]):
        values = frame["value"].to_numpy()
        low, high = _defined(mean_interval(values, settings.bootstrap_resamples,
                                           settings.confidence_level, settings.seed))
        rows.append({"model_name": model_name, "scope": template, "metric": metric,
                     "factor": factor, "group": group, "n": values.size,
                     "mean": float(values.mean()), "ci_low": low, "ci_high": high,
                     # One value has no sd (it was written 0.0, as if it could not vary).
                     "sd": float(values.std(ddof=1)) if values.size > 1 else None,
                     "median": float(np.median(values))})
    schema = {"model_name": pl.Utf8, "scope": pl.Utf8, "metric": pl.Utf8, "factor": pl.Utf8,
              "group": pl.Utf8, "n": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "sd": pl.Float64, "median": pl.Float64}
    return pl.DataFrame(rows, schema=schema).sort("model_name", "metric", "factor", "scope",
                                                  "group")


_PAIR_COMPUTED = {"model_name", "scope", "templates", "metric", "factor", "group_a", "group_b",
                  "n_a", "n_b", "mean_a", "mean_b", "mean_difference", "difference_ci_low",
                  "difference_ci_high", "rank_biserial", "length_ratio", "truncated_share_a",
                  "truncated_share_b", "u_statistic", "p_value"}
_INTEGER_COLUMNS = {"n_groups", "n", "constant_groups", "n_a", "n_b"}
_TEXT_COLUMNS = {"model_name", "scope", "templates", "metric", "factor", "groups", "group_a",
                 "group_b"}


def _dtype(column: str) -> pl.DataType:
    if column in _INTEGER_COLUMNS:
        return pl.Int64
    if column in _TEXT_COLUMNS:
        return pl.Utf8
    return pl.Float64
