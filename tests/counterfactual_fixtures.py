"""Simulated counterfactual data shared by the statistics and verdict tests."""

from __future__ import annotations

import numpy as np
import polars as pl


def simulated(effect: float, per_cell: int = 12, seed: int = 0) -> tuple[pl.DataFrame,
                                                                           pl.DataFrame]:
    """Metrics and groups of a design with two templates and a race factor; group `B`'s
    sentiment is shifted by `effect`. Template `t2` writes longer, more positive texts, and
    holds a third group `C` that `t1` lacks."""
    rng = np.random.default_rng(seed)
    metric_rows, group_rows = [], []
    for template, groups in (("t1", ("A", "B")), ("t2", ("A", "B", "C"))):
        for group in groups:
            for index in range(per_cell):
                prompt_id = f"{template}-{group}-{index}"
                shift = (effect if group == "B" else 0.0) + (0.5 if template == "t2" else 0.0)
                metric_rows.append({"prompt_id": prompt_id,
                                    "sentiment": float(np.clip(rng.normal(shift, 0.3), -1, 1)),
                                    "word_count": float(rng.poisson(80 if template == "t1"
                                                                    else 150)),
                                    "refusal": 0.0})
                group_rows.append({"prompt_id": prompt_id, "model_name": "m",
                                   "template_id": template, "factor": "race", "group": group})
    return pl.DataFrame(metric_rows), pl.DataFrame(group_rows)
