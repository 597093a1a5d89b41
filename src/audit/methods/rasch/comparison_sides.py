"""What the two sides of a comparison must share, and what the summary says where they differ.

`python -m audit.compare` reads two runs (or two models of one run) into one joint fit
(comparison.py). The fit reads both through one judge's errors, one item set and run A's fit
settings; these checks refuse what one fit cannot read (two judges, with their errors in the fit)
and name what it reads one way (items only one side asked, run B's other settings, attributes
only run B contrasted), so a reader of the summary knows what the change is a change of.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from audit.errors import AuditError
from audit.methods.rasch.comparison import Side
from audit.methods.rasch.config import FitConfig

# The fit settings a comparison takes from run A; run B's, where they differ, are named in the
# summary (they were dropped without a word, so swapping A and B changed the answer).
SETTINGS_FROM_A = ("attributes", "outcome", "drop_labels", "rope", "familywise_alpha",
                   "hdi_prob")

# What says one judge labelled both gold sets: its labels of the same answers. The rationale
# text is left out (a judge sampling at temperature above 0 words it anew each run), and so is
# the row order.
GOLD_KEY = ("gold_id", "true_label", "label", "label_source")


def _gold_labels(gold: pl.DataFrame) -> pl.DataFrame:
    return gold.select(GOLD_KEY).sort("gold_id")


def check_one_judge(gold_a: pl.DataFrame | None, gold_b: pl.DataFrame | None,
                    judges: tuple[str | None, str | None] = (None, None)) -> None:
    """One joint fit reads both runs' labels through one judge's measured errors: refused when
    the runs recorded different judges, when the judge's labels of the gold set differ, or when
    one run has gold-set results and the other does not (its judge's errors were never
    measured, so nothing says it is the same judge)."""
    way_out = "pass judge_error=false to read labels as truth"
    if None not in judges and judges[0] != judges[1]:
        raise AuditError(f"the two runs were labelled by different judges (judge={judges[0]} "
                         f"and judge={judges[1]}): one joint fit reads labels through one "
                         f"judge's errors; compare runs with one judge, or {way_out}")
    if (gold_a is None) != (gold_b is None):
        lacking, having = ("A", "B") if gold_a is None else ("B", "A")
        raise AuditError(f"run {lacking} has no judge gold-set results and run {having} has: "
                         "nothing says one judge labelled both; rerun run "
                         f"{lacking} with judge.evaluate_on_gold=true, or {way_out}")
    if gold_a is not None and not _gold_labels(gold_a).equals(_gold_labels(gold_b)):
        raise AuditError("the two runs were labelled by different judges (their labels of the "
                         "gold set differ): one joint fit reads labels through one judge's "
                         f"errors; {way_out}")


def judges_note(judges: tuple[str | None, str | None]) -> str | None:
    """With labels read as truth, two judges are allowed, and said: a change may be the judge's."""
    if None in judges or judges[0] == judges[1]:
        return None
    return (f"judges: run A was labelled by judge={judges[0]}, run B by judge={judges[1]}, both "
            "read as truth (judge_error=false): a change may be the judges' difference")


def settings_note(fit_a: FitConfig, fit_b: FitConfig) -> str | None:
    """Run B's recorded fit settings that differ from run A's, which the comparison uses."""
    differ = [f"{key} {getattr(fit_b, key)} against A's {getattr(fit_a, key)}"
              for key in SETTINGS_FROM_A if getattr(fit_a, key) != getattr(fit_b, key)]
    if not differ:
        return None
    return (f"settings: run B recorded other fit settings ({'; '.join(differ)}); the comparison "
            "reads both runs with run A's (swap A and B for run B's)")


def shared_items(side_a: Side, side_b: Side, choice: str
                 ) -> tuple[Side, Side, str | None]:
    """Both sides on the items both asked (items=shared, the default), or on every item
    (items=all), and a note when the sides asked different items. Fitted on every item, an item
    only one side asked that carries a gap of its own read as a change of the gap (a review's
    simulation: +0.16 -> +1.77 logits, WORSENS, from one model whose gap lived on B's items)."""
    items_a = set(side_a.prompts["item_id"].to_list())
    items_b = set(side_b.prompts["item_id"].to_list())
    shared = items_a & items_b
    if items_a == items_b or not shared:  # nothing shared: comparison.pairing refuses it
        return side_a, side_b, None
    asked = f"A asked {len(items_a)}, B asked {len(items_b)}"
    if choice == "all":
        return side_a, side_b, (f"items: fitted on all {len(items_a | items_b)} items ({asked}, "
                                f"{len(shared)} shared; items=all): a gap carried by items one "
                                "side alone asked reads as a change")
    kept = [replace(side, prompts=side.prompts.filter(pl.col("item_id").is_in(sorted(shared))))
            for side in (side_a, side_b)]
    return kept[0], kept[1], (f"items: compared on the {len(shared)} items both runs asked "
                              f"({asked}); items=all fits every item")


def attributes_note(fit_a: FitConfig, fit_b: FitConfig) -> list[str]:
    """Attributes run B contrasted that run A did not: not compared, and said so."""
    return [f"{attribute}: in run B's fit.attributes only (the comparison reads run A's)"
            for attribute in fit_b.attributes if attribute not in fit_a.attributes]
