"""bench_calibration's truths drawn from the fit's own prior (--prior-gaps, --prior-spreads,
--prior-others), and its overrides of that prior (--attribute-prior-sd, --null-ratio-sd): where
every truth comes from the prior, a calibrated model's 94% HDIs cover it 94% of the time whatever
the data's strength, so a probe can tell over-coverage at a fixed truth from over-coverage of the
model itself.

Not a benchmark: bench_calibration imports it (this folder is on its sys.path).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from bench_shared import PLANTED, interval
from scipy import stats

from audit.methods.rasch.irt import explanatory
from audit.methods.rasch.simulation import DEFAULT_GENDERS, DEFAULT_RACES



def prior_thirds() -> tuple[float, float]:
    """Where the text spread's prior, HalfNormal(TEXT_SPREAD_PRIOR_SD), splits into thirds
    (0.43 and 0.97 logits at the default scale of 1)."""
    low, high = stats.halfnorm.ppf([1 / 3, 2 / 3], scale=explanatory.TEXT_SPREAD_PRIOR_SD)
    return float(low), float(high)


def override_priors(attribute_sd: float | None, null_ratio_sd: float | None) -> None:
    """--attribute-prior-sd and --null-ratio-sd: benchmark-only overrides of the model's
    constants, to measure a prior's weight. The model builder reads them when it builds, so every
    fit after this call (and prior_effects) uses them; prints the priors in force."""
    if attribute_sd is not None:
        explanatory.ATTRIBUTE_PRIOR_SD = attribute_sd
    if null_ratio_sd is not None:
        explanatory.NULL_RATIO_LOG_SD = null_ratio_sd
    print(f"level-effect prior: ZeroSumNormal({explanatory.ATTRIBUTE_PRIOR_SD}); "
          f"log(null / text spread) ~ N(0, {explanatory.NULL_RATIO_LOG_SD})")


def prior_effects(rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """Level effects drawn from the fit's own prior (ZeroSumNormal(ATTRIBUTE_PRIOR_SD): iid
    normals less their mean), for --prior-gaps: where the truth comes from the prior, a
    calibrated model's 94% HDIs cover it 94% of the time, whatever the data's strength."""
    def zero_sum(levels: tuple[str, ...]) -> dict[str, float]:
        draws = rng.normal(0.0, explanatory.ATTRIBUTE_PRIOR_SD, len(levels))
        return dict(zip(levels, (draws - draws.mean()).tolist()))
    return {"gender": zero_sum(DEFAULT_GENDERS), "race": zero_sum(DEFAULT_RACES)}


def prior_others(gap: float, rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """Level effects drawn from the fit's prior (prior_effects) with the planted pair moved
    apart about their drawn mean to ``gap``, for --prior-others: a fixed gap among groups that
    differ as the prior says, where effects_of plants it among groups otherwise alike. Moving
    the two about their mean keeps the race effects summing to zero."""
    effects = prior_effects(rng)
    attribute, level_a, level_b = PLANTED
    levels = effects[attribute]
    middle = (levels[level_a] + levels[level_b]) / 2.0
    levels[level_a], levels[level_b] = middle + gap / 2.0, middle - gap / 2.0
    return effects


def prior_spreads(rng: np.random.Generator) -> tuple[float, float]:
    """A text spread and a null spread drawn from the population model's prior
    (explanatory._shared_spreads): HalfNormal(TEXT_SPREAD_PRIOR_SD), and the null spread that
    times exp(N(0, NULL_RATIO_LOG_SD)); for --prior-spreads."""
    text_sd = abs(float(rng.normal(0.0, explanatory.TEXT_SPREAD_PRIOR_SD)))
    return text_sd, text_sd * math.exp(float(rng.normal(0.0, explanatory.NULL_RATIO_LOG_SD)))


def print_by_prior_thirds(table: pl.DataFrame) -> None:
    """--prior-spreads: coverage, width and the fitted text spread by the simulated text sd's
    third of its prior: where the over-coverage at fixed text sds comes from the prior's pull,
    the lowest third over-covers and the highest under-covers, and the three pool to nominal."""
    low, high = prior_thirds()
    thirds = np.digitize(table["simulated_text_sd"].to_numpy(), (low, high))
    names = (f"below {low:.2f}", f"{low:.2f}-{high:.2f}", f"above {high:.2f}")
    for third, name in enumerate(names):
        part = table.filter(pl.Series(thirds == third))
        if part.height:
            print(f"spreads drawn from the prior, text sd {name}: coverage "
                  f"{interval(part['covered'].sum(), part.height)}, width "
                  f"{part['width'].mean():.2f}, text spread {part['text_spread'].mean():.2f} "
                  f"against {part['simulated_text_sd'].mean():.2f} simulated")
