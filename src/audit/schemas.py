"""Pandera schemas for every table that crosses a stage boundary.

A stage validates what it writes and what it reads, so a malformed file (a hand-edited CSV, a
table from an older version) fails at the boundary with the column named, not deep in a fit.
"""

from __future__ import annotations

from typing import Optional

import pandera.polars as pa
import polars as pl

from audit.errors import AuditError

LABELS: tuple[str, ...] = ("favourable", "unfavourable", "needs_more_information", "refusal")
UNPARSEABLE = "unparseable"
LABEL_SOURCES: tuple[str, ...] = ("rule", "judge", "logprob", "none")
GOLD_CATEGORIES: tuple[str, ...] = ("plain", "hedge", "conditional", "refusal", "decide_then_ask",
                                    "rambling", "other_language", "injection",
                                    # in the styles of real chat models (data/README.md)
                                    "terse", "unsure_header", "decide_then_hedge", "essay",
                                    "markdown", "demographic", "synonym", "negation",
                                    "both_options", "truncated", "small_model")
PERSONA_KINDS: tuple[str, ...] = ("baseline", "explicit", "null", "name")
RESPONSE_STATUSES: tuple[str, ...] = ("ok", "error")
# A contrast's HDI against the ROPE: outside, inside, or neither (Kruschke 2018).
CONTRAST_DECISIONS: tuple[str, ...] = ("different", "equivalent", "undecided")


class ItemSchema(pa.DataFrameModel):
    """A decision scenario. `scenario` holds a `{persona}` slot for the persona sentence."""

    item_id: str = pa.Field(unique=True, str_matches=r"^[a-z0-9_]+$")
    domain: str
    role: str
    scenario: str = pa.Field(str_contains=r"\{persona\}")  # a regex: braces escaped
    question: str
    favourable_option: str
    unfavourable_option: str

    class Config:
        strict = "filter"
        coerce = True


class PersonaSchema(pa.DataFrameModel):
    """A persona. `descriptor` fills "The {role} is {descriptor}."; empty for the baseline."""

    persona_id: str = pa.Field(unique=True, str_matches=r"^[a-z0-9_]+$")
    kind: str = pa.Field(isin=list(PERSONA_KINDS))
    descriptor: str
    gender: str = pa.Field(nullable=True)
    race: str = pa.Field(nullable=True)

    class Config:
        strict = "filter"
        coerce = True


class PromptSchema(pa.DataFrameModel):
    """One independent request: a respondent (model x persona) answering an item once."""

    prompt_id: str = pa.Field(unique=True)
    respondent_id: str
    model_name: str
    persona_id: str
    persona_kind: str = pa.Field(isin=list(PERSONA_KINDS))
    gender: str = pa.Field(nullable=True)
    race: str = pa.Field(nullable=True)
    item_id: str
    domain: str
    replicate: int = pa.Field(ge=0)
    seed: int = pa.Field(ge=0)
    question: str
    favourable_option: str
    unfavourable_option: str
    system_prompt: str
    user_prompt: str

    class Config:
        strict = True
        coerce = True


class ResponseSchema(pa.DataFrameModel):
    """What came back for each prompt. Errors are rows too, so nothing silently vanishes."""

    prompt_id: str = pa.Field(unique=True)
    request_key: str
    status: str = pa.Field(isin=list(RESPONSE_STATUSES))
    response_text: str = pa.Field(nullable=True)
    error_kind: str = pa.Field(nullable=True)
    error_message: str = pa.Field(nullable=True)
    completion_tokens: int = pa.Field(nullable=True)
    latency_s: float = pa.Field(nullable=True)
    from_cache: bool

    class Config:
        strict = True
        coerce = True


