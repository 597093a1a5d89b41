"""A labelling path's two error rates from its gold Betas, conditioned on a better-than-coin path.

The misclassification likelihood (likelihood.py) is only identified for a labeller better than a
coin, sensitivity + specificity > 1: at the sum 1 the label says nothing about the decision, and
below it the likelihood reverses, so a persona that decides favourably more often looks less
favourable. The gold Betas of a path with few gold answers of a class (none at all: a flat
Beta(1, 1)) put real mass there, and one imputation drawn there flips every gap of its fit. So
the cut draws the rates from the two independent gold Betas CONDITIONED on
sensitivity + specificity > 1, the model's own assumption (docs/statistics.md), and reports that
conditioned distribution (its mean and HDI) as the rates' uncertainty.

Under that condition the sensitivity's marginal CDF is the Beta's own CDF less the gold mass below
the coin line up to x, renormalised:

    G(x) = (F_sens(x) - V(x)) / (1 - V(1)),   V(x) = integral_0^x f_sens(t) F_spec(1 - t) dt,

and given a sensitivity s the specificity is its Beta truncated to (1 - s, 1]. V is the small part
(zero for an informative gold set), computed by the trapezoid rule on a fine grid; F_sens is
scipy's exact CDF, so an informative path's draws are the Beta's exact quantiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import integrate, optimize, stats

Beta = tuple[float, float]  # (alpha, beta)

# Grid of the coin-line integral V and of the reported interval: 1e-5 apart, far finer than the
# width of any gold Beta a gold set of a few thousand answers gives.
GRID = np.linspace(0.0, 1.0, 100_001)
# Warn (and record) when the gold leaves more than this mass on a labeller no better than a coin.
COIN_MASS_WARNING = 0.01
# Refuse to correct when the gold says the labeller is more likely than not no better than a coin:
# conditioning would then keep a sliver of the gold's mass (all of it: an inverted label mapping
# gives kept mass 1e-13), and the draws would be round-off on the coin line.
COIN_MASS_REFUSAL = 0.5


def coin_or_worse_mass(sensitivity: Beta, specificity: Beta) -> float:
    """P(sensitivity + specificity <= 1) under the two independent gold Betas (to 1e-9, the
    integral's accuracy, so two flat Betas give exactly 0.5)."""
    return round(1.0 - _kept(sensitivity, specificity), 9)


@lru_cache(maxsize=64)
def _kept(this: Beta, other: Beta) -> float:
    """P(sensitivity + specificity > 1), integrated directly (f_this x sf_other): as 1 - V(1) it
    is round-off, even negative, when the gold puts nearly all its mass below the coin line."""
    integrand = stats.beta.pdf(GRID, *this) * stats.beta.sf(1.0 - GRID, *other)
    return float(min(1.0, integrate.trapezoid(integrand, GRID)))


def _below_coin(this: Beta, other: Beta) -> np.ndarray:
    """V on GRID: the gold mass with this rate <= x and the sum of the two rates <= 1."""
    integrand = stats.beta.pdf(GRID, *this) * stats.beta.cdf(1.0 - GRID, *other)
    return integrate.cumulative_trapezoid(integrand, GRID, initial=0.0)


@dataclass(frozen=True)
class ConditionedRate:
    """One rate's marginal under the condition, given its own and the other rate's gold Beta."""

    this: Beta
    other: Beta

    def __post_init__(self) -> None:
        object.__setattr__(self, "_below", _below_coin(self.this, self.other))
        object.__setattr__(self, "_kept_mass", _kept(self.this, self.other))

    @property
    def kept_mass(self) -> float:
        return self._kept_mass

    def cdf(self, x: float) -> float:
        below = float(np.interp(x, GRID, self._below))
        return (float(stats.beta.cdf(x, *self.this)) - below) / self.kept_mass

    def ppf(self, u: float) -> float:
        if u <= 0.0 or u >= 1.0:
            return float(min(max(u, 0.0), 1.0))
        return float(optimize.brentq(lambda x: self.cdf(x) - u, 0.0, 1.0, xtol=1e-12))

    def density(self) -> np.ndarray:
        """On GRID: f_this(x) P(other > 1 - x), normalised."""
        return (stats.beta.pdf(GRID, *self.this) * stats.beta.sf(1.0 - GRID, *self.other)
                / self.kept_mass)

    def mean_sd_hdi(self, prob: float) -> tuple[float, float, float, float]:
        """Mean, sd and the ``prob`` highest-density interval. The density is log-concave (a
        Beta with both parameters >= 1 times a log-concave survival function), so the HDI is the
        one interval above a density level; found on GRID by taking the densest points first."""
        density = self.density()
        weights = density * np.gradient(GRID)
        weights /= weights.sum()
        mean = float(np.sum(weights * GRID))
        sd = float(np.sqrt(np.sum(weights * (GRID - mean) ** 2)))
        order = np.argsort(-density, kind="stable")
        inside = order[:int(np.searchsorted(np.cumsum(weights[order]), prob)) + 1]
        return mean, sd, float(GRID[inside.min()]), float(GRID[inside.max()])


# Every rate below is a function of the two gold Betas alone, and each costs Beta functions on
# GRID's 100,001 points: a quarter of each simulated audit of `audit.plan` (profiled, about 1.2 s
# of 4.8), which asks for the same one judge's pairs thousands of times. 16 pairs of 0.8 MB.
@lru_cache(maxsize=16)
def conditioned_rate(this: Beta, other: Beta) -> ConditionedRate:
    """The conditioned marginal of the rate with gold Beta ``this``, computed once a pair."""
    return ConditionedRate(this, other)


@lru_cache(maxsize=64)
def rate_mean_sd_hdi(this: Beta, other: Beta, prob: float) -> tuple[float, float, float, float]:
    """ConditionedRate.mean_sd_hdi, computed once a pair and interval mass."""
    return conditioned_rate(this, other).mean_sd_hdi(prob)


def conditioned_draws(sensitivity: Beta, specificity: Beta, strata_sensitivity: np.ndarray,
                      strata_specificity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rates at the given uniform points (Latin hypercube strata), by the Rosenblatt transform:
    the sensitivity from its conditioned marginal, then the specificity from its Beta truncated
    to (1 - sensitivity, 1]. A stratified pair of uniforms stays stratified in the sensitivity
    and, given it, in the specificity, and every pair is better than a coin."""
    marginal = conditioned_rate(sensitivity, specificity)
    sensitivities = np.array([marginal.ppf(u) for u in strata_sensitivity])
    # The upper tail through sf/isf keeps precision where the truncation point is near 1.
    kept = stats.beta.sf(1.0 - sensitivities, *specificity)
    specificities = stats.beta.isf((1.0 - strata_specificity) * kept, *specificity)
    return sensitivities, specificities
