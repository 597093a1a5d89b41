"""The counterfactual method's CI rules (`python -m audit.verdict` on a counterfactual run).

CI judges the design tests (counterfactual_design_tests.csv, analyse_units.py): each pair of groups
tested on the units the design samples (names; templates with their replicates nested in them),
not the per-answer Mann-Whitney rows, which count every answer as independent and rejected 39% of
simulated no-effect designs. A pair fails when its Benjamini-Hochberg adjusted p is below `alpha`
and its |rank-biserial| reaches the practical threshold (`min_rank_biserial`; by default the run's
own `counterfactual.min_rank_biserial`, recorded in each row's `practical_threshold`). A pair whose
design cannot reach p < alpha at all (`min_p`: too few names or templates, or no template that
holds both groups) is skipped as untestable, so a pass never hides a design that could not fail,
and is left out of the Benjamini-Hochberg family, which the verdict adjusts over the pairs
testable at its own `alpha`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check, signed
from audit.methods.layout import run_file
from audit.logs import counted
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.counterfactual.analyse_units import testable_bh
from audit.methods.counterfactual.schemas import DesignTestSchema

# Written by the run's analyse stage (methods/counterfactual/method.py, DESIGN_TESTS).
DESIGN_TESTS_FILE = "counterfactual_design_tests.csv"
UNIT_WORDS = {"name": "names", "template": "templates"}


def units_text(row: dict) -> str:
    """`9 names vs 9 names` or `3 templates`: what the test counted as independent."""
    if row["unit"] == "name":
        return f"{counted(row['n_units_a'], 'name')} vs {counted(row['n_units_b'], 'name')}"
    return counted(row["n_templates"], "template")


def untestable_reason(row: dict, alpha: float) -> str:
    """Why a pair cannot fail, with what to add."""
    if row["n_templates"] == 0:
        return (f"no template x replicate has answers for both {row['group_a']} and "
                f"{row['group_b']}, so nothing compares them; add a template that uses both")
    return (f"with {units_text(row)} the smallest attainable p is {row['min_p']:.3g} >= "
            f"alpha={alpha}; add {UNIT_WORDS[row['unit']]}")


def judge_counterfactual(tests: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    """One check a pair. The BH family is adjusted afresh over the pairs testable at the rules'
    alpha, which may differ from the run's `counterfactual.alpha` that set the table's `p_bh`."""
    checks = []
    tests = tests.with_columns(testable_bh(tests, rules.alpha))
    for row in tests.sort("model_name", "metric", "factor", "group_a",
                          "group_b").iter_rows(named=True):
        threshold = (rules.min_rank_biserial if rules.min_rank_biserial is not None
                     else row["practical_threshold"])
        group = f"counterfactual.{row['model_name']}.{row['metric']}.{row['factor']}"
        name = f"{row['group_a']} vs {row['group_b']}"
        if row["min_p"] >= rules.alpha:
            checks.append(Check("counterfactual", group, name, False,
                                f"not testable: {untestable_reason(row, rules.alpha)}",
                                skipped=True))
            continue
        effect = abs(row["rank_biserial"])
        failed = row["p_bh"] < rules.alpha and effect >= threshold
        message = (f"p_bh={row['p_bh']:.3g} {'<' if row['p_bh'] < rules.alpha else '>='} "
                   f"alpha={rules.alpha} ({units_text(row)}); |rank-biserial|={effect:.3f} "
                   f"{'>=' if effect >= threshold else '<'} {threshold:.3f}; mean difference "
                   f"{signed(row['mean_difference'], 3)}")
        if row["difference_ci_low"] is not None and row["difference_ci_high"] is not None:
            message += (f" [{signed(row['difference_ci_low'], 3)}, "
                        f"{signed(row['difference_ci_high'], 3)}]")
        if row["truncated_share_a"] or row["truncated_share_b"]:
            message += (f"; cut off at max_tokens: {row['truncated_share_a']:.0%} vs "
                        f"{row['truncated_share_b']:.0%}")
        checks.append(Check("counterfactual", group, name, failed, message))
    return checks


def read_design_tests(run_dir: Path) -> pl.DataFrame:
    return read_table(run_file(run_dir, DESIGN_TESTS_FILE), DesignTestSchema,
                      "counterfactual design tests", RUN_UNFINISHED, nan_as_null=True)


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    return judge_counterfactual(read_design_tests(run_dir), rules)
