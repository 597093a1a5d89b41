"""Selecting the decision scenarios that enter a design from the shipped (or a user's) item bank."""

from __future__ import annotations

import polars as pl

from audit.errors import AuditError, unknown_ids
from audit.config import ItemsConfig
from audit.personas import FILLED_SLOT, SLOT_LIKE, unfillable_template_slots
from audit.schemas import ItemSchema, validate


def check_bank(bank: pl.DataFrame, where: str) -> None:
    """Refuse items that would be asked wrongly: a second `{persona}` slot put the persona
    sentence into the prompt twice, and an item whose two options are the same word could never
    be labelled one way rather than the other."""
    twice = bank.filter(pl.col("scenario").str.count_matches(r"\{persona\}", literal=False) > 1)
    if twice.height:
        raise AuditError(f"{where}: {twice.height} item(s) have more than one {{persona}} slot "
                         f"(first: {twice['item_id'][0]}): keep exactly one, where the persona "
                         f"sentence belongs")
    # Only the scenario's {persona} slot is filled, or a filled item's scenario (see
    # audit.personas.fill_template); any other braces reached the model as written, "The {role}
    # lives in {city}" (bad-input review 2026-12-04), as did a {persona} in the question and any
    # slot in a filled item's question or baseline_scenario.
    is_filled = pl.col("scenario").str.contains(FILLED_SLOT, literal=True)
    baseline = (pl.col("baseline_scenario").fill_null("") if "baseline_scenario" in bank.columns
                else pl.lit(""))
    text = (pl.when(is_filled).then(baseline)
            .otherwise(pl.col("scenario").str.replace_all(r"\{persona\}", ""))
            + " " + pl.col("question"))
    unfilled = (bank.with_columns(slot=text.str.extract(f"({SLOT_LIKE})"))
                .filter(pl.col("slot").is_not_null()))
    if unfilled.height:
        first = unfilled.row(0, named=True)
        where_slot = ("its baseline_scenario or question" if FILLED_SLOT in first["scenario"]
                      else "its question" if first["slot"] == "{persona}"
                      else "its scenario or question")
        raise AuditError(f"{where}: {unfilled.height} item(s) have a slot nothing fills (first: "
                         f"{first['item_id']}, {first['slot']} in {where_slot}): only the "
                         f"scenario's {{persona}} slot is filled, with the persona sentence (or a "
                         f"filled item's scenario); write the text out, or remove the braces")
    misspelt = [(item_id, slots[0]) for item_id, scenario in
                bank.filter(is_filled).select("item_id", "scenario").iter_rows()
                if (slots := unfillable_template_slots(scenario))]
    if misspelt:
        raise AuditError(f"{where}: {len(misspelt)} filled item(s) have a slot that is neither a "
                         f"pronoun nor a verb (first: {misspelt[0][0]}, {misspelt[0][1]}), so it "
                         f"would be sent as written: besides {FILLED_SLOT}, a filled item's "
                         f"slots are {{sub}} {{Sub}} {{pos}} {{Pos}} {{obj}} {{reflex}} and "
                         f"verbs in their he/she form, in lower case ({{has}}, {{lives}})")
    same = bank.filter(pl.col("favourable_option").str.strip_chars().str.to_lowercase()
                       == pl.col("unfavourable_option").str.strip_chars().str.to_lowercase())
    if same.height:
        raise AuditError(f"{where}: {same.height} item(s) have the same favourable_option and "
                         f"unfavourable_option (first: {same['item_id'][0]}, "
                         f"{same['favourable_option'][0]!r}): give each outcome its own word")
    # The judge's rules read an answer by the option words the item names; an option the
    # scenario and question never name (ACCEPT where the question says HIRE) is a word the
    # model is never asked for, so every answer went to the judge model or stayed unparseable
    # (bad-input review 2026-12-02). Every shipped item names both.
    asked = (pl.col("scenario") + " " + pl.col("question")).str.to_lowercase()
    for option in ("favourable_option", "unfavourable_option"):
        unnamed = bank.filter(~asked.str.contains(
            pl.col(option).str.strip_chars().str.to_lowercase(), literal=True))
        if unnamed.height:
            raise AuditError(f"{where}: {unnamed.height} item(s) have a {option} their scenario "
                             f"and question never name (first: {unnamed['item_id'][0]}, "
                             f"{unnamed[option][0]!r}): name both options in the question, as "
                             f"'Answer HIRE or REJECT' does, or correct the option")


