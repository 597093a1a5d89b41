"""A user's persona and item files as the design stage reads them: each way a file went wrong
silently (design review 2026-11-29, findings 1, 2, 4, 8, 9 and 11) is one line now."""

from __future__ import annotations

import threading
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.config import PersonasConfig
from audit.errors import AuditError
from audit.methods.configs import AuditConfig, register_configs, to_audit_config
from audit.methods.rasch.design import design_stage
from audit.personas import (PersonaSources, fill_template, generate_personas, near_spellings,
                            one_edit_apart, persona_sentence)

register_configs()
EXPLICIT_ONLY = PersonasConfig(generators=["explicit"])


def _compose(overrides: list[str]) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=["paths.output_dir=out", *overrides]))


def _explicit(rows: list[dict[str, str | None]]) -> pl.DataFrame:
    schema = {column: pl.String for column in ("persona_id", "kind", "descriptor", "gender",
                                               "race")}
    return pl.DataFrame(rows, schema=schema)


def _row(persona_id: str, descriptor: str, gender: str | None, race: str | None,
         kind: str | None = "explicit") -> dict[str, str | None]:
    return {"persona_id": persona_id, "kind": kind, "descriptor": descriptor, "gender": gender,
            "race": race}


def _generate(rows: list[dict[str, str | None]]) -> pl.DataFrame:
    return generate_personas(EXPLICIT_ONLY, PersonaSources(explicit_profiles=_explicit(rows)), 1)


def test_levels_are_trimmed_so_a_space_after_a_comma_does_not_split_a_cell() -> None:
    """Finding 1: `a Black woman, woman, Black` made " woman" and " Black" levels of their own."""
    personas = _generate([_row("black_woman", " a Black woman", " woman", " Black "),
                          _row("black_man", "a Black man", "man", "Black")])
    assert sorted(personas["race"].unique().to_list()) == ["Black"]
    assert sorted(personas["gender"].to_list()) == ["man", "woman"]
    assert personas.filter(pl.col("persona_id") == "black_woman")["descriptor"][0] == \
        "a Black woman"


def test_levels_that_differ_only_by_case_are_refused() -> None:
    """Finding 1: one row's `black` beside `Black` split the Black women into two cells."""
    with pytest.raises(AuditError, match="race has levels 'Black' and 'black'"):
        _generate([_row("black_woman", "a Black woman", "woman", "Black"),
                   _row("black_man", "a Black man", "man", "black")])


def test_a_filled_item_refuses_a_descriptor_with_its_own_article() -> None:
    """Finding 2: items=discrim_eval with the default personas asked "from an a Black woman"."""
    template = "Should a journal accept a paper from a {race} {gender} professor?"
    with pytest.raises(AuditError, match="personas=discrim_eval"):
        fill_template(template, "explicit", "a Black woman", "woman", None)
    assert "from a Black female professor" in fill_template(template, "explicit",
                                                            "Black female", "woman", None)


def test_the_default_personas_with_discrim_eval_items_are_refused_at_the_design() -> None:
    """Finding 2, as a user meets it: `items=discrim_eval` alone sent 48 broken prompts of 63."""
    with pytest.raises(AuditError, match="personas=discrim_eval or personas=discrim_eval_two"):
        design_stage(_compose(["items=discrim_eval", "items.per_domain=3"]))
    assert design_stage(_compose(["items=discrim_eval", "items.per_domain=3",
                                  "personas=discrim_eval"])).height == 27


@pytest.mark.parametrize(("gender", "race"), [(None, None), ("", " ")])
def test_a_persona_row_with_no_attribute_is_refused(gender: str | None, race: str | None) -> None:
    """Finding 4: an explicit row with empty gender and race joined no cell, silently."""
    with pytest.raises(AuditError, match="1 row.* state neither gender nor race .first: nobody"):
        _generate([_row("black_woman", "a Black woman", "woman", "Black"),
                   _row("nobody", "a person", gender, race)])


def test_a_persona_file_without_rows_is_refused() -> None:
    """Finding 4: a header-only file left a design of baseline and null personas only."""
    with pytest.raises(AuditError, match="has no persona rows"):
        _generate([])


