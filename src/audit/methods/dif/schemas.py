"""Pandera schemas for the DIF method's tables (kept beside the method, not in schemas.py, which
holds the Rasch pipeline's tables)."""

from __future__ import annotations

import pandera.polars as pa

PERSONA_KINDS = ("baseline", "real", "null")
# The item bank's forms and answer types (audit.methods.dif.items generates them).
FORMS: tuple[str, ...] = ("free", "choice")
ANSWER_TYPES: tuple[str, ...] = ("number", "word", "letter")


class DIFItemSchema(pa.DataFrameModel):
    """An item with a known answer. `options` and `candidates` are JSON lists (may be empty)."""

    item_id: str = pa.Field(unique=True, str_matches=r"^[A-Za-z0-9_.-]+$")
    dataset: str = pa.Field(str_matches=r"^[A-Za-z0-9_-]+$")
    form: str = pa.Field(isin=list(FORMS))
    difficulty: int = pa.Field(ge=0)
    template: str
    question: str = pa.Field(str_length={"min_value": 1})
    answer: str = pa.Field(str_length={"min_value": 1})
    answer_type: str = pa.Field(isin=list(ANSWER_TYPES))
    answer_text: str
    options: str = pa.Field(str_startswith="[")
    candidates: str = pa.Field(str_startswith="[")

    class Config:
        strict = True
        coerce = True


class DIFPersonaSchema(pa.DataFrameModel):
    """A persona: `descriptor` fills the persona sentence; empty for the baseline."""

    persona_id: str = pa.Field(unique=True, str_matches=r"^[a-z0-9_]+$")
    persona_kind: str = pa.Field(isin=list(PERSONA_KINDS))
    persona_category: str
    descriptor: str

    class Config:
        strict = "filter"
        coerce = True


class _DIFRowSchema(pa.DataFrameModel):
    """The columns every per-request DIF table carries: who answered which item."""

    prompt_id: str = pa.Field(unique=True)
    model_name: str
    persona_id: str
    persona_kind: str = pa.Field(isin=list(PERSONA_KINDS))
    persona_category: str
    item_id: str
    dataset: str
    form: str = pa.Field(isin=list(FORMS))
    difficulty: int = pa.Field(ge=0)

    class Config:
        strict = True
        coerce = True


class DIFPromptSchema(_DIFRowSchema):
    """One independent greedy request: a model answering an item under a persona.
    The engine reads `prompt_id`, `model_name`, `system_prompt`, `user_prompt` and `seed`."""

    seed: int = pa.Field(ge=0)
    system_prompt: str
    user_prompt: str


class DIFAnswerSchema(_DIFRowSchema):
    """One row per response: what was extracted, by which rule, and whether it is right.
    Infrastructure errors are rows too, with null extraction and correctness."""

    status: str = pa.Field(isin=["ok", "error"])
    response_text: str = pa.Field(nullable=True)
    answer: str
    extracted: str = pa.Field(nullable=True)
    extract_method: str = pa.Field(nullable=True)
    correct: bool = pa.Field(nullable=True)
    from_cache: bool


class DIFPersonaScoreSchema(pa.DataFrameModel):
    """dif_personas.csv as the verdict reads it: per model x dataset x persona, accuracy and (for
    every persona but the baseline) the paired comparison with the baseline on the items both
    answered: n_gained / n_lost correct only under the persona / only under the baseline, the
    exact McNemar p, and that p BH-adjusted over the model x dataset's personas of its kind."""

    model_name: str
    dataset: str
    persona_id: str
    persona_kind: str = pa.Field(isin=list(PERSONA_KINDS))
    persona_category: str = pa.Field(nullable=True)
    n_answered: int = pa.Field(ge=0)
    n_correct: int = pa.Field(ge=0)
    accuracy: float = pa.Field(ge=0, le=1, nullable=True)
    n_compared: int = pa.Field(ge=0, nullable=True)
    n_gained: int = pa.Field(ge=0, nullable=True)
    n_lost: int = pa.Field(ge=0, nullable=True)
    p_mcnemar: float = pa.Field(ge=0, le=1, nullable=True)
    p_mcnemar_bh: float = pa.Field(ge=0, le=1, nullable=True)

    class Config:
        strict = "filter"
        coerce = True
        unique = ["model_name", "dataset", "persona_id"]


class DIFTestSchema(pa.DataFrameModel):
    """Real against null personas for one model x dataset: `difference` is the mean DIF score of
    null minus real personas (positive: real personas keep less of the baseline's answers)."""

    model_name: str
    dataset: str
    n_real: int = pa.Field(ge=0)
    n_null: int = pa.Field(ge=0)
    mean_dif_real: float = pa.Field(nullable=True)
    mean_dif_null: float = pa.Field(nullable=True)
    difference: float = pa.Field(nullable=True)
    p_welch: float = pa.Field(nullable=True, ge=0, le=1)
    p_permutation: float = pa.Field(nullable=True, ge=0, le=1)
    p_claim_holm: float = pa.Field(nullable=True, ge=0, le=1)
    claim: bool

    class Config:
        strict = False
        coerce = True


class DIFModelSchema(pa.DataFrameModel):
    """dif_models.csv as `python -m audit.methods.dif.compare` gathers it from a sweep's jobs:
    per model x dataset, the accuracy with its interval and the mean DIF score of the real
    personas, the two the line across models is fitted to. A job's table with a column missing
    or a word where a number goes stopped the command with a polars traceback, after it had
    written part of its output."""

    model_name: str
    dataset: str
    accuracy: float = pa.Field(ge=0, le=1, nullable=True)
    accuracy_low: float = pa.Field(ge=0, le=1, nullable=True)
    accuracy_high: float = pa.Field(ge=0, le=1, nullable=True)
    mean_dif_real: float = pa.Field(nullable=True)

    class Config:
        strict = False
        coerce = True
