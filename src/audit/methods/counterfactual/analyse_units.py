"""Group claims on the units the counterfactual design samples: the table the CI verdict judges.

The per-answer tests (analyse.py's Mann-Whitney rows) treat every answer as an independent draw
from its group. They are not: every answer about "Jamal" shares whatever the model makes of that
one name, and every answer to one template shares whatever that template does to the groups. With
a handful of names per group, a name-level quirk (one name read as a celebrity, one spelling that
tokenises oddly) then passes for a group difference: on simulated data with no group effect and a
name effect of 0.7 noise sd, the per-answer test rejected 39% of data sets, the name-level test 3%
(tests/methods/counterfactual/test_counterfactual_design_tests.py). A claim about race must
generalise over names, and a claim about "he" against "she" over templates.

So the unit of a group claim is the unit that carries the group:

* ``unit = name`` (each group holds two or more levels of the axis that sets the group, e.g.
  nine names per race): every value is centred within its block (template x replicate: the same
  prompt and seed for every variant), each unit's centred values are averaged, and the two groups'
  unit means are compared with a permutation test over units (exact when the arrangements number
  at most ``10 * bootstrap_resamples``). Under "no group effect" the names are exchangeable,
  whatever each name does on its own, so the test holds its level. Names are relabelled only
  within the groups of the factors crossed with this one (strata_of: race within gender), so a
  gender effect neither widens the race test's null nor leans on its gap. A name is one unit in
  every template, with or without the pronoun that agrees with it (counting "Allison, her" and
  "Allison" as two units rejected 14% of simulated no-effect designs). Templates with a pronoun
  and no name are left out of a test over names: a word in one template is not one more sampled
  name, and its "she" and "he" would be mirror images of each other after centring; those answers
  stay in the per-answer tables.
* ``unit = template`` (each group is one level, e.g. "he" against "she"): the claim is about those
  two words in these templates, so the templates are the units, with their replicates nested in
  them: the per-replicate differences of the two groups' means (paired within a prompt and seed)
  are averaged within each template, and a Wilcoxon signed-rank test runs on the per-template
  differences. Replicates of one template share whatever the template does to the pair (a letter
  that reads "she" warmer), so counting them as independent blocks rejected far above alpha when
  templates differ in that way and the groups do not (the test named above).

``min_p`` is the smallest p the design can reach (3 names against 3: 0.1; three templates: 0.25);
the verdict calls a pair whose ``min_p`` is not below alpha untestable instead of passing it. A
pair that no template x replicate holds both groups of is a row too, with 0 templates, min_p 1
and no p or effect, so it shows as not testable rather than vanishing.
``rank_biserial`` is the answer-level effect within a block: over every pair of answers to the same
prompt and seed, P(a's is higher) - P(b's is higher), on the scale of the per-answer table, so
``counterfactual.min_rank_biserial`` is the practical threshold here too. p-values are adjusted
with Benjamini-Hochberg over the rows whose ``min_p`` is below ``counterfactual.alpha`` (a row
that can never reach alpha, entered at p = 1, would only dilute the others; its ``p_bh`` is
empty); ``flagged`` needs BH p below alpha and a ``meaningful`` effect. Mean differences are of
block-centred values, in the metric's own units, with a Student's t interval over the same
units (the names' means within group and stratum, pooled variance; the per-template
differences; none for a single template, or a single name in every group and stratum): a percentile
bootstrap over so few units covered 0.74 of the time at 3 templates and 0.80 at 3 names against
3 (95% intervals on normal data).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
from scipy import stats

from audit.methods.counterfactual.analyse import StatsSettings
from audit.stats.differences import (
    Parts,
    mean_difference_p_value,
    stratified_mean_difference,
    stratified_permutation_p_value,
)
from audit.stats.intervals import mean_t_interval, stratified_difference_t_interval
from audit.stats.multiple_testing import adjust_p_values

BLOCK = ("template_id", "replicate")  # one prompt text and seed, shared by every variant
TEMPLATE = "template_id"  # the unit a one-level group's claim generalises over
DESIGN_TEST_COLUMNS = ["model_name", "metric", "factor", "group_a", "group_b", "unit",
                       "n_units_a", "n_units_b", "n_templates", "mean_difference",
                       "difference_ci_low", "difference_ci_high", "rank_biserial",
                       "truncated_share_a", "truncated_share_b", "p_value", "min_p", "p_bh",
                       "practical_threshold", "meaningful", "flagged"]
_SCHEMA = {"model_name": pl.Utf8, "metric": pl.Utf8, "factor": pl.Utf8, "group_a": pl.Utf8,
           "group_b": pl.Utf8, "unit": pl.Utf8, "n_units_a": pl.Int64, "n_units_b": pl.Int64,
           "n_templates": pl.Int64, "mean_difference": pl.Float64,
           "difference_ci_low": pl.Float64, "difference_ci_high": pl.Float64,
           "rank_biserial": pl.Float64, "truncated_share_a": pl.Float64,
           "truncated_share_b": pl.Float64, "p_value": pl.Float64, "min_p": pl.Float64}


def group_units(groups: pl.DataFrame) -> pl.DataFrame:
    """The groups table with a ``unit`` per row and whether it lies ``on_unit_axis``.

    A variant id reads ``name=jamal|pronoun=he``; a component "decides" a factor's group when
    every row with it has one group (``name=jamal`` decides race, ``pronoun=he`` does not). The
    factor's unit axis is its deciding axis with the most levels: the name for race, and for
    gender too, although the pronoun that agrees with a name decides gender as well. A row's unit
    is its level of that axis, the same unit in every template (Allison in a letter with "her"
    and Allison alone are one name, not two). A row without a level of it (a template with a
    pronoun and no name) keeps its deciding components as its unit, off the axis: the pair's
    test over names leaves those rows out (see ``_pair_row``). When no single axis decides a
    group (an intersection of two crossed axes), the variant is the unit.
    """
    exploded = (groups.select("factor", "group", "variant_id")
                .unique()
                .with_columns(component=pl.col("variant_id").str.split("|"))
                .explode("component")
                .with_columns(axis=pl.col("component").str.split("=").list.first()))
    deciding = (exploded.group_by("factor", "axis", "component")
                .agg(pl.col("group").n_unique().alias("groups"))
                .filter(pl.col("groups") == 1)
                .select("factor", "axis", "component"))
    unit_axis = (deciding.group_by("factor", "axis").agg(pl.len().alias("levels"))
                 .sort("factor", "levels", "axis", descending=[False, True, False])
                 .unique("factor", keep="first", maintain_order=True)
                 .select("factor", unit_axis=pl.col("axis")))
    decided = (exploded.join(deciding, on=["factor", "axis", "component"], how="inner")
               .join(unit_axis, on="factor", how="left"))
    on_axis = (decided.filter(pl.col("axis") == pl.col("unit_axis"))
               .select("factor", "variant_id", axis_unit=pl.col("component")))
    off_axis = (decided.group_by("factor", "variant_id")
                .agg(pl.col("component").sort().str.join("|").alias("deciding")))
    keys = ["factor", "variant_id"]
    return (groups.join(on_axis, on=keys, how="left", maintain_order="left")
            .join(off_axis, on=keys, how="left", maintain_order="left")
            .join(unit_axis, on="factor", how="left", maintain_order="left")
            .with_columns(unit=pl.coalesce("axis_unit", "deciding", "variant_id"),
                          on_unit_axis=pl.col("axis_unit").is_not_null()
                          | pl.col("unit_axis").is_null())
            .drop("axis_unit", "deciding", "unit_axis"))


def _centred(frame: pl.DataFrame) -> pl.DataFrame:
    """Values minus their block's mean, in the blocks where both groups answered."""
    shared = (frame.group_by(*BLOCK).agg(pl.col("group").n_unique().alias("groups"))
              .filter(pl.col("groups") == 2).select(*BLOCK))
    return (frame.join(shared, on=list(BLOCK), how="inner")
            .with_columns((pl.col("value") - pl.col("value").mean().over(*BLOCK))
                          .alias("centred")))


