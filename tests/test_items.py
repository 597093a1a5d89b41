"""The shipped item bank and persona profiles, and how a config selects from them."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from audit.config import ItemsConfig
from audit.items import select_items
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
    with pytest.raises(ValueError, match="unknown domains"):
        select_items(BANK, ItemsConfig(domains=["astrology"]))
    with pytest.raises(ValueError, match="unknown item ids"):
        select_items(BANK, ItemsConfig(item_ids=["hiring_99"]))
    with pytest.raises(ValueError, match="per_domain"):
        select_items(BANK, ItemsConfig(per_domain=0))


def test_explicit_profiles_cross_gender_and_race() -> None:
    profiles = validate(pl.read_csv(DATA / "personas" / "explicit_profiles.csv"), PersonaSchema,
                        "explicit profiles")
    assert profiles.height == profiles["gender"].n_unique() * profiles["race"].n_unique()
    assert set(profiles["kind"]) == {"explicit"}
