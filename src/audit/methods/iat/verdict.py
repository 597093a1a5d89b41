"""The IAT method's CI rules (`python -m audit.verdict` on an IAT run, or on the output of
`python -m audit.iat import_dir=...`).

A model x category x dataset row of `iat_stats.csv` fails when its FDR-adjusted p is below `alpha`
and |mean D| exceeds `iat_min_abs_d`; with `iat_min_parse_rate` above 0, a row whose answers parsed
less often fails as unreliable. A row with no D (no parsed answer) is skipped, not failed.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check, finite
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.iat.schemas import IATStatsSchema
from audit.methods.run import run_file

# Written by the run and the import command (methods/iat/method.py analyse).
STATS_FILE = "iat_stats.csv"


def judge_iat(stats: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for row in stats.sort("model", "dataset", "category").iter_rows(named=True):
        group = f"iat.{row['model']}.{row['dataset']}"
        if not (finite(row["p_adjusted"]) and finite(row["mean_d"])):
            checks.append(Check("iat", group, row["category"], False,
                                f"no D score to test (n={row['n']}, parse rate "
                                f"{row['parse_rate']})", skipped=True))
            continue
        effect = abs(row["mean_d"])
        significant = row["p_adjusted"] < rules.alpha
        large = effect > rules.iat_min_abs_d
        unreliable = (rules.iat_min_parse_rate > 0 and finite(row["parse_rate"])
                      and row["parse_rate"] < rules.iat_min_parse_rate)
        message = (f"p_adjusted={row['p_adjusted']:.3g} {'<' if significant else '>='} "
                   f"alpha={rules.alpha}; |D|={effect:.3f} {'>' if large else '<='} "
                   f"{rules.iat_min_abs_d}; D {row['mean_d']:+.3f} [{row['ci_low']:+.3f}, "
                   f"{row['ci_high']:+.3f}], n={row['n']}, parse rate {row['parse_rate']:.2f}")
        if unreliable:
            message = f"parse rate below {rules.iat_min_parse_rate}: unreliable; " + message
        checks.append(Check("iat", group, row["category"], (significant and large) or unreliable,
                            message))
    return checks


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    return judge_iat(read_table(run_file(run_dir, STATS_FILE), IATStatsSchema, "IAT statistics",
                        RUN_UNFINISHED, nan_as_null=True), rules)
