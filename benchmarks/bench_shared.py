"""What bench_calibration and bench_adaptive share: the planted contrast, the audit's fit
config, sampler seeds, the audits a fast-fit check refits, signed decisions, intervals, and the
PASS/FAIL lines of their targets; and the simulated audits bench_adaptive compares and
adaptive_trace traces (AdaptiveAudits).

Not a benchmark: the scripts import it (this folder is on their sys.path).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from omegaconf import OmegaConf

from audit.config import CONF_DIR
from audit.methods.rasch.adaptive import pool_cells
from audit.methods.rasch.config import FitConfig, PlanConfig
from audit.methods.rasch.irt import RaschFit, fit_rasch
from audit.methods.rasch.irt.judge_error import JudgeConfusion
from audit.methods.rasch.power import ci_failures, config_components
from audit.methods.rasch.simulation import (CompiledSampler, VarianceComponents,
                                            simulate_outcomes)

ATTRIBUTES = ["gender", "race"]
PLANTED = ("race", "Black", "White")  # level_a sorts first: contrast mean = planted gap
PLANNED_GAP = 0.5
Z_95 = 1.959964


def audit_fit_config(model: str) -> FitConfig:
    """The fit config an audit with fit=<model> runs (conf/fit/<model>.yaml over FitConfig)."""
    path = Path(CONF_DIR) / "fit" / f"{model}.yaml"
    if not path.is_file():
        sys.exit(f"--model {model}: there is no {path}; name a file of conf/fit/")
    values = OmegaConf.to_container(OmegaConf.load(path))
    known = {field.name for field in dataclasses.fields(FitConfig)}
    settings = {key: value for key, value in values.items() if key in known}
    return dataclasses.replace(FitConfig(**settings), attributes=ATTRIBUTES)


def effects_of(gap: float) -> dict[str, dict[str, float]]:
    """Level effects with ``gap`` planted between Black and White (every other effect 0)."""
    return {"gender": {}, "race": {PLANTED[1]: gap}}


def fit_seed(run_seed: int, *keys: int) -> int:
    """The sampler seed of one simulated audit: a hash of the run's --seed and the audit's place
    (cell, index). A loop index alone gave audit i the same MCMC seed, and so the same imputed
    judge rates (judge_error.rate_draws reads the fit's seed), in every cell and every --seed
    run, which made runs that differ "by their seed alone" share that part of their noise."""
    return int(np.random.SeedSequence([run_seed, *keys]).generate_state(1)[0] % 2**31)


def checked_audits(cells: int, seeds: int, check: int) -> set[tuple[int, int]]:
    """The (cell index, audit index) pairs a --check refits with the audit's own sampling.

    The cells take turns, so every cell is checked once --check reaches the number of cells
    (the first --check audits of the loop were all of the first cell: null designs at the
    smallest text sd, where both fits pass CI almost always and the check could hardly
    disagree); within a cell the checked audits are spread by stride over its indices."""
    chosen = set()
    for cell in range(cells):
        share = len(range(cell, min(check, cells * seeds), cells))
        chosen.update((cell, index * seeds // share) for index in range(share))
    return chosen


def signed_call(decision: str, mean: float) -> str:
    """A contrast's decision with its sign where it is `different`: two `different`s of
    opposite signs are opposite claims, not an agreement."""
    if decision != "different":
        return decision
    return "different+" if mean > 0 else "different-"


def signed_calls(contrasts: pl.DataFrame, name: str) -> pl.DataFrame:
    """Each contrast's decision, with its sign where it is `different` (signed_call), as
    column ``name``, keyed by model, attribute and levels."""
    return contrasts.select(
        "model_name", "attribute", "level_a", "level_b",
        pl.struct("decision", "mean").map_elements(
            lambda row: signed_call(row["decision"], row["mean"]),
            return_dtype=pl.String).alias(name))


def check_pair(fast: pl.DataFrame, full: pl.DataFrame) -> dict[str, int]:
    """Two fits of one audit's data (fast, the audit's own sampling): over their contrasts, how
    many get the same signed decision, and whether either fails CI on any."""
    keys = ["model_name", "attribute", "level_a", "level_b"]
    calls = signed_calls(fast, "fast").join(signed_calls(full, "full"), on=keys)
    return {"contrasts": calls.height,
            "same": int((calls["fast"] == calls["full"]).sum()),
            "either_fails": int(any(ci_failures(fast).values())
                                or any(ci_failures(full).values()))}


def right_sign(mean: float, truth: float) -> bool:
    """Whether an estimate has the planted gap's sign (never, for a zero gap)."""
    return truth != 0 and bool(np.sign(mean) == np.sign(truth))