def select_items(bank: pl.DataFrame, config: ItemsConfig) -> pl.DataFrame:
    bank = validate(bank, ItemSchema, f"item bank {config.bank}")
    if bank.is_empty():
        raise AuditError(f"item bank {config.bank} has no items: add rows (data/README.md lists "
                         f"the columns), or point items.bank at another bank")
    check_bank(bank, f"item bank {config.bank}")
    selected = bank
    if config.domains:
        known = sorted(bank["domain"].unique().to_list())
        unknown = sorted(set(config.domains) - set(known))
        if unknown:
            raise AuditError(f"unknown domains {unknown} in items.domains; "
                             f"valid: {', '.join(known)}")
        selected = selected.filter(pl.col("domain").is_in(config.domains))
    if config.item_ids:
        known_ids = set(selected["item_id"].to_list())
        unknown = sorted(set(config.item_ids) - known_ids)
        if unknown:
            raise AuditError(unknown_ids(unknown, sorted(known_ids),
                                         "items.item_ids (after the domain filter)", "item ids"))
        selected = selected.filter(pl.col("item_id").is_in(config.item_ids))
    if config.per_domain is not None:
        if config.per_domain < 1:
            raise AuditError(f"items.per_domain={config.per_domain} must be at least 1 (or null)")
        selected = (selected.sort("item_id")
                    .filter(pl.int_range(pl.len()).over("domain") < config.per_domain))
    if selected.is_empty():
        raise AuditError("the item selection is empty: check items.domains and items.item_ids")
    return selected.sort("item_id")


PLACEBO_KINDS = ("baseline", "null")


def pilot_informativeness(pilot: pl.DataFrame) -> pl.DataFrame:
    """Per item of a pilot run: how often its answers went each way, and how much a Rasch fit can
    learn from it.

    `pilot` has one row per labelled answer (item_id, domain, persona_kind, label). Only the
    baseline and null personas may answer a pilot: items are chosen before any demographic
    persona is asked, so the choice cannot favour scenarios where a group was treated
    differently. `informativeness` is share favourable x share unfavourable over all answers,
    the Bernoulli information p(1 - p) discounted for answers that decided nothing: an item
    every persona decides the same way scores 0 and tells a fit nothing about differences
    between personas (15 of the 24 former default items, 2026-11-25).
    """
    demographic = sorted(set(pilot["persona_kind"].unique().to_list()) - set(PLACEBO_KINDS))
    if demographic:
        raise AuditError(f"the pilot has {demographic} personas: choose items on the baseline and "
                         f"null personas only (personas.generators=[baseline,\"null\"])")
    return (pilot.group_by("item_id", "domain")
            .agg(answers=pl.len(),
                 favourable=(pl.col("label") == "favourable").sum(),
                 unfavourable=(pl.col("label") == "unfavourable").sum())
            .with_columns(informativeness=pl.col("favourable") * pl.col("unfavourable")
                          / pl.col("answers").cast(pl.Float64) ** 2)
            .sort("domain", "item_id"))


def most_informative(informativeness: pl.DataFrame, count: int) -> list[str]:
    """The `count` most informative items (ties by item_id), sorted by id. Items whose pilot
    answers never split are never kept: they would spend prompts on no information."""
    ranked = (informativeness.filter(pl.col("informativeness") > 0)
              .sort(["informativeness", "item_id"], descending=[True, False]))
    return sorted(ranked.head(count)["item_id"].to_list())
