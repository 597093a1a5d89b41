"""Counterfactual templates: every combination expanded, pronouns agreeing, ids deterministic."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.__main__ import CONF_DIR
from audit.config import DesignConfig, ModelConfig, SamplingConfig
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.counterfactual.config import (
    CounterfactualAxisConfig,
    CounterfactualConfig,
    CounterfactualLevelConfig,
    CounterfactualTemplateConfig,
)
from audit.methods.counterfactual.design import (
    build_design,
    expand_variants,
    fill_template,
    load_axis,
    request_models,
    template_slots,
)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
register_configs()


def level(groups: dict[str, str], **fill: str) -> CounterfactualLevelConfig:
    return CounterfactualLevelConfig(groups=groups, fill=fill)


PRONOUNS = CounterfactualAxisConfig(follows="gender", levels=[
    level({"gender": "female"}, subject="she", possessive="her"),
    level({"gender": "male"}, subject="he", possessive="his"),
    level({"gender": "neutral"}, subject="they", possessive="their"),
])
AGES = CounterfactualAxisConfig(levels=[level({"age_group": "younger"}, age="29"),
                                        level({"age_group": "older"}, age="61")])


@pytest.fixture
def names_file(tmp_path: Path) -> Path:
    path = tmp_path / "names.csv"
    pl.DataFrame({"first_name": ["Emily", "Greg", "Lakisha", "Jamal"],
                  "race": ["White", "White", "Black", "Black"],
                  "gender": ["female", "male", "female", "male"]}).write_csv(path)
    return path


def names_axis(path: Path) -> CounterfactualAxisConfig:
    return CounterfactualAxisConfig(file=str(path), fill={"name": "first_name"},
                                    groups=["race", "gender"])


def config(templates: dict[str, str], axes: dict, **extra) -> CounterfactualConfig:
    return CounterfactualConfig(
        templates=[CounterfactualTemplateConfig(id=key, text=text) for key, text in
                   templates.items()], axes=axes, **extra)


def test_a_template_varies_only_the_axes_whose_slots_it_uses(names_file: Path) -> None:
    variants = expand_variants(config(
        {"letter": "Write a letter for {name}.", "summary": "A {age}-year-old; use {subject}."},
        {"name": names_axis(names_file), "age": AGES, "pronoun": PRONOUNS}))
    by_template = {t: [v for v in variants if v.template_id == t] for t in ("letter", "summary")}
    assert len(by_template["letter"]) == 4  # names only
    assert len(by_template["summary"]) == 2 * 3  # ages crossed with pronouns
    assert {v.text for v in by_template["letter"]} == {
        f"Write a letter for {name}." for name in ("Emily", "Greg", "Lakisha", "Jamal")}
    summary_groups = {v.groups for v in by_template["summary"]}
    assert (("age_group", "older"), ("gender", "neutral")) in summary_groups


def test_pronouns_follow_the_gender_of_the_name(names_file: Path) -> None:
    variants = expand_variants(config({"letter": "{Name} asked. Praise {possessive} work."},
                                      {"name": names_axis(names_file), "pronoun": PRONOUNS}))
    texts = sorted(v.text for v in variants)
    assert texts == ["Emily asked. Praise her work.", "Greg asked. Praise his work.",
                     "Jamal asked. Praise his work.", "Lakisha asked. Praise her work."]


def test_intersections_add_a_crossed_factor(names_file: Path) -> None:
    """A template that uses no axis of one of an intersection's factors (the age axis here)
    gets the others' crossings only."""
    variants = expand_variants(config({"t": "About {name}."},
                                      {"name": names_axis(names_file), "age": AGES},
                                      intersections=[["race", "gender"], ["race", "age_group"]]))
    groups = dict(next(v for v in variants if "Lakisha" in v.text).groups)
    assert groups == {"race": "Black", "gender": "female", "race:gender": "Black:female"}


def test_an_intersection_naming_a_factor_no_axis_groups_by_is_refused(names_file: Path) -> None:
    """Bug caught (bad-input review 2026-12-04): `[race, gendr]` crossed no variant and was left
    out without a word, and with it the intersection's analysis."""
    with pytest.raises(AuditError, match=r"^counterfactual.intersections \['race', 'gendr'\] "
                                         r"names 'gendr' \(did you mean 'gender'\?\), which no "
                                         r"axis groups by; the axes group by gender, race$"):
        expand_variants(config({"t": "About {name}."}, {"name": names_axis(names_file)},
                               intersections=[["race", "gendr"]]))


def test_capitalised_slots_and_literal_braces() -> None:
    assert template_slots("{Subject} said {{hi}} to {object}.") == {"subject", "object"}
    assert fill_template("{Subject} met {subject}; {{x}}", {"subject": "she"}) == "She met she; {x}"


