"""Variance components of a past run: what `python -m audit.plan plan.from_run=RUN` plans with.

A plan is only as good as its assumptions. Item spread, the spread of persona texts within a
demographic cell, the null personas' spread, the overall rate and the judge's errors are all
measured by a finished run, so a plan made from one predicts the next run of that kind instead of
trusting defaults (the old defaults, item sd 1.0 and persona sd 0.2, against a default run's 2.27
and 0.92, predicted race HDIs 20% too narrow: issue 34).

A run measures these figures with uncertainty, and one small run can be far off: a simulated
pilot of the default design put the text sd at 0.39 where the truth was 1.0, and a plan from its
posterior means predicted race HDIs 19% too narrow (benchmarks/RESULTS.md, bench_calibration).
So a plan does not plug in point estimates: ``run_components`` returns the figures of posterior
draws of the run, one set per simulated audit (``posterior_component_draws``), and the predicted
width averages over what the run leaves open about the spreads. ``posterior_components`` gives
their posterior means (what the plan's log shows). Per draw:

* explanatory and population fits carry them as parameters: ``sigma_residual`` (text sd),
  ``sigma_null``, ``model_effect`` (the null persona's logit on the average item, b summing to
  zero) and ``real_effect``; the item sd is each draw's sd of ``b``.
* rasch and twopl fits carry one theta per persona (a twopl's thetas and b turned into log-odds
  on the average item, times its mean discrimination, as its contrasts are): the null sd is each
  draw's sd of the null thetas; the text sd is each draw's residual sd of the real personas'
  thetas around an additive fit of their attribute levels (degrees of freedom counted), which
  needs more personas with levels than the additive fit has terms.
* the judge: the gold-set confusion counts of the run's own judge (judge_gold.parquet), read
  through the run's outcome coding; none when the run evaluated no gold answers.

A run is a run directory (as `python -m audit` writes it) or an MLflow run id, whose logged
artifacts (fit/posterior.nc, data/prompts.parquet, judge/judge_gold.parquet) hold the same files.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
import xarray as xr

from audit.errors import AuditError
from audit.methods.rasch.design import PROMPTS as PROMPTS_FILE
from audit.methods.rasch.irt.contrasts import logit_scale
from audit.methods.rasch.irt.explanatory import NULL_KIND
from audit.methods.rasch.irt.judge_error import judge_confusion
from audit.methods.rasch.method import FIT
from audit.methods.rasch.method import GOLD as GOLD_FILE
from audit.methods.rasch.simulation import VarianceComponents, respondent_frame
from audit.methods.checks import signed
from audit.methods.layout import found_run_file
from audit.tables import read_frame

logger = logging.getLogger(__name__)

# A run directory's files the plan reads, under the names the audit's stages write them with.
POSTERIOR, PROMPTS, GOLD = Path(FIT, "posterior.nc"), Path(PROMPTS_FILE), Path(GOLD_FILE)
# Where a Rasch run's MLflow run keeps the same files (report/publish.py).
ARTIFACTS = {POSTERIOR: "fit/posterior.nc", PROMPTS: "data/prompts.parquet",
             GOLD: "judge/judge_gold.parquet"}


def _flat(values: xr.DataArray) -> np.ndarray:
    """Draws first: (chain x draw, ...)."""
    return values.stack(sample=("chain", "draw")).transpose("sample", ...).values


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _additive_residual_sd(theta: np.ndarray, levels: pl.DataFrame) -> np.ndarray | None:
    """Per draw, the residual sd of thetas (draws x personas) around an additive model of the
    personas' attribute levels; None without residual degrees of freedom."""
    columns = [np.ones(levels.height)]
    for attribute in levels.columns:
        values = levels.get_column(attribute).to_list()
        for level in sorted(set(values))[1:]:
            columns.append(np.array([value == level for value in values], dtype=float))
    design = np.column_stack(columns)
    dof = levels.height - np.linalg.matrix_rank(design)
    if dof <= 0:
        return None
    fitted = design @ np.linalg.lstsq(design, theta.T, rcond=None)[0]
    residual = theta.T - fitted
    return np.sqrt((residual ** 2).sum(axis=0) / dof)


