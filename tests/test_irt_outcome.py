"""Outcome coding: the one place where judge labels become the 0/1 a Rasch model sees."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.irt import OUTCOME_CODINGS, code_outcomes
from audit.schemas import LABELS, UNPARSEABLE


def labelled(labels: list[str]) -> pl.DataFrame:
    return pl.DataFrame({
        "respondent_id": [f"r{i % 3}" for i in range(len(labels))],
        "item_id": [f"i{i}" for i in range(len(labels))],
        "label": labels,
    })


def test_favourable_coding_counts_only_favourable_answers() -> None:
    coded = code_outcomes(labelled(list(LABELS)), "favourable")
    assert dict(zip(coded["label"], coded["y"])) == {
        "favourable": 1, "unfavourable": 0, "needs_more_information": 0, "refusal": 0}


def test_undetermined_coding_is_the_original_audits() -> None:
    coded = code_outcomes(labelled(list(LABELS)), "undetermined")
    assert dict(zip(coded["label"], coded["y"])) == {
        "favourable": 0, "unfavourable": 0, "needs_more_information": 1, "refusal": 0}


def test_unparseable_and_dropped_labels_leave_the_denominator() -> None:
    coded = code_outcomes(labelled(["favourable", UNPARSEABLE, "refusal", "unfavourable"]),
                          "favourable", drop_labels=["refusal"])
    assert coded["label"].to_list() == ["favourable", "unfavourable"]
    assert coded["y"].to_list() == [1, 0]


def test_extra_columns_travel_with_their_rows() -> None:
    table = labelled(["favourable", "unfavourable"]).with_columns(persona_id=pl.Series(["a", "b"]))
    coded = code_outcomes(table, "favourable")
    assert coded.select("respondent", "item", "y", "persona_id").rows() == [
        ("r0", "i0", 1, "a"), ("r1", "i1", 0, "b")]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: code_outcomes(labelled(["favourable"]), "sometimes"), "unknown outcome coding"),
    (lambda: code_outcomes(labelled(["maybe"]), "favourable"), "unknown label"),
    (lambda: code_outcomes(labelled(["favourable"]).drop("item_id"), "favourable"), "item_id"),
    (lambda: code_outcomes(labelled(["favourable"]), "favourable", ["nope"]), "drop_labels"),
])
def test_bad_input_is_named(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


@given(st.lists(st.sampled_from([*LABELS, UNPARSEABLE]), max_size=40),
       st.sampled_from(sorted(OUTCOME_CODINGS)))
def test_coding_keeps_every_readable_answer_and_codes_it_by_its_label(labels, coding) -> None:
    coded = code_outcomes(labelled(labels), coding)
    assert coded.height == sum(label != UNPARSEABLE for label in labels)
    for label, y in zip(coded["label"], coded["y"]):
        assert y == OUTCOME_CODINGS[coding][label]
