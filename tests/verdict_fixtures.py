"""Finished runs as `python -m audit.verdict` finds them, for the verdict tests of every method:
each method's tables plus the config.yaml the run skeleton records (methods/run.py write_config).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
from counterfactual_fixtures import simulated_names

from audit.methods.configs import AuditConfig
from audit.methods.counterfactual.analyse import (
    StatsSettings,
    comparisons,
    observations,
    pairwise_tests,
)
from audit.methods.counterfactual.analyse_units import design_tests
from audit.methods.dif.config import DIFConfig
from audit.methods.dif.analyse import analyse as analyse_dif
from audit.methods.iat.analyse import smallest_sign_flip_p
from audit.methods.run import write_config


def record(directory: Path, method: str) -> Path:
    """The config.yaml a finished run of `method` leaves in its directory."""
    return write_config(AuditConfig(method=method), directory)


def counterfactual_run(directory: Path, effect: float, name_sd: float = 0.1, names: int = 6,
                       seed: int = 0) -> Path:
    """Both pair tables of a run: race A against B over `names` names a race, 4 templates x 3
    replicates, B's sentiment shifted by `effect`, each name its own effect (sd `name_sd`)."""
    metrics, groups = simulated_names(effect, name_sd, np.random.default_rng(seed), names=names)
    metrics = metrics.with_columns(refusal=pl.lit(0.0))
    tested = ["sentiment", "word_count", "refusal"]
    settings = StatsSettings(bootstrap_resamples=100)
    _, pairs = comparisons(observations(metrics, groups, tested), by_template=True)
    directory.mkdir(parents=True, exist_ok=True)
    pairwise_tests(pairs, settings).write_csv(directory / "counterfactual_pairwise.csv")
    design_tests(metrics, groups, tested, settings).write_csv(
        directory / "counterfactual_design_tests.csv")
    record(directory, "counterfactual")
    return directory


IAT_COLUMNS = ["model", "category", "dataset", "n", "parse_rate", "mean_d", "ci_low", "ci_high",
               "p_value", "p_adjusted"]


def iat_run(directory: Path, rows: list[tuple]) -> Path:
    """iat_stats.csv with the method's columns (the left-out and one-group counts are 0 here, so
    the tested mean is mean_d; min_p is what n answers of one sign reach at 10,000 resamples)."""
    directory.mkdir(parents=True, exist_ok=True)
    table = pl.DataFrame(rows, orient="row", schema=IAT_COLUMNS)
    table.with_columns(
        n_left_out_strict=pl.lit(0), n_left_out_lenient=pl.lit(0), n_one_group=pl.lit(0),
        mean_d_test=pl.col("mean_d"),
        min_p=pl.Series([smallest_sign_flip_p(n, 10_000) for n in table["n"]], dtype=pl.Float64),
    ).write_csv(directory / "iat_stats.csv")
    record(directory, "iat")
    return directory


def rasch_run(directory: Path, decisions: list[str], converged: bool = True,
              no_signal: list[str] | None = None) -> Path:
    """fit/ as the fit stage writes it; config.yaml in report/, where the report stage puts it.
    `no_signal`: the reasons an audit's analyse stage writes (None: a fit without them)."""
    (directory / "fit").mkdir(parents=True, exist_ok=True)
    rows = []
    for index, decision in enumerate(decisions):
        hdi = {"different": (0.3, 0.9), "equivalent": (-0.05, 0.05),
               "undecided": (-0.05, 0.4)}[decision]
        rows.append({"model_name": "smollm2", "attribute": "race", "level_a": "Black",
                     "level_b": f"level{index}", "mean": sum(hdi) / 2, "sd": 0.1,
                     "hdi_low": hdi[0], "hdi_high": hdi[1], "p_direction": 0.9,
                     "rope_low": -0.1, "rope_high": 0.1, "decision": decision})
    pl.DataFrame(rows).write_csv(directory / "fit" / "contrasts.csv")
    (directory / "fit" / "diagnostics.json").write_text(json.dumps({
        "converged": converged, "rhat_max": 1.002 if converged else 1.08,
        "ess_bulk_min": 1800.0, "ess_tail_min": 1500.0, "divergences": 0,
        "advice": "" if converged else "run longer chains",
        **({"no_signal": no_signal} if no_signal is not None else {})}))
    record(directory / "report", "rasch")
    return directory


# --- DIF ------------------------------------------------------------------------------------------

DIF_ITEMS = 80
DIF_NULL_PERSONAS = 8


def dif_answers(drops: dict[str, float], seed: int = 7, flip_rate: float = 0.04,
                null_personas: int = DIF_NULL_PERSONAS) -> pl.DataFrame:
    """Graded answers of one model on DIF_ITEMS math items: the baseline solves about 80%; every
    other persona answers as the baseline with each item flipped at `flip_rate` (the noise any
    persona sentence adds), and a persona in `drops` also loses that share of the baseline's
    correct answers (a planted accuracy gap). Real personas: `race_*`, `religion_*`; null:
    `null_*` (`null_personas` of them)."""
    rng = np.random.default_rng(seed)
    baseline = rng.random(DIF_ITEMS) < 0.8
    personas = [("baseline", "baseline", "baseline"), ("race_a", "real", "race"),
                ("race_b", "real", "race"), ("religion_a", "real", "religion"),
                *[(f"null_{i}", "null", "null") for i in range(null_personas)]]
    rows = []
    for persona_id, kind, category in personas:
        correct = baseline.copy()
        if kind != "baseline":
            correct ^= rng.random(DIF_ITEMS) < flip_rate
            correct &= ~(baseline & (rng.random(DIF_ITEMS) < drops.get(persona_id, 0.0)))
        rows += [{"prompt_id": f"{persona_id}:{item}", "model_name": "m", "persona_id": persona_id,
                  "persona_kind": kind, "persona_category": category, "item_id": f"i{item:03d}",
                  "dataset": "math", "status": "ok", "extracted": "1", "correct": bool(right)}
                 for item, right in enumerate(correct)]
    return pl.DataFrame(rows)


def dif_run(directory: Path, drops: dict[str, float], seed: int = 7,
            null_personas: int = DIF_NULL_PERSONAS) -> Path:
    """dif_personas.csv and dif_tests.csv from the method's own analysis of dif_answers."""
    directory.mkdir(parents=True, exist_ok=True)
    results = analyse_dif(dif_answers(drops, seed, null_personas=null_personas),
                          DIFConfig(permutation_resamples=999))
    results.personas.write_csv(directory / "dif_personas.csv")
    results.tests.write_csv(directory / "dif_tests.csv")
    record(directory, "dif")
    return directory


def read_junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def junit_outcomes(path: Path) -> dict[str, str]:
    """Each testcase's name and whether it failed, was skipped or passed."""
    return {case.get("name"): ("failure" if case.find("failure") is not None else
                               "skipped" if case.find("skipped") is not None else "pass")
            for case in read_junit(path).iter("testcase")}