def name_level_test(a_parts: Parts, b_parts: Parts,
                    settings: StatsSettings) -> tuple[float, float]:
    """Permutation test of the difference in unit means, names relabelled only within their
    stratum (strata_of); (p, smallest attainable p). The smallest p is that of the arrangements
    the test draws: 2 / (resamples + 1) when they are too many to enumerate (18 names against 18
    reported 2.2e-10 where the test could give 2.0e-4)."""
    resamples = settings.bootstrap_resamples * 10
    arrangements = math.prod(math.comb(a.size + b.size, a.size)
                             for a, b in zip(a_parts, b_parts, strict=True))
    min_p = min(1.0, 2.0 / (arrangements if arrangements <= resamples else resamples + 1))
    if np.ptp(np.concatenate([*a_parts, *b_parts])) == 0:
        return 1.0, min_p
    if len(a_parts) == 1:
        return mean_difference_p_value(a_parts[0], b_parts[0], resamples, "two-sided",
                                       settings.seed), min_p
    return stratified_permutation_p_value(a_parts, b_parts, resamples, settings.seed)


def unit_strata(long: pl.DataFrame, factor: str) -> dict[str, dict[str, str]]:
    """Each unit of ``factor`` with its group in every other factor that gives all the unit's
    prompts one group: a name's gender when the factor is race, its race when it is gender."""
    units = long.filter(pl.col("factor") == factor).select("prompt_id", "unit").unique()
    others = (long.filter((pl.col("factor") != factor) & pl.col("group").is_not_null())
              .select("prompt_id", pl.col("factor").alias("other"), "group").unique())
    held = (units.join(others, on="prompt_id", how="inner")
            .group_by("unit", "other").agg(pl.col("group").unique())
            .filter(pl.col("group").list.len() == 1))
    strata: dict[str, dict[str, str]] = {}
    for unit, other, groups in held.sort("unit", "other").iter_rows():
        strata.setdefault(unit, {})[other] = groups[0]
    return strata


