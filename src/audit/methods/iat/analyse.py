"""Statistics of D: mean, bootstrap interval, sign-flip permutation test, Benjamini-Hochberg; and
the figures a run logs of its scores (iat_metrics).

A complete answer that gives every word to one group (`one_group`) scores D = -0.50 by the
formula, which reads as a reversed association although it is none in either direction. Its D
stays in `mean_d` and the interval, the figure comparable with Bai et al. (who scored such answers
so), but the test scores it 0 (no association): `mean_d_test` is the mean the verdict judges and
`p_value` tests it. Scoring it 0 is the same as leaving it out of the sign-flip test (a 0 flips
to itself), and keeps the test's premise, D symmetric about 0 without an association, which a
one-sided -0.50 breaks.

Every group (model x category x dataset, or with variation too) gets its own random streams,
seeded from the configured seed and the group's names, so a group's interval and p-value do not
change when other groups are added to or removed from a run.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from audit.methods.iat.config import IATConfig
from audit.methods.iat.design import IATError, derive_seed, slug
from audit.methods.iat.score import SCORING_MODES
from audit.methods.iat.schemas import IATStatsSchema
from audit.schemas import validate
from audit.stats.bootstrap import bootstrap_interval
from audit.stats.differences import sample_mean
from audit.stats.multiple_testing import adjust_p_values
from audit.tracking.mlflow import metric_name

log = logging.getLogger(__name__)


CI_METHODS = ("BCa", "percentile", "basic")
GROUP_KEYS = ("model", "category", "dataset")


def sign_flip_p_value(values: np.ndarray, resamples: int, seed: int) -> float:
    """Two-sided test of mean D = 0 by flipping the sign of each answer's D at random (exact
    when 2**n <= resamples). Under the null, D is symmetric about zero: no association.
    With R random resamples the smallest p-value is 2/(R + 1) (scipy counts the observed mean
    among the resamples, so a p-value is never zero)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:  # scipy needs two; one answer cannot reject anything anyway
        return float("nan")
    if np.all(values == 0):
        return 1.0
    result = stats.permutation_test((values,), sample_mean, permutation_type="samples",
                                    n_resamples=resamples, alternative="two-sided",
                                    vectorized=True, rng=np.random.default_rng(seed))
    return float(min(1.0, result.pvalue))


def smallest_sign_flip_p(n_nonzero: int, resamples: int) -> float:
    """The smallest p sign_flip_p_value can give n_nonzero answers whose D is not 0 (a 0 flips to
    itself): all of one sign is 2 of the 2**n equally likely sign patterns when they are
    enumerated, and random resamples cannot go below 2/(R + 1). 8 answers: 0.0078."""
    if n_nonzero < 2:  # one answer has no p-value
        return 1.0
    return float(min(1.0, max(math.ldexp(2.0, -n_nonzero), 2.0 / (resamples + 1))))