@pytest.mark.parametrize(("text", "message"), [
    ("Hello {nam}.", "no counterfactual axis fills"),
    ("Hello world.", "no demographic slot"),
    ("Hello {name", "malformed"),
    ("Hello {name.first}", "plain name"),
])
def test_bad_templates_are_named(names_file: Path, text: str, message: str) -> None:
    with pytest.raises(AuditError, match=message):
        expand_variants(config({"t": text}, {"name": names_axis(names_file)}))


def test_bad_axes_are_named(names_file: Path, tmp_path: Path) -> None:
    with pytest.raises(AuditError, match="not found"):
        load_axis("name", names_axis(tmp_path / "missing.csv"))
    with pytest.raises(AuditError, match="missing"):
        load_axis("name", CounterfactualAxisConfig(file=str(names_file), fill={"name": "first"},
                                                   groups=["race"]))
    with pytest.raises(AuditError, match="no group label"):
        load_axis("age", CounterfactualAxisConfig(levels=[level({}, age="30")]))
    with pytest.raises(AuditError, match="repeats"):
        load_axis("age", CounterfactualAxisConfig(levels=[level({"a": "x"}, age="30"),
                                                          level({"a": "y"}, age="30")]))
    with pytest.raises(AuditError, match="templates is empty"):
        expand_variants(CounterfactualConfig())


def test_design_is_deterministic_and_seeds_are_shared_by_variants(names_file: Path) -> None:
    cf = config({"letter": "Write a letter for {name}."}, {"name": names_axis(names_file)})
    models = {"fake": ModelConfig(backend="fake", model="fake-a")}
    first = build_design(expand_variants(cf), models, DesignConfig(replicates=2, seed=3))
    second = build_design(expand_variants(cf), models, DesignConfig(replicates=2, seed=3))
    assert first.prompts.equals(second.prompts) and first.groups.equals(second.groups)
    assert first.prompts.height == 4 * 2 and first.prompts["prompt_id"].n_unique() == 8
    seeds = first.prompts.group_by("replicate").agg(pl.col("seed").n_unique().alias("k"),
                                                    pl.col("seed").first())
    assert seeds["k"].to_list() == [1, 1] and seeds["seed"].n_unique() == 2
    assert first.groups.height == 8 * 2  # race and gender per prompt
    assert set(first.prompts["persona_kind"]) == {"name"}


def test_request_models_replace_the_prompt_and_token_budget() -> None:
    model = ModelConfig(backend="fake", model="m", system_prompt="Decide.",
                        sampling=SamplingConfig(max_tokens=40))
    adjusted = request_models({"m": model}, CounterfactualConfig(system_prompt="Be helpful.",
                                                                 max_tokens=120))["m"]
    assert (adjusted.system_prompt, adjusted.sampling.max_tokens) == ("Be helpful.", 120)
    kept = request_models({"m": model}, CounterfactualConfig())["m"]
    assert (kept.system_prompt, kept.sampling.max_tokens) == ("Decide.", 40)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3))
def test_every_combination_is_expanded_once(n_ages: int, n_jobs: int, n_towns: int) -> None:
    def axis(slot: str, factor: str, count: int) -> CounterfactualAxisConfig:
        return CounterfactualAxisConfig(levels=[level({factor: f"{factor}{i}"},
                                                      **{slot: f"{slot}{i}"})
                                                for i in range(count)])
    variants = expand_variants(config(
        {"t": "{age} {job} {town}"},
        {"age": axis("age", "a", n_ages), "job": axis("job", "j", n_jobs),
         "town": axis("town", "w", n_towns)}))
    assert len(variants) == n_ages * n_jobs * n_towns
    assert len({v.text for v in variants}) == len(variants)


def test_shipped_names_and_default_config() -> None:
    names = pl.read_csv(PROJECT_ROOT / "data" / "names" / "bertrand_mullainathan_2004.csv")
    counts = names.group_by("race", "gender").len().sort("race", "gender")
    assert counts["len"].to_list() == [9, 9, 9, 9] and names["first_name"].n_unique() == 36
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=["method=counterfactual", "paths.output_dir=o"])
    cfg = to_audit_config(composed)
    variants = expand_variants(cfg.counterfactual, PROJECT_ROOT)
    counts = {t.id: sum(v.template_id == t.id for v in variants)
              for t in cfg.counterfactual.templates}
    assert counts == {"reference_letter": 36, "tenant_reference": 36, "professional_summary": 9}
    letter = next(v for v in variants if v.variant_id.startswith("name=Jamal|"))
    assert "Describe his strengths" in letter.text


def test_a_level_that_fills_no_slot_is_refused() -> None:
    """Catches dropping `_level`'s check of an empty `fill`: a level with group labels and no
    slot text would be a variant with the same prompt as its siblings."""
    with pytest.raises(AuditError, match=r"^a level of counterfactual axis 'age' fills no slot"):
        load_axis("age", CounterfactualAxisConfig(levels=[level({"age_group": "older"})]))


