"""The Rasch audit's analyse stage: the Rasch model fitted to the labels (the configured outcome,
and fit.second_outcome when set), and the fit's files (posterior, summary, contrasts, diagnostics),
which `python -m audit.fit` writes too."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import arviz as az
import polars as pl
from xarray import DataTree

from audit.errors import AuditError, did_you_mean, first_line
from audit.methods.configs import AuditConfig
from audit.methods.rasch.adaptive import pool_cells
from audit.methods.rasch.config import OUTCOMES, FitConfig
from audit.methods.rasch.irt import RaschFit, code_outcomes, diagnose, fit_rasch
from audit.methods.rasch.irt.explanatory import two_level_attributes
from audit.methods.rasch.irt.hurdle import ABSTAINED_OUTCOME, DECIDED_OUTCOME
from audit.methods.rasch.irt.judge_error import LABELS_AS_TRUTH, resolve_confusion
from audit.methods.rasch.irt.outcome import NEVER_CODED
from audit.methods.rasch.irt.probability import JUDGE_ERROR_NOTE
from audit.methods.rasch.irt.rasch import ATTRIBUTE_MODELS
from audit.methods.rasch.judge.gold import gold_figures
from audit.methods.rasch.no_signal import run_no_signal
from audit.methods.rasch.schemas import LABELS, SummarySchema
from audit.schemas import PERSONA_ATTRIBUTES
from audit.tables import read_frame, read_table, write_frame, write_json

log = logging.getLogger(__name__)


def outcome_table(prompts: pl.DataFrame, labels: pl.DataFrame, attributes: list[str]) -> pl.DataFrame:
    """Labels with the respondent, item and persona columns a fit and its contrasts read."""
    check_attribute_columns(prompts, attributes)
    persona_columns = ["model_name", "persona_kind", *dict.fromkeys(attributes)]
    return labels.join(prompts.select("prompt_id", "respondent_id", "item_id", *persona_columns),
                       on="prompt_id", how="inner")


def check_attribute_columns(prompts: pl.DataFrame, attributes: list[str]) -> None:
    missing = sorted(set(attributes) - set(prompts.columns))
    if missing:
        raise AuditError(f"fit.attributes names {missing}, which the prompts table lacks (a "
                         f"design carries the persona columns {', '.join(PERSONA_ATTRIBUTES)}; "
                         f"a persona file's other columns are not read): use persona columns "
                         f"such as gender, race")


def check_design_attributes(prompts: pl.DataFrame, attributes: list[str]) -> None:
    """At the design stage, before any prompt is sent: fit.attributes must name columns of the
    design that its personas hold at two levels. Found at the fit, either cost every answer and
    judgement. fit.attributes=[] asks for no contrast (a pilot on placebo personas) and passes,
    as does a design whose generators make no explicit or name persona."""
    check_attribute_columns(prompts, attributes)
    if not prompts.filter(pl.col("persona_kind").is_in(["explicit", "name"])).height:
        # Only the baseline and null personas (personas.generators=[baseline,null], the third
        # arm of +sweep=personas): a placebo run that asks for no group, by its generators.
        log.warning("the design has no explicit or name personas, so the fit contrasts no "
                    "groups: it measures the null personas' spread only")
        return
    contrasted = two_level_attributes(prompts, attributes)
    held = {attribute: sorted(prompts.get_column(attribute).drop_nulls().unique().to_list())
            for attribute in dict.fromkeys(attributes)}
    if contrasted:
        # A persona file of one gender left fit.attributes' gender with nothing to contrast, and
        # the fit said so after every answer was paid for (bad-input review 2026-12-04).
        for attribute in (name for name in held if name not in contrasted):
            log.warning("fit.attributes names %s, but the design's personas hold it at %s: the "
                        "run makes no %s contrast; add personas of another %s, or leave it out "
                        "of fit.attributes", attribute,
                        f"one level ({held[attribute][0]})" if held[attribute] else "no level",
                        attribute, attribute)
    elif attributes:
        levels = "; ".join(f"{attribute}: {', '.join(values) or 'none'}"
                           for attribute, values in held.items())
        raise AuditError(f"no attribute of fit.attributes={list(attributes)} has two levels "
                         f"among the design's personas ({levels}), so the fit could contrast "
                         f"nothing: add personas that differ in one (explicit or name personas in "
                         f"personas.generators), or set fit.attributes=[] for a run that "
                         f"compares no groups")


def check_judge_error(cfg: AuditConfig) -> None:
    """Refuse, before any prompt is sent, a fit.judge_error=true the fit could never honour
    (otherwise it fails at the fit, after all the answering), with the fix that applies."""
    if cfg.fit.judge_error is not True:
        return
    if cfg.fit.model in LABELS_AS_TRUTH:
        reason = ("the original audit's model" if cfg.fit.model == "rasch_seed"
                  else "its three labels would need a 3 x 3 confusion matrix")
        raise AuditError(f"fit.judge_error=true cannot apply to fit={cfg.fit.model}, which reads "
                         f"labels as truth ({reason}): use fit=rasch, or leave fit.judge_error "
                         "unset")
    if cfg.judge.method != "cascade":
        raise AuditError(f"fit.judge_error=true needs a judge measured on the gold set, and "
                         f"judge.method={cfg.judge.method} labels no gold answer (the audited "
                         "model's own preference is the decision): leave fit.judge_error unset, "
                         "or use a judge that reads the answers (the default, "
                         "judge=qwen_coder_1_5b)")
    if not cfg.judge.evaluate_on_gold:
        raise AuditError("fit.judge_error=true reads the judge's error rates from the gold set: "
                         "set judge.evaluate_on_gold=true, or leave fit.judge_error unset")


def check_fit_settings(cfg: AuditConfig) -> None:
    """Refuse, before any prompt is sent, fit settings the fit would refuse after every answer
    was bought and judged (9 minutes of the default model): a fit.second_outcome that repeats
    fit.outcome (the same coding fitted twice, every contrast reported twice), a label in
    fit.drop_labels that no judge writes, an attribute in fit.item_dif that fit.attributes lacks
    or a fit.item_dif for a model without attribute effects.
    Each coding's name is checked with the rest of the config (audit.config_ranges). An
    adaptive design fits one decision outcome over its pool of cells at every look: a hurdle, a
    second coding or fit.response=probability was refused by the first look's fit, after round
    0 had been asked and judged (19 prompts on the smoke design)."""
    if cfg.design.adaptive and (cfg.fit.model == "hurdle" or cfg.fit.second_outcome
                                or cfg.fit.response == "probability"):
        raise AuditError("design.adaptive=true fits one decision outcome with a cell model: "
                         "use fit=population (or rasch) with fit.response=decision and without "
                         "fit.second_outcome, or set design.adaptive=false")
    if cfg.fit.second_outcome is not None and cfg.fit.second_outcome == cfg.fit.outcome:
        others = [coding for coding in OUTCOMES if coding != cfg.fit.outcome]
        raise AuditError(f"fit.second_outcome={cfg.fit.second_outcome} is fit.outcome already: "
                         f"set it to {' or '.join(others)}, or leave it null")
    # The hurdle's first step is the abstention outcome already; the second coding was dropped
    # without a word, and the run had no `undetermined` fit (docs review 2026-12-03).
    if cfg.fit.model == "hurdle" and cfg.fit.second_outcome is not None:
        raise AuditError(f"fit=hurdle fits deciding (theta_abstain) and then favourability from "
                         f"the labels at once, so fit.second_outcome={cfg.fit.second_outcome} "
                         f"has nothing to add: leave fit.second_outcome null, or use "
                         f"fit=abstention (rasch fitted on both codings)")
    _check_names("fit.drop_labels", cfg.fit.drop_labels, (*LABELS, *NEVER_CODED), "labels")
    _check_names("fit.item_dif", cfg.fit.item_dif, cfg.fit.attributes,
                 "attributes of fit.attributes")
    # Only the attribute models carry level x item interactions; the others ignored
    # fit.item_dif without a word, and the report had no item gaps (docs review 2026-12-02).
    if cfg.fit.item_dif and cfg.fit.model not in ATTRIBUTE_MODELS:
        raise AuditError(f"fit.item_dif={list(cfg.fit.item_dif)} needs a model with attribute "
                         f"effects, and fit={cfg.fit.model} has none: use fit="
                         f"{' or fit='.join(ATTRIBUTE_MODELS)}, or leave fit.item_dif empty")


def _check_names(key: str, given: list[str], known: tuple[str, ...] | list[str],
                 what: str) -> None:
    unknown = [name for name in given if name not in known]
    if not unknown:
        return
    hints = [f"{name}{did_you_mean(name, known)}" for name in unknown]
    raise AuditError(f"{key} names {', '.join(hints)}, not among the {what}: use "
                     f"{', '.join(known)}")


def fit_stage(cfg: AuditConfig, prompts: pl.DataFrame, labels: pl.DataFrame,
              gold: pl.DataFrame | None = None) -> RaschFit:
    """The configured outcome, plus fit.second_outcome on the same labels when it is set.

    ``gold``: the judge's gold-set results; with them (and fit.judge_error not false) every fit
    reads its labels through the judge's measured misclassification rates.
    """
    table = outcome_table(prompts, labels, cfg.fit.attributes)
    # An adaptive run's looks fitted over the design's pool of cells (adaptive.run_adaptive),
    # so the published fit does too: without it a persona text whose answers were all dropped
    # or unparseable left the model, and the contrasts moved from those of the look that
    # stopped the run (a gender mean 0.136 -> 0.103 in a review's simulation).
    pool = pool_cells(prompts, cfg.fit.attributes) if cfg.design.adaptive else None
    fits = []
    # The hurdle model fits both of its steps from the labels at once: no second coding
    # (check_fit_settings refuses one before any prompt).
    second = cfg.fit.second_outcome if cfg.fit.model != "hurdle" else None
    codings = [cfg.fit.outcome, *([second] if second else [])]
    for coding in codings:
        outcomes = code_outcomes(table, coding, cfg.fit.drop_labels)
        if outcomes.is_empty():
            raise AuditError("no labelled responses to fit: every answer failed or was "
                             "unparseable; check the judge (judge=...) and the responses table")
        # fit.response applies to fit.outcome; a second coding is fitted from its labels.
        response = cfg.fit.response if coding == cfg.fit.outcome else "decision"
        if response == "probability":
            log.info("fit.response=probability: %s", JUDGE_ERROR_NOTE)
            confusion = None
        else:
            confusion = resolve_confusion(cfg.fit.judge_error, cfg.fit.model, coding, gold,
                                          cfg.fit.drop_labels)
        fits.append(fit_rasch(outcomes, replace(cfg.fit, outcome=coding, response=response),
                              confusion=confusion, pool=pool))
    # Keep the first fit's own companions (the hurdle model's abstention step).
    return replace(fits[0], companions=(*fits[0].companions, *fits[1:]))


# --- the fit's files -------------------------------------------------------------------------



def _write_or_remove(table: pl.DataFrame, path: Path) -> None:
    if table.height:
        write_frame(table, path)
    else:
        path.unlink(missing_ok=True)


def write_fit(fit: RaschFit, directory: Path, no_signal: list[str] | None = None) -> None:
    """Posterior, summary, contrasts and a diagnostics verdict; companions in sub-directories.

    ``no_signal``: an audit's no-signal reasons (no_signal.py run_no_signal; empty when it
    has signal), written for the CI verdict, which reads this file; None (`python -m audit.fit`,
    which has no labels or judge) leaves them out, and the verdict judges the fit as before.
    """
    directory.mkdir(parents=True, exist_ok=True)
    write_frame(fit.summary, directory / "summary.csv")
    fit.idata.to_netcdf(str(directory / "posterior.nc"))
    # A table this fit has no rows for is removed, not left from an earlier fit into the same
    # folder: `audit.fit output=` a folder that held another fit's contrasts.csv left them
    # beside the new posterior, to be read as its own (bad-input review 2026-12-06).
    _write_or_remove(fit.item_gaps, directory / "item_gaps.csv")
    for companion in fit.companions:
        write_fit(companion, directory / companion.outcome)
    _write_or_remove(fit.all_contrasts(), directory / "contrasts.csv")
    diagnostics = fit.diagnostics
    write_json({
        "converged": fit.converged, "rhat_max": diagnostics.rhat_max,
        "ess_bulk_min": diagnostics.ess_bulk_min, "ess_tail_min": diagnostics.ess_tail_min,
        "divergences": diagnostics.divergences, "advice": "; ".join(fit.problems()),
        "outcomes": [companion.outcome for companion in fit.all_fits()],
        "response": {companion.outcome: companion.response for companion in fit.all_fits()},
        "judge_error": {companion.outcome: (companion.judge_confusion.as_dict()
                                            if companion.judge_confusion else None)
                        for companion in fit.all_fits()},
        **({"no_signal": no_signal} if no_signal is not None else {}),
    }, directory / "diagnostics.json")


def no_signal_of(cfg: AuditConfig, prompts: pl.DataFrame, labels: pl.DataFrame,
                 gold: pl.DataFrame | None) -> list[str]:
    """The run's no-signal reasons from the tables the fit read and the judge's gold results, as
    the report reads them (the same function on the same tables)."""
    figures = gold_figures(gold) if gold is not None and gold.height else None
    return run_no_signal(labels, prompts, sorted(cfg.model), cfg.fit,
                         figures.metrics if figures is not None else None)


def read_posterior(path: Path, shown: str | None = None,
                   fix: str = "rerun the run's fit stage") -> DataTree:
    """A posterior.nc as an ArviZ 1 DataTree, loaded into memory (the file is not held open, so a
    rerun can replace it). Files written by releases on ArviZ 0.23 (InferenceData) have the same
    netCDF groups and open the same way (tests/methods/rasch/test_posterior_files.py).

    A file that is no netCDF (xarray: ValueError, no engine matches) or a damaged one (h5py:
    OSError, "truncated file") is one line naming `shown` (default: the path) and `fix`; it was
    a traceback in audit.plan plan.from_run=RUN (bad-input review 2026-12-04)."""
    try:
        return az.from_netcdf(str(path)).load()
    except (ValueError, OSError) as error:
        reason = first_line(error)
        if "did not find a match" in reason:
            reason = "not a netCDF file"
        raise AuditError(f"cannot read the posterior {shown or path} ({reason}): {fix}") \
            from error


def read_fit(directory: Path, fit_config: FitConfig) -> RaschFit:
    """The fit written by write_fit, with its diagnostics recomputed against fit_config."""
    posterior = directory / "posterior.nc"
    if not posterior.is_file():
        raise AuditError(f"posterior not found at {posterior}: run the fit stage first")
    idata = read_posterior(posterior)
    summary = read_table(directory / "summary.csv", SummarySchema, "fit summary")
    contrasts_file = directory / "contrasts.csv"
    contrasts = read_frame(contrasts_file, "contrasts") if contrasts_file.is_file() \
        else pl.DataFrame()
    if fit_config.model == "hurdle":  # the two steps of one model, named by step
        outcome, further = DECIDED_OUTCOME, [ABSTAINED_OUTCOME]
    else:
        outcome = fit_config.outcome
        further = [fit_config.second_outcome] if fit_config.second_outcome else []
    companions = tuple(read_fit(directory / coding,
                                replace(fit_config, model="rasch", outcome=coding,
                                        second_outcome=None, response="decision"))
                       for coding in further)
    if contrasts.height and "outcome" in contrasts.columns:
        contrasts = contrasts.filter(pl.col("outcome") == outcome).drop("outcome")
    gaps_file = directory / "item_gaps.csv"
    return RaschFit(idata=idata, summary=summary, diagnostics=diagnose(idata, summary, fit_config),
                    contrasts=contrasts, outcome=outcome, companions=companions,
                    response=fit_config.response,
                    item_gaps=read_frame(gaps_file, "item gaps") if gaps_file.is_file()
                    else pl.DataFrame())
