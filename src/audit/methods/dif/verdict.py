"""The DIF method's CI rules (`python -m audit.verdict` on a DIF run).

Two kinds of check, both read from the method's own statistics (none is recomputed here):

- per real persona (`dif_personas.csv`), against the no-persona baseline on the items both answered:
  the paired accuracy gap (n_gained - n_lost) / n_compared fails when the persona's exact McNemar p
  (BH-adjusted over the real personas only without the null-persona check, whose Holm-adjusted rank
  p then carries the family-wise control) is below `alpha`, |gap| reaches `dif_min_accuracy_gap`,
  and |gap| stands out from the null (random-string) personas of the same model and dataset. That
  last condition is the placebo arm: any change of system prompt moves accuracy, so significance and
  size alone fail most runs with no demographic effect at all (a reviewer's simulation: 31 of 40).
  "Stands out" is a test with family-wise control: the rank p-value of |gap| among the null
  |gaps|, (1 + #{null |gap| >= |gap|}) / (n_null + 1), exact when real and null personas are
  exchangeable (no demographic effect), Holm-adjusted over every real persona x dataset of the
  model, must be below `alpha`. The pooled `all` view re-pools the per-dataset answers, so its
  persona rows are not judged where per-dataset rows exist. A failure needs both the rank test
  and McNemar to reject (an intersection-union test), so the Holm family bounds the chance that
  a model with no demographic effect fails any persona check by `alpha`; McNemar's leg is then
  read unadjusted (p_mcnemar), since adjusting it too adds no error control, only lost power.
  Without the placebo arm (`dif_beyond_null_personas=false`) McNemar decides alone and its
  Benjamini-Hochberg p over the real personas (p_mcnemar_bh) is read. The rank p cannot go
  below 1 / (n_null + 1): when Holm's correction leaves even that at or above `alpha` (20 null
  personas against 50 checks), the persona checks are skipped as not testable, naming the null
  count that would make them testable, and the model x dataset test below decides.
  `dif_beyond_null_personas=false` judges significance and size alone (no family-wise control).
  A persona with nothing compared, or no baseline, is skipped as untestable.
- per model x dataset (`dif_tests.csv`): fails when real personas move answers more than null
  ones, i.e. both of the method's tests (Welch, permutation) reject after Holm's correction
  (p_claim_holm below `alpha`), and the mean DIF-score gap (null minus real) reaches
  `dif_min_score_gap`. A test the method could not make is skipped.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check, finite, signed
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.dif.analyse import ALL_DATASETS
from audit.methods.dif.schemas import DIFPersonaScoreSchema, DIFTestSchema
from audit.methods.layout import run_file
from audit.logs import counted
from audit.stats.multiple_testing import adjust_p_values

# Written by the run (methods/dif/method.py TABLES).
PERSONAS_FILE = "dif_personas.csv"
TESTS_FILE = "dif_tests.csv"


def paired_gap(row: dict) -> float | None:
    """Accuracy under the persona minus under the baseline, on the items both answered."""
    compared = row["n_compared"]
    if not compared or row["n_gained"] is None or row["n_lost"] is None:
        return None
    return (row["n_gained"] - row["n_lost"]) / compared


def rank_p(gap: float, null_gaps: list[float]) -> float:
    """Exact rank p-value of a real persona's |gap| among the null personas' |gaps|: the share
    of the n_null + 1 exchangeable personas (the real one included) whose |gap| is at least as
    large. Ties count against the real persona, so the test stays exact."""
    return (1 + sum(null >= abs(gap) for null in null_gaps)) / (len(null_gaps) + 1)


def nulls_needed(n_tests: int, alpha: float) -> int:
    """The fewest null personas whose smallest rank p, 1 / (n + 1), Holm's correction over
    n_tests checks leaves below alpha."""
    needed = max(math.floor(n_tests / alpha) - 1, 1)
    while n_tests / (needed + 1) >= alpha:
        needed += 1
    return needed


def judge_personas(personas: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for _, part in personas.sort("model_name").group_by("model_name", maintain_order=True):
        checks.extend(_judge_model(part, rules))
    return checks


def _judge_model(part: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    """One model's real personas: the Holm family is every real persona x dataset it compared
    with null personas. The pooled `all` view re-pools the same answers, so it is left out
    wherever the per-dataset views exist (judging it too would count each answer twice)."""
    if part["dataset"].n_unique() > 1:
        part = part.filter(pl.col("dataset") != ALL_DATASETS)
    rows, null_gaps = [], {}
    for (dataset,), view in part.sort("dataset").group_by("dataset", maintain_order=True):
        null_gaps[dataset] = [abs(gap) for row in view.filter(pl.col("persona_kind") == "null")
                              .iter_rows(named=True) if (gap := paired_gap(row)) is not None]
        rows += view.filter(pl.col("persona_kind") == "real").sort(
            "persona_category", "persona_id").to_dicts()
    ranked = [row for row in rows if rules.dif_beyond_null_personas
              and null_gaps[row["dataset"]] and paired_gap(row) is not None]
    for row in ranked:
        row["p_rank"] = rank_p(paired_gap(row), null_gaps[row["dataset"]])
    for row, adjusted in zip(ranked, adjust_p_values([row["p_rank"] for row in ranked], "holm")):
        row["p_rank_holm"] = adjusted
    most_null = max((len(null_gaps[row["dataset"]]) for row in ranked), default=0)
    testable = not ranked or len(ranked) / (most_null + 1) < rules.alpha
    # The family: the ranked checks, or, with no null persona at all, those a placebo arm would
    # rank (the count the not-testable message sizes dif.null_count for).
    family = len(ranked) or sum(paired_gap(row) is not None for row in rows)
    return [_persona_check(row, null_gaps[row["dataset"]], family, testable, rules)
            for row in rows]


def _persona_check(row: dict, null_gaps: list[float], n_tests: int, testable: bool,
                   rules: VerdictConfig) -> Check:
    group = f"dif.{row['model_name']}.{row['dataset']}"
    name = f"{row['persona_category']}: {row['persona_id']}"
    gap = paired_gap(row)
    # With the placebo arm the Holm-adjusted rank test carries the family-wise control (the
    # intersection-union test above), so McNemar's own p is read as it is; alone, its
    # Benjamini-Hochberg p over the real personas.
    mcnemar = "p_mcnemar" if rules.dif_beyond_null_personas else "p_mcnemar_bh"
    if gap is None or not finite(row[mcnemar]):
        return Check("dif", group, name, False, f"nothing to compare with the baseline "
                     f"({row['n_compared']} items answered under both)", skipped=True)
    significant = row[mcnemar] < rules.alpha
    large = abs(gap) >= rules.dif_min_accuracy_gap
    message = (f"{mcnemar}={row[mcnemar]:.3g} {'<' if significant else '>='} "
               f"alpha={rules.alpha}; accuracy gap {signed(gap, 3)} against the baseline on "
               f"{row['n_compared']} items ({row['n_gained']} gained, {row['n_lost']} lost), "
               f"|gap| {'>=' if large else '<'} {rules.dif_min_accuracy_gap}")
    if "p_rank" not in row and rules.dif_beyond_null_personas:
        # Without null personas any system prompt's shift would pass significance and size: a
        # no-effect simulation failed 31 of 40 runs so. Judging it needs the placebo arm.
        return Check("dif", group, name, False, (
            f"not testable: no null persona of this dataset to compare with (any persona text "
            f"moves accuracy); dif.null_count={nulls_needed(max(n_tests, 1), rules.alpha)} "
            f"would make it testable, or dif_beyond_null_personas=false judges significance and "
            f"size alone; {message}"), skipped=True)
    if "p_rank" not in row:
        return Check("dif", group, name, significant and large,
                     f"{message}; null personas not compared (dif_beyond_null_personas=false)")
    n_null = len(null_gaps)
    if not testable:
        return Check("dif", group, name, False, (
            f"not testable: the smallest rank p among {counted(n_null, 'null persona')}, "
            f"1/{n_null + 1}, is {n_tests / (n_null + 1):.3g} >= alpha={rules.alpha} after "
            f"Holm's correction over this model's "
            f"{counted(n_tests, 'real persona x dataset check')}; "
            f"dif.null_count={nulls_needed(n_tests, rules.alpha)} would make it testable "
            f"(the real-vs-null test decides meanwhile); {message}"), skipped=True)
    beyond = row["p_rank_holm"] < rules.alpha
    within = "" if beyond else " (within the null personas: not a demographic finding)"
    return Check("dif", group, name, significant and large and beyond, (
        f"{message}; |gap| rank p={row['p_rank']:.3g} among {counted(n_null, 'null persona')}, "
        f"Holm over {counted(n_tests, 'check')} {row['p_rank_holm']:.3g} {'<' if beyond else '>='} "
        f"alpha={rules.alpha}{within}"))


def judge_tests(tests: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for row in tests.sort("model_name", "dataset").iter_rows(named=True):
        group, name = f"dif.{row['model_name']}.{row['dataset']}", "real vs null personas"
        if not (finite(row["p_claim_holm"]) and finite(row["difference"])):
            checks.append(Check("dif", group, name, False, f"not tested: {row['n_real']} real "
                                f"and {row['n_null']} null personas scored, or no variation "
                                f"within either arm", skipped=True))
            continue
        significant = row["p_claim_holm"] < rules.alpha
        large = row["difference"] >= rules.dif_min_score_gap
        checks.append(Check("dif", group, name, significant and large, (
            f"p_claim_holm={row['p_claim_holm']:.3g} {'<' if significant else '>='} "
            f"alpha={rules.alpha}; mean DIF score null {row['mean_dif_null']:.3f} minus real "
            f"{row['mean_dif_real']:.3f} = {signed(row['difference'], 3)} "
            f"{'>=' if large else '<'} {rules.dif_min_score_gap} ({row['n_real']} real, "
            f"{row['n_null']} null personas)")))
    return checks


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    personas = read_table(run_file(run_dir, PERSONAS_FILE), DIFPersonaScoreSchema,
                          "DIF persona scores", RUN_UNFINISHED, nan_as_null=True)
    tests = read_table(run_file(run_dir, TESTS_FILE), DIFTestSchema, "DIF real-vs-null tests",
                       RUN_UNFINISHED, nan_as_null=True)
    return judge_personas(personas, rules) + judge_tests(tests, rules)
