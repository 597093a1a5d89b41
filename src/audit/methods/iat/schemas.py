"""Pandera schemas of the IAT method's tables, kept beside the method (schemas.py is shared)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class IATPromptSchema(pa.DataFrameModel):
    """One independent request: a model assigning one dataset's attributes in one wording.

    The engine reads prompt_id, model_name, seed, system_prompt and user_prompt; the rest says
    what the prompt showed, so every score can be traced to its exact words and order."""

    prompt_id: str = pa.Field(unique=True)
    model_name: str
    category: str
    dataset: str
    variation: str
    iteration: int = pa.Field(ge=0)
    seed: int = pa.Field(ge=0)
    default_word: str
    stigma_word: str
    default_first: bool
    attributes: str  # JSON list, in the order the prompt showed them
    system_prompt: str
    user_prompt: str

    class Config:
        strict = True
        coerce = True


# Column types of the scores table, for building it from rows (the schema below validates it).
SCORE_COLUMNS: dict[str, pl.DataType] = {
    "model": pl.String, "category": pl.String, "dataset": pl.String, "variation": pl.String,
    "response_id": pl.String, "iteration": pl.Int64, "response_text": pl.String,
    "parsed": pl.Boolean, "n_expected": pl.Int64, "n_assigned": pl.Int64,
    "n_conflicting": pl.Int64, "n_missing": pl.Int64, "default_positive": pl.Int64,
    "default_negative": pl.Int64, "stigma_positive": pl.Int64, "stigma_negative": pl.Int64,
    "one_group": pl.Boolean, "d_score": pl.Float64,
}


class IATScoreSchema(pa.DataFrameModel):
    """One answer: whether it parsed completely, what it assigned, and its D.

    `parsed` means every attribute of the prompt was given exactly one group; the four counts
    hold only such attributes (an attribute given to both groups is `n_conflicting`).
    `one_group`: every counted word went to one group (D about -0.50 by the formula; flagged).
    `d_score` is null where no reading gives D: nothing counted, or a partial answer with one
    group's side empty. Strict scoring (iat.scoring, the default) uses only `parsed` rows."""

    model: str
    category: str
    dataset: str
    variation: str
    response_id: str
    iteration: int = pa.Field(nullable=True, ge=0)
    response_text: str = pa.Field(nullable=True)
    parsed: bool
    n_expected: int = pa.Field(ge=1)
    n_assigned: int = pa.Field(ge=0)
    n_conflicting: int = pa.Field(ge=0)
    n_missing: int = pa.Field(ge=0)
    default_positive: int = pa.Field(ge=0)
    default_negative: int = pa.Field(ge=0)
    stigma_positive: int = pa.Field(ge=0)
    stigma_negative: int = pa.Field(ge=0)
    one_group: bool
    d_score: float = pa.Field(ge=-1.0, le=1.0, nullable=True)

    class Config:
        strict = True
        coerce = True
        unique = ["model", "dataset", "variation", "response_id"]


STATS_COLUMNS = ["model", "category", "dataset", "n", "n_left_out_strict", "n_left_out_lenient",
                 "n_one_group", "parse_rate", "mean_d", "ci_low", "ci_high", "mean_d_test",
                 "p_value", "min_p", "p_adjusted"]


class IATStatsSchema(pa.DataFrameModel):
    """Per model x category x dataset (x variation in the by-variation table): the mean D of
    n answers with a bootstrap interval, a sign-flip permutation p-value for mean D = 0, and
    the Benjamini-Hochberg adjusted p-value across every test in the table. Intervals and
    p-values are null where n is too small to compute them. n counts the answers scored in the
    configured mode (iat.scoring); n_left_out_strict and n_left_out_lenient how many answers of
    the group each mode leaves out; n_one_group how many of the n give every word to one group.
    mean_d and its interval keep such answers' D of -0.50 (comparable with Bai et al.); the test
    scores them 0, no association: mean_d_test is its mean, p_value its p, and min_p the smallest
    p the group's answers could reach (2 / 2**k for k answers with a D other than 0)."""

    model: str
    category: str
    dataset: str
    n: int = pa.Field(ge=0)
    n_left_out_strict: int = pa.Field(ge=0)
    n_left_out_lenient: int = pa.Field(ge=0)
    n_one_group: int = pa.Field(ge=0)
    parse_rate: float = pa.Field(ge=0.0, le=1.0, nullable=True)
    mean_d: float = pa.Field(nullable=True)
    ci_low: float = pa.Field(nullable=True)
    ci_high: float = pa.Field(nullable=True)
    mean_d_test: float = pa.Field(nullable=True)
    p_value: float = pa.Field(ge=0.0, le=1.0, nullable=True)
    min_p: float = pa.Field(ge=0.0, le=1.0)
    p_adjusted: float = pa.Field(ge=0.0, le=1.0, nullable=True)

    class Config:
        strict = False  # the by-variation table adds a variation column
        coerce = True
