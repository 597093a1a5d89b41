"""Contrasts between persona attribute levels: the numbers a bias claim is made of.

For every audited model, attribute and pair of levels, the posterior of the favourability gap
(level_a minus level_b, in logits) with its mean, sd, HDI, probability of direction and a decision
against a region of practical equivalence (ROPE), plus the same gap read against the noise floor.

* Explanatory fits carry the level effects as parameters (``effect_<attr>``); plain Rasch fits do
  not, so the gap is the difference between the average theta of the personas at each level,
  averaged cell by cell over the other attributes (balance.py) so that a missing cell compares
  like with like. Both read the same way; the explanatory gap pools information across personas
  and models.
* Scale: contrasts are gaps in log-odds, the scale of the ROPE. In a 2PL fit the log-odds are
  a[item] * (theta - b[item]), so theta is in units of 1/a: a theta gap d moves item i's log-odds
  by a_i * d. Its contrasts (and their noise floor) are therefore multiplied, draw by draw, by the
  mean discrimination over the items: the gap in log-odds on the average item.
* Noise floor: ``sigma_null`` is the spread of favourability across null personas (random strings);
  two groups of n_a and n_b placebo personas differ by about sigma_null * sqrt(1/n_a + 1/n_b). A
  demographic gap well beyond that is more than what any change of persona text does. The floor
  is a posterior too: ``noise_floor`` is its mean, ``noise_floor_low``/``_high`` its
  ``fit.hdi_prob`` HDI.
* Decision (Kruschke 2018, "Rejecting or accepting parameter values in Bayesian estimation",
  AMPPS 1(2)): HDI entirely outside the ROPE: ``different``; entirely inside: ``equivalent``;
  otherwise ``undecided``. The HDI decided on has mass 1 - alpha / K (``decision_prob``), alpha
  ``fit.familywise_alpha`` and K (``family_size``) every contrast the CI verdict judges in the
  run (Bonferroni): those of every audited model and the pooled "all models" rows, times the
  outcomes the run fits (``outcomes``: 2 with fit.second_outcome or the hurdle's two steps). So
  the chance that any contrast of the run is called `different` when no group differs stays
  below alpha. An outcome whose fit contrasts fewer levels than the other keeps its share,
  alpha / outcomes, over its own contrasts, so the bound holds then too. (A family per model
  would let a run with two models fail a fair audit up to three times as often as alpha.)
  ``hdi_low``/``hdi_high`` keep the reported ``fit.hdi_prob`` interval. Where the draws cannot
  resolve that mass (an adaptive run's interim looks, 99.998%), the interval decided on is the
  normal one of the gap's mean and sd (``decision_interval_kind``: ``normal``, else ``hdi``), so a
  decision does not depend on the number of draws (stats/intervals.py, decision_bounds).
* ``null_percentile`` (null_rank.py) ranks each contrast among null-vs-null contrasts of the same
  group sizes, estimated as precisely as the contrast: a diagnostic shown next to the decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np
import polars as pl
import xarray as xr

from audit.errors import AuditError
from audit.methods.rasch.irt.explanatory import NULL_KIND, RespondentTable
from audit.methods.rasch.irt.null_rank import (
    percentile_among_estimated_nulls,
    percentile_among_null_estimates,
)
from audit.stats.intervals import decision_bounds, hdi_bounds

# Default ROPE half-width in logits: Cohen's d = 0.1 ("negligible", half of "small") converted to a
# log odds ratio with ln(OR) = d * pi / sqrt(3) (Chinn 2000, Statistics in Medicine 19(22)).
ROPE_HALF_WIDTH_LOGIT = 0.1 * math.pi / math.sqrt(3)
# How many noise-floor standard deviations a gap must exceed to count as beyond the noise.
NOISE_MULTIPLE = 2.0
POOLED_MODEL = "all models"

CONTRAST_COLUMNS = (
    "model_name", "attribute", "level_a", "level_b", "n_a", "n_b", "mean", "sd", "hdi_low",
    "hdi_high", "p_direction", "rope_low", "rope_high", "decision", "familywise_alpha",
    "family_size", "decision_prob", "decision_low", "decision_high", "decision_interval_kind",
    "noise_floor",
    "noise_floor_low", "noise_floor_high", "ratio_to_noise", "p_beyond_noise", "null_percentile",
)


@dataclass(frozen=True)
class LevelGap:
    """Posterior draws of level_a minus level_b, the personas each side reads, and the factor
    that turns the null personas' spread into this gap's noise floor (None: no floor)."""

    level_a: str
    level_b: str
    gap: np.ndarray
    n_a: int
    n_b: int
    floor_factor: float | None


def _flat(draws: xr.DataArray) -> np.ndarray:
    return draws.stack(sample=("chain", "draw")).transpose("sample", ...).values


def decide(hdi_low: float, hdi_high: float, rope: float) -> str:
    if hdi_low > rope or hdi_high < -rope:
        return "different"
    if hdi_low >= -rope and hdi_high <= rope:
        return "equivalent"
    return "undecided"


def decision_hdi_prob(familywise_alpha: float | None, family_size: int,
                      hdi_prob: float) -> float:
    """The HDI mass each of ``family_size`` contrasts is decided on: 1 - alpha / K (Bonferroni),
    or the reported ``hdi_prob`` when family-wise control is off (alpha None)."""
    if familywise_alpha is None:
        return hdi_prob
    if not 0.0 < familywise_alpha < 1.0:
        raise AuditError(f"fit.familywise_alpha={familywise_alpha} must lie between 0 and 1 "
                         "(0.05 is the default; null decides each contrast on fit.hdi_prob)")
    return 1.0 - familywise_alpha / max(family_size, 1)


def _theta_draws(posterior: xr.Dataset, respondents: list[str]) -> np.ndarray:
    """theta draws (sample, respondent) of the named respondents, in the order given."""
    return _flat(posterior["theta"].sel(respondent=respondents))


def _effect_gaps(posterior: xr.Dataset, respondents: RespondentTable, attribute: str,
                 model_name: str) -> list[LevelGap]:
    """Gaps between the level effects of an explanatory fit (or their average over models)."""
    level_dim = f"level_{attribute}"
    effect = (posterior[f"effect_{attribute}_pooled"] if model_name == POOLED_MODEL
              else posterior[f"effect_{attribute}"].sel(model=model_name))
    draws = {str(level): _flat(effect.sel({level_dim: level}))
             for level in effect[level_dim].values}
    counts = _level_counts(respondents, attribute, model_name)
    gaps = []
    for level_a, level_b in combinations(sorted(draws), 2):
        n_a, n_b = counts.get(level_a, 0), counts.get(level_b, 0)
        factor = math.sqrt(1.0 / n_a + 1.0 / n_b) if n_a and n_b else None
        gaps.append(LevelGap(level_a, level_b, draws[level_a] - draws[level_b], n_a, n_b,
                             factor))
    return gaps


def _balanced_gaps(posterior: xr.Dataset, respondents: RespondentTable, attribute: str,
                   model_name: str) -> list[LevelGap]:
    """Gaps between cell-balanced means of persona thetas (balance.py): fits without level
    effects, where a plain mean over a level's personas would carry the other attributes' gaps
    into this one's wherever a cell is missing or the attributes move together."""
    gaps = []
    for pair in respondents.balanced.get(model_name, []):
        if pair.attribute != attribute:
            continue
        means = [np.mean([_theta_draws(posterior, list(cell)).mean(axis=1) for cell in cells],
                         axis=0)
                 for cells in (pair.cells_a, pair.cells_b)]
        gaps.append(LevelGap(pair.level_a, pair.level_b, means[0] - means[1], pair.n_a,
                             pair.n_b, pair.floor_factor))
    return gaps