@dataclass(frozen=True)
class MeanTest:
    n: int
    mean_d: float | None
    ci_low: float | None
    ci_high: float | None
    mean_d_test: float | None  # one-group answers scored 0 (no association)
    p_value: float | None
    min_p: float


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def mean_with_interval(values: np.ndarray, config: IATConfig, *names: str,
                       one_group: np.ndarray | None = None) -> MeanTest:
    """Mean D of one group with its interval, and the sign-flip test of the same answers with the
    `one_group` ones scored 0 (no association), on streams seeded by the group's names."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return MeanTest(0, None, None, None, None, None, 1.0)
    tested = values if one_group is None else np.where(np.asarray(one_group, bool), 0.0, values)
    low, high = bootstrap_interval(values, config.bootstrap_resamples, config.confidence_level,
                                   config.ci_method, derive_seed(config.seed, "bootstrap", *names))
    p_value = sign_flip_p_value(tested, config.permutation_resamples,
                                derive_seed(config.seed, "permutation", *names))
    return MeanTest(int(values.size), float(values.mean()), _finite(low), _finite(high),
                    float(tested.mean()), _finite(p_value),
                    smallest_sign_flip_p(int(np.count_nonzero(tested)),
                                         config.permutation_resamples))


def check_statistics_config(config: IATConfig) -> None:
    if config.scoring not in SCORING_MODES:
        raise IATError(f"iat.scoring={config.scoring} is unknown: use strict (only answers that "
                       "give every word one group, as Bai et al.) or lenient (also partial "
                       "answers with a word on each side)")
    if config.ci_method not in CI_METHODS:
        raise IATError(f"iat.ci_method={config.ci_method} is unknown: use one of "
                       f"{', '.join(CI_METHODS)}")
    for name in ("confidence_level", "alpha"):
        if not 0 < getattr(config, name) < 1:
            raise IATError(f"iat.{name}={getattr(config, name):g} must lie strictly between 0 and "
                           f"1 ({'0.95 for 95%' if name == 'confidence_level' else '0.05'})")
    for name in ("bootstrap_resamples", "permutation_resamples"):
        if getattr(config, name) < 1:
            raise IATError(f"iat.{name}={getattr(config, name)} must be at least 1")


def iat_statistics(scores: pl.DataFrame, config: IATConfig,
                   keys: Sequence[str] = GROUP_KEYS) -> pl.DataFrame:
    """One row per group: n, answers each scoring mode leaves out, one-group answers, parse
    rate, mean D, interval, the tested mean (one-group answers at 0), p-value, the smallest
    p-value the group's answers can reach, and BH-adjusted p-value.

    `parse_rate` is over every answer of the group; n and D follow iat.scoring: strict keeps
    the `parsed` answers, lenient every answer with a D (scores' d_score is null otherwise)."""
    check_statistics_config(config)
    keys = list(keys)
    rows = []
    for names, group in scores.sort([*keys, "response_id"]).group_by(keys, maintain_order=True):
        lenient = group.filter(pl.col("d_score").is_not_null())
        strict = lenient.filter(pl.col("parsed"))
        kept = strict if config.scoring == "strict" else lenient
        test = mean_with_interval(kept["d_score"].to_numpy(), config,
                                  *[str(name) for name in names],
                                  one_group=kept["one_group"].to_numpy())
        rows.append({**dict(zip(keys, names, strict=True)), "n": test.n,
                     "n_left_out_strict": group.height - strict.height,
                     "n_left_out_lenient": group.height - lenient.height,
                     "n_one_group": int(kept["one_group"].sum()),
                     "parse_rate": float(group["parsed"].mean()), "mean_d": test.mean_d,
                     "ci_low": test.ci_low, "ci_high": test.ci_high,
                     "mean_d_test": test.mean_d_test, "p_value": test.p_value,
                     "min_p": test.min_p})
    schema = {**{key: pl.String for key in keys}, "n": pl.Int64, "n_left_out_strict": pl.Int64,
              "n_left_out_lenient": pl.Int64, "n_one_group": pl.Int64, "parse_rate": pl.Float64,
              "mean_d": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "mean_d_test": pl.Float64, "p_value": pl.Float64, "min_p": pl.Float64}
    table = pl.DataFrame(rows, schema=schema)
    table = table.with_columns(p_adjusted=pl.Series(
        adjust_p_values(table["p_value"].to_list(), "fdr_bh"), dtype=pl.Float64))
    return validate(table, IATStatsSchema, "IAT statistics")


# --- what a run logs of its scores --------------------------------------------------------------

def left_out_counts(scores: pl.DataFrame) -> dict[str, int]:
    """How many answers each scoring mode leaves out of the means, and how many complete
    answers give every word to one group (D about -0.50 by the formula)."""
    lenient = scores.filter(pl.col("d_score").is_not_null())
    return {"answers": scores.height,
            "left_out_strict": scores.height - lenient.filter(pl.col("parsed")).height,
            "left_out_lenient": scores.height - lenient.height,
            "one_group": int(lenient.filter(pl.col("parsed"))["one_group"].sum())}


def log_left_out(scores: pl.DataFrame, scoring: str) -> None:
    counts = left_out_counts(scores)
    log.info("iat scoring=%s: strict scoring leaves out %d of %d answers, lenient %d; %d complete "
             "answers give every word to one group (flagged, D about -0.50)", scoring,
             counts["left_out_strict"], counts["answers"], counts["left_out_lenient"],
             counts["one_group"])


def iat_metrics(scores: pl.DataFrame, stats: pl.DataFrame) -> dict[str, float]:
    """Stable names (iat/MODEL/DATASET/mean_d, ...) so that runs line up in the MLflow UI."""
    metrics: dict[str, float] = {"iat/n_scored": float(scores.height),
                                 "iat/parse_rate": float(scores["parsed"].mean() or 0.0),
                                 **{f"iat/n_{name}": float(count) for name, count in
                                    left_out_counts(scores).items() if name != "answers"}}
    for model, group in scores.group_by("model"):
        metrics[metric_name("iat", str(model[0]), "parse_rate")] = float(group["parsed"].mean())
    for row in stats.iter_rows(named=True):
        for column in ("n", "n_left_out_strict", "n_left_out_lenient", "n_one_group",
                       "parse_rate", "mean_d", "ci_low", "ci_high", "mean_d_test", "p_value",
                       "min_p", "p_adjusted"):
            if row[column] is not None:
                metrics[metric_name("iat", row["model"], slug(row["dataset"]), column)] = \
                    float(row[column])
    return metrics
