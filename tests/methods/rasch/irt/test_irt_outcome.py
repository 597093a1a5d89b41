"""Outcome coding: the one place where judge labels become the 0/1 a Rasch model sees."""

from __future__ import annotations

import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from hypothesis import given
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.__main__ import CONF_DIR
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch.irt import OUTCOME_CODINGS, code_outcomes
from audit.methods.rasch.schemas import LABELS, UNPARSEABLE


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


def test_dropping_a_label_never_removes_the_codings_own_events() -> None:
    """fit=abstention fit.drop_labels=[needs_more_information]: the favourability fit leaves
    those answers out, the abstention (undetermined) fit keeps them as its 1s. Before the fix
    both codings dropped them and the abstention fit had no event at all."""
    labels = labelled(["favourable", "needs_more_information", "refusal", "unfavourable",
                       "needs_more_information"])
    drop = ["needs_more_information", "refusal"]
    favourable = code_outcomes(labels, "favourable", drop_labels=drop)
    assert favourable["label"].to_list() == ["favourable", "unfavourable"]
    assert favourable["y"].to_list() == [1, 0]
    abstention = code_outcomes(labels, "undetermined", drop_labels=drop)
    assert abstention["label"].to_list() == ["favourable", "needs_more_information",
                                             "unfavourable", "needs_more_information"]
    assert abstention["y"].to_list() == [0, 1, 0, 1]


def test_rasch_seed_codes_the_original_audits_outcome() -> None:
    """`fit=rasch_seed` is documented as exactly the original audit, which modelled
    determined (0) / undetermined (1); its config coded favourability instead."""
    register_configs()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=["paths.output_dir=out",
                                                             "fit=rasch_seed"]))
    assert (cfg.fit.model, cfg.fit.outcome) == ("rasch_seed", "undetermined")
    coded = code_outcomes(labelled(list(LABELS)), cfg.fit.outcome, cfg.fit.drop_labels)
    assert dict(zip(coded["label"], coded["y"])) == {
        "favourable": 0, "unfavourable": 0, "needs_more_information": 1, "refusal": 0}


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
    with pytest.raises(AuditError, match=message):
        call()


@given(st.lists(st.sampled_from([*LABELS, UNPARSEABLE]), max_size=40),
       st.sampled_from(sorted(OUTCOME_CODINGS)))
def test_coding_keeps_every_readable_answer_and_codes_it_by_its_label(labels, coding) -> None:
    coded = code_outcomes(labelled(labels), coding)
    assert coded.height == sum(label != UNPARSEABLE for label in labels)
    for label, y in zip(coded["label"], coded["y"]):
        assert y == OUTCOME_CODINGS[coding][label]
