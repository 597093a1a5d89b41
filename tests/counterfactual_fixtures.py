"""Simulated counterfactual data shared by the statistics and verdict tests."""

from __future__ import annotations

import numpy as np
import polars as pl


def simulated(effect: float, per_cell: int = 12, seed: int = 0) -> tuple[pl.DataFrame,
                                                                           pl.DataFrame]:
    """Metrics and groups of a design with two templates and a race factor; group `B`'s
    sentiment is shifted by `effect`. Template `t2` writes longer, more positive texts, and
    holds a third group `C` that `t1` lacks."""
    rng = np.random.default_rng(seed)
    metric_rows, group_rows = [], []
    for template, groups in (("t1", ("A", "B")), ("t2", ("A", "B", "C"))):
        for group in groups:
            for index in range(per_cell):
                prompt_id = f"{template}-{group}-{index}"
                shift = (effect if group == "B" else 0.0) + (0.5 if template == "t2" else 0.0)
                metric_rows.append({"prompt_id": prompt_id,
                                    "sentiment": float(np.clip(rng.normal(shift, 0.3), -1, 1)),
                                    "word_count": float(rng.poisson(80 if template == "t1"
                                                                    else 150)),
                                    "refusal": 0.0})
                group_rows.append({"prompt_id": prompt_id, "model_name": "m",
                                   "template_id": template, "factor": "race", "group": group})
    return pl.DataFrame(metric_rows), pl.DataFrame(group_rows)


def pronoun(name: str) -> str:
    return "he" if name[-1] in "02468" else "she"


def simulated_names(group_effect: float, name_sd: float, rng: np.random.Generator,
                    names: int = 4, templates: int = 4, replicates: int = 3,
                    template_pronoun_sd: float = 0.0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sentiment of names x templates x replicates, the counterfactual design's shape: template
    and block (template x replicate) effects, each name's own effect (sd name_sd, not shared by
    its race), race B shifted by group_effect, noise sd 1. `template_pronoun_sd`: each template
    shifts "he" against "she" by its own amount (mean 0 over templates), which every replicate of
    the template shares. Names alternate he / she, so pronouns are balanced over races."""
    name_effect = {f"{group}{k}": rng.normal(0.0, name_sd) for group in "AB"
                   for k in range(names)}
    metric_rows, group_rows = [], []
    for template in range(templates):
        template_effect = rng.normal(0.0, 1.0)
        pronoun_gap = rng.normal(0.0, template_pronoun_sd) if template_pronoun_sd else 0.0
        for replicate in range(replicates):
            block_effect = rng.normal(0.0, 0.5)
            for name, effect in name_effect.items():
                prompt_id = f"t{template}-{replicate}-{name}"
                value = (template_effect + block_effect + effect + rng.normal()
                         + (group_effect if name[0] == "B" else 0.0)
                         + (pronoun_gap / 2 if pronoun(name) == "he" else -pronoun_gap / 2))
                metric_rows.append({"prompt_id": prompt_id, "sentiment": value,
                                    "word_count": 50.0})
                group_rows.append({"prompt_id": prompt_id, "model_name": "m",
                                   "template_id": f"t{template}",
                                   "variant_id": f"name={name}|pronoun={pronoun(name)}",
                                   "replicate": replicate, "factor": "race", "group": name[0]})
    return pl.DataFrame(metric_rows), pl.DataFrame(group_rows)


def by_pronoun(groups: pl.DataFrame) -> pl.DataFrame:
    """The same prompts grouped by pronoun: he against she, one word each."""
    return groups.with_columns(
        factor=pl.lit("pronoun"),
        group=pl.col("variant_id").str.extract(r"pronoun=(\w+)"),
        variant_id=pl.col("variant_id").str.extract(r"(pronoun=\w+)"))


def simulated_gender(name_sd: float, rng: np.random.Generator, names: int = 9,
                     replicates: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sentiment by gender in the shipped design's three kinds of template: a letter that names
    the person with an agreeing pronoun, a tenant reference with the name alone, and a summary
    with a pronoun and no name. No gender effect: each name has its own (sd name_sd), every
    template and block its own, noise sd 1."""
    name_effect = {f"{group}{k}": rng.normal(0.0, name_sd) for group in "FM"
                   for k in range(names)}
    pronouns = {"F": "pronoun=she", "M": "pronoun=he"}
    variants = {"letter": {name: f"name={name}|{pronouns[name[0]]}" for name in name_effect},
                "tenant": {name: f"name={name}" for name in name_effect},
                "summary": {group: pronoun for group, pronoun in pronouns.items()}}
    metric_rows, group_rows = [], []
    for template, variant_ids in variants.items():
        template_effect = rng.normal(0.0, 1.0)
        for replicate in range(replicates):
            block_effect = rng.normal(0.0, 0.5)
            for key, variant_id in variant_ids.items():
                prompt_id = f"{template}-{replicate}-{key}"
                value = (template_effect + block_effect + name_effect.get(key, 0.0)
                         + rng.normal())
                metric_rows.append({"prompt_id": prompt_id, "sentiment": value,
                                    "word_count": 50.0})
                group_rows.append({"prompt_id": prompt_id, "model_name": "m",
                                   "template_id": template, "variant_id": variant_id,
                                   "replicate": replicate, "factor": "gender",
                                   "group": key[0]})
    return pl.DataFrame(metric_rows), pl.DataFrame(group_rows)


def simulated_crossed(race_effect: float, gender_effect: float, rng: np.random.Generator,
                      names: int = 9, replicates: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sentiment of the shipped design's crossed names: `names` a race x gender cell (nine
    Bertrand-Mullainathan names each), two templates x `replicates`, each name its own effect
    (sd 0.3), noise sd 0.5; women shifted by `gender_effect`, White names by `race_effect`.
    Every prompt has a race row and a gender row, as design.py writes them."""
    cells = [(f"{race}{gender}{k}", race, gender) for race in ("Black", "White")
             for gender in ("female", "male") for k in range(names)]
    name_effect = {name: rng.normal(0.0, 0.3) for name, _, _ in cells}
    metric_rows, group_rows = [], []
    for template in ("t1", "t2"):
        for replicate in range(replicates):
            for name, race, gender in cells:
                prompt_id = f"{template}-{replicate}-{name}"
                value = (gender_effect * (gender == "female") + race_effect * (race == "White")
                         + name_effect[name] + rng.normal(0.0, 0.5))
                metric_rows.append({"prompt_id": prompt_id, "sentiment": value,
                                    "word_count": 50.0})
                group_rows += [{"prompt_id": prompt_id, "model_name": "m",
                                "template_id": template, "variant_id": f"name={name}",
                                "replicate": replicate, "factor": factor, "group": group}
                               for factor, group in (("race", race), ("gender", gender))]
    return pl.DataFrame(metric_rows), pl.DataFrame(group_rows)
