"""The counterfactual method's CI rules (`python -m audit.verdict` on a counterfactual run).

A pair of groups fails when its Benjamini-Hochberg adjusted p is below `alpha` and its
|rank-biserial| reaches the practical threshold (`min_rank_biserial`; by default the run's own
`counterfactual.min_rank_biserial`, recorded in each row's `practical_threshold`).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.counterfactual.schemas import PairwiseSchema

# Written by the run (methods/counterfactual/method.py, PAIRWISE).
PAIRWISE_FILE = "counterfactual_pairwise.csv"


def judge_counterfactual(pairwise: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for row in pairwise.sort("model_name", "metric", "factor", "scope", "group_a",
                             "group_b").iter_rows(named=True):
        threshold = (rules.min_rank_biserial if rules.min_rank_biserial is not None
                     else row["practical_threshold"])
        effect = abs(row["rank_biserial"])
        failed = row["p_bh"] < rules.alpha and effect >= threshold
        message = (f"p_bh={row['p_bh']:.3g} {'<' if row['p_bh'] < rules.alpha else '>='} "
                   f"alpha={rules.alpha}; |rank-biserial|={effect:.3f} "
                   f"{'>=' if effect >= threshold else '<'} {threshold:.3f}; mean "
                   f"{row['mean_a']:.3f} vs {row['mean_b']:.3f} (difference "
                   f"{row['mean_difference']:+.3f} [{row['difference_ci_low']:+.3f}, "
                   f"{row['difference_ci_high']:+.3f}])")
        if row["truncated_share_a"] or row["truncated_share_b"]:
            message += (f"; cut off at max_tokens: {row['truncated_share_a']:.0%} vs "
                        f"{row['truncated_share_b']:.0%}")
        checks.append(Check("counterfactual",
                            f"counterfactual.{row['model_name']}.{row['metric']}.{row['factor']}",
                            f"{row['scope']}: {row['group_a']} vs {row['group_b']}", failed,
                            message))
    return checks


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    path = run_dir / PAIRWISE_FILE
    return judge_counterfactual(read_table(path, PairwiseSchema, "counterfactual pairwise table",
                        RUN_UNFINISHED, nan_as_null=True),
                                rules)
