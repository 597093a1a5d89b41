"""Two runs (or two models of one run) in one joint fit: the change in each demographic gap.

Each side (A, the old; B, the new) becomes one "audited model" of the population-contrast model
(irt/explanatory.py, ``population=True``): item difficulties ``b`` are shared wherever the item ids
match, each side keeps its own level effects, text spreads and overall rate, and labels go through
the judge's measured errors as in a single run (``label_cells``). A contrast's change is, draw by
draw, ``gap_B - gap_A`` with ``gap = effect[level_a] - effect[level_b]``.

* Prompt effects: every prompt a side asked more than once (a respondent's answers to one item)
  has its own pull on that side, ``sigma_prompt_side``. With one answer a prompt (the default
  design) that pull is left out: a per-answer logit shift is not identified from one 0/1 label
  (it only rescales every other logit), and keeping it left the joint fit on a ridge where 5 of
  6 full fits missed the convergence limits (benchmarks/RESULTS.md). Paired, when both sides
  asked the very same prompts (items, persona texts, replicates and seeds all match), two more
  terms are shared by both sides: a pull of each (persona text, item) prompt,
  ``sigma_prompt_shared`` (two answers at least, one a side), and of each persona text,
  ``sigma_text_shared``. How much is shared is estimated, not assumed (two different models share
  less than one model under two system prompts); what is shared cancels from the change. Unpaired
  fits keep only the per-side term (none with one answer a prompt), and the table says why it is
  unpaired.
* Levels: a contrast is read only between levels labelled on both sides (``comparable_levels``).
  A level one side never asked about has, on that side, an effect made of the zero-sum
  constraint and the prior alone; an attribute with fewer than two such levels (no column, one
  level coded out) is not contrasted at all, and the fit itself leaves out an attribute with
  fewer than two labelled levels over both sides (irt/explanatory.py ``contrastable``).
* Decision: the change's HDI of mass 1 - alpha / K (K the contrasts actually read, Bonferroni,
  as contrasts.py decides gaps) against the ROPE: ``different``, ``equivalent`` or
  ``undecided``.
* Gate: a contrast worsens when P(|gap_B| - |gap_A| > max_worsening) >= worsening_prob, in logits
  or in percentage points of favourable answers at each side's overall rate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import polars as pl
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from xarray import DataTree
from scipy.special import expit

from audit.errors import AuditError
from audit.methods.checks import Check, percent, signed
from audit.methods.rasch.verdict import family_interval, interval_word
from audit.methods.rasch.analyse import outcome_table
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import (
    Diagnostics,
    RaschData,
    code_outcomes,
    diagnose,
    index_design,
    summarise,
)
from audit.methods.rasch.irt.contrasts import _flat, decide, decision_hdi_prob
from audit.methods.rasch.irt.engines import sample_posterior
from audit.methods.rasch.irt.explanatory import (
    TEXT_SPREAD_PRIOR_SD,
    build_explanatory_model,
    respondent_table,
)
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.methods.rasch.irt.judge_cut import fit_cut
from audit.methods.rasch.irt.judge_error import (
    ANY_PATH,
    JudgeConfusion,
    JudgeCorrection,
    as_correction,
)
from audit.stats.intervals import decision_bounds, hdi_bounds

log = logging.getLogger(__name__)

SIDES = ("A", "B")
PROMPT_PRIOR_SD = 1.0  # a prompt's own pull, on the scale of a persona text's
UNITS = ("logit", "pp")
# What makes two prompts the same prompt: the text the model reads and the seed it samples with.
# The system prompt is left out on purpose: it is what a system-prompt comparison changes.
PROMPT_KEY = ("item_id", "persona_id", "replicate")
PROMPT_TEXT = ("user_prompt", "seed")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: the prompts and labels of one audited model of one run."""

    label: str  # A or B
    source: str  # the run id or run directory it came from
    model: str  # the audited model's name in that run
    prompts: pl.DataFrame
    labels: pl.DataFrame


