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
