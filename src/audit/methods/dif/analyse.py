"""DIF statistics: bias scores against the baseline, real against null personas, across models.

For persona i, C_i is the set of items answered correctly under that persona and C_b the set
answered correctly with no persona. The bias score is |C_i xor C_b| / |C_i and C_b|: how many
answers the persona flipped (either way) per answer it left correct. It is 0 when the persona
changes nothing and unbounded above; when few answers are correct under both, it is a ratio of
small counts, so it is flagged below `min_intersection` and undefined at 0. The paper's inverted
0..1 form (1 = no bias) is |C_i and C_b| / |C_i or C_b| = 1 / (1 + bias): the Jaccard similarity
of the two sets, defined whenever either set is non-empty. The significance tests use that
bounded form, so a persona with a tiny intersection cannot dominate a mean.

Only items answered (no infrastructure error) under both persona i and the baseline are compared.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from audit.methods.dif.config import DIFConfig
from audit.methods.dif.schemas import DIFTestSchema
from audit.schemas import validate
from audit.stats.differences import mean_difference_p_value
from audit.stats.intervals import jeffreys_interval
from audit.stats.multiple_testing import adjust_p_values
from audit.tracking.mlflow import metric_name

ALL_DATASETS = "all"


@dataclass(frozen=True)
class BiasScore:
    intersection: int
    symmetric_difference: int
    union: int
    gained: int  # correct under the persona only
    lost: int  # correct under the baseline only
    bias: float  # |xor| / |and|; NaN when the intersection is empty
    dif: float  # |and| / |or| = 1 / (1 + bias); NaN when both sets are empty
    small_intersection: bool


def bias_score(persona: Iterable[str], baseline: Iterable[str], min_intersection: int) -> BiasScore:
    persona, baseline = set(persona), set(baseline)
    both, either = len(persona & baseline), len(persona | baseline)
    gained, lost = len(persona - baseline), len(baseline - persona)
    flipped = gained + lost
    return BiasScore(
        intersection=both, symmetric_difference=flipped, union=either, gained=gained, lost=lost,
        bias=flipped / both if both else math.nan,
        dif=both / either if either else math.nan,
        small_intersection=both < max(min_intersection, 1),
    )


def mcnemar_p(gained: int, lost: int) -> float:
    """Exact McNemar test of equal accuracy with and without the persona (discordant items)."""
    if gained + lost == 0:
        return 1.0
    # Equal to stats.binomtest(gained, n, 0.5).pvalue (two-sided; symmetric at p = 1/2), at a
    # tenth of the cost, which matters in the simulation tests.
    return float(min(1.0, 2 * stats.binom.cdf(min(gained, lost), gained + lost, 0.5)))


def _dataset_views(answers: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    datasets = sorted(answers["dataset"].unique().to_list())
    views = [(dataset, answers.filter(pl.col("dataset") == dataset)) for dataset in datasets]
    return views + ([(ALL_DATASETS, answers)] if len(datasets) > 1 else [])


def persona_table(answers: pl.DataFrame, min_intersection: int,
                  interval_prob: float) -> pl.DataFrame:
    """One row per model x dataset x persona: accuracy with its Jeffreys interval, and (for
    every persona but the baseline) the bias score against the baseline with its counts."""
    rows = []
    for model in sorted(answers["model_name"].unique().to_list()):
        for dataset, view in _dataset_views(answers.filter(pl.col("model_name") == model)):
            ok = view.filter(pl.col("status") == "ok")
            sets = ok.group_by("persona_id").agg(
                answered=pl.col("item_id"), correct=pl.col("item_id").filter(pl.col("correct")),
                unparsed=pl.col("extracted").is_null().sum())
            answered = {row["persona_id"]: set(row["answered"]) for row in sets.iter_rows(named=True)}
            correct = {row["persona_id"]: set(row["correct"]) for row in sets.iter_rows(named=True)}
            unparsed = dict(sets.select("persona_id", "unparsed").iter_rows())
            baseline_answered = answered.get("baseline", set())
            personas = view.select("persona_id", "persona_kind", "persona_category").unique()
            for persona in personas.sort("persona_id").iter_rows(named=True):
                pid = persona["persona_id"]
                mine = answered.get(pid, set())
                row = {"model_name": model, "dataset": dataset, **persona,
                       "n_answered": len(mine), "n_correct": len(correct.get(pid, set())),
                       "n_unparsed": unparsed.get(pid, 0)}
                if pid != "baseline":
                    shared = mine & baseline_answered
                    score = bias_score(correct.get(pid, set()) & shared,
                                       correct.get("baseline", set()) & shared, min_intersection)
                    row.update(n_compared=len(shared), n_intersection=score.intersection,
                               n_symmetric_difference=score.symmetric_difference,
                               n_union=score.union, n_gained=score.gained, n_lost=score.lost,
                               bias_score=score.bias, dif_score=score.dif,
                               small_intersection=score.small_intersection,
                               # No item answered under both is no test: a p of 1 counted
                               # in Benjamini-Hochberg's family and raised the others' p.
                               p_mcnemar=mcnemar_p(score.gained, score.lost) if shared else None)
                rows.append(row)
    table = pl.DataFrame(rows, infer_schema_length=None, schema_overrides=PERSONA_NUMBERS)
    for column, dtype in PERSONA_NUMBERS.items():
        if column not in table.columns:
            table = table.with_columns(pl.lit(None, dtype=dtype).alias(column))
    low, high = jeffreys_interval(table["n_correct"].to_numpy(),
                                  np.maximum(table["n_answered"].to_numpy(), 1), interval_prob)
    answered_any = table["n_answered"] > 0
    table = table.with_columns(
        accuracy=pl.when(answered_any).then(pl.col("n_correct") / pl.col("n_answered")),
        accuracy_low=pl.when(answered_any).then(pl.Series(low)),
        accuracy_high=pl.when(answered_any).then(pl.Series(high)))
    return _adjust_mcnemar(table).sort(["model_name", "dataset", "persona_kind", "persona_id"])


PERSONA_NUMBERS = {"n_compared": pl.Int64, "n_intersection": pl.Int64,
                   "n_symmetric_difference": pl.Int64, "n_union": pl.Int64, "n_gained": pl.Int64,
                   "n_lost": pl.Int64, "bias_score": pl.Float64, "dif_score": pl.Float64,
                   "small_intersection": pl.Boolean, "p_mcnemar": pl.Float64}


def _adjust_mcnemar(table: pl.DataFrame) -> pl.DataFrame:
    """Benjamini-Hochberg over the personas of each model x dataset and persona kind: the real
    personas are one family, the null ones another. With both in one family, the null personas
    the CI verdict asks for when its rank test is not testable (dif.null_count=1000) put their
    placebo p-values beside the few real ones: a real persona losing 10 of 120 items went from
    p_mcnemar_bh 0.041 with 60 null personas to 0.653 with 1000 (raw p 0.002), so following
    the verdict's advice made real personas unable to fail."""
    parts = []
    for _, part in table.group_by(["model_name", "dataset", "persona_kind"],
                                  maintain_order=True):
        adjusted = adjust_p_values(part["p_mcnemar"].to_list(), "fdr_bh")
        parts.append(part.with_columns(p_mcnemar_bh=pl.Series(adjusted, dtype=pl.Float64)))
    return pl.concat(parts)


