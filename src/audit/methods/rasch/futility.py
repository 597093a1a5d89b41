"""When an adaptive audit gives up: can an open contrast still be decided within the budget?

A contrast is alive while the posterior-predictive probability that its decision interval at the
budget lies wholly outside (or wholly inside) the ROPE is at least the rule's ``futility``.

The prediction splits the contrast's posterior variance in two:

* the text floor: what answers cannot remove. A population contrast is a claim about the groups,
  and each group is seen through a few persona texts whose own pull (the population model's
  ``sigma_residual``) stays however often each text is asked: with n_a and n_b texts the floor
  is sigma^2 (1/n_a + 1/n_b). With the default design's four texts a race level and a text sd
  of 0.6, that floor alone is an sd of 0.42 logits, and the family-wise decision interval
  around it is about 2.3 logits wide. A pooled "all models" contrast, the mean of M models'
  contrasts, keeps the mean of their floors over M;
* the rest, which the remaining prompts shrink, optimistically, as 1 / prompts (as if every
  prompt informed this contrast; rounds do favour the open contrasts' personas).

The interval at the budget is the last look's: its half-width uses the last look's share of the
family-wise alpha (``final_alpha`` over the contrast's ``family_size``), not the current look's
stricter one. Reading the current level instead made futility stop runs whose last look would
have decided (bench_adaptive, RESULTS.md "Adaptive audits": rule B against rule D).

The mean may still move by the sd the remaining prompts remove (the preposterior spread,
sqrt(sd_now^2 - sd_budget^2)). The floor is averaged over the posterior draws of the text sd,
not read at a point: early looks know the text sd poorly, and a draw near zero keeps a contrast
alive. Fits without a text spread (rasch, twopl: a theta per persona, the contrast about those
personas) have no floor; the prediction is then the optimistic 1 / sqrt(prompts) alone.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import stats

from audit.methods.checks import decimals_beside
from audit.methods.rasch.irt.contrasts import POOLED_MODEL, decision_hdi_prob
from audit.methods.rasch.irt.explanatory import NULL_KIND
from audit.methods.rasch.irt.rasch import RaschFit, posterior_draws

TEXT_SD = "sigma_residual"  # the population and explanatory fits' text spread, dims (model,)
NULL_KINDS = (NULL_KIND, "baseline")  # persona kinds with no demographic level
FLOOR_DRAWS = 200  # text-sd draws the floor averages over (a probability, not a tail)


def texts_per_level(pool: pl.DataFrame, attribute: str) -> dict[tuple[str, str], int]:
    """(model_name, level) -> how many persona texts of the pool carry that level."""
    if attribute not in pool.columns:
        return {}
    counts = (pool.filter(~pl.col("persona_kind").is_in(NULL_KINDS)
                          & pl.col(attribute).is_not_null())
              .group_by("model_name", attribute).agg(pl.col("respondent_id").n_unique()))
    return {(row[0], str(row[1])): int(row[2]) for row in counts.iter_rows()}


def text_floors(fit: RaschFit, contrasts: pl.DataFrame, pool: pl.DataFrame) -> np.ndarray | None:
    """Per contrast, draws of the variance no answer removes: sigma^2 (1/n_a + 1/n_b), shape
    (contrasts, draws); None for a fit without a text spread. A pooled "all models" contrast is
    the mean of the M models' contrasts (explanatory.py's ``effect_<attribute>_pooled``), each
    with its own texts, so its floor is (1/M^2) sum_m sigma_m^2 (1/n_a,m + 1/n_b,m): a floor of
    0 there kept a two-model run asking after every per-model contrast was hopeless."""
    posterior = posterior_draws(fit.idata)
    if TEXT_SD not in posterior:
        return None
    sigma = posterior[TEXT_SD].stack(sample=("chain", "draw")).transpose("sample", ...)
    step = max(1, sigma.sizes["sample"] // FLOOR_DRAWS)
    models = [str(name) for name in sigma["model"].values]
    variance = sigma.values[::step] ** 2  # (draws, models)
    counts = {attribute: texts_per_level(pool, attribute)
              for attribute in contrasts.get_column("attribute").unique().to_list()}

    def model_floor(model: str, row: dict) -> np.ndarray:
        level_counts = counts[row["attribute"]]
        n_a = level_counts.get((model, str(row["level_a"])), 0)
        n_b = level_counts.get((model, str(row["level_b"])), 0)
        if not (n_a and n_b):
            return np.zeros(variance.shape[0])
        return variance[:, models.index(model)] * (1 / n_a + 1 / n_b)

    floors = np.zeros((contrasts.height, variance.shape[0]))
    for index, row in enumerate(contrasts.iter_rows(named=True)):
        if row["model_name"] == POOLED_MODEL:
            floors[index] = sum(model_floor(model, row) for model in models) / len(models) ** 2
        elif row["model_name"] in models:
            floors[index] = model_floor(row["model_name"], row)
    return floors


def budget_z(row: dict, final_alpha: float | None) -> float:
    """The normal quantile of the decision interval at the budget: the last look's level when
    ``final_alpha`` is given, else the contrast's own (current) level."""
    mass = row["decision_prob"]
    if final_alpha is not None and row.get("family_size"):
        mass = decision_hdi_prob(final_alpha, row["family_size"], mass)
    return float(stats.norm.ppf(1.0 - (1.0 - mass) / 2.0))