def strata_of(units_a: list[str], units_b: list[str],
              strata: dict[str, dict[str, str]]) -> list[tuple[str, ...]] | None:
    """The stratum of each unit (a's, then b's) for the pair's test: the other factors, taken in
    turn, whose group every unit holds and which leave both groups in every stratum. Without
    them a crossed factor's effect widens the permutation null: with nine names per race among
    women and among men, a gender effect of 1 and none of race, names permuted across genders
    made the race test reject 0 of 40 data sets (level 0.05), and at a race effect of 0.4 found
    it in 33% against 88% with no gender effect. None when no factor qualifies."""
    keys: list[tuple[str, ...]] = [() for _ in units_a + units_b]
    for other in sorted({other for unit in units_a + units_b for other in strata.get(unit, {})}):
        if not all(other in strata.get(unit, {}) for unit in units_a + units_b):
            continue
        trial = [key + (strata[unit][other],) for key, unit in zip(keys, units_a + units_b,
                                                                     strict=True)]
        in_a, in_b = set(trial[:len(units_a)]), set(trial[len(units_a):])
        if in_a == in_b:  # every stratum holds both groups
            keys = trial
    return keys if keys and keys[0] else None


def template_level_test(differences: np.ndarray) -> tuple[float, float]:
    """Wilcoxon signed-rank on per-template differences; (p, smallest attainable p)."""
    min_p = min(1.0, 2.0 / 2 ** differences.size)
    if differences.size == 0 or np.all(differences == 0):
        return 1.0, min_p
    return float(stats.wilcoxon(differences, zero_method="zsplit").pvalue), min_p


def within_block_rank_biserial(centred: pl.DataFrame, group_a: str, group_b: str) -> float:
    """P(a > b) - P(a < b) over every pair of a's and b's answers to one prompt and seed."""
    balance, pairs = 0.0, 0
    for _, block in centred.group_by(*BLOCK):
        a = block.filter(pl.col("group") == group_a)["value"].to_numpy()
        b = block.filter(pl.col("group") == group_b)["value"].to_numpy()
        balance += float(np.sign(a[:, None] - b[None, :]).sum())
        pairs += a.size * b.size
    return balance / pairs if pairs else 0.0