def test_more_null_personas_than_strings_of_their_length_is_refused() -> None:
    """Finding 8: null_count=27 with null_length=1 looped forever looking for a 27th letter. Run
    in a thread, so the old code fails the test instead of hanging it."""
    config = PersonasConfig(generators=["null"], null_count=27, null_length=1)
    outcome: list[BaseException] = []

    def generate() -> None:
        try:
            generate_personas(config, PersonaSources(), seed=1)
        except AuditError as error:
            outcome.append(error)
    worker = threading.Thread(target=generate, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert outcome and "exceeds the 26 distinct strings" in str(outcome[0])
    assert generate_personas(PersonasConfig(generators=["null"], null_count=26, null_length=1),
                             PersonaSources(), seed=1).height == 26


def test_ids_that_look_like_numbers_are_read_as_written(tmp_path: Path) -> None:
    """Finding 9: an item bank's "001" was read as the number 1, so items.item_ids=['001'] was
    unknown; persona ids likewise."""
    shipped = pl.read_csv(Path(CONF_DIR).parents[2] / "data" / "items" / "decision_items.csv")
    bank = shipped.head(3).with_columns(item_id=pl.Series(["001", "002", "003"]))
    bank.write_csv(tmp_path / "bank.csv")
    _explicit([_row("007", "a Black woman", "woman", "Black"),
               _row("008", "a White man", "man", "White")]).write_csv(tmp_path / "people.csv")
    prompts = design_stage(_compose([f"items.bank={tmp_path / 'bank.csv'}",
                                     "items.item_ids=['001','002']",
                                     f"personas.explicit_file={tmp_path / 'people.csv'}",
                                     "personas.generators=[explicit]"]))
    assert sorted(prompts["item_id"].unique().to_list()) == ["001", "002"]
    assert sorted(prompts["persona_id"].unique().to_list()) == ["007", "008"]


def test_a_row_of_another_kind_is_refused_and_the_kind_column_is_optional() -> None:
    """Finding 11: rows marked kind=null were silently read as explicit personas, and a file
    without the (ignored) kind column was refused."""
    with pytest.raises(AuditError, match="1 row.* say kind=null .first: black_woman.*set kind"):
        _generate([_row("black_woman", "a Black woman", "woman", "Black", kind="null"),
                   _row("black_man", "a Black man", "man", "Black")])
    without_kind = _explicit([_row("black_woman", "a Black woman", "woman", "Black")]).drop("kind")
    personas = generate_personas(EXPLICIT_ONLY, PersonaSources(explicit_profiles=without_kind), 1)
    assert personas["kind"].to_list() == ["explicit"]


def test_a_blank_descriptor_is_refused_and_adds_no_sentence() -> None:
    """Finding 11: a descriptor of one space gave the prompt "The applicant is ."."""
    with pytest.raises(AuditError, match="blank descriptor .first: black_woman"):
        _generate([_row("black_woman", " ", "woman", "Black")])
    assert persona_sentence("applicant", "explicit", "  ") == ""


def test_an_empty_descriptor_in_a_persona_file_names_its_row(tmp_path: Path) -> None:
    """Bug caught (bad-input review 2026-12-04): an explicit persona without its sentence was
    "column 'descriptor' holds None, which fails not_nullable", naming neither row nor fix."""
    path = tmp_path / "people.csv"
    path.write_text("persona_id,kind,descriptor,gender,race\n"
                    "bw,explicit,a Black woman,woman,Black\nwm,explicit,,man,White\n"
                    "bm,explicit,,man,Black\n", encoding="utf-8")
    with pytest.raises(AuditError) as caught:
        design_stage(_compose([f"personas.explicit_file={path}"]))
    assert str(caught.value).endswith("column 'descriptor' is empty in row 2 (persona_id 'wm') "
                                      "and 1 more: fill it in, or drop those rows"), caught.value


def test_an_unreadable_persona_file_names_the_encoding_fix(tmp_path: Path) -> None:
    """Finding 11: a Latin-1 file was told to "run the stage that writes it first"."""
    path = tmp_path / "people.csv"
    path.write_bytes("persona_id,kind,descriptor,gender,race\n"
                     "jose,explicit,named José,man,Hispanic\n".encode("latin-1"))
    with pytest.raises(AuditError, match="save it as UTF-8 CSV") as caught:
        design_stage(_compose([f"personas.explicit_file={path}"]))
    assert "run the stage that writes it" not in str(caught.value)


@pytest.mark.parametrize(("first", "second", "apart"), [
    ("Wite", "White", True), ("White", "Whtie", True), ("Asian", "Asain", True),
    ("woman", "women", True), ("Black", "black", False), ("female", "male", False),
    ("Black", "White", False), ("Hispanic", "Hispanics", True), ("Asian", "Asian", False),
    ("ab", "ba", True), ("abc", "acb", True), ("abcd", "badc", False),
])
def test_one_edit_apart_is_one_letter_added_dropped_changed_or_two_swapped(first, second, apart):
    assert one_edit_apart(first, second) is apart
    assert one_edit_apart(second, first) is apart


def test_a_level_one_letter_from_another_is_warned_about_before_any_prompt(tmp_path: Path,
                                                                          caplog) -> None:
    """Bug caught (bad-input review 2026-12-04): a race typed "Wite" in one row became a
    one-text race level of its own, compared with the others without a word. The shipped
    personas, whose levels are all distinct words, give no such warning."""
    path = tmp_path / "people.csv"
    _explicit([_row("bw", "a Black woman", "woman", "Black"),
               _row("ww", "a White woman", "woman", "White"),
               _row("wm", "a White man", "man", "White"),
               _row("wm2", "a white man, 40", "man", "Wite")]).write_csv(path)
    with caplog.at_level("WARNING", logger="audit.methods.rasch.design"):
        design_stage(_compose([f"personas.explicit_file={path}"]))
    assert [record.getMessage() for record in caplog.records if "one letter" in
            record.getMessage()] == [
        "race levels 'Wite' (1 persona(s)) and 'White' (2) are one letter apart, and the fit "
        "counts them as two groups: if 'Wite' is a typo, spell it 'White' in the persona files"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="audit.methods.rasch.design"):
        design_stage(_compose([]))
    assert not [record for record in caplog.records if "one letter" in record.getMessage()]


def test_levels_one_letter_apart_with_as_many_personas_each_name_no_typo() -> None:
    """Neither of two equally used spellings is called the typo; short levels are left alone."""
    personas = _explicit([_row("a", "x", "woman", "Asian"), _row("b", "y", "woman", "Asain"),
                          _row("c", "z", "man", "Black"), _row("d", "w", "men", "Black")])
    assert near_spellings(personas) == [
        "race levels 'Asain' (1 persona(s)) and 'Asian' (1) are one letter apart, and the fit "
        "counts them as two groups: if one is a typo, spell both alike in the persona files"]


def test_levels_that_name_one_group_in_other_words_are_said() -> None:
    """Bug caught (bad-input probe 2026-12-07): "male" beside "man" (discrim-eval's words beside
    this project's) gave six gender contrasts without a word, "gender male vs man" among them.
    Two different groups are not said."""
    personas = _explicit([_row("a", "x", "man", "White"), _row("b", "y", "male", "Caucasian"),
                          _row("c", "z", "Male", "Black"), _row("d", "w", "woman", "Black")])
    assert near_spellings(personas) == [
        "gender levels 'Male' (1 persona(s)) and 'male' (1 persona(s)) and 'man' (1 persona(s)) "
        "name one group in different words, and the fit counts them as 3 groups: write one of "
        "them in the persona files",
        "race levels 'Caucasian' (1 persona(s)) and 'White' (1 persona(s)) name one group in "
        "different words, and the fit counts them as 2 groups: write one of them in the persona "
        "files"]


def test_a_blank_kind_cell_is_no_kind_and_the_row_is_read_as_the_files() -> None:
    """Catches a blank `kind` cell kept as "" instead of missing: the row was refused as a
    persona of another kind ("say kind="), though the column may be left empty."""
    personas = _generate([_row("black_woman", "a Black woman", "woman", "Black", kind=" "),
                          _row("white_man", "a White man", "man", "White", kind="")])
    assert personas.select("persona_id", "kind").rows() == [("black_woman", "explicit"),
                                                           ("white_man", "explicit")]


def test_a_persona_id_two_generators_give_is_refused_by_name() -> None:
    """Catches a dropped check of persona ids across generators: an explicit persona with the
    id `baseline` beside the baseline generator made two personas of one id."""
    rows = [_row("baseline", "a Black woman", "woman", "Black")]
    with pytest.raises(AuditError, match=r"^duplicate persona ids across generators: "
                                         r"\['baseline'\]$"):
        generate_personas(PersonasConfig(generators=["baseline", "explicit"]),
                          PersonaSources(explicit_profiles=_explicit(rows)), 1)


def test_a_design_without_a_generator_is_refused_as_empty() -> None:
    """Catches a dropped check of an empty persona set: no generator gave a design of none."""
    with pytest.raises(AuditError, match="^the persona set is empty: list at least one"):
        generate_personas(PersonasConfig(generators=[]), PersonaSources(), 1)


def test_near_spellings_read_only_the_attributes_a_table_has() -> None:
    """Catches near_spellings reading an attribute column the table lacks: a table of gender
    alone raised. By hand: 'women' (1) beside 'woman' (2) is the likely typo."""
    assert near_spellings(pl.DataFrame({"gender": ["woman", "women", "woman"]})) == [
        "gender levels 'women' (1 persona(s)) and 'woman' (2) are one letter apart, and the fit "
        "counts them as two groups: if 'women' is a typo, spell it 'woman' in the persona files"]