def logit_scale(posterior: xr.Dataset) -> np.ndarray | None:
    """Draws of the factor that turns a theta gap into a log-odds gap on the average item: the
    mean discrimination a over the items (2PL); None for models without a (Rasch: a = 1)."""
    if "a" not in posterior:
        return None
    return _flat(posterior["a"]).mean(axis=1)


def _level_counts(respondents: RespondentTable, attribute: str, model_name: str) -> dict[str, int]:
    frame = respondents.frame
    if model_name != POOLED_MODEL:
        frame = frame.filter(pl.col("model_name") == model_name)
    counts = frame.drop_nulls(attribute).group_by(attribute).len()
    return {str(level): int(count) for level, count in counts.iter_rows()}


def null_spread_draws(posterior: xr.Dataset, respondents: RespondentTable,
                      model_name: str) -> np.ndarray | None:
    """Draws of the null personas' spread: estimated (explanatory) or their theta's sample sd.

    None without two fitted null personas (in every model, for the pooled rows), whichever
    model: the explanatory and population models define sigma_null even then, but it is its
    prior, not a floor any random-string persona showed."""
    models = respondents.models if model_name == POOLED_MODEL else (model_name,)
    if min(respondents.null_count(model) for model in models) < 2:
        return None
    if "sigma_null" in posterior:
        sigma = posterior["sigma_null"]
        if "model" not in sigma.dims:
            return _flat(sigma)
        if model_name != POOLED_MODEL:
            return _flat(sigma.sel(model=model_name))
        # The pooled effect averages the models' effects and its counts add up over models, so
        # its floor uses the root mean square of the models' spreads.
        return np.sqrt((_flat(sigma) ** 2).mean(axis=1))
    frame = respondents.frame
    if model_name != POOLED_MODEL:
        frame = frame.filter(pl.col("model_name") == model_name)
    nulls = frame.filter(pl.col("persona_kind") == NULL_KIND).get_column("respondent").to_list()
    return _theta_draws(posterior, nulls).std(axis=1, ddof=1)