@dataclass(frozen=True)
class Pairing:
    paired: bool
    reason: str  # why it is (or is not) paired, one phrase


def _what_differs(key_a: pl.DataFrame, key_b: pl.DataFrame) -> str:
    """Which of the personas and the replicates the two sides do not share, with the counts: the
    line said "the personas or replicates differ" where docs/compare.md promises the reason."""
    found = []
    for column, noun in (("persona_id", "personas"), ("replicate", "replicates")):
        own_a = set(key_a.get_column(column).to_list())
        own_b = set(key_b.get_column(column).to_list())
        if own_a != own_b:
            found.append(f"the {noun} differ (A has {len(own_a)}, B {len(own_b)}, "
                         f"{len(own_a & own_b)} shared)")
    return "; ".join(found) or "the personas or replicates differ between the sides"


def pairing(prompts_a: pl.DataFrame, prompts_b: pl.DataFrame) -> Pairing:
    """Paired when both sides hold the same prompts: items, persona texts, replicates and seeds."""
    key_a = prompts_a.select(*PROMPT_KEY, *PROMPT_TEXT)
    key_b = prompts_b.select(*PROMPT_KEY, *PROMPT_TEXT)
    items_a = set(key_a.get_column("item_id").to_list())
    items_b = set(key_b.get_column("item_id").to_list())
    shared = items_a & items_b
    if not shared:
        raise AuditError("the two sides share no item: a joint fit needs items in common "
                         "(compare runs made with the same items=...)")
    if items_a != items_b:
        return Pairing(False, f"unpaired: the items differ ({len(shared)} shared of "
                              f"{len(items_a | items_b)}); item difficulties are shared where "
                              "they match")
    joined = key_a.join(key_b, on=list(PROMPT_KEY), how="full", suffix="_b", coalesce=True)
    if joined.height != key_a.height or joined.height != key_b.height:
        return Pairing(False, f"unpaired: {_what_differs(key_a, key_b)}")
    if (joined["user_prompt"] != joined["user_prompt_b"]).any():
        return Pairing(False, "unpaired: the persona texts or item wordings differ")
    if (joined["seed"] != joined["seed_b"]).any():
        return Pairing(False, "unpaired: the design seeds differ (design.seed)")
    return Pairing(True, f"paired: the same {joined.height} prompts (items, persona texts, seeds) "
                         "on both sides")


def joint_outcomes(sides: tuple[Side, Side], attributes: list[str], coding: str,
                   drop_labels: list[str]) -> pl.DataFrame:
    """Both sides' 0/1 outcomes in one table: the side is the model, respondents side|persona."""
    tables = []
    for side in sides:
        table = outcome_table(side.prompts, side.labels, attributes)
        table = table.join(side.prompts.select("prompt_id", "persona_id"), on="prompt_id")
        outcomes = code_outcomes(table, coding, drop_labels)
        if outcomes.is_empty():
            raise AuditError(f"side {side.label} ({side.source}, model {side.model}) has no "
                             "labelled responses to fit")
        tables.append(outcomes.with_columns(
            pl.lit(side.label).alias("model_name"),
            (pl.lit(f"{side.label}|") + pl.col("persona_id")).alias("respondent")))
    # The label and its labelling path travel along: the judge correction reads them per path.
    columns = ["respondent", "item", "y", "model_name", "persona_kind", "persona_id",
               *dict.fromkeys(attributes),
               *[name for name in ("label", "label_source") if name in tables[0].columns]]
    return pl.concat([table.select(columns) for table in tables], how="vertical_relaxed")


@dataclass(frozen=True)
class Comparable:
    """What a comparison contrasts: per attribute, the levels labelled on both sides (two or
    more), and one phrase for each attribute or level left out, saying why."""

    levels: dict[str, tuple[str, ...]]
    left_out: tuple[str, ...]


