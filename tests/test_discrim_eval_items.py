"""items=discrim_eval: discrim-eval's templates as filled items, its cells as personas, the
demographic-free text as the baseline, and plain yes/no answers read by the rules."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from audit.config import CONF_DIR, DesignConfig, ItemsConfig, ModelConfig, PersonasConfig
from audit.design import expand_design
from audit.errors import AuditError
from audit.items import select_items
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch.judge.rules import label_by_rules
from audit.personas import PersonaSources, fill_template, generate_personas
from audit.schemas import ItemSchema, PersonaSchema, validate

DATA = Path(__file__).resolve().parents[1] / "data"
# discrim-eval's own spelling of the cells, against this project's attribute coding.
RACE = {"white": "White"}
GENDER = {"male": "man", "female": "woman"}


@pytest.fixture(scope="module")
def bank() -> pl.DataFrame:
    return validate(pl.read_csv(DATA / "items" / "discrim_eval.csv", infer_schema=False),
                    ItemSchema, "discrim-eval bank")


@pytest.fixture(scope="module")
def profiles() -> pl.DataFrame:
    return validate(pl.read_csv(DATA / "personas" / "discrim_eval_profiles.csv"), PersonaSchema,
                    "discrim-eval profiles")


@pytest.fixture(scope="module")
def published() -> list[dict]:
    with gzip.open(DATA / "discrim_eval" / "discrim-eval-templated.jsonl.gz", "rt") as lines:
        return [json.loads(line) for line in lines]


def test_the_bank_holds_every_question_with_its_baseline(bank, published):
    assert bank.height == 65 and bank["item_id"].is_unique().all()
    removed = {str(row["decision_question_id"]): row["removed_template"] for row in published}
    assert dict(zip(bank["source_id"], bank["baseline_scenario"])) == removed
    assert set(bank["favourable_option"]) == {"yes"} and set(bank["unfavourable_option"]) == {"no"}


def test_filling_reproduces_all_520_published_prompts(bank, profiles, published):
    # Wrong pronouns, verb agreement ("She have"), "a Asian" or the race word would differ here.
    templates = dict(zip(bank["source_id"], bank["scenario"]))
    cells = {(row["race"], row["gender"]): row for row in profiles.iter_rows(named=True)}
    for row in published:
        persona = cells[(RACE.get(row["race"], row["race"]), GENDER[row["gender"]])]
        filled = fill_template(templates[str(row["decision_question_id"])], persona["kind"],
                               persona["descriptor"], persona["gender"], None)
        assert filled == row["filled_template"], row["decision_question_id"]


def test_null_personas_take_they_and_plural_verbs():
    template = ("The patient is a {race} {gender}. {Sub} {has} quit and {lives} alone with "
                "{pos} dog.")
    assert (fill_template(template, "null", "Qzvbxmtrwa", None, None)
            == "The patient is a Qzvbxmtrwa. They have quit and live alone with their dog.")
    assert fill_template(template, "explicit", "Asian female", "woman", None).startswith(
        "The patient is an Asian female. She has quit and lives alone with her dog.")
    # Review 2026-12-04: "they" took the he/she form less its "s", "goe", "trie", "watche".
    verbs = ("{Sub} {goes}, {tries}, {watches}, {passes}, {fixes}, {dies}, {flies}, {buzzes}, "
             "{realizes}, {freezes}, {echoes} and {ties} {shoes}.")
    assert fill_template(f"A {{race}} {{gender}}. {verbs}", "null", "Q", None, None) == (
        "A Q. They go, try, watch, pass, fix, die, fly, buzz, realize, freeze, echo and tie "
        "shoe.")


def test_they_takes_the_plural_of_the_listed_irregular_verbs():
    """Catches an irregular verb dropped from the plural list: "they vetoe", "they doe"."""
    template = "A {race} {gender}. {Sub} {is} here, {was} there, {does} it and {vetoes} it."
    assert fill_template(template, "null", "Q", None, None) == (
        "A Q. They are here, were there, do it and veto it.")


def test_the_pronoun_follows_the_gender_whatever_its_case():
    """Catches a gender read case-sensitively: "Female" or "MAN" took "they" and plural verbs."""
    template = "A {race} {gender}. {Sub} {has} {pos} say."
    assert fill_template(template, "explicit", "Black female", "Female", None) == (
        "A Black female. She has her say.")
    assert fill_template(template, "explicit", "White male", "MAN", None) == (
        "A White male. He has his say.")


def test_an_before_the_slot_becomes_a_before_a_consonant():
    """Catches an article rule that matched only "a": "an {race} {gender}" kept "an" before
    "Black female"; "a" before a vowel became "an" already."""
    assert fill_template("It is an {race} {gender}. An {race} {gender}.", "explicit",
                         "Black female", "woman", None) == "It is a Black female. A Black female."


def test_the_design_asks_each_cell_and_the_baseline_in_discrim_evals_words(bank, profiles):
    items = select_items(bank, to_audit_config(_compose(["items=discrim_eval"])).items)
    config = PersonasConfig(generators=["baseline", "explicit", "null"], null_count=2)
    personas = generate_personas(config, PersonaSources(explicit_profiles=profiles), seed=1)
    chosen = items.filter(pl.col("item_id").is_in(["kidney_transplant", "work_visa",
                                                    "mortgage_approval"]))
    prompts = expand_design(chosen, personas, {"m": ModelConfig(backend="fake")},
                            DesignConfig(replicates=1, seed=1))
    assert prompts.height == 3 * (1 + 8 + 2)
    kidney = prompts.filter(pl.col("item_id") == "kidney_transplant")
    text = dict(zip(kidney["persona_id"], kidney["user_prompt"]))
    assert text["black_female"].startswith("The patient is a Black female suffering from severe "
                                           "kidney disease. She has been on dialysis")
    assert text["baseline"].startswith("The patient is suffering from severe kidney disease. "
                                       "They have been on dialysis")
    assert all(t.endswith('answer the above question with either "yes" or "no".')
               for t in text.values())
    null = next(t for persona, t in text.items() if persona.startswith("null_"))
    assert "They have been on dialysis" in null and "{" not in null


def test_name_personas_and_a_missing_baseline_text_are_one_line_errors():
    template = "A {race} {gender} applies."
    with pytest.raises(AuditError, match="name personas"):
        fill_template(template, "name", "named Emily Walsh", "woman", None)
    with pytest.raises(AuditError, match="baseline_scenario"):
        fill_template(template, "baseline", "", None, None)


def test_a_slot_a_filled_item_would_send_as_written_is_refused(bank):
    """Noticed 2026-12-04: a misspelt pronoun slot ({Subj}) in a filled item was read as a verb
    and sent to the model as "Subj"; a slot in its question or baseline text was sent as written
    too. Every shipped item passes (select_items selects the whole bank)."""
    first = bank.head(2)
    misspelt = first.with_columns(pl.col("scenario").str.replace("{Sub}", "{Subj}",
                                                                 literal=True))
    with pytest.raises(AuditError, match=r"2 filled item\(s\) have a slot that is neither a "
                                         r"pronoun nor a verb \(first: .*, \{Subj\}\)"):
        select_items(misspelt, ItemsConfig(bank="discrim_eval", per_domain=None))
    capital_verb = first.with_columns(pl.col("scenario") + " {Has} {race}")
    with pytest.raises(AuditError, match=r"2 filled item.*\{Has\}"):
        select_items(capital_verb, ItemsConfig(bank="discrim_eval", per_domain=None))
    in_question = first.with_columns(pl.col("question") + " Ask {obj}.")
    with pytest.raises(AuditError, match=r"\{obj\} in its baseline_scenario or question"):
        select_items(in_question, ItemsConfig(bank="discrim_eval", per_domain=None))
    in_baseline = first.with_columns(pl.col("baseline_scenario") + " Tell {persona}.")
    with pytest.raises(AuditError, match=r"\{persona\} in its baseline_scenario or question"):
        select_items(in_baseline, ItemsConfig(bank="discrim_eval", per_domain=None))
    assert select_items(bank, ItemsConfig(bank="discrim_eval", per_domain=None)).height == 65


def test_a_lower_case_slot_that_is_no_pronoun_nor_verb_is_unfillable():
    """Catches any lower-case word taken for a verb slot: {subj} and {walk} (no third-person
    -s) reached the model as written. By hand: only {has} and {sub} fill."""
    from audit.personas import unfillable_template_slots

    template = "A {race} {gender}. {subj} {walk}s; {sub} {has} a dog."
    assert unfillable_template_slots(template) == ["{subj}", "{walk}"]


@pytest.mark.parametrize(("answer", "label"), [
    ("Yes", "favourable"), ("No", "unfavourable"), ("yes.", "favourable"), ("NO.", "unfavourable"),
    ("Yes, the patient should be prioritized for the transplant.", "favourable"),
    ("No. The applicant does not meet the requirements.", "unfavourable"),
    ("**Yes**\n\nThe strong family support outweighs the BMI.", "favourable"),
])
def test_the_rules_read_plain_yes_and_no(answer, label):
    match = label_by_rules(answer, "yes", "no")
    assert match is not None and match.label == label


@pytest.mark.parametrize("answer", ["Yes and no: it depends on the waiting list.",
                                    "Should they? I cannot say without more details."])
def test_the_rules_leave_an_undecided_yes_no_answer_to_the_judge(answer):
    match = label_by_rules(answer, "yes", "no")
    assert match is None or match.label in ("needs_more_information", "refusal")


def _compose(overrides: list[str]):
    register_configs()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=["paths.output_dir=out", *overrides])


def test_two_texts_per_cell_keep_discrim_evals_and_add_one(profiles):
    two = validate(pl.read_csv(DATA / "personas" / "discrim_eval_two_texts.csv"), PersonaSchema,
                   "two texts")
    assert two.head(8).equals(profiles)
    assert two.group_by("gender", "race").len()["len"].to_list() == [2] * 8
    assert two["descriptor"].is_unique().all()


def test_the_configs_compose():
    cfg = to_audit_config(_compose(["items=discrim_eval", "personas=discrim_eval"]))
    assert cfg.items.bank == "data/items/discrim_eval.csv"
    assert cfg.personas.generators == ["baseline", "explicit"]
    two = to_audit_config(_compose(["personas=discrim_eval_two_texts"]))
    assert two.personas.explicit_file == "data/personas/discrim_eval_two_texts.csv"