def interval(successes: float, n: int) -> str:
    """A proportion with its normal 95% half-width (floored at 1/n for 0 and n)."""
    p = successes / n
    half = Z_95 * math.sqrt(max(p * (1 - p), 1 / n) / n)
    return f"{p:.3f} +- {half:.3f} (n={n})"


def wilson(successes: float, n: int) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion."""
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + Z_95**2 / (2 * n)) / (1 + Z_95**2 / n)
    half = Z_95 * math.sqrt(p * (1 - p) / n + Z_95**2 / (4 * n**2)) / (1 + Z_95**2 / n)
    return centre - half, centre + half


@dataclass(frozen=True)
class Target:
    """One RESULT figure's target: ``passes`` gets the figure; ``says`` is the rule in words,
    ``source`` where the target comes from (an issue, or the benchmark's own floor)."""

    key: str
    says: str
    source: str
    passes: Callable[[float], bool]


def at_most(key: str, limit: float, source: str) -> Target:
    return Target(key, f"<= {limit:g}", source, lambda value: value <= limit)


def at_least(key: str, limit: float, source: str) -> Target:
    return Target(key, f">= {limit:g}", source, lambda value: value >= limit)


def target_lines(figures: dict[str, float], targets: list[Target]) -> list[str]:
    """One line per target: the figure, the rule, PASS or FAIL. A figure that is nan (the arm
    was not run, or had nothing to count) FAILs: a target no run measured is not met."""
    lines = []
    for target in targets:
        value = figures[target.key]
        met = not math.isnan(value) and bool(target.passes(value))
        lines.append(f"target {target.key}={value:.3f} {target.says} ({target.source}): "
                     f"{'PASS' if met else 'FAIL'}")
    return lines


@dataclass
class AdaptiveAudits:
    """The simulated audits of bench_adaptive (which compares the fixed and adaptive designs on
    each) and adaptive_trace (which follows each adaptive run to its budget), in one place so
    that a trace replays bench_adaptive's audits exactly: the pool (the whole design), the
    plan's components at ``text_sd`` with a judge known from its gold counts, and one compiled
    sampler for every fit. ``labels`` draws one audit's answers from the run's label stream
    (``rng``: the same --seed gives the same audits in both scripts), ``fixed`` fits them all."""

    pool: pl.DataFrame
    fit: FitConfig
    text_sd: float
    sampler: CompiledSampler = field(init=False)
    components: VarianceComponents = field(init=False)
    confusion: JudgeConfusion | None = field(init=False)
    cells: pl.DataFrame = field(init=False)

    def __post_init__(self) -> None:
        self.sampler = CompiledSampler(engine=self.fit.engine)
        self.components = config_components(PlanConfig(text_sd=self.text_sd))
        self.confusion = self.components.gold_counts(self.fit.outcome)
        self.cells = pool_cells(self.pool, ATTRIBUTES)

    def labels(self, gap: float, rng: np.random.Generator) -> pl.DataFrame:
        """One audit's judged answers to every prompt of the pool, with their replicate (what
        adaptive.answers_from reads)."""
        return simulate_outcomes(self.pool, self.components, effects_of(gap), rng).with_columns(
            self.pool.get_column("replicate"))

    def fixed(self, labels: pl.DataFrame, fit: FitConfig) -> RaschFit:
        """The fixed design: every answer in one fit (``fit`` carries the audit's seed)."""
        return fit_rasch(labels.drop("replicate"), fit, sample=self.sampler,
                         confusion=self.confusion, pool=self.cells)