def comparable_levels(outcomes: pl.DataFrame, attributes: Sequence[str]) -> Comparable:
    """The levels of each attribute with labelled answers on both sides of ``joint_outcomes``.
    Known before sampling, so an attribute nothing can be said about is named up front and a
    comparison with nothing to contrast is refused before the fit, not after it."""
    levels: dict[str, tuple[str, ...]] = {}
    left_out = []
    for attribute in dict.fromkeys(attributes):
        labelled = {side: set(outcomes.filter(pl.col("model_name") == side)
                              .get_column(attribute).drop_nulls().to_list()) for side in SIDES}
        both = sorted(labelled["A"] & labelled["B"])
        for side, other in (SIDES, SIDES[::-1]):
            only = sorted(labelled[side] - labelled[other])
            if only:
                left_out.append(f"{attribute} {', '.join(only)}: labelled on side {side} only")
        if len(both) >= 2:
            levels[attribute] = tuple(both)
        else:
            shared = f"one level ({both[0]})" if both else "no level"
            left_out.append(f"{attribute}: {shared} labelled on both sides; a contrast needs two")
    return Comparable(levels, tuple(left_out))


def _codes(keys: pl.Series) -> np.ndarray:
    lookup = {key: index for index, key in enumerate(sorted(set(keys.to_list())))}
    return np.array([lookup[key] for key in keys.to_list()], dtype=np.int64)


def shared_indices(data: RaschData) -> tuple[np.ndarray, np.ndarray]:
    """Per Binomial cell, its persona text and its prompt (text x item), both without the side:
    the same index on both sides is the same text or prompt."""
    cells = data.cells
    text = cells.get_column("respondent").str.split_exact("|", 1).struct.field("field_1")
    return _codes(text), _codes(text + "\x1f" + cells["item"])


def side_prompt_indices(data: RaschData) -> tuple[np.ndarray, bool]:
    """Per Binomial cell, its prompt on its own side (respondent x item: the cells of one prompt
    split by labelling path share it), and whether any such prompt holds two answers or more."""
    _, prompts = np.unique(data.cell_respondent * len(data.items) + data.cell_item,
                           return_inverse=True)
    answers = np.bincount(prompts, weights=data.trials)
    return prompts, bool((answers > 1).any())


def shared_terms(data: RaschData, paired: bool) -> Callable[[], pt.TensorVariable] | None:
    """The comparison's per-cell prompt and text effects, defined inside the joint model; None
    when there is none to add (unpaired, one answer a prompt)."""
    cell_text, groups = shared_indices(data)
    side_prompt, repeated = side_prompt_indices(data)
    if not repeated:
        log.info("one answer a prompt on each side: no per-side prompt effect (one 0/1 label "
                 "cannot tell it from the answer's own noise)")
    if not (paired or repeated):
        return None

    def terms() -> pt.TensorVariable:
        # Non-centred like every random effect of the explanatory model (its funnels).
        shift = pt.zeros(data.successes.size)
        if repeated:
            side = pm.HalfNormal("sigma_prompt_side", sigma=PROMPT_PRIOR_SD)
            shift = shift + side * pm.Normal("prompt_side_z", 0.0, 1.0,
                                             shape=int(side_prompt.max()) + 1)[side_prompt]
        if paired:
            prompt = pm.HalfNormal("sigma_prompt_shared", sigma=PROMPT_PRIOR_SD)
            text = pm.HalfNormal("sigma_text_shared", sigma=TEXT_SPREAD_PRIOR_SD)
            shift = (shift + prompt * pm.Normal("prompt_shared_z", 0.0, 1.0,
                                                shape=int(groups.max()) + 1)[groups]
                     + text * pm.Normal("text_shared_z", 0.0, 1.0,
                                        shape=int(cell_text.max()) + 1)[cell_text])
        return shift
    return terms