def _component_draws(posterior: xr.Dataset, prompts: pl.DataFrame, attributes: tuple[str, ...],
                     defaults: VarianceComponents) -> dict[str, np.ndarray]:
    """Each figure per posterior draw (chain x draw): item_sd, text_sd, null_sd, base_logit and
    real_shift; ``defaults`` fills what the posterior cannot tell, the same in every draw."""
    if "b" not in posterior:
        raise AuditError("the run's posterior has no item difficulties `b`: plan from a Rasch "
                         "run (fit=population, explanatory, rasch or twopl)")
    b = _flat(posterior["b"])
    count = b.shape[0]
    # A 2PL's log-odds are a * (theta - b): theta and b are in units of 1 / a, and the plan
    # simulates log-odds (logistic(theta - b)). On the average item, as the contrasts are
    # (contrasts.logit_scale); without this every spread came out divided by mean(a).
    scale = logit_scale(posterior)
    scale = np.ones(count) if scale is None else scale
    b = b * scale[:, None]
    figures = {"item_sd": b.std(axis=1, ddof=1)}
    if "sigma_residual" in posterior:  # explanatory, population: the spreads are parameters
        def over_models(name: str) -> np.ndarray:  # a run of several models: their average
            return _flat(posterior[name]).reshape(count, -1).mean(axis=1)

        figures.update(
            text_sd=over_models("sigma_residual"), null_sd=over_models("sigma_null"),
            base_logit=over_models("model_effect"),
            real_shift=(over_models("real_effect") if "real_effect" in posterior
                        else np.zeros(count)))
        return figures
    respondents = respondent_frame(prompts, attributes)
    theta = posterior["theta"]
    is_null = respondents.get_column("persona_kind") == NULL_KIND
    nulls = respondents.filter(is_null).get_column("respondent").to_list()
    with_levels = respondents.filter(~is_null).drop_nulls(list(attributes))
    null_theta = _flat(theta.sel(respondent=nulls)) * scale[:, None] if nulls else None
    real_theta = (_flat(theta.sel(respondent=with_levels.get_column("respondent").to_list()))
                  * scale[:, None])
    text_sd = _additive_residual_sd(real_theta, with_levels.select(attributes))
    if text_sd is None:
        logger.warning("plan.from_run: the run's %d personas with levels leave no residual "
                       "degrees of freedom for the text sd; keeping plan.text_sd=%.2f",
                       with_levels.height, defaults.text_sd)
        text_sd = np.full(count, defaults.text_sd)
    reference = null_theta if null_theta is not None else real_theta
    figures.update(
        text_sd=text_sd,
        null_sd=(null_theta.std(axis=1, ddof=1) if len(nulls) > 1
                 else np.full(count, defaults.null_sd)),
        base_logit=reference.mean(axis=1) - b.mean(axis=1),
        real_shift=(real_theta.mean(axis=1) - null_theta.mean(axis=1)
                    if null_theta is not None else np.zeros(count)))
    return figures


def _components_at(figures: dict[str, float], defaults: VarianceComponents) -> VarianceComponents:
    return dataclasses.replace(
        defaults, item_sd=float(figures["item_sd"]), text_sd=float(figures["text_sd"]),
        null_sd=float(figures["null_sd"]), base_rate=_logistic(float(figures["base_logit"])),
        real_shift=float(figures["real_shift"]))


def posterior_components(posterior: xr.Dataset, prompts: pl.DataFrame,
                         attributes: tuple[str, ...],
                         defaults: VarianceComponents) -> VarianceComponents:
    """The posterior means of the spreads and rates a fitted posterior implies; ``defaults``
    keeps what it cannot tell (the judge's, and a text sd a design without residual degrees of
    freedom cannot measure)."""
    return _mean_components(_component_draws(posterior, prompts, attributes, defaults), defaults)


def _mean_components(figures: dict[str, np.ndarray],
                     defaults: VarianceComponents) -> VarianceComponents:
    return _components_at({name: values.mean() for name, values in figures.items()}, defaults)


def components_line(components: VarianceComponents) -> str:
    """The components as the plan's log shows them: the spreads and rates, and where the judge's
    rates come from (the dataclass's repr printed gold_per_class from the config beside the
    run's own gold counts, which the plan uses instead)."""
    judge = ("labels as truth (no gold-set results)" if components.gold is None else
             f"judge sensitivity {components.sensitivity:.2f}, specificity "
             f"{components.specificity:.2f} (Beta means of the run's {components.gold.n} gold "
             "answers)")
    return (f"item sd {components.item_sd:.2f}, text sd {components.text_sd:.2f}, null sd "
            f"{components.null_sd:.2f}, null personas' favourable rate "
            f"{components.base_rate:.2f}, real personas' shift {signed(components.real_shift)} "
            f"logits; {judge}")


def posterior_component_draws(posterior: xr.Dataset, prompts: pl.DataFrame,
                              attributes: tuple[str, ...], defaults: VarianceComponents,
                              count: int, seed: int) -> tuple[VarianceComponents, ...]:
    """The components of ``count`` posterior draws picked at random (without replacement while
    the posterior has enough): a plan gives each simulated audit its own, so its predictions
    carry the run's uncertainty about the spreads instead of trusting their means."""
    return _picked_components(_component_draws(posterior, prompts, attributes, defaults),
                              defaults, count, seed)


