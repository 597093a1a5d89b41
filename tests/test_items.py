"""The shipped item bank and persona profiles, and how a config selects from them."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from audit.errors import AuditError
from audit.config import ItemsConfig
from audit.items import most_informative, pilot_informativeness, select_items
from audit.schemas import ItemSchema, PersonaSchema, validate

DATA = Path(__file__).resolve().parents[1] / "data"
BANK = pl.read_csv(DATA / "items" / "decision_items.csv")


def test_the_bank_has_at_least_24_scenarios_in_6_domains_with_a_slot_and_a_question() -> None:
    bank = validate(BANK, ItemSchema, "item bank")
    assert bank.height >= 24
    assert {"hiring", "lending", "housing", "admissions", "medical_triage", "insurance"} <= set(
        bank["domain"])
    for row in bank.iter_rows(named=True):
        assert row["scenario"].count("{persona}") == 1, row["item_id"]
        assert row["question"].rstrip().endswith((".", "?")), row["item_id"]
        assert row["favourable_option"].upper() in row["question"].upper(), row["item_id"]
        assert row["unfavourable_option"].upper() in row["question"].upper(), row["item_id"]
        assert row["favourable_option"].upper() != row["unfavourable_option"].upper()


def test_the_default_selection_keeps_four_per_domain() -> None:
    selected = select_items(BANK, ItemsConfig(per_domain=4))
    assert selected.height == 24
    assert selected.group_by("domain").len()["len"].to_list() == [4] * 6
    assert selected["item_id"].to_list() == sorted(selected["item_id"].to_list())
    assert select_items(BANK, ItemsConfig()).height == BANK.height


def test_filters_combine_and_bad_selections_are_named() -> None:
    selected = select_items(BANK, ItemsConfig(domains=["hiring", "lending"], per_domain=2))
    assert selected["item_id"].to_list() == ["hiring_01", "hiring_02", "lending_01", "lending_02"]
    with pytest.raises(AuditError, match="unknown domains"):
        select_items(BANK, ItemsConfig(domains=["astrology"]))
    # Bad-input review 2026-12-04: the line named no valid id, and an id YAML had turned into
    # a number ([010, no] reads as ['8', 'False']) was shown as if the user had typed it.
    with pytest.raises(AuditError, match=r"unknown item ids \['hiring_99'\] in items.item_ids "
                                         r"\(after the domain filter\) \(did you mean "
                                         r"'hiring_08'\?\); valid: admissions_01, .*, "
                                         r"\.\.\. \(48 in all\)$"):
        select_items(BANK, ItemsConfig(item_ids=["hiring_99"]))
    with pytest.raises(AuditError, match=r"valid: .*; '8', 'False' are what YAML reads from "
                                         r"unquoted ids like 010 or no: quote ids"):
        select_items(BANK, ItemsConfig(item_ids=["8", "False", "hiring_01"]))
    with pytest.raises(AuditError, match="per_domain"):
        select_items(BANK, ItemsConfig(per_domain=0))


def test_explicit_profiles_cross_gender_and_race() -> None:
    profiles = validate(pl.read_csv(DATA / "personas" / "explicit_profiles.csv"), PersonaSchema,
                        "explicit profiles")
    cells = profiles.group_by("gender", "race").len()
    assert cells.height == profiles["gender"].n_unique() * profiles["race"].n_unique()
    # Several phrasings per cell, equally many: a contrast is about the group, not one sentence
    # (the population model estimates the spread of texts inside a cell).
    assert cells["len"].min() == cells["len"].max() >= 2
    assert set(profiles["kind"]) == {"explicit"}


def _pilot(rows: list[tuple[str, str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["item_id", "domain", "persona_kind", "label"], orient="row")


def test_pilot_informativeness_is_the_split_over_all_answers() -> None:
    pilot = _pilot([
        # split 2 against 2: the most a fit can learn from four answers
        ("a_1", "a", "baseline", "favourable"), ("a_1", "a", "null", "favourable"),
        ("a_1", "a", "null", "unfavourable"), ("a_1", "a", "null", "unfavourable"),
        # unanimous: nothing
        ("a_2", "a", "baseline", "favourable"), ("a_2", "a", "null", "favourable"),
        ("a_2", "a", "null", "favourable"), ("a_2", "a", "null", "favourable"),
        # split 1 against 1, but two answers decided nothing: counted against it
        ("b_1", "b", "baseline", "favourable"), ("b_1", "b", "null", "unfavourable"),
        ("b_1", "b", "null", "refusal"), ("b_1", "b", "null", "needs_more_information"),
    ])
    table = pilot_informativeness(pilot)
    assert table["item_id"].to_list() == ["a_1", "a_2", "b_1"]
    assert table["informativeness"].to_list() == pytest.approx([0.25, 0.0, 1 / 16])
    assert table["answers"].to_list() == [4, 4, 4]


def test_most_informative_keeps_the_top_items_with_ties_by_id_and_never_a_unanimous_one() -> None:
    table = pl.DataFrame({
        "item_id": ["a_1", "a_2", "a_3", "b_1", "b_2"],
        "domain": ["a", "a", "a", "b", "b"],
        "informativeness": [0.1, 0.2, 0.2, 0.0, 0.05],
    })
    assert most_informative(table, 2) == ["a_2", "a_3"]
    assert most_informative(table, 3) == ["a_1", "a_2", "a_3"]
    assert most_informative(table, 1) == ["a_2"]
    assert most_informative(table, 10) == ["a_1", "a_2", "a_3", "b_2"]


def test_a_pilot_that_asked_demographic_personas_is_refused() -> None:
    pilot = _pilot([("a_1", "a", "explicit", "favourable"), ("a_1", "a", "null", "favourable")])
    with pytest.raises(AuditError, match="baseline and null personas only"):
        pilot_informativeness(pilot)


def test_a_bank_breaking_its_documented_rules_is_refused() -> None:
    """Design review 2026-11-29, finding 11: data/README.md asks for exactly one {persona} slot
    and two outcomes, but a second slot put the persona sentence in the prompt twice, equal
    options were accepted, and a header-only bank read as an empty selection."""
    hiring = BANK.filter(pl.col("domain") == "hiring").head(2)
    twice = hiring.with_columns(pl.col("scenario") + " {persona}")
    with pytest.raises(AuditError, match=r"2 item\(s\) have more than one \{persona\} slot "
                                         r"\(first: hiring_01\)"):
        select_items(twice, ItemsConfig())
    same = hiring.with_columns(unfavourable_option=pl.col("favourable_option").str.to_lowercase())
    with pytest.raises(AuditError, match="same favourable_option and unfavourable_option"):
        select_items(same, ItemsConfig())
    with pytest.raises(AuditError, match="has no items"):
        select_items(hiring.clear(), ItemsConfig())
    # Bad-input review 2026-12-02: an option the question never names (ACCEPT where it asks
    # for HIRE or REJECT) was accepted, and no answer could be read by the rules.
    unnamed = hiring.with_columns(favourable_option=pl.lit("ACCEPT"))
    with pytest.raises(AuditError, match=r"2 item\(s\) have a favourable_option their scenario "
                                         r"and question never name \(first: hiring_01, "
                                         r"'ACCEPT'\)"):
        select_items(unnamed, ItemsConfig())
    assert select_items(hiring, ItemsConfig()).height == 2
    assert select_items(hiring.with_columns(pl.col("favourable_option").str.to_lowercase()),
                        ItemsConfig()).height == 2  # named in any case
    # Bad-input review 2026-12-04: braces nothing fills reached the model as written ("The
    # {role} lives in {city}."), as did a {persona} in the question.
    other = hiring.with_columns(pl.col("scenario") + " The {role} lives in {city}.")
    with pytest.raises(AuditError, match=r"2 item\(s\) have a slot nothing fills \(first: "
                                         r"hiring_01, \{role\} in its scenario or question\)"):
        select_items(other, ItemsConfig())
    asked = hiring.with_columns(pl.col("question") + " Consider {persona}.")
    with pytest.raises(AuditError, match=r"\{persona\} in its question\)"):
        select_items(asked, ItemsConfig())
    # Review 2026-12-04: JSON asked for in a question is no slot.
    json_answer = hiring.with_columns(
        pl.col("question") + ' Reply only with JSON: {"decision": "HIRE" or "REJECT"}')
    assert select_items(json_answer, ItemsConfig()).height == 2
