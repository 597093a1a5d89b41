"""The labelling paths' misclassification rates, from their gold-set confusion counts, in the fit.

A fit that treats labels as truth attenuates real gaps when the labeller is noisy (a label flipped
at random pulls every persona's rate towards the same middle) and reports intervals as narrow as
if the labels were exact. Here the observed label is the true decision passed through the path
that labelled it: sensitivity = P(path says 1 | truly 1), specificity = P(path says 0 | truly 0)
under the fit's outcome coding.

Per path: the cascade labels most answers with its rules and the rest with the LLM judge, and the
two err differently (the rules rarely, the judge more), so each audit label is read through the
rates of its own path (the labels table's ``label_source``), each measured on the gold answers
that path labelled. One pooled matrix would blame the rules for the judge's errors, or the other
way round, whenever the two paths' shares differ between the gold set and the audit.

The rates follow the Beta posteriors of the gold counts under a uniform Beta(1, 1):

    sensitivity ~ Beta(1 + true 1 judged 1, 1 + true 1 judged 0)
    specificity ~ Beta(1 + true 0 judged 0, 1 + true 0 judged 1)

conditioned on sensitivity + specificity > 1 (a labeller better than a coin, which the model
assumes: gold_rates.py), and only the gold counts: the fit holds them FIXED at draws from these
Betas and pools the fits (judge_cut.py), so the audit's own labels never update them. A path
whose gold leaves a true class unmeasured, or leaves over 1% of its mass at or below a coin, is
warned about and recorded (diagnostics.json, ``weak_gold``). Gold answers left unparseable, or
judged a label of fit.drop_labels, are left out, as such audit answers are left out of the fit:
the rates are conditional on a label the fit reads. A path with no gold answers (a gold set the
rules labelled completely) keeps its labels as truth, with a warning and a record in
diagnostics.json.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pymc as pm

from audit.errors import AuditError
from audit.methods.rasch.irt.gold_rates import (
    COIN_MASS_REFUSAL,
    COIN_MASS_WARNING,
    coin_or_worse_mass,
    conditioned_draws,
    rate_mean_sd_hdi,
)
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.methods.rasch.irt.likelihood import binomial_cells, misclassified_binomial_cells
from audit.methods.rasch.irt.outcome import OUTCOME_CODINGS, dropped_labels
from audit.methods.rasch.schemas import IMPORTED_DECISIONS_FIX, UNJUDGED_SOURCES

logger = logging.getLogger(__name__)

SENSITIVITY = "judge_sensitivity"
SPECIFICITY = "judge_specificity"
# The model's data slots the rates are set in, one value per labelling path (pm.Data, so one
# compiled model serves every imputation); the posterior gets SENSITIVITY / SPECIFICITY instead.
FIXED_SENSITIVITY = "judge_sensitivity_fixed"
FIXED_SPECIFICITY = "judge_specificity_fixed"
PATH_DIM = "label_path"
# The key of counts that hold for every label, whatever its path (a pooled matrix, or an
# imported table that does not say which path labelled an answer).
ANY_PATH = "any"
# rasch_seed stays the original audit's model; the hurdle model's three labels would need a 3 x 3
# confusion matrix, which is not modelled yet.
LABELS_AS_TRUTH: tuple[str, ...] = ("rasch_seed", "hurdle")


@dataclass(frozen=True)
class JudgeConfusion:
    """Gold-set counts under one outcome coding: rows are the true code, columns the judge's."""

    coding: str
    true_1_judged_1: int
    true_1_judged_0: int
    true_0_judged_0: int
    true_0_judged_1: int

    @property
    def n(self) -> int:
        return (self.true_1_judged_1 + self.true_1_judged_0 + self.true_0_judged_0
                + self.true_0_judged_1)

    def as_dict(self) -> dict[str, object]:
        return {"coding": self.coding, "true_1_judged_1": self.true_1_judged_1,
                "true_1_judged_0": self.true_1_judged_0, "true_0_judged_0": self.true_0_judged_0,
                "true_0_judged_1": self.true_0_judged_1}

    def rate_betas(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """(alpha, beta) of the sensitivity's and the specificity's gold posterior."""
        return ((1 + self.true_1_judged_1, 1 + self.true_1_judged_0),
                (1 + self.true_0_judged_0, 1 + self.true_0_judged_1))

    def weak_gold(self) -> list[str]:
        """Why these counts barely measure the path: a true class with no gold answer (its rate
        is a flat Beta(1, 1)), or gold Betas with over COIN_MASS_WARNING of their mass on a
        labeller no better than a coin (the draws are conditioned away from it, gold_rates.py)."""
        reasons = [f"no gold answer is truly {truth}" for truth, seen in (
            (1, self.true_1_judged_1 + self.true_1_judged_0),
            (0, self.true_0_judged_0 + self.true_0_judged_1)) if not seen]
        mass = coin_or_worse_mass(*self.rate_betas())
        if mass > COIN_MASS_WARNING:
            reasons.append(f"the gold leaves {mass:.0%} probability that sensitivity + "
                           "specificity <= 1 (no better than a coin)")
        return reasons


@dataclass(frozen=True)
class JudgeCorrection:
    """The counts of each labelling path under one coding (``ANY_PATH``: one matrix for all)."""

    coding: str
    by_path: Mapping[str, JudgeConfusion]
    # Paths of audit labels that no gold answer measured: read as truth (recorded, and warned).
    unmeasured: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return sum(confusion.n for confusion in self.by_path.values())

    def confusion_for(self, path: str) -> JudgeConfusion | None:
        return self.by_path.get(path, self.by_path.get(ANY_PATH))

    def as_dict(self) -> dict[str, object]:
        return {"coding": self.coding, "cut": True,
                "paths": {path: counts.as_dict() for path, counts in sorted(self.by_path.items())},
                "labels_as_truth": list(self.unmeasured),
                "weak_gold": {path: reasons for path, counts in sorted(self.by_path.items())
                              if (reasons := counts.weak_gold())}}

    def for_cells(self, cell_path: np.ndarray | None) -> CellRates:
        """These counts bound to a fit's cells (``cell_path``: each cell's labelling path, or
        None when the table does not say, which needs counts for ``ANY_PATH``)."""
        if cell_path is None:
            if ANY_PATH not in self.by_path:
                raise AuditError("the outcome table has no label_source column, so its labels "
                                 "cannot be read through per-path judge rates; keep the labels "
                                 "table's label_source column")
            paths: tuple[str, ...] = (ANY_PATH,)
            index = None
        else:
            paths = tuple(sorted(set(cell_path.tolist())))
            lookup = {path: position for position, path in enumerate(paths)}
            index = np.array([lookup[path] for path in cell_path.tolist()], dtype=np.int64)
        unmeasured = tuple(path for path in paths if self.confusion_for(path) is None)
        for line in unmeasured_lines(unmeasured):
            logger.warning("%s", line)
        for path in paths:
            counts = self.confusion_for(path)
            if counts is not None and (reasons := counts.weak_gold()):
                logger.warning("labelling path %s is barely measured: %s; its rates are drawn "
                               "assuming it is better than a coin (more gold answers measure "
                               "it)", path, "; ".join(reasons))
        return CellRates(JudgeCorrection(self.coding, self.by_path, unmeasured), paths, index)


def unmeasured_lines(paths: Sequence[str], where: str = "") -> list[str]:
    """What reading these paths' labels as truth means, a line each: a judged path that no gold
    answer reached can be measured by more gold answers; decisions that came with imported
    answers cannot (the gold set measures the judge on answer text, not who made them), and a
    run's advice to enlarge the gold sample sent users to a fix that could not work (judge
    review 2026-12-02); the model's own option probabilities (logprob) are its decisions, with
    no judge error to correct, so they are not a gap."""
    judged = [path for path in paths if path not in UNJUDGED_SOURCES]
    lines = []
    if judged:
        lines.append(f"the labels of {', '.join(judged)}{where} were read as truth, "
                     "uncorrected: no gold answer was labelled by that path (enlarge "
                     "judge.gold_per_category to measure it)")
    if "imported" in paths:
        lines.append(f"the imported decisions{where} were read as given, uncorrected: the gold "
                     "set measures the judge on answer text, not whoever made these decisions; "
                     f"{IMPORTED_DECISIONS_FIX}")
    return lines


@dataclass(frozen=True, eq=False)
class CellRates:
    """A correction bound to a fit's cells: the paths present and each cell's path position
    (None: every cell has the one path)."""

    correction: JudgeCorrection
    paths: tuple[str, ...]
    cell_path: np.ndarray | None = field(default=None)

    def rate_means(self) -> tuple[np.ndarray, np.ndarray]:
        """The rates' means per path as the cut draws them (conditioned on better than a coin;
        1 for a path read as truth): a flat gold Beta's own mean, 0.5, would sit on the coin
        line, where the labels say nothing."""
        means = np.ones((2, len(self.paths)))
        for position, path in enumerate(self.paths):
            counts = self.correction.confusion_for(path)
            if counts is not None:
                sensitivity, specificity = counts.rate_betas()
                for which, (this, other) in enumerate(((sensitivity, specificity),
                                                       (specificity, sensitivity))):
                    means[which, position] = rate_mean_sd_hdi(this, other, 0.5)[0]
        return means[0], means[1]

    def rate_draws(self, imputations: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(imputations x paths) sensitivities and specificities from the gold Betas,
        conditioned on sensitivity + specificity > 1 (gold_rates.py: the model assumes a
        labeller better than a coin, and one draw below it would reverse its fit's gaps).

        Latin hypercube draws: each rate takes one draw from each of ``imputations`` equal-mass
        strata (the sensitivity of its conditioned marginal, the specificity of its Beta given
        the sensitivity), paired across rates by independent shuffles, so a handful of
        imputations already spans each Beta (its mean and spread) instead of clustering by chance.
        """
        rng = np.random.default_rng(seed)
        columns: list[list[np.ndarray]] = [[], []]
        for path in self.paths:
            counts = self.correction.confusion_for(path)
            if counts is None:
                for column in columns:
                    column.append(np.ones(imputations))
                continue
            strata = [(rng.permutation(imputations) + rng.uniform(size=imputations)) / imputations
                      for _ in range(2)]
            for column, draws in zip(columns, conditioned_draws(*counts.rate_betas(), *strata),
                                     strict=True):
                column.append(draws)
        return np.stack(columns[0], axis=1), np.stack(columns[1], axis=1)

    def rate_summary(self, hdi_prob: float) -> dict[str, tuple[float, float, float, float]]:
        """Each measured path's rates as the cut draws them (its gold Betas conditioned on a
        better-than-coin path): parameter name -> mean, sd, HDI low, HDI high. The summary of the
        pooled posterior would read these off the few imputations' draws instead, whose range
        covers far less than ``hdi_prob`` of the gold posterior."""
        rows = {}
        for path in self.paths:
            counts = self.correction.confusion_for(path)
            if counts is None:
                continue
            sensitivity, specificity = counts.rate_betas()
            for name, this, other in ((SENSITIVITY, sensitivity, specificity),
                                      (SPECIFICITY, specificity, sensitivity)):
                rows[f"{name}[{path}]"] = rate_mean_sd_hdi(this, other, hdi_prob)
        return rows


def judge_confusion(gold_results: pl.DataFrame, coding: str,
                    drop_labels: Sequence[str] = ()) -> JudgeConfusion | None:
    """The gold-set counts under `coding`; None when no gold answer got a parsed label.

    Gold answers the judge gave a label of ``drop_labels`` (fit.drop_labels) are left out, as
    code_outcomes leaves such audit answers out of the fit: the fit reads rates conditional on a
    kept label. Their true label does not matter, as it does not for an audit answer."""
    mapping = dict(OUTCOME_CODINGS[coding])
    judged = [label for label in mapping if label not in dropped_labels(coding, drop_labels)]
    coded = (gold_results.filter(pl.col("true_label").is_in(list(mapping))
                                 & pl.col("label").is_in(judged))
             .select(pl.col("true_label").replace_strict(mapping, return_dtype=pl.Int64)
                     .alias("truth"),
                     pl.col("label").replace_strict(mapping, return_dtype=pl.Int64)
                     .alias("judged")))
    if coded.height == 0:
        return None

    def count(truth: int, judged: int) -> int:
        return coded.filter((pl.col("truth") == truth) & (pl.col("judged") == judged)).height

    return JudgeConfusion(coding=coding, true_1_judged_1=count(1, 1), true_1_judged_0=count(1, 0),
                          true_0_judged_0=count(0, 0), true_0_judged_1=count(0, 1))


def path_correction(gold_results: pl.DataFrame, coding: str,
                    drop_labels: Sequence[str] = ()) -> JudgeCorrection | None:
    """Counts per labelling path from the gold results' label_source (one ANY_PATH matrix when
    the results do not say); None when no gold answer got a parsed label."""
    if PATH_COLUMN not in gold_results.columns:
        pooled = judge_confusion(gold_results, coding, drop_labels)
        return None if pooled is None else JudgeCorrection(coding, {ANY_PATH: pooled})
    by_path = {}
    for path in sorted(gold_results[PATH_COLUMN].unique().to_list()):
        counts = judge_confusion(gold_results.filter(pl.col(PATH_COLUMN) == path), coding,
                                 drop_labels)
        if counts is not None:
            by_path[path] = counts
    return JudgeCorrection(coding, by_path) if by_path else None


def as_correction(confusion: JudgeConfusion | JudgeCorrection | None) -> JudgeCorrection | None:
    """A single matrix is the correction that reads every label through it."""
    if isinstance(confusion, JudgeConfusion):
        return JudgeCorrection(confusion.coding, {ANY_PATH: confusion})
    return confusion


def label_cells(name: str, trials, logit_p, observed, dims: str, confusion: CellRates | None):
    """The cells' likelihood: labels as truth (None) or through their paths' fixed rates.

    The rates are data slots (FIXED_SENSITIVITY, FIXED_SPECIFICITY), set at the gold means here
    and at each imputation's draw by judge_cut.sample_cut; any model that calls this with the
    CellRates fit_rasch hands it gets the per-path cut correction.
    """
    if confusion is None:
        return binomial_cells(name, trials, logit_p, observed=observed, dims=dims)
    model = pm.modelcontext(None)
    model.add_coord(PATH_DIM, list(confusion.paths))
    means = confusion.rate_means()
    sensitivity = pm.Data(FIXED_SENSITIVITY, means[0], dims=PATH_DIM)
    specificity = pm.Data(FIXED_SPECIFICITY, means[1], dims=PATH_DIM)
    if confusion.cell_path is None:  # one path: the scalar rates every cell shares
        sensitivity, specificity = sensitivity[0], specificity[0]
    return misclassified_binomial_cells(name, trials, logit_p, sensitivity, specificity,
                                        observed=observed, dims=dims, cell_path=confusion.cell_path)


def resolve_confusion(judge_error: bool | None, model: str, coding: str,
                      gold_results: pl.DataFrame | None, drop_labels: Sequence[str] = (),
                      option: str = "fit.judge_error") -> JudgeCorrection | None:
    """The per-path counts a fit should read labels through, from fit.judge_error and the gold
    (less the gold answers judged a label of fit.drop_labels, which the fit does not read).

    None (the default) turns the correction on whenever gold results exist, except for
    the models in LABELS_AS_TRUTH; true insists and fails when it cannot. A path whose gold says
    it is more likely than not no better than a coin is refused: the correction assumes better
    (gold_rates.py). ``option`` names the setting in the messages (compare's is judge_error).
    """
    if judge_error is False or (judge_error is None and model in LABELS_AS_TRUTH):
        return None
    correction = (path_correction(gold_results, coding, drop_labels)
                  if gold_results is not None and gold_results.height else None)
    if correction is None and judge_error:
        raise AuditError(f"{option}=true needs the judge's gold-set results with parsed "
                         "labels (a judge that reads answers, judge.method=cascade, with "
                         f"judge.evaluate_on_gold=true), or {option}=false")
    check_better_than_coin(correction, f"pass {option}=false to read the labels as truth")
    return correction


def check_better_than_coin(correction: JudgeCorrection | None, way_out: str) -> None:
    """Refuse a path whose gold says it is more likely than not no better than a coin: the
    correction assumes better (gold_rates.py), and conditioning on it would keep a sliver of the
    gold's mass. ``way_out``: how this command reads the labels as truth instead."""
    for path, counts in sorted((correction.by_path if correction else {}).items()):
        mass = coin_or_worse_mass(*counts.rate_betas())
        if mass > COIN_MASS_REFUSAL:
            right = counts.true_1_judged_1 + counts.true_0_judged_0
            labeller = "labeller" if path == ANY_PATH else f"{path!r} labeller"
            raise AuditError(
                f"the gold answers say the {labeller} is no better than a coin ({right} "
                f"of {counts.n} right under the {counts.coding!r} coding; P(sensitivity + "
                f"specificity <= 1) = {mass:.2f}), so its labels cannot be corrected: look for an "
                f"inverted label mapping or a judge that does not do the task, or {way_out}")