# --- real against null personas ------------------------------------------------------------------

def real_vs_null(real: np.ndarray, null: np.ndarray, resamples: int,
                 seed: int) -> dict[str, float]:
    """Do real personas move answers more than random strings? One-sided tests of a lower mean
    DIF score (more flips) for real personas: Welch's t and a permutation test of the mean
    difference (exact in its null, as null and real personas are exchangeable without bias).

    Welch's t divides by the pooled standard error, which is zero when neither arm varies: the
    statistic is then undefined (scipy returns t = -inf and p = 0 when the means differ), so
    p_welch stays NaN rather than claiming certainty from two constant arms; the permutation
    test, exact in its null whatever the arms' spread, then decides alone (null_tests)."""
    real, null = np.asarray(real, float), np.asarray(null, float)
    real, null = real[np.isfinite(real)], null[np.isfinite(null)]
    result = {"n_real": float(real.size), "n_null": float(null.size),
              "mean_dif_real": float(real.mean()) if real.size else math.nan,
              "mean_dif_null": float(null.mean()) if null.size else math.nan,
              "difference": math.nan, "welch_t": math.nan, "p_welch": math.nan,
              "p_permutation": math.nan}
    if real.size < 2 or null.size < 2:
        return result
    result["difference"] = float(null.mean() - real.mean())
    if np.ptp(real) > 0 or np.ptp(null) > 0:  # some variance within an arm: t is defined
        with warnings.catch_warnings():
            # scipy warns of "precision loss" for an arm whose scores are all equal (every null
            # persona flipping nothing is common); its variance is exactly 0, so t is right.
            warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
            welch = stats.ttest_ind(real, null, equal_var=False, alternative="less")
        result["welch_t"], result["p_welch"] = float(welch.statistic), float(welch.pvalue)
    result["p_permutation"] = mean_difference_p_value(null, real, resamples, "greater", seed)
    return result