def _unit_means(centred: pl.DataFrame, group_a: str,
                group_b: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each group's units and their mean centred value, sorted by unit."""
    units = (centred.group_by("group", "unit").agg(pl.col("centred").mean())
             .sort("group", "unit"))
    return (units.filter(pl.col("group") == group_a), units.filter(pl.col("group") == group_b))


def _stratified_parts(units_a: pl.DataFrame, units_b: pl.DataFrame,
                      strata: dict[str, dict[str, str]]) -> tuple[Parts, Parts]:
    """The two groups' unit means split by stratum (strata_of); one part each without strata."""
    keys = strata_of(units_a["unit"].to_list(), units_b["unit"].to_list(), strata)
    a, b = units_a["centred"].to_numpy(), units_b["centred"].to_numpy()
    if keys is None:
        return (a,), (b,)
    keys_a, keys_b = keys[:a.size], keys[a.size:]
    order = sorted(set(keys_a))
    return (tuple(a[[key == stratum for key in keys_a]] for stratum in order),
            tuple(b[[key == stratum for key in keys_b]] for stratum in order))


def _unshared_row(group_a: str, group_b: str) -> dict[str, object]:
    """A pair no template x replicate holds both of: nothing to compare, so not testable (min_p
    1), and kept in the table so the verdict reports it as skipped rather than saying nothing."""
    return {"group_a": group_a, "group_b": group_b, "unit": "template", "n_units_a": 0,
            "n_units_b": 0, "n_templates": 0, "mean_difference": None,
            "difference_ci_low": None, "difference_ci_high": None, "rank_biserial": None,
            "truncated_share_a": None, "truncated_share_b": None, "p_value": None, "min_p": 1.0}


def _pair_row(frame: pl.DataFrame, group_a: str, group_b: str, settings: StatsSettings,
              strata: dict[str, dict[str, str]]) -> dict[str, object]:
    pair = frame.filter(pl.col("group").is_in([group_a, group_b]))
    centred = _centred(pair)
    if centred.is_empty():
        return _unshared_row(group_a, group_b)
    # Over names when each group has two or more: only the templates that carry a name, so a
    # template with a pronoun and no name neither adds a unit nor splits a name in two.
    named = _centred(pair.filter(pl.col("on_unit_axis")))
    unit_a, unit_b = _unit_means(named, group_a, group_b)
    name_level = min(unit_a.height, unit_b.height) >= 2
    tested = named if name_level else centred
    if not name_level:
        unit_a, unit_b = _unit_means(centred, group_a, group_b)
    # Replicates nested in templates: a difference per prompt and seed, averaged per template.
    templates = (tested.group_by(*BLOCK, "group").agg(pl.col("value").mean())
                 .pivot(on="group", index=list(BLOCK), values="value")
                 .group_by(TEMPLATE).agg((pl.col(group_a) - pl.col(group_b)).mean()
                                         .alias("difference"))
                 .sort(TEMPLATE))
    differences = templates["difference"].to_numpy()
    interval: tuple[float, float] | None
    if name_level:
        # Names compared within the strata of the factors crossed with this one (gender for
        # race), so those factors' effects neither mask nor fake this one's.
        parts_a, parts_b = _stratified_parts(unit_a, unit_b, strata)
        unit, (p_value, min_p) = "name", name_level_test(parts_a, parts_b, settings)
        difference = float(stratified_mean_difference(
            *[part for pair in zip(parts_a, parts_b, strict=True) for part in pair]))
        interval = stratified_difference_t_interval(parts_a, parts_b, settings.confidence_level)
    else:
        unit, (p_value, min_p) = "template", template_level_test(differences)
        difference = float(differences.mean())
        # One template has no spread: no interval rather than a point.
        interval = mean_t_interval(differences, settings.confidence_level)
    low, high = interval if interval is not None else (None, None)
    truncated = {group: float(tested.filter(pl.col("group") == group)["truncated"].mean())
                 for group in (group_a, group_b)}
    return {"group_a": group_a, "group_b": group_b, "unit": unit, "n_units_a": unit_a.height,
            "n_units_b": unit_b.height, "n_templates": differences.size,
            "mean_difference": difference, "difference_ci_low": low, "difference_ci_high": high,
            "rank_biserial": within_block_rank_biserial(tested, group_a, group_b),
            "truncated_share_a": truncated[group_a], "truncated_share_b": truncated[group_b],
            "p_value": p_value, "min_p": min_p}


def testable_bh(table: pl.DataFrame, alpha: float) -> pl.Series:
    """Benjamini-Hochberg over the rows whose ``min_p`` is below alpha; null for the others. A row
    that can never reach alpha is reported as not testable, and entered at p = 1 it would only
    raise every other row's adjusted p (25 such rows of 65 in the default design)."""
    testable = [p_value if min_p < alpha else None
                for p_value, min_p in zip(table["p_value"], table["min_p"], strict=True)]
    return pl.Series("p_bh", adjust_p_values(testable, "fdr_bh"), dtype=pl.Float64)


def design_tests(metrics: pl.DataFrame, groups: pl.DataFrame, metric_names: list[str],
                 settings: StatsSettings) -> pl.DataFrame:
    """Every pair of groups of every factor, per model and metric, tested on its units."""
    truncated = (pl.col("truncated") if "truncated" in metrics.columns
                 else pl.lit(False)).alias("truncated")
    values = metrics.select("prompt_id", truncated, *metric_names).unpivot(
        index=["prompt_id", "truncated"], on=metric_names, variable_name="metric",
        value_name="value")
    long = group_units(groups).join(values, on="prompt_id", how="inner")
    rows = []
    keys = long.select("model_name", "metric", "factor").unique().sort(
        "model_name", "metric", "factor").iter_rows()
    for model_name, metric, factor in keys:
        answers = long.filter((pl.col("model_name") == model_name) & (pl.col("metric") == metric))
        frame = answers.filter(pl.col("factor") == factor)
        strata = unit_strata(answers, factor)
        for group_a, group_b in itertools.combinations(sorted(frame["group"].unique()), 2):
            row = _pair_row(frame, group_a, group_b, settings, strata)
            rows.append({"model_name": model_name, "metric": metric, "factor": factor, **row})
    table = pl.DataFrame(rows, schema=_SCHEMA)
    return table.with_columns(
        p_bh=testable_bh(table, settings.alpha),
        practical_threshold=pl.lit(settings.min_rank_biserial, dtype=pl.Float64),
        meaningful=(pl.col("rank_biserial").abs() >= settings.min_rank_biserial)
        .fill_null(False),
    ).with_columns(
        flagged=((pl.col("p_bh") < settings.alpha) & pl.col("meaningful")).fill_null(False),
    ).select(DESIGN_TEST_COLUMNS)