def _picked_components(figures: dict[str, np.ndarray], defaults: VarianceComponents, count: int,
                       seed: int) -> tuple[VarianceComponents, ...]:
    if count < 1:
        raise AuditError(f"a plan needs at least one simulation; got {count} "
                         "(raise plan.simulations)")
    available = figures["item_sd"].size
    picked = np.random.default_rng(seed).choice(available, size=count,
                                                replace=count > available)
    return tuple(_components_at({name: values[index] for name, values in figures.items()},
                                defaults) for index in picked)


def judge_components(gold: pl.DataFrame | None, coding: str, defaults: VarianceComponents,
                     drop_labels: Sequence[str] = ()) -> VarianceComponents:
    """The run's judge: its gold counts (less the answers judged a label of fit.drop_labels, as
    the fit reads them) and their Beta means as the rates, or labels as truth when the run
    evaluated no gold answers."""
    counts = (judge_confusion(gold, coding, drop_labels) if gold is not None and gold.height
              else None)
    if counts is None:
        logger.warning("plan.from_run: the run has no gold-set results; planning with labels "
                       "as truth (judge error not included)")
        return dataclasses.replace(defaults, sensitivity=1.0, specificity=1.0,
                                   gold_per_class=0, gold=None)
    ones = counts.true_1_judged_1 + counts.true_1_judged_0
    zeros = counts.true_0_judged_0 + counts.true_0_judged_1
    return dataclasses.replace(
        defaults, gold=counts,
        sensitivity=(1 + counts.true_1_judged_1) / (2 + ones),
        specificity=(1 + counts.true_0_judged_0) / (2 + zeros))


def run_files(source: str, tracking_uri: str, scratch: Path) -> dict[Path, Path | None]:
    """The run's posterior, prompts and gold results: from a run directory, else from the
    MLflow run of that id (downloaded into ``scratch``)."""
    directory = Path(source)
    if directory.is_dir():
        # Flat after `python -m audit`, in stage folders after `dvc repro` (pipeline/analyse/...).
        files = {name: found_run_file(directory, name) for name in ARTIFACTS}
        if files[POSTERIOR] is None or files[PROMPTS] is None:
            raise AuditError(f"plan.from_run={source} is a directory without "
                             f"{POSTERIOR} and {PROMPTS}: give a finished Rasch run's directory "
                             "(outputs/DATE/TIME, or the pipeline/ folder of `dvc repro`)")
        return files
    from audit.tracking import mlflow as tracking

    try:
        run = tracking.get_run(tracking_uri, source)
    except LookupError:
        raise AuditError(f"plan.from_run={source} is neither a run directory nor an MLflow run "
                         f"in {tracking_uri}: give a run directory (outputs/DATE/TIME) or a run "
                         "id from `python -m audit.runs`") from None
    method = run["tags"].get("method", "rasch")  # runs before the tag were Rasch runs
    if method != "rasch":
        raise AuditError(f"plan.from_run={source}: MLflow run {run['run_id']} is a run of "
                         f"method={method}, not a Rasch run; plan from a finished Rasch run")
    problem = tracking.missing_artifacts(run["run_id"], run["artifact_uri"])
    if problem:
        raise AuditError(f"plan.from_run={source}: {problem}")
    files: dict[Path, Path | None] = {}
    for name, artifact in ARTIFACTS.items():
        try:
            files[name] = tracking.download_artifact(tracking_uri, source, artifact, scratch)
        except Exception as error:  # MLflow raises its own types per store
            if name == GOLD:
                files[name] = None
                continue
            raise AuditError(f"MLflow run {source} has no artifact {artifact} ({error}): plan "
                             "from a finished Rasch run") from None
    return files


def run_components(source: str, tracking_uri: str, attributes: tuple[str, ...], coding: str,
                   defaults: VarianceComponents, count: int, seed: int,
                   drop_labels: Sequence[str] = ()) -> tuple[VarianceComponents, ...]:
    """Every variance component a past run measured, at ``count`` of its posterior draws (see
    the module docstring)."""
    from audit.methods.rasch.analyse import read_posterior
    from audit.methods.rasch.irt.rasch import posterior_draws

    with tempfile.TemporaryDirectory(prefix="audit-plan-") as scratch:
        files = run_files(source, tracking_uri, Path(scratch))
        fix = "rerun that run, or choose another for plan.from_run"
        posterior = posterior_draws(read_posterior(
            files[POSTERIOR], f"{ARTIFACTS[POSTERIOR]} of plan.from_run={source}", fix))
        prompts = read_frame(files[PROMPTS], f"the prompts of plan.from_run={source}", fix)
        gold = read_frame(files[GOLD], f"the judge's gold labels of plan.from_run={source}", fix) \
            if files[GOLD] is not None else None
    judged = judge_components(gold, coding, defaults, drop_labels)
    figures = _component_draws(posterior, prompts, attributes, judged)  # warns once
    logger.info("plan.from_run=%s, posterior means: %s", source,
                components_line(_mean_components(figures, judged)))
    return _picked_components(figures, judged, count, seed)