def fit_joint(outcomes: pl.DataFrame, fit: FitConfig, paired: bool,
              confusion: JudgeCorrection | JudgeConfusion | None = None, sample=None
              ) -> tuple[DataTree, Diagnostics]:
    """The population-contrast model on both sides at once; ``sample`` defaults to the configured
    engine (nutpie). Labels go through each labelling path's gold rates with the same cut as a
    single run's fit (irt/judge_cut.py): the audit labels never move the rates."""
    correction = as_correction(confusion)
    per_path = correction is not None and set(correction.by_path) != {ANY_PATH}
    data = index_design(outcomes.select("respondent", "item", "y",
                                        *([PATH_COLUMN] if PATH_COLUMN in outcomes.columns
                                          else [])), by_path=per_path)
    respondents = respondent_table(outcomes, data, tuple(fit.attributes))
    rates = None if correction is None else correction.for_cells(data.cell_path)
    model = build_explanatory_model(data, respondents, (), rates, population=True,
                                    cell_shift=shared_terms(data, paired))
    log.info("joint fit (%s): %d responses, %d respondents, %d items",
             "paired" if paired else "unpaired", data.row_y.size, len(data.respondents),
             len(data.items))
    if rates is None:
        idata = (sample or sample_posterior)(model, fit)
        summary = summarise(idata, fit.hdi_prob)
    else:
        idata, summary = fit_cut(model, fit, rates, sample)
    return idata, diagnose(idata, summary, fit)


def _side_gaps(posterior: xr.Dataset, attribute: str, levels: Sequence[str], side: str,
               unit: str) -> dict[tuple[str, str], np.ndarray]:
    effect = posterior[f"effect_{attribute}"].sel(model=side)
    level_dim = f"level_{attribute}"
    levels = sorted(levels)
    draws = {level: _flat(effect.sel({level_dim: level})) for level in levels}
    if unit == "pp":  # favourable answers at the side's overall rate, on the average item
        base = _flat(posterior["model_effect"].sel(model=side))
        if "real_effect" in posterior:
            base = base + _flat(posterior["real_effect"].sel(model=side))
        draws = {level: 100.0 * expit(base + values) for level, values in draws.items()}
    return {(a, b): draws[a] - draws[b] for a, b in combinations(levels, 2)}


def change_table(posterior: xr.Dataset, levels: Mapping[str, Sequence[str]], *, rope: float,
                 hdi_prob: float, familywise_alpha: float | None,
                 max_worsening: float | None = None, worsening_prob: float = 0.95,
                 unit: str = "logit") -> pl.DataFrame:
    """One row per contrast between the given levels of each attribute (``comparable_levels``):
    gap on each side, its change (B - A) with HDI, P(worse), the ROPE decision on the family-wise
    HDI over the contrasts read here, and the gate's P(|gap_B| - |gap_A| > max_worsening).

    Gaps, change and P(worse) are in logits whatever the gate's unit (`gate_unit`): in
    percentage points P(worse) read the pp gaps, which grow with a side's rate nearer 50%, so a
    gap that shrank in logits was printed beside "P(worse) 1.00" (compare review 2026-12-02).
    With the gate in pp the gaps in pp are columns of their own (gap_A_pp, gap_B_pp)."""
    if unit not in UNITS:
        raise AuditError(f"worsening_unit={unit!r}: use one of {', '.join(UNITS)}")
    if not 0.0 < worsening_prob < 1.0:
        raise AuditError(f"worsening_prob={worsening_prob} must lie between 0 and 1 (0.95)")
    rows = []
    for attribute, compared in levels.items():
        logit_a, logit_b = (_side_gaps(posterior, attribute, compared, side, "logit")
                            for side in SIDES)
        unit_a, unit_b = (_side_gaps(posterior, attribute, compared, side, unit)
                          for side in SIDES)
        for pair in logit_a:
            change = logit_b[pair] - logit_a[pair]
            low, high = hdi_bounds(change, hdi_prob)
            worsening = np.abs(unit_b[pair]) - np.abs(unit_a[pair])
            grew = np.abs(logit_b[pair]) - np.abs(logit_a[pair])
            rows.append({
                "attribute": attribute, "level_a": pair[0], "level_b": pair[1],
                "gap_A": float(logit_a[pair].mean()), "gap_B": float(logit_b[pair].mean()),
                **({"gap_A_pp": float(unit_a[pair].mean()), "gap_B_pp": float(unit_b[pair].mean())}
                   if unit == "pp" else {}),
                "change": float(change.mean()), "change_sd": float(change.std(ddof=1)),
                "hdi_prob": hdi_prob, "hdi_low": low, "hdi_high": high,
                "p_worse": float((grew > 0).mean()),
                "_change": change, "_worsening": worsening})
    mass = decision_hdi_prob(familywise_alpha, len(rows), hdi_prob)
    for row in rows:
        change, worsening = row.pop("_change"), row.pop("_worsening")
        low, high, kind = decision_bounds(change, mass)
        row.update({"decision_prob": mass, "decision_low": low, "decision_high": high,
                    "decision_interval_kind": kind,
                    "decision": decide(low, high, rope), "rope": rope, "gate_unit": unit,
                    "max_worsening": max_worsening,
                    "p_worsening": (None if max_worsening is None
                                    else float((worsening > max_worsening).mean())),
                    "worsens": (max_worsening is not None
                                and float((worsening > max_worsening).mean()) >= worsening_prob)})
    return pl.DataFrame(rows).sort("attribute", "level_a", "level_b")