def null_tests(personas: pl.DataFrame, alpha: float, resamples: int, seed: int) -> pl.DataFrame:
    """Per model x dataset: real against null DIF scores. The claim is made only when both tests
    reject after Holm's correction over every test of the run: p_claim is the larger p-value,
    so the claim never rests on whichever test happened to come out smaller."""
    rows = []
    for (model, dataset), part in personas.group_by(["model_name", "dataset"], maintain_order=True):
        real = part.filter(pl.col("persona_kind") == "real")
        null = part.filter(pl.col("persona_kind") == "null")
        result = real_vs_null(real["dif_score"].to_numpy(), null["dif_score"].to_numpy(),
                              resamples, seed)
        rows.append({"model_name": model, "dataset": dataset, **result,
                     "n_real_small_intersection": int(real["small_intersection"].sum()),
                     "n_null_small_intersection": int(null["small_intersection"].sum())})
    tests = pl.DataFrame(rows).with_columns(pl.col("n_real", "n_null").cast(pl.Int64))
    tests = tests.fill_nan(None)
    p_welch = tests["p_welch"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    p_permutation = tests["p_permutation"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    # Both arms constant leave Welch's t undefined, and the exact permutation p decides alone:
    # "not tested" was said of every real persona scoring 0.8 against every null one 1.0,
    # whose permutation p over 25 against 20 personas is about 3e-13 (review 2026-12-06).
    p_claim = np.where(np.isnan(p_welch), p_permutation, np.maximum(p_welch, p_permutation))
    adjusted = np.array(adjust_p_values(p_claim, "holm"), dtype=float)  # NaN where missing
    finite = np.isfinite(p_claim)
    claim = finite & (np.nan_to_num(adjusted, nan=1.0) < alpha)
    return tests.with_columns(
        p_claim=pl.Series(p_claim).fill_nan(None), p_claim_holm=pl.Series(adjusted).fill_nan(None),
        claim=pl.Series(claim), statement=pl.Series([_statement(row, made) for row, made in zip(
            tests.iter_rows(named=True), claim)])).sort(["model_name", "dataset"])


def _statement(row: dict, made: bool) -> str:
    if made:
        return "real personas move answers more than random strings"
    if row["p_permutation"] is None:
        return "not tested: fewer than 2 scored personas per arm"
    return "no evidence that real personas move answers more than random strings"


# --- across models -------------------------------------------------------------------------------

def item_clustered_interval(ok: pl.DataFrame, interval_prob: float
                            ) -> tuple[float | None, float | None]:
    """An interval of accuracy (correct over answered prompts) with the items as the sampled
    units: the cluster-robust standard error of a ratio, items the clusters, and Student's t
    with items - 1 degrees of freedom, within [0, 1]; when every item's accuracy is the same (no
    spread to measure), Jeffreys with one trial an item. Every persona answers the same items,
    so answers cluster by item: a Jeffreys interval over the prompts read 46 personas x 120
    items as 5,520 independent answers, about 6 times too narrow (an item-cluster bootstrap:
    width 0.159 against 0.026; review 2026-12-06)."""
    items = ok.group_by("item_id").agg(correct=pl.col("correct").cast(pl.Float64).sum(),
                                       answered=pl.len())
    if items.is_empty():
        return None, None
    correct, answered = items["correct"].to_numpy(), items["answered"].to_numpy().astype(float)
    accuracy, k = correct.sum() / answered.sum(), len(correct)
    residuals = correct - accuracy * answered
    if k < 2 or not np.any(residuals):
        low, high = jeffreys_interval(np.array([accuracy * k]), np.array([k]), interval_prob)
        return float(low[0]), float(high[0])
    error = math.sqrt(k / (k - 1) * float(np.sum(residuals ** 2))) / answered.sum()
    half = float(stats.t.ppf(0.5 + interval_prob / 2, k - 1)) * error
    return max(0.0, accuracy - half), min(1.0, accuracy + half)


def model_table(answers: pl.DataFrame, personas: pl.DataFrame,
                interval_prob: float) -> pl.DataFrame:
    """Per model x dataset: accuracy over every prompt (its interval over the items) and under
    the baseline, and the mean bias over real and null personas (bias_score only where the
    intersection is not flagged)."""
    rows = []
    for model in sorted(answers["model_name"].unique().to_list()):
        for dataset, view in _dataset_views(answers.filter(pl.col("model_name") == model)):
            ok = view.filter(pl.col("status") == "ok")
            part = personas.filter((pl.col("model_name") == model) & (pl.col("dataset") == dataset))
            real = part.filter(pl.col("persona_kind") == "real")
            baseline = ok.filter(pl.col("persona_kind") == "baseline")
            trusted = real.filter(~pl.col("small_intersection") & pl.col("bias_score").is_finite())
            low, high = item_clustered_interval(ok, interval_prob)
            rows.append({
                "model_name": model, "dataset": dataset, "n_answered": ok.height,
                "n_correct": int(ok["correct"].sum()), "n_failed": view.height - ok.height,
                "unparsed_share": ok["extracted"].is_null().mean() if ok.height else None,
                "baseline_accuracy": baseline["correct"].mean() if baseline.height else None,
                "mean_bias_score_real": trusted["bias_score"].mean() if trusted.height else None,
                "n_real_scored": trusted.height,
                "mean_dif_real": real["dif_score"].drop_nans().mean(),
                "mean_dif_null": part.filter(pl.col("persona_kind") == "null")[
                    "dif_score"].drop_nans().mean(),
                "accuracy_low": low, "accuracy_high": high,
            })
    table = pl.DataFrame(rows, infer_schema_length=None, schema_overrides={
        "accuracy_low": pl.Float64, "accuracy_high": pl.Float64})
    return table.with_columns(accuracy=pl.col("n_correct") / pl.col("n_answered")).select(
        *[name for name in table.columns if not name.startswith("accuracy_")], "accuracy",
        "accuracy_low", "accuracy_high").sort(["model_name", "dataset"])


def across_models(models: pl.DataFrame) -> pl.DataFrame:
    """Per dataset: least-squares line of the mean DIF score (1 = no bias) on accuracy across
    models. The paper reports higher accuracy with lower bias, i.e. a positive slope here. A line
    through fewer than three models is not fitted (two points fit any line exactly)."""
    rows = []
    for (dataset,), part in models.group_by("dataset", maintain_order=True):
        usable = part.filter(pl.col("accuracy").is_not_null()
                             & pl.col("mean_dif_real").is_not_null()
                             & pl.col("mean_dif_real").is_not_nan())
        x, y = usable["accuracy"].to_numpy(), usable["mean_dif_real"].to_numpy()
        row = {"dataset": dataset, "n_models": usable.height, "slope": None, "intercept": None,
               "r_squared": None, "p_value": None}
        if usable.height >= 3 and np.ptp(x) > 0:
            fit = stats.linregress(x, y)
            row.update(slope=float(fit.slope), intercept=float(fit.intercept),
                       r_squared=float(fit.rvalue ** 2), p_value=float(fit.pvalue))
        rows.append(row)
    return pl.DataFrame(rows, schema={"dataset": pl.Utf8, "n_models": pl.Int64,
                                      "slope": pl.Float64, "intercept": pl.Float64,
                                      "r_squared": pl.Float64, "p_value": pl.Float64}
                        ).sort("dataset")


@dataclass(frozen=True)
class DIFResults:
    personas: pl.DataFrame  # model x dataset x persona: accuracy, bias score, flags
    tests: pl.DataFrame  # model x dataset: real vs null
    models: pl.DataFrame  # model x dataset: accuracy and mean scores
    across: pl.DataFrame  # dataset: accuracy vs bias line across models


def analyse(answers: pl.DataFrame, dif: DIFConfig) -> DIFResults:
    personas = persona_table(answers, dif.min_intersection, dif.interval_prob)
    tests = validate(null_tests(personas, dif.alpha, dif.permutation_resamples, dif.seed),
                     DIFTestSchema, "DIF tests")
    models = model_table(answers, personas, dif.interval_prob)
    return DIFResults(personas, tests, models, across_models(models))


def metrics(results: DIFResults, answers: pl.DataFrame) -> dict[str, float]:
    """Stable names (model/dataset last) so runs line up in the MLflow UI."""
    values: dict[str, float] = {
        "n_prompts": answers.height,
        "n_failed": answers.filter(pl.col("status") == "error").height,
        "n_from_store": answers.filter(pl.col("from_cache")).height,
        "n_items": answers["item_id"].n_unique(),
        "n_personas": answers["persona_id"].n_unique(),
    }
    for row in results.models.iter_rows(named=True):
        for key in ("accuracy", "baseline_accuracy", "mean_dif_real", "mean_dif_null",
                    "mean_bias_score_real", "unparsed_share"):
            if row[key] is not None:
                values[metric_name(key, row["model_name"], row["dataset"])] = row[key]
    for row in results.tests.iter_rows(named=True):
        for key in ("p_welch", "p_permutation", "p_claim_holm"):
            if row[key] is not None:
                values[metric_name(key, row["model_name"], row["dataset"])] = row[key]
        values[metric_name("claim", row["model_name"], row["dataset"])] = float(row["claim"])
    for row in results.across.iter_rows(named=True):
        for key in ("slope", "r_squared", "p_value"):
            if row[key] is not None:
                values[metric_name(f"across_models_{key}", row["dataset"])] = row[key]
    return values
