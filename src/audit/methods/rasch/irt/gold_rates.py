"""A labelling path's two error rates from its gold Betas, conditioned on a better-than-coin path.

The misclassification likelihood (likelihood.py) is only identified for a labeller better than a
coin, sensitivity + specificity > 1: at the sum 1 the label says nothing about the decision, and
below it the likelihood reverses, so a persona that decides favourably more often looks less
favourable. The gold Betas of a path with few gold answers of a class (none at all: a flat
Beta(1, 1)) put real mass there, and one imputation drawn there flips every gap of its fit. So
the cut draws the rates from the two independent gold Betas CONDITIONED on
sensitivity + specificity > 1, the model's own assumption (docs/statistics.md), and reports that
conditioned distribution (its mean and HDI) as the rates' uncertainty.

Each integral runs over the rate's own gold quantiles u (rate = F_this^-1(u)), not over rates:

    kept mass K = P(this + other > 1) = integral_0^1 P(other > 1 - F_this^-1(u)) du,

and the conditioned rate's CDF at x is the same integral up to u = F_this(x), over K. In u the
integrand is bounded and monotone however narrow the Beta; over rates it is a peak, and the
peak of a gold set of a million answers, 1e-6 wide, fell between two points of a grid 1e-5 apart:
a judge right on all but a handful of a million gold answers was refused as no better than a
coin (bad-input review 2026-12-05; at 100,000 answers it was warned 8%). K is integrated
adaptively (coin_or_worse_mass says how well); the CDF, its inverse and the reported mean and
HDI use CELLS equal-mass cells of the gold Beta.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import integrate, special, stats

Beta = tuple[float, float]  # (alpha, beta)

# Equal-mass cells of a rate's gold Beta: each holds 1e-5 of it, whatever the Beta's width, so a
# probability read off them is good to about 1e-5 (the reported HDI to about 1e-5 of its mass).
CELLS = 100_000
CELL_EDGES = np.linspace(0.0, 1.0, CELLS + 1)
CELL_MIDPOINTS = (CELL_EDGES[:-1] + CELL_EDGES[1:]) / 2
# Warn (and record) when the gold leaves more than this mass on a labeller no better than a coin.
COIN_MASS_WARNING = 0.01
# Refuse to correct when the gold says the labeller is more likely than not no better than a coin:
# conditioning would then keep a sliver of the gold's mass (all of it: an inverted label mapping
# gives kept mass 1e-13), and the draws would be round-off on the coin line.
COIN_MASS_REFUSAL = 0.5


def coin_or_worse_mass(sensitivity: Beta, specificity: Beta) -> float:
    """P(sensitivity + specificity <= 1) under the two independent gold Betas, rounded to 9
    places (two flat Betas give exactly 0.5). Where that mass lies in a far tail of the gold,
    the quadrature can miss up to a few 1e-6 of it (the 13 pairs of 6,000 random ones where it
    fell short of its tolerance, against a 4-million-point grid, 2026-12-07): far below the 1%
    that is warned."""
    return round(1.0 - _kept(sensitivity, specificity), 9)


def _other_above_coin(other: Beta, rates: np.ndarray | float) -> np.ndarray | float:
    """P(other > 1 - rate): the regularised incomplete beta I_rate(b, a), which keeps its digits
    for a rate near 1, where 1 - rate would round."""
    return special.betainc(other[1], other[0], rates)


@lru_cache(maxsize=64)
def _kept(this: Beta, other: Beta) -> float:
    """P(this + other > 1), integrated adaptively over this rate's quantiles. Directly, not as
    1 - P(<= 1), which is round-off, even negative, when the gold puts nearly all its mass below
    the coin line."""
    # full_output: a tolerance quad cannot meet (a tail it resolves only to about 1e-6, above)
    # is no reason for a warning in the user's terminal.
    kept = integrate.quad(
        lambda u: _other_above_coin(other, special.betaincinv(this[0], this[1], u)), 0.0, 1.0,
        epsabs=1e-12, epsrel=1e-12, limit=500, full_output=1)[0]
    return float(min(1.0, max(0.0, kept)))


@dataclass(frozen=True)
class ConditionedRate:
    """One rate's marginal under the condition, given its own and the other rate's gold Beta."""

    this: Beta
    other: Beta

    def __post_init__(self) -> None:
        # Each cell's rate (the gold Beta's quantile at its midpoint) and the share of the cell
        # the condition keeps; the CDF at the cell edges, over the cells' own total.
        rates = special.betaincinv(*self.this, CELL_MIDPOINTS)
        kept = _other_above_coin(self.other, rates)
        cdf = np.concatenate([[0.0], np.cumsum(kept)])
        object.__setattr__(self, "_rates", rates)
        object.__setattr__(self, "_kept_per_cell", kept)
        object.__setattr__(self, "_edge_cdf", cdf / cdf[-1])
        object.__setattr__(self, "_kept_mass", _kept(self.this, self.other))

    @property
    def kept_mass(self) -> float:
        return self._kept_mass

    def cdf(self, x: float) -> float:
        quantile = special.betainc(*self.this, min(max(x, 0.0), 1.0))
        return float(np.interp(quantile, CELL_EDGES, self._edge_cdf))

    def ppf(self, u: float) -> float:
        if u <= 0.0 or u >= 1.0:
            return float(min(max(u, 0.0), 1.0))
        return float(special.betaincinv(*self.this, np.interp(u, self._edge_cdf, CELL_EDGES)))

    def mean_sd_hdi(self, prob: float) -> tuple[float, float, float, float]:
        """Mean, sd and the ``prob`` highest-density interval. The density is log-concave (a
        Beta with both parameters >= 1 times a log-concave survival function), so the HDI is the
        one interval above a density level: the densest cells first, until they hold ``prob``,
        from the lowest one's lower edge to the highest one's upper edge."""
        weights = self._kept_per_cell / self._kept_per_cell.sum()
        mean = float(np.sum(weights * self._rates))
        sd = float(np.sqrt(np.sum(weights * (self._rates - mean) ** 2)))
        density = stats.beta.pdf(self._rates, *self.this) * self._kept_per_cell
        order = np.argsort(-density, kind="stable")
        inside = order[:int(np.searchsorted(np.cumsum(weights[order]), prob)) + 1]
        low, high = special.betaincinv(*self.this, CELL_EDGES[[inside.min(), inside.max() + 1]])
        return mean, sd, float(low), float(high)


# Every rate below is a function of the two gold Betas alone, and each costs Beta functions on
# CELLS points: uncached, a quarter of each simulated audit of `audit.plan` (profiled, about 1.2 s
# of 4.8), which asks for the same one judge's pairs thousands of times. 16 pairs of 2.4 MB.
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