def change_line(row: dict) -> str:
    """One terminal line per contrast, the same either way the gate goes. The decision names the
    interval it was taken on where that is the family-wise one, not the reported HDI: "change
    +0.52 [+0.05, +1.01], undecided" did not say why an interval clear of zero was undecided."""
    gate = ("" if row["max_worsening"] is None else
            f"; P(|gap| grows > {row['max_worsening']:g} {row['gate_unit']}) "
            f"{row['p_worsening']:.2f}: {'WORSENS' if row['worsens'] else 'ok'}")
    family = family_interval(row, row["hdi_prob"])
    decided = ("" if family is None else
               f" on the {percent(family[0])} {interval_word(row)} [{signed(family[1])}, "
               f"{signed(family[2])}]")
    in_pp = ("" if row.get("gap_A_pp") is None else
             f" ({signed(row['gap_A_pp'])} -> {signed(row['gap_B_pp'])} pp)")
    return (f"{row['attribute']} {row['level_a']} vs {row['level_b']}: gap {signed(row['gap_A'])} "
            f"-> {signed(row['gap_B'])} logits{in_pp}, change {signed(row['change'])} "
            f"[{signed(row['hdi_low'])}, {signed(row['hdi_high'])}], P(worse) "
            f"{row['p_worse']:.2f}, {row['decision']}{decided}{gate}")


def gate_checks(changes: pl.DataFrame, diagnostics: Diagnostics | None = None) -> list[Check]:
    """One JUnit testcase per contrast, failed when it worsens beyond max_worsening, and one for
    the joint fit, failed when it did not converge: a gate must not pass on draws that do not
    describe the posterior."""
    checks = [Check(method="compare", group=f"compare.{row['attribute']}",
                    name=f"{row['level_a']} vs {row['level_b']}", failed=bool(row["worsens"]),
                    message=change_line(row), undecided=row["decision"] == "undecided")
              for row in changes.iter_rows(named=True)]
    if diagnostics is not None:
        checks.append(Check(
            method="compare", group="compare.fit", name="convergence",
            failed=not diagnostics.converged, about_groups=False,
            message=(f"R-hat max {diagnostics.rhat_max:.3f}, ESS bulk min "
                     f"{diagnostics.ess_bulk_min:.0f}, {diagnostics.divergences} divergences. "
                     + "; ".join(diagnostics.problems())).strip()))
    return checks
