from __future__ import annotations

import polars as pl
import pytest

from audit.errors import AuditError
from audit.config import DesignConfig, PersonasConfig
from audit.design import expand_design, replicate_seed
from audit.personas import PersonaSources, generate_personas, persona_sentence


def test_counts_are_the_full_crossing(items, personas, fake_models, design_config):
    prompts = expand_design(items, personas, fake_models, design_config)
    expected = items.height * personas.height * len(fake_models) * design_config.replicates
    assert prompts.height == expected
    assert prompts["respondent_id"].n_unique() == personas.height * len(fake_models)
    per_cell = prompts.group_by(["respondent_id", "item_id"]).len()
    assert per_cell["len"].unique().to_list() == [design_config.replicates]


def test_ids_are_stable_across_runs_and_input_order(items, personas, fake_models, design_config):
    first = expand_design(items, personas, fake_models, design_config)
    shuffled = expand_design(items.reverse(), personas.sample(fraction=1.0, shuffle=True, seed=3),
                             dict(reversed(list(fake_models.items()))), design_config)
    assert first.equals(shuffled)
    assert first["prompt_id"].is_unique().all()


def test_no_duplicate_prompts_and_replicates_differ_by_seed(items, personas, fake_models,
                                                            design_config):
    prompts = expand_design(items, personas, fake_models, design_config)
    keys = prompts.select("model_name", "system_prompt", "user_prompt", "seed")
    assert keys.is_unique().all()
    seeds = prompts.group_by(["respondent_id", "item_id"]).agg(pl.col("seed").n_unique())
    assert seeds["seed"].unique().to_list() == [design_config.replicates]


def test_persona_sentence_lands_in_the_slot(items, personas, fake_models):
    prompts = expand_design(items, personas, fake_models, DesignConfig(replicates=1, seed=1))
    row = prompts.filter((pl.col("persona_id") == "black_woman") &
                         (pl.col("item_id") == "lending_01")).row(0, named=True)
    assert "The applicant is a Black woman. Their credit score" in row["user_prompt"]
    baseline = prompts.filter((pl.col("persona_id") == "baseline") &
                              (pl.col("item_id") == "lending_01")).row(0, named=True)
    assert "{persona}" not in baseline["user_prompt"]
    assert "The applicant is" not in baseline["user_prompt"]
    assert baseline["user_prompt"].endswith("Answer APPROVE or DENY.")


def test_null_personas_are_random_strings_stable_under_the_seed(explicit_profiles):
    config = PersonasConfig(generators=["null"], null_count=5, null_length=10)
    sources = PersonaSources(explicit_profiles=explicit_profiles)
    first = generate_personas(config, sources, seed=1)
    assert first.height == 5 and set(first["kind"]) == {"null"}
    assert all(len(text) == 10 and text.isalpha() for text in first["descriptor"])
    assert first.equals(generate_personas(config, sources, seed=1))
    assert not first.equals(generate_personas(config, sources, seed=2))


def test_null_persona_descriptors_are_their_strings_capitalised(explicit_profiles):
    """Catches a null descriptor left in lower case (the prompt read "The applicant is
    xkqrtb."); its id is null_ and the string in lower case."""
    config = PersonasConfig(generators=["null"], null_count=3, null_length=6)
    personas = generate_personas(config, PersonaSources(explicit_profiles=explicit_profiles), 1)
    for persona_id, descriptor in personas.select("persona_id", "descriptor").rows():
        assert descriptor[0].isupper() and descriptor[1:].islower(), descriptor
        assert persona_id == "null_" + descriptor.lower()


def test_unknown_generator_and_ids_are_clear_errors(explicit_profiles):
    sources = PersonaSources(explicit_profiles=explicit_profiles)
    with pytest.raises(AuditError, match="unknown persona generator 'nul'.*valid: baseline"):
        generate_personas(PersonasConfig(generators=["nul"]), sources, seed=1)
    with pytest.raises(AuditError, match="unknown persona ids"):
        generate_personas(PersonasConfig(generators=["explicit"], explicit_ids=["martian"]),
                          sources, seed=1)
    # Bad-input review 2026-12-04: "duplicate persona ids across generators", of one generator.
    with pytest.raises(AuditError, match=r"^personas.generators lists baseline more than once: "
                                         r"list each generator once$"):
        generate_personas(PersonasConfig(generators=["baseline", "explicit", "baseline"]),
                          sources, seed=1)


def test_replicate_seeds_are_distinct_and_deterministic():
    seeds = [replicate_seed(5, replicate) for replicate in range(50)]
    assert len(set(seeds)) == 50
    assert seeds == [replicate_seed(5, replicate) for replicate in range(50)]


def test_baseline_sentence_is_empty():
    assert persona_sentence("patient", "baseline", "") == ""
    assert persona_sentence("patient", "null", "Qwertyuiop") == "The patient is Qwertyuiop."


def test_design_requires_a_model(items, personas, design_config):
    with pytest.raises(AuditError, match="no model to audit"):
        expand_design(items, personas, {}, design_config)