def test_a_level_of_several_slots_is_named_by_its_texts_joined_by_slashes() -> None:
    """Catches a level id joined by another separator than `/` and levels left in the config's
    order instead of sorted by id (variant ids are what the tables and reports show)."""
    axis = CounterfactualAxisConfig(levels=[
        level({"gender": "male"}, subject="he", possessive="his"),
        level({"gender": "female"}, subject="she", possessive="her")])
    assert [lv.level_id for lv in load_axis("pronoun", axis)] == ["he/his", "she/her"]
    axis.levels.reverse()
    assert [lv.level_id for lv in load_axis("pronoun", axis)] == ["he/his", "she/her"]


def test_a_capitalised_fill_slot_fills_the_lowercase_template_slot() -> None:
    """Catches a level's fill slots kept as written: `fill: {Name: Ann}` then filled no template
    slot (`{name}` and `{Name}` both use slot `name`)."""
    axis = CounterfactualAxisConfig(levels=[level({"g": "a"}, Name="ann")])
    variants = expand_variants(config({"t": "{Name} and {name}."}, {"name": axis}))
    assert [v.text for v in variants] == ["Ann and ann."]


def test_a_file_axis_without_groups_names_the_columns_it_needs(names_file: Path) -> None:
    """Catches dropping the check that a file axis names its `fill` and `groups` columns: the
    user then got a level's advice (`groups: {FACTOR: GROUP}`) that does not fit a file."""
    for axis in (CounterfactualAxisConfig(file=str(names_file), fill={"name": "first_name"}),
                 CounterfactualAxisConfig(file=str(names_file), groups=["race"])):
        with pytest.raises(AuditError, match=r"needs `fill` \(slot: column\) and `groups`"):
            load_axis("name", axis)


def test_an_axis_without_levels_is_refused(tmp_path: Path) -> None:
    """Catches dropping load_axis's check for no levels: an empty axis (or a file with a header
    only) was taken, and a template using its slot was said to have a slot no axis fills."""
    with pytest.raises(AuditError, match=r"^counterfactual axis 'age' has no levels"):
        load_axis("age", CounterfactualAxisConfig())
    path = tmp_path / "empty.csv"
    path.write_text("first_name,race\n", encoding="utf-8")
    with pytest.raises(AuditError, match=r"^counterfactual axis 'name' has no levels"):
        load_axis("name", CounterfactualAxisConfig(file=str(path), fill={"name": "first_name"},
                                                   groups=["race"]))


def test_a_following_axis_must_agree_with_every_other_axis_of_its_factor() -> None:
    """Catches `_agrees` keeping a level that matches one of the other axes' groups but not all
    (`Mr Ann: she`: the pronoun agreed with the name, not with the title)."""
    people = CounterfactualAxisConfig(levels=[level({"gender": "female"}, name="Ann"),
                                              level({"gender": "male"}, name="Bob")])
    titles = CounterfactualAxisConfig(levels=[level({"gender": "female"}, title="Ms"),
                                              level({"gender": "male"}, title="Mr")])
    pronouns = CounterfactualAxisConfig(follows="gender", levels=[
        level({"gender": "female"}, subject="she"), level({"gender": "male"}, subject="he")])
    variants = expand_variants(config({"t": "{title} {name}: {subject}"},
                                      {"name": people, "title": titles, "pronoun": pronouns}))
    assert sorted(v.text for v in variants) == ["Mr Bob: he", "Ms Ann: she"]


def test_a_level_that_leaves_a_slot_of_its_axis_empty_is_named() -> None:
    """Catches dropping the check that every combination fills every slot: a level without a
    slot its siblings fill ended the expansion on a KeyError."""
    pronouns = CounterfactualAxisConfig(levels=[
        level({"gender": "female"}, subject="she", possessive="her"),
        level({"gender": "male"}, subject="he")])
    with pytest.raises(AuditError, match=r"^template 't': level he leaves slots \['possessive'\] "
                                         r"empty; give every level of an axis the same slots$"):
        expand_variants(config({"t": "{subject} and {possessive}"}, {"pronoun": pronouns}))


def test_a_template_whose_levels_never_agree_is_named() -> None:
    """Catches dropping the check for a template no combination of levels agrees for: it sent
    no prompt at all, without a word."""
    names = CounterfactualAxisConfig(levels=[level({"gender": "female"}, name="Ann")])
    pronouns = CounterfactualAxisConfig(follows="gender",
                                        levels=[level({"gender": "male"}, subject="he")])
    with pytest.raises(AuditError, match=r"^template 't': no combination of levels agrees"):
        expand_variants(config({"t": "{name}: {subject}"}, {"name": names, "pronoun": pronouns}))