def direction_probability(gap: np.ndarray) -> float:
    """The posterior probability that the gap has the sign of its mean, the sign every table and
    line prints beside it. Not the larger of P(gap > 0) and P(gap < 0): on a skewed posterior
    (mean +0.76 with P(gap > 0) 0.32) that printed "mean +0.763, P(direction) 0.684", read as
    68% for a positive gap."""
    mean = float(gap.mean())
    if mean == 0.0:
        return float(max((gap > 0).mean(), (gap < 0).mean()))
    return float((np.sign(gap) == np.sign(mean)).mean())


def _row(model_name: str, attribute: str, level_gap: LevelGap, noise: np.ndarray | None,
         rope: float, hdi_prob: float) -> dict[str, object]:
    gap = level_gap.gap
    low, high = hdi_bounds(gap, hdi_prob)
    row: dict[str, object] = {
        "model_name": model_name, "attribute": attribute, "level_a": level_gap.level_a,
        "level_b": level_gap.level_b, "n_a": level_gap.n_a, "n_b": level_gap.n_b,
        "mean": float(gap.mean()), "sd": float(gap.std(ddof=1)),
        "hdi_low": low, "hdi_high": high,
        "p_direction": direction_probability(gap),
        "rope_low": -rope, "rope_high": rope, "decision": decide(low, high, rope),
        "noise_floor": None, "noise_floor_low": None, "noise_floor_high": None,
        "ratio_to_noise": None, "p_beyond_noise": None,
    }
    if noise is not None and level_gap.floor_factor is not None:
        floor = noise * level_gap.floor_factor
        row["noise_floor"] = float(floor.mean())
        row["noise_floor_low"], row["noise_floor_high"] = hdi_bounds(floor, hdi_prob)
        # A ratio of posterior means: the mean of a ratio explodes where sigma_null nears zero.
        row["ratio_to_noise"] = abs(float(gap.mean())) / float(floor.mean())
        row["p_beyond_noise"] = float((np.abs(gap) > NOISE_MULTIPLE * floor).mean())
    return row


def _decided(row: dict[str, object], gap: np.ndarray, familywise_alpha: float | None,
             family_size: int, hdi_prob: float, rope: float) -> dict[str, object]:
    """The row with its decision taken on the family-wise HDI."""
    mass = decision_hdi_prob(familywise_alpha, family_size, hdi_prob)
    low, high, kind = decision_bounds(gap, mass)
    return {**row, "familywise_alpha": familywise_alpha, "family_size": family_size,
            "decision_prob": mass, "decision_low": low, "decision_high": high,
            "decision_interval_kind": kind, "decision": decide(low, high, rope)}


def _null_means(posterior: xr.Dataset, respondents: RespondentTable, model_name: str,
                scale: np.ndarray | None) -> np.ndarray | None:
    """Posterior mean favourability of one audited model's null personas (log-odds scale)."""
    nulls = respondents.frame.filter((pl.col("model_name") == model_name)
                                     & (pl.col("persona_kind") == NULL_KIND))
    if nulls.height < 2:
        return None
    draws = _theta_draws(posterior, nulls.get_column("respondent").to_list())
    if scale is not None:
        draws = draws * scale[:, None]
    return draws.mean(axis=0)


def _null_ranker(posterior: xr.Dataset, respondents: RespondentTable, model_name: str,
                 scale: np.ndarray | None, noise: np.ndarray | None):
    """The function that gives a row its null_percentile (null_rank.py), or None where this
    model has fewer than two null personas (a prior's spread ranks nothing) or is the pooled
    row. It is called with the row and its gap's squared floor factor (k): 1/n_a + 1/n_b for
    level effects and balanced cells, more where a cell-balanced mean leans on a few personas
    (balance.py), so the percentile and the noise floor read the same noise."""
    if model_name == POOLED_MODEL or respondents.null_count(model_name) < 2:
        return None
    if noise is not None and "sigma_residual" in posterior:
        text = posterior["sigma_residual"]
        text_sd = _flat(text.sel(model=model_name) if "model" in text.dims else text)
        if scale is not None:
            text_sd = text_sd * scale

        def estimated(row: dict[str, object], k: float | None) -> float | None:
            return percentile_among_estimated_nulls(
                float(row["mean"]), float(row["sd"]), int(row["n_a"]), int(row["n_b"]),
                noise, text_sd, k=k)
        return estimated
    null_means = _null_means(posterior, respondents, model_name, scale)

    def plain(row: dict[str, object], k: float | None) -> float | None:
        return percentile_among_null_estimates(float(row["mean"]), null_means,
                                               int(row["n_a"]), int(row["n_b"]), k=k)
    return plain


