"""The DIF method's CI rules (`python -m audit.verdict` on a DIF run).

Two kinds of check, both read from the method's own statistics (none is recomputed here):

- per real persona (`dif_personas.csv`), against the no-persona baseline on the items both
  answered: the paired accuracy gap (n_gained - n_lost) / n_compared fails when the persona's
  BH-adjusted exact McNemar p is below `alpha`, |gap| reaches `dif_min_accuracy_gap`, and |gap|
  exceeds the largest |gap| of any null (random-string) persona of the same model and dataset.
  The last condition is the placebo arm: a shift that random text also produces is what any
  change of system prompt does, not a demographic finding (`dif_beyond_null_personas=false`
  turns it off). A persona with nothing compared, or no baseline, is skipped as untestable.
- per model x dataset (`dif_tests.csv`): fails when real personas move answers more than null
  ones, i.e. both of the method's tests (Welch, permutation) reject after Holm's correction
  (p_claim_holm below `alpha`), and the mean DIF-score gap (null minus real) reaches
  `dif_min_score_gap`. A test the method could not make is skipped.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check, finite
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.dif.schemas import DIFPersonaScoreSchema, DIFTestSchema
from audit.methods.run import run_file

# Written by the run (methods/dif/method.py TABLES).
PERSONAS_FILE = "dif_personas.csv"
TESTS_FILE = "dif_tests.csv"


def paired_gap(row: dict) -> float | None:
    """Accuracy under the persona minus under the baseline, on the items both answered."""
    compared = row["n_compared"]
    if not compared or row["n_gained"] is None or row["n_lost"] is None:
        return None
    return (row["n_gained"] - row["n_lost"]) / compared


def judge_personas(personas: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for (model, dataset), part in personas.sort("model_name", "dataset").group_by(
            ["model_name", "dataset"], maintain_order=True):
        null_gaps = [abs(gap) for row in part.filter(pl.col("persona_kind") == "null")
                     .iter_rows(named=True) if (gap := paired_gap(row)) is not None]
        floor = max(null_gaps) if null_gaps and rules.dif_beyond_null_personas else None
        for row in part.filter(pl.col("persona_kind") == "real").sort(
                "persona_category", "persona_id").iter_rows(named=True):
            checks.append(_persona_check(row, f"dif.{model}.{dataset}", floor, len(null_gaps),
                                         rules))
    return checks


def _persona_check(row: dict, group: str, floor: float | None, n_null: int,
                   rules: VerdictConfig) -> Check:
    name = f"{row['persona_category']}: {row['persona_id']}"
    gap = paired_gap(row)
    if gap is None or not finite(row["p_mcnemar_bh"]):
        return Check("dif", group, name, False, f"nothing to compare with the baseline "
                     f"({row['n_compared']} items answered under both)", skipped=True)
    significant = row["p_mcnemar_bh"] < rules.alpha
    large = abs(gap) >= rules.dif_min_accuracy_gap
    beyond = floor is None or abs(gap) > floor
    if floor is None:
        noise = ("no null personas to compare with" if n_null == 0 else
                 "null personas not compared (dif_beyond_null_personas=false)")
    else:
        noise = (f"{'beyond' if beyond else 'within (not a demographic finding)'} the largest "
                 f"null-persona |gap| {floor:.3f} of {n_null}")
    message = (f"p_mcnemar_bh={row['p_mcnemar_bh']:.3g} {'<' if significant else '>='} "
               f"alpha={rules.alpha}; accuracy gap {gap:+.3f} against the baseline on "
               f"{row['n_compared']} items ({row['n_gained']} gained, {row['n_lost']} lost), "
               f"|gap| {'>=' if large else '<'} {rules.dif_min_accuracy_gap}; {noise}")
    return Check("dif", group, name, significant and large and beyond, message)


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
            f"{row['mean_dif_real']:.3f} = {row['difference']:+.3f} "
            f"{'>=' if large else '<'} {rules.dif_min_score_gap} ({row['n_real']} real, "
            f"{row['n_null']} null personas)")))
    return checks


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    personas = read_table(run_file(run_dir, PERSONAS_FILE), DIFPersonaScoreSchema,
                          "DIF persona scores", RUN_UNFINISHED, nan_as_null=True)
    tests = read_table(run_file(run_dir, TESTS_FILE), DIFTestSchema, "DIF real-vs-null tests",
                       RUN_UNFINISHED, nan_as_null=True)
    return judge_personas(personas, rules) + judge_tests(tests, rules)
