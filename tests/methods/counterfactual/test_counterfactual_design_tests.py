"""Design-respecting counterfactual tests: a name's own effect is not a group's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from audit.methods.counterfactual.analyse import design_tests, group_units
from audit.methods.counterfactual.analyse import (
    POOLED_SCOPE,
    StatsSettings,
    comparisons,
    observations,
    pairwise_tests,
)

SETTINGS = StatsSettings(bootstrap_resamples=99)


def pronoun(name: str) -> str:
    return "he" if name[-1] in "02" else "she"


def simulated(group_effect: float, name_sd: float, rng: np.random.Generator, names: int = 4,
              templates: int = 4, replicates: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sentiment of names x templates x replicates: template and block effects, each name's own
    effect (sd name_sd, not shared by its group), group B shifted by group_effect, noise sd 1."""
    name_effect = {f"{group}{k}": rng.normal(0.0, name_sd) for group in "AB"
                   for k in range(names)}
    metric_rows, group_rows = [], []
    for template in range(templates):
        template_effect = rng.normal(0.0, 1.0)
        for replicate in range(replicates):
            block_effect = rng.normal(0.0, 0.5)
            for name, effect in name_effect.items():
                prompt_id = f"t{template}-{replicate}-{name}"
                value = (template_effect + block_effect + effect + rng.normal()
                         + (group_effect if name[0] == "B" else 0.0))
                metric_rows.append({"prompt_id": prompt_id, "sentiment": value,
                                    "word_count": 50.0})
                group_rows.append({"prompt_id": prompt_id, "model_name": "m",
                                   "template_id": f"t{template}",
                                   "variant_id": f"name={name}|pronoun={pronoun(name)}",
                                   "replicate": replicate, "factor": "race", "group": name[0]})
    return pl.DataFrame(metric_rows), pl.DataFrame(group_rows)


def test_the_unit_of_a_group_is_the_axis_level_that_decides_it():
    groups = pl.DataFrame({
        "prompt_id": ["1", "2", "3", "4", "5", "6", "7", "8"],
        "variant_id": ["name=jamal|pronoun=he", "name=jamal|pronoun=he",
                       "name=greg|pronoun=he", "name=lakisha|pronoun=she"] * 2,
        "factor": ["race"] * 4 + ["gender"] * 4,
        "group": ["Black", "Black", "White", "Black", "man", "man", "man", "woman"],
    })
    units = dict(zip(zip(groups["factor"], groups["variant_id"]),
                     group_units(groups)["unit"], strict=True))
    # For race only the name decides the group (he goes with Jamal and Greg alike).
    assert units[("race", "name=jamal|pronoun=he")] == "name=jamal"
    assert units[("race", "name=greg|pronoun=he")] == "name=greg"
    assert units[("gender", "name=lakisha|pronoun=she")] == "name=lakisha|pronoun=she"


def _rejection_rates(group_effect: float, name_sd: float, runs: int,
                     replicates: int = 3) -> tuple[float, float]:
    rng = np.random.default_rng(2026)
    old, new = [], []
    for _ in range(runs):
        metrics, groups = simulated(group_effect, name_sd, rng, replicates=replicates)
        long = observations(metrics, groups, ["sentiment"])
        pairs = comparisons(long, by_template=False)[1]
        pooled = pairwise_tests(pairs, SETTINGS).filter(pl.col("scope") == POOLED_SCOPE)
        old.append(pooled.row(0, named=True)["p_value"] < 0.05)
        tested = design_tests(metrics, groups, ["sentiment"], SETTINGS).row(0, named=True)
        assert tested["unit"] == "name" and tested["n_units_a"] == 4
        new.append(tested["p_value"] < 0.05)
    return float(np.mean(old)), float(np.mean(new))


def test_a_name_effect_not_shared_by_the_group_is_not_a_group_claim():
    """No group effect, each name its own (sd 0.7 against noise sd 1): the per-text Mann-Whitney
    treats 80 answers per group (4 names x 4 templates x 5 replicates) as independent and
    rejects far above 5% (39% here); the name-level test stays at its level (3% here; the bound
    is three binomial standard errors above 0.05 over 200 data sets)."""
    runs = 200
    old, new = _rejection_rates(group_effect=0.0, name_sd=0.7, runs=runs, replicates=5)
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    assert new <= bound, new
    assert old > 2 * bound, old


def test_a_group_effect_shared_by_its_names_is_found():
    """The name-level test is not merely timid: a one-unit group shift with small name effects
    is found in most data sets (4 names a group: the exact test's smallest p is 0.029)."""
    old, new = _rejection_rates(group_effect=1.0, name_sd=0.1, runs=30)
    assert new > 0.7, new


def test_one_level_per_group_is_tested_on_its_blocks():
    rng = np.random.default_rng(3)
    metrics, groups = simulated(0.8, 0.0, rng, names=4)
    # Regroup by pronoun: he against she, each one word, so the blocks carry the claim.
    by_pronoun = groups.with_columns(
        factor=pl.lit("pronoun"),
        group=pl.col("variant_id").str.extract(r"pronoun=(\w+)"),
        variant_id=pl.col("variant_id").str.extract(r"(pronoun=\w+)"))
    row = design_tests(metrics, by_pronoun, ["sentiment"], SETTINGS).row(0, named=True)
    assert row["unit"] == "block" and row["n_blocks"] == 12
    assert row["min_p"] == pytest.approx(2 / 2**12)
    # Pronouns are balanced over groups A and B here, so the 0.8 shift of B does not show.
    assert abs(row["mean_difference"]) < 0.5
