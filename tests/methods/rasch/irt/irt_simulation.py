"""Simulated audits with known persona effects, shared by the IRT recovery and coverage tests."""

from __future__ import annotations

import numpy as np
import polars as pl

GENDERS = ("man", "woman")
RACES = ("Asian", "Black", "Hispanic", "White")


def persona_frame(null_count: int, texts_per_cell: int = 1) -> pl.DataFrame:
    """One explicit persona text per gender x race cell (the first keeps the old ids), more with
    texts_per_cell, the baseline and null_count null personas."""
    rows = [{"persona_id": f"{race.lower()}_{gender}" + (f"_{text}" if text else ""),
             "persona_kind": "explicit", "gender": gender, "race": race}
            for gender in GENDERS for race in RACES for text in range(texts_per_cell)]
    rows.append({"persona_id": "baseline", "persona_kind": "baseline", "gender": None,
                 "race": None})
    rows += [{"persona_id": f"null_{k}", "persona_kind": "null", "gender": None, "race": None}
             for k in range(null_count)]
    return pl.DataFrame(rows, schema={"persona_id": pl.String, "persona_kind": pl.String,
                                      "gender": pl.String, "race": pl.String})


def simulate_audit(race_effect: dict[str, float], *, models: tuple[str, ...] = ("m1",),
                   items: int = 12, replicates: int = 4, null_count: int = 4,
                   residual_sd: float = 0.2, null_sd: float = 0.2, model_rate: float = 0.0,
                   item_sd: float = 1.0, item_dif: dict[tuple[str, int], float] | None = None,
                   real_shift: float = 0.0, texts_per_cell: int = 1,
                   seed: int = 1) -> pl.DataFrame:
    """Long outcome table (respondent, item, y, model_name, persona_kind, gender, race).

    theta = model_rate + race_effect[race] + residual (sd residual_sd, or null_sd for null
    personas), plus real_shift for every persona that is not null; item_dif adds a shift to
    (race, item index) cells. texts_per_cell > 1: several persona texts per gender x race cell,
    each with its own residual, so residual_sd is the spread of texts within a demographic cell.
    """
    rng = np.random.default_rng(seed)
    personas = persona_frame(null_count, texts_per_cell)
    difficulty = rng.normal(0.0, item_sd, items)
    difficulty -= difficulty.mean()
    rows = []
    for model_name in models:
        for persona in personas.iter_rows(named=True):
            spread = null_sd if persona["persona_kind"] == "null" else residual_sd
            theta = model_rate + race_effect.get(persona["race"], 0.0) + rng.normal(0, spread)
            theta += 0.0 if persona["persona_kind"] == "null" else real_shift
            for item in range(items):
                shift = (item_dif or {}).get((persona["race"], item), 0.0)
                p = 1.0 / (1.0 + np.exp(-(theta - difficulty[item] + shift)))
                for y in rng.random(replicates) < p:
                    rows.append({"respondent": f"{model_name}__{persona['persona_id']}",
                                 "item": f"i{item:02d}", "y": int(y), "model_name": model_name,
                                 **{key: persona[key] for key in ("persona_kind", "gender",
                                                                  "race")}})
    return pl.DataFrame(rows).with_columns(pl.col("gender", "race").cast(pl.String))


def through_judge(outcomes: pl.DataFrame, sensitivity: float, specificity: float,
                  seed: int) -> pl.DataFrame:
    """The same table with each true y replaced by what a noisy judge would label it."""
    rng = np.random.default_rng(seed)
    truth = outcomes.get_column("y").to_numpy()
    draws = rng.random(truth.size)
    judged = np.where(truth == 1, draws < sensitivity, draws >= specificity).astype(np.int64)
    return outcomes.with_columns(pl.Series("y", judged))


def gold_results(n_favourable: int, n_unfavourable: int, sensitivity: float,
                 specificity: float, seed: int) -> pl.DataFrame:
    """A judge's gold-set results (true_label, label) drawn with the given error rates."""
    rng = np.random.default_rng(seed)
    truth = ["favourable"] * n_favourable + ["unfavourable"] * n_unfavourable
    right = rng.random(len(truth)) < np.where(np.array(truth) == "favourable", sensitivity,
                                              specificity)
    flip = {"favourable": "unfavourable", "unfavourable": "favourable"}
    judged = [label if ok else flip[label] for label, ok in zip(truth, right)]
    return pl.DataFrame({"true_label": truth, "label": judged})


def abstaining_audit_tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Prompts and labels of a one-model simulated audit for the fit stage: every third answer
    abstains, the rest follow the simulated decision."""
    outcomes = simulate_audit({}, items=4, replicates=3, null_count=3, seed=2).with_row_index(
        "row")
    prompts = outcomes.select(
        pl.format("p{}", "row").alias("prompt_id"), pl.col("respondent").alias("respondent_id"),
        pl.col("item").alias("item_id"), "model_name", "persona_kind", "gender", "race")
    label = pl.when(pl.col("row") % 3 == 0).then(pl.lit("needs_more_information")).when(
        pl.col("y") == 1).then(pl.lit("favourable")).otherwise(pl.lit("unfavourable"))
    labels = outcomes.select(pl.format("p{}", "row").alias("prompt_id"), label.alias("label"))
    return prompts, labels