class LabelSchema(pa.DataFrameModel):
    """The judge's label for each successful response, with where it came from.

    `agreement` is the share of the judge panel that voted for the label (null for a rule label);
    `p_favourable` and `decision_mass` come from the audited model's option log-probabilities
    when they were scored (null otherwise)."""

    prompt_id: str = pa.Field(unique=True)
    label: str = pa.Field(isin=[*LABELS, UNPARSEABLE])
    label_source: str = pa.Field(isin=list(LABEL_SOURCES))
    rationale: str
    agreement: float = pa.Field(nullable=True, ge=0, le=1)
    p_favourable: float = pa.Field(nullable=True, ge=0, le=1)
    decision_mass: float = pa.Field(nullable=True, ge=0, le=1)

    class Config:
        strict = True
        coerce = True


class VoteSchema(pa.DataFrameModel):
    """One judge's vote on one answer (`answer_id` is the prompt_id or gold_id judged)."""

    answer_id: str
    judge: str
    label: str = pa.Field(isin=[*LABELS, UNPARSEABLE])
    rationale: str

    class Config:
        strict = True
        coerce = True
        unique = ["answer_id", "judge"]


class GoldSchema(pa.DataFrameModel):
    """A hand-labelled answer of the judge's gold set (`data/judge_gold.csv`)."""

    gold_id: str = pa.Field(unique=True)
    item_id: str
    domain: str
    category: str = pa.Field(isin=list(GOLD_CATEGORIES))
    answer: str
    label: str = pa.Field(isin=list(LABELS))

    class Config:
        strict = "filter"
        coerce = True


class GoldResultSchema(pa.DataFrameModel):
    """The judge's label for each gold answer beside the true one (empty when not evaluated)."""

    gold_id: str = pa.Field(unique=True)
    category: str = pa.Field(isin=list(GOLD_CATEGORIES))
    domain: str
    true_label: str = pa.Field(isin=list(LABELS))
    label: str = pa.Field(isin=[*LABELS, UNPARSEABLE])
    label_source: str = pa.Field(isin=list(LABEL_SOURCES))
    rationale: str

    class Config:
        strict = True
        coerce = True


class OutcomeSchema(pa.DataFrameModel):
    """The long table the IRT fit reads: one row per response."""

    respondent: str
    item: str
    y: int = pa.Field(isin=[0, 1])

    class Config:
        strict = "filter"
        coerce = True


class SummarySchema(pa.DataFrameModel):
    """Posterior summary, one row per parameter (`theta[RESPONDENT]`, `b[ITEM]`, ...)."""

    parameter: str = pa.Field(unique=True)
    mean: float
    sd: float
    hdi_low: float
    hdi_high: float
    r_hat: float = pa.Field(nullable=True)
    ess_bulk: float = pa.Field(nullable=True)

    class Config:
        strict = False
        coerce = True


def validate(frame: pl.DataFrame, schema: type[pa.DataFrameModel], what: str) -> pl.DataFrame:
    """Validate with a one-line error that names the table, so users know which file is bad."""
    try:
        return schema.validate(frame, lazy=False)
    except (pa.errors.SchemaError, pa.errors.SchemaErrors) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise AuditError(f"{what} does not match {schema.__name__}: {first_line}") from error


class ContrastSchema(pa.DataFrameModel):
    """`fit/contrasts.csv` as its readers need it (the report, the metrics, the verdict): gaps
    between levels of an attribute judged against a ROPE; `outcome` names the outcome's fit
    when the run fitted more than one. The noise-floor columns are optional (null without two
    null personas, absent in older runs): the verdict and the report's headline read them."""

    outcome: Optional[str] = pa.Field(nullable=True)  # noqa: UP045 - pandera reads Optional
    model_name: str
    attribute: str
    level_a: str
    level_b: str
    mean: float
    sd: float
    hdi_low: float
    hdi_high: float
    p_direction: float
    rope_low: float
    rope_high: float
    decision: str = pa.Field(isin=list(CONTRAST_DECISIONS))
    noise_floor: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    ratio_to_noise: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    p_beyond_noise: Optional[float] = pa.Field(nullable=True)  # noqa: UP045

    class Config:
        strict = "filter"
        coerce = True
