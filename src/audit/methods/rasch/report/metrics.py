"""The numbers an audit logs: metric names are stable so that runs line up column by column in
the MLflow UI and in `python -m audit.runs` (`theta_mean/<respondent>`,
`contrast/<attribute>/<a>_vs_<b>/mean`, `rhat_max`, `judge/kappa`, ...). Pure functions of tables.
"""

from __future__ import annotations

import polars as pl

from audit.tracking import mlflow as tracking
from audit.methods.rasch.irt import RaschFit, parameter_table
from audit.methods.rasch.judge.agreement import fleiss, krippendorff_alpha
from audit.methods.rasch.no_signal import judge_top_label_share
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE

# decision_low/high: the interval the decision was taken on (family-wise), so runs compared in
# MLflow show why a contrast whose 94% HDI clears zero stayed `undecided`.
CONTRAST_STATISTICS = ("mean", "sd", "hdi_low", "hdi_high", "decision_low", "decision_high",
                       "p_direction")


def audit_metrics(prompts: pl.DataFrame, responses: pl.DataFrame, labels: pl.DataFrame,
                  fit: RaschFit, timings: dict[str, float]) -> dict[str, float]:
    """Metric names are stable so that runs line up column by column in the MLflow UI."""
    labelled = labels.height
    metrics: dict[str, float] = {
        "n_prompts": prompts.height,
        "n_respondents": prompts["respondent_id"].n_unique(),
        "n_items": prompts["item_id"].n_unique(),
        "n_responses_ok": responses.filter(pl.col("status") == "ok").height,
        "n_failed": responses.filter(pl.col("status") == "error").height,
        "n_from_store": responses.filter(pl.col("from_cache")).height,
        "n_labelled": labelled,
        "rule_share": labels.filter(pl.col("label_source") == "rule").height / max(labelled, 1),
        "rhat_max": fit.diagnostics.rhat_max,
        "ess_bulk_min": fit.diagnostics.ess_bulk_min,
        "ess_tail_min": fit.diagnostics.ess_tail_min,
        "divergences": fit.diagnostics.divergences,
        "converged": float(fit.converged),
    }
    share, _, judged = judge_top_label_share(labels)
    if judged:
        metrics["judge_top_label_share"] = share
    for label in (*LABELS, UNPARSEABLE, JUDGE_FAILED):
        count = labels.filter(pl.col("label") == label).height
        metrics[f"label_count/{label}"] = count
        metrics[f"label_rate/{label}"] = count / max(labelled, 1)
    scored = labels.filter(pl.col("decision_mass").is_not_null())
    if scored.height:
        metrics["decision_mass_mean"] = float(scored["decision_mass"].mean())
        metrics["p_favourable_mean"] = float(scored["p_favourable"].mean())
    for stage, seconds in timings.items():
        metrics[f"duration_s/{stage}"] = seconds
    for name in ("theta", "b"):
        means = parameter_table(fit.summary, name, "index").select("index", "mean")
        for index, mean in means.rows():
            metrics[tracking.metric_name(f"{name}_mean", index)] = mean
    return metrics


def agreement_by_item(labels: pl.DataFrame, prompts: pl.DataFrame) -> pl.DataFrame:
    """Mean panel agreement per scenario: items where judges split are where labels are shaky
    (over the answers the panel was heard on in full: a failed request is no disagreement)."""
    return (labels.filter((pl.col("label_source") == "judge")
                          & (pl.col("label") != JUDGE_FAILED))
            .join(prompts.select("prompt_id", "item_id"), on="prompt_id")
            .group_by("item_id").agg(n_judged=pl.len(), mean_agreement=pl.col("agreement").mean())
            .sort("item_id"))


def judge_metrics(votes: pl.DataFrame, by_item: pl.DataFrame) -> dict[str, float]:
    """Agreement of a judge panel (only with two judges or more)."""
    if votes.is_empty() or votes["judge"].n_unique() < 2:
        return {}
    alpha, kappa = krippendorff_alpha(votes), fleiss(votes)
    metrics = {"judge/n_judges": float(votes["judge"].n_unique()),
               "judge/krippendorff_alpha": float("nan") if alpha is None else alpha,
               "judge/fleiss_kappa": float("nan") if kappa is None else kappa}
    for item_id, agreement in by_item.select("item_id", "mean_agreement").iter_rows():
        metrics[tracking.metric_name("judge/agreement", item_id)] = agreement
    return metrics


def rate_metrics(rates: pl.DataFrame, tests: pl.DataFrame) -> dict[str, float]:
    """Abstention and refusal rates per respondent, and the p-value of their equality."""
    metrics = {tracking.metric_name("label_rate", label, model, persona): rate
               for model, persona, label, rate in
               rates.select("model_name", "persona_id", "label", "rate").iter_rows()
               if label in (LABELS[2], LABELS[3])}
    for model, label, p_value in tests.select("model_name", "label", "p_value").iter_rows():
        if p_value is not None:
            metrics[tracking.metric_name("label_rate_p_value", label, model)] = p_value
    return metrics


def contrast_metrics(contrasts: pl.DataFrame) -> dict[str, float]:
    """`contrast/<attribute>/<a>_vs_<b>/<statistic>` for a run of one model, so a model sweep's
    runs line up; with several models in one run the model comes first:
    `contrast/<model>/<attribute>/<a>_vs_<b>/<statistic>`."""
    names = contrast_metric_names(contrasts)
    metrics: dict[str, float] = {}
    for row, name in zip(contrasts.iter_rows(named=True), names):
        for statistic in CONTRAST_STATISTICS:
            if row.get(statistic) is not None:
                metrics[f"{name}/{statistic}"] = float(row[statistic])
    return metrics


def contrast_metric_names(contrasts: pl.DataFrame) -> list[str]:
    """Each row's metric name without its statistic (`contrast/race/Black_vs_White`)."""
    several = contrasts["model_name"].n_unique() > 1
    # The configured outcome keeps the stable names; a second outcome's rows (the fit writes the
    # configured one first) go under `contrast/<outcome>/...`.
    primary = contrasts["outcome"][0] if "outcome" in contrasts.columns and contrasts.height \
        else None
    names = []
    for row in contrasts.iter_rows(named=True):
        prefix = (["contrast", row["model_name"]] if several else ["contrast"])
        if primary is not None and row["outcome"] != primary:
            prefix.insert(1, row["outcome"])
        names.append(tracking.metric_name(*prefix, row["attribute"],
                                          f"{row['level_a']}_vs_{row['level_b']}"))
    return names


def gold_alias_metrics(gold_metrics: dict[str, float]) -> dict[str, float]:
    """The judge's agreement with the gold labels under the names runs are compared by."""
    return {"judge/kappa": gold_metrics["gold/cohen_kappa"],
            "judge/accuracy": gold_metrics["gold/accuracy"]}