def level_contrasts(posterior: xr.Dataset, respondents: RespondentTable,
                    rope: float = ROPE_HALF_WIDTH_LOGIT, hdi_prob: float = 0.94,
                    familywise_alpha: float | None = None, outcomes: int = 1) -> pl.DataFrame:
    """Every pair of levels of every attribute, per model, plus pooled rows for several models.

    All of them, over every model and the pooled rows, times ``outcomes`` (the outcomes the run
    fits, each with contrasts like these) form the one family of ``familywise_alpha``; None
    decides each contrast on its own ``hdi_prob`` HDI."""
    if outcomes < 1:
        raise ValueError(f"outcomes={outcomes}: a run fits at least one outcome")
    model_names = list(respondents.models)
    if any(f"effect_{attribute}" in posterior for attribute in respondents.attributes) \
            and len(model_names) > 1:
        model_names.append(POOLED_MODEL)
    scale = logit_scale(posterior)
    contrasts: list[tuple[np.ndarray, dict[str, object]]] = []
    for model_name in model_names:
        noise = null_spread_draws(posterior, respondents, model_name)
        if scale is not None and noise is not None:
            noise = noise * scale
        model_contrasts: list[tuple[np.ndarray, dict[str, object], float | None]] = []
        for attribute in respondents.attributes:
            level_gaps = (_effect_gaps if f"effect_{attribute}" in posterior
                          else _balanced_gaps)(posterior, respondents, attribute, model_name)
            for level_gap in level_gaps:
                if scale is not None:
                    level_gap = replace(level_gap, gap=level_gap.gap * scale)
                model_contrasts.append((level_gap.gap, _row(model_name, attribute, level_gap,
                                                            noise, rope, hdi_prob),
                                        level_gap.floor_factor))
        ranker = _null_ranker(posterior, respondents, model_name, scale, noise)
        for gap, row, factor in model_contrasts:
            row["null_percentile"] = (None if ranker is None
                                      else ranker(row, None if factor is None else factor ** 2))
            contrasts.append((gap, row))
    family_size = len(contrasts) * outcomes
    rows = [_decided(row, gap, familywise_alpha, family_size, hdi_prob, rope)
            for gap, row in contrasts]
    schema = {column: pl.Float64 for column in CONTRAST_COLUMNS}
    schema.update({column: pl.String for column in ("model_name", "attribute", "level_a",
                                                    "level_b", "decision",
                                                    "decision_interval_kind")})
    schema.update({"n_a": pl.Int64, "n_b": pl.Int64, "family_size": pl.Int64})
    return pl.DataFrame(rows, schema=schema, orient="row").select(CONTRAST_COLUMNS).sort(
        "model_name", "attribute", "level_a", "level_b")


def item_gaps(posterior: xr.Dataset, attribute: str, hdi_prob: float = 0.94) -> pl.DataFrame:
    """Differential item functioning: the pooled gap between two levels on each item.

    The item's gap is the pooled level effect plus that item's interaction; items whose HDI sits
    away from the pooled gap are the scenarios that carry (or hide) the difference.
    """
    if f"dif_{attribute}" not in posterior:
        raise AuditError(f"the fit has no item interaction for '{attribute}': add it to "
                         "fit.item_dif and use fit=population or fit=explanatory")
    pooled = posterior[f"effect_{attribute}_pooled"]
    dif = posterior[f"dif_{attribute}"]
    level_dim = f"level_{attribute}"
    levels = [str(level) for level in dif[level_dim].values]
    rows = []
    for level_a, level_b in combinations(sorted(levels), 2):
        overall = pooled.sel({level_dim: level_a}) - pooled.sel({level_dim: level_b})
        for item in dif["item"].values:
            gap = _flat(overall + dif.sel({level_dim: level_a, "item": item})
                        - dif.sel({level_dim: level_b, "item": item}))
            low, high = hdi_bounds(gap, hdi_prob)
            rows.append({"attribute": attribute, "level_a": level_a, "level_b": level_b,
                         "item": str(item), "mean": float(gap.mean()), "hdi_low": low,
                         "hdi_high": high, "overall_mean": float(_flat(overall).mean())})
    return pl.DataFrame(rows).sort("attribute", "level_a", "level_b", "item")