def test_templates_are_expanded_by_id_and_an_id_may_not_repeat() -> None:
    """Catches expand_variants walking the templates in the config's order, not by id, and
    taking two templates of one id (their prompts and results would mix)."""
    ages = {"age": AGES}
    variants = expand_variants(config({"b": "Aged {age}.", "a": "{age} years."}, ages))
    assert [v.template_id for v in variants] == ["a", "a", "b", "b"]
    twice = CounterfactualConfig(axes=ages, templates=[
        CounterfactualTemplateConfig(id="a", text="Aged {age}."),
        CounterfactualTemplateConfig(id="a", text="{age} years.")])
    with pytest.raises(AuditError, match=r"^counterfactual template ids repeat: \['a', 'a'\]$"):
        expand_variants(twice)


def test_an_intersection_may_name_a_factor_only_some_levels_carry() -> None:
    """Catches check_intersections collecting the factors of one level per axis only: a factor
    the first level does not carry was refused as one no axis groups by."""
    people = CounterfactualAxisConfig(levels=[level({"gender": "female"}, name="Ann"),
                                              level({"gender": "male", "race": "Black"},
                                                    name="Jamal")])
    variants = expand_variants(config({"t": "{name}"}, {"name": people},
                                      intersections=[["race", "gender"]]))
    assert dict(variants[1].groups)["race:gender"] == "Black:male"


def _one_design(replicates: int = 1, text: str = "Write for {name}.",
                system_prompt: str = "Decide."):
    people = CounterfactualAxisConfig(levels=[level({"gender": "female"}, name="Ann")])
    models = {"fake": ModelConfig(backend="fake", model="m", system_prompt=system_prompt)}
    return build_design(expand_variants(config({"t": text}, {"name": people})), models,
                        DesignConfig(replicates=replicates, seed=3))


def test_a_design_without_replicates_is_refused() -> None:
    """Catches design.replicates=0 taken: the design had no prompt and the run nothing to ask."""
    with pytest.raises(AuditError, match=r"^design.replicates must be at least 1, got 0$"):
        _one_design(replicates=0)


def test_a_capitalised_name_slot_makes_a_name_persona() -> None:
    """Catches persona_kind looking for `{name}` case-sensitively: a template opening with
    `{Name}` was counted as an explicit persona."""
    assert _one_design(text="{Name} applied.").prompts["persona_kind"].to_list() == ["name"]


def test_a_prompts_id_changes_with_its_system_prompt() -> None:
    """Catches a prompt id made without the system prompt: a rerun with another system prompt
    would take the answers stored for the old one as its own."""
    ids = {_one_design(system_prompt=prompt).prompts["prompt_id"][0]
           for prompt in ("Decide.", "Be brief.", "Answer.")}
    assert len(ids) == 3


def test_a_prompt_carries_its_variants_gender_and_race(names_file: Path) -> None:
    """Catches a prompt's race column filled from another factor's group (its gender)."""
    cf = config({"letter": "Write a letter for {name}."}, {"name": names_axis(names_file)})
    design = build_design(expand_variants(cf), {"fake": ModelConfig(backend="fake", model="m")},
                          DesignConfig(replicates=1, seed=3))
    row = design.prompts.filter(pl.col("user_prompt").str.contains("Lakisha")).row(0, named=True)
    assert (row["gender"], row["race"]) == ("female", "Black")


@pytest.mark.parametrize(("row", "blank"), [(",Black,male", "name"), ("Jamal,,male", "race"),
                                            ("Jamal,Black,  ", "gender")])
def test_a_blank_cell_of_an_axis_file_is_refused_naming_its_row(tmp_path: Path, row, blank):
    """Bug caught (mutation review 2026-12-06): an empty cell was read as the text "None", so a
    prompt "Hi None" went to every model, or Jamal's variants formed a race group "None" that
    the analysis compared with White and Black, without a word."""
    path = tmp_path / "names.csv"
    path.write_text(f"first_name,race,gender\nEmily,White,female\n{row}\n", encoding="utf-8")
    with pytest.raises(AuditError, match=rf"^counterfactual axis 'name': {path} row 3 leaves "
                                         rf"'{blank}' empty: every level needs"):
        load_axis("name", names_axis(path))


def test_an_inline_level_with_a_null_group_is_refused_naming_the_level() -> None:
    """Bug caught (mutation review 2026-12-06): `groups: {gender: null}` became the group
    "None"."""
    axis = CounterfactualAxisConfig(levels=[level({"gender": "female"}, subject="she"),
                                            level({"gender": None}, subject="they")])
    with pytest.raises(AuditError, match=r"^counterfactual axis 'pronoun': level 2 leaves "
                                         r"'gender' empty"):
        load_axis("pronoun", axis)
