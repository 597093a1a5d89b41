"""Simulated comparison pairs with a known change: what the benchmark and the tests fit.

Both sides answer the same items (shared difficulties) with the same persona texts (a text's own
pull, shared); each (persona text, item) prompt has its own pull, shared by both sides when the
pair is paired (the same prompt answered twice) and drawn afresh per side when it is not. Side A's
gap between the two levels of ``gender`` is ``gap_a``; side B's is ``gap_a + change``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

ATTRIBUTE = "gender"
LEVELS = ("female", "male")


def simulate_pair(rng: np.random.Generator, *, change: float, gap_a: float = 0.0,
                  n_items: int = 12, texts_per_level: int = 3, replicates: int = 2,
                  text_sd: float = 0.3, prompt_sd: float = 0.0, paired: bool = True,
                  base_rate: float = 0.0) -> pl.DataFrame:
    """A joint outcome table (comparison.joint_outcomes' columns) for sides A and B."""
    difficulty = rng.normal(0.0, 1.0, n_items)
    personas = [(f"{level}-{k}", level) for level in LEVELS for k in range(texts_per_level)]
    text_pull = rng.normal(0.0, text_sd, len(personas))
    shared_prompt = rng.normal(0.0, prompt_sd, (len(personas), n_items))
    rows = []
    for side, gap in (("A", gap_a), ("B", gap_a + change)):
        prompt_pull = shared_prompt if paired else rng.normal(0.0, prompt_sd, shared_prompt.shape)
        for index, (persona, level) in enumerate(personas):
            effect = gap / 2 if level == LEVELS[0] else -gap / 2
            logit = base_rate + effect + text_pull[index] - difficulty + prompt_pull[index]
            successes = rng.binomial(1, expit(logit), (replicates, n_items))
            for replicate in range(replicates):
                for item in range(n_items):
                    rows.append((f"{side}|{persona}", f"item{item:02d}",
                                 int(successes[replicate, item]), side, "explicit", persona,
                                 level))
    return pl.DataFrame(rows, orient="row", schema=[
        ("respondent", pl.String), ("item", pl.String), ("y", pl.Int64),
        ("model_name", pl.String), ("persona_kind", pl.String), ("persona_id", pl.String),
        (ATTRIBUTE, pl.String)])