def predictive_decidable(contrasts: pl.DataFrame, prompts_now: int, prompts_budget: int,
                         floors: np.ndarray | None = None,
                         final_alpha: float | None = None) -> pl.Series:
    """Per contrast, P(its decision interval at the budget lies outside or inside the ROPE)
    (module docstring); ``floors``: text_floors, or None for no floor; ``final_alpha``: the
    last look's alpha (None: the interval at the budget keeps the current look's level)."""
    shrink = prompts_now / max(prompts_budget, prompts_now)  # of the variance answers remove
    probs = []
    for index, row in enumerate(contrasts.iter_rows(named=True)):
        if prompts_now >= prompts_budget:  # nothing left to ask: the decision stands
            probs.append(float(row["decision"] != "undecided"))
            continue
        z = budget_z(row, final_alpha)
        now = row["sd"] ** 2
        floor = np.zeros(1) if floors is None else np.minimum(floors[index], now)
        at_budget = floor + (now - floor) * shrink
        half = z * np.sqrt(at_budget)
        move = np.sqrt(now - at_budget)
        moving = move > 0.0  # where the floor is the whole variance, nothing more is learnt
        spread = np.where(moving, move, 1.0)
        rope, mean = row["rope_high"], row["mean"]
        beyond = rope + half  # |final mean| past this: `different`
        p_different = stats.norm.sf(beyond, mean, spread) + stats.norm.cdf(-beyond, mean, spread)
        within = rope - half  # |final mean| inside this: `equivalent`
        p_equivalent = np.where(within > 0, stats.norm.cdf(within, mean, spread)
                                - stats.norm.cdf(-within, mean, spread), 0.0)
        decided_now = float(row["decision"] != "undecided")
        probs.append(float(np.mean(np.where(moving, p_different + p_equivalent, decided_now))))
    return pl.Series("p_decidable", probs, dtype=pl.Float64)


def contrast_states(contrasts: pl.DataFrame, prompts_now: int, prompts_budget: int,
                    futility: float, floors: np.ndarray | None = None,
                    final_alpha: float | None = None) -> pl.DataFrame:
    """The contrasts with `open` (undecided) and `alive` (open and still decidable)."""
    table = contrasts.with_columns(
        predictive_decidable(contrasts, prompts_now, prompts_budget, floors, final_alpha),
        open=pl.col("decision") == "undecided")
    return table.with_columns(alive=pl.col("open") & (pl.col("p_decidable") >= futility))


def nearest_open(states: pl.DataFrame, futility: float) -> str:
    """The open contrast closest to a decision and its P(decidable by the budget), for a look's
    log line ("" when every contrast is decided): "1 alive" alone did not say which contrast keeps
    a run asking, nor how close a hopeless one came to the futility threshold."""
    open_rows = states.filter("open")
    if open_rows.is_empty():
        return ""
    row = open_rows.sort("p_decidable", descending=True, maintain_order=True).row(0, named=True)
    model = (f"{row['model_name']}: " if states.get_column("model_name").n_unique() > 1 else "")
    return (f"; nearest to a decision: {model}{row['attribute']} {row['level_a']} vs "
            f"{row['level_b']}, P(decidable by the budget) "
            f"{_beside(row['p_decidable'], futility)} (alive from {futility:g})")


def _beside(probability: float, threshold: float) -> str:
    """``probability`` to two decimals, or more where two would round it to the other side of
    ``threshold``: a dead contrast at 0.198 read "0.20 (alive from 0.2)" beside "0 alive"."""
    return f"{probability:.{decimals_beside(probability, threshold)}f}"
