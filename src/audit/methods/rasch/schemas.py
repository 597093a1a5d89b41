"""Pandera schemas of the Rasch audit's own tables: labels and judge votes, the judge's gold set and
its results, the fit's outcome table, posterior summary and contrasts. The shared ones (items,
personas, prompts, responses) are in audit.schemas.
"""

from __future__ import annotations

from typing import Optional

import pandera.polars as pa

LABELS: tuple[str, ...] = ("favourable", "unfavourable", "needs_more_information", "refusal")
UNPARSEABLE = "unparseable"
# Not a label: the record of a judge request (or an option score) that failed after its retries,
# kept in the label column so the row says why the answer has no label. Infrastructure is not
# behaviour: it is never coded (irt/outcome.py), never counted as a judge mistake on the gold
# set (judge/gold.py), and the score stage fails on it beyond engine.max_failed_share. It is
# rebuilt from the response store on every run, which never serves a failed request, so a rerun
# asks again.
JUDGE_FAILED = "judge_failed"
# What the label column of labels, votes and gold results may hold.
LABEL_VALUES: tuple[str, ...] = (*LABELS, UNPARSEABLE, JUDGE_FAILED)
# imported: a decision that came with answers collected elsewhere (python -m audit.ingest).
LABEL_SOURCES: tuple[str, ...] = ("rule", "judge", "logprob", "none", "imported")
# Decisions no judge made, which a gold set of answer texts cannot measure: the audited model's
# own option probabilities (logprob) and decisions that came with imported answers. The fit reads
# them as given; imported ones are corrected by `python -m audit.fit gold=`/`confusion=`.
UNJUDGED_SOURCES: tuple[str, ...] = ("logprob", "imported")
# How imported decisions are corrected, as the fit's log, the report and the ingest check say it.
IMPORTED_DECISIONS_FIX = ("to correct them, give their gold labels or confusion counts to `python "
                          "-m audit.fit` (gold= or confusion=; docs/ingest.md)")
GOLD_CATEGORIES: tuple[str, ...] = ("plain", "hedge", "conditional", "refusal", "decide_then_ask",
                                    "rambling", "other_language", "injection",
                                    # in the styles of real chat models (data/README.md)
                                    "terse", "unsure_header", "decide_then_hedge", "essay",
                                    "markdown", "demographic", "synonym", "negation",
                                    "both_options", "truncated", "small_model")
# A contrast's HDI against the ROPE: outside, inside, or neither (Kruschke 2018).
CONTRAST_DECISIONS: tuple[str, ...] = ("different", "equivalent", "undecided")


class LabelSchema(pa.DataFrameModel):
    """The judge's label for each successful response, with where it came from.

    `label` is one of LABELS, `unparseable`, or `judge_failed` (no label: the judge's request
    failed). `agreement` is the share of the whole judge panel that voted for the label, failed
    and abstaining judges included (null for a rule label);
    `p_favourable` and `decision_mass` come from the audited model's option log-probabilities
    when they were scored (null otherwise)."""

    prompt_id: str = pa.Field(unique=True)
    label: str = pa.Field(isin=list(LABEL_VALUES))
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
    label: str = pa.Field(isin=list(LABEL_VALUES))
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
    label: str = pa.Field(isin=list(LABEL_VALUES))
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


class ContrastSchema(pa.DataFrameModel):
    """`fit/contrasts.csv` as its readers need it (the report, the metrics, the verdict): gaps
    between levels of an attribute judged against a ROPE; `outcome` names the outcome's fit
    when the run fitted more than one. The noise-floor and null-rank columns are optional (null
    without two null personas, absent in older runs; the floor's interval came later still), and so are the family-wise decision
    columns: a run written before them was decided on its `hdi_low`/`hdi_high`, and the verdict
    reads it that way."""

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
    familywise_alpha: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    family_size: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    decision_prob: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    decision_low: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    decision_high: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    decision_interval_kind: Optional[str] = pa.Field(  # noqa: UP045
        nullable=True, isin=["hdi", "normal"])  # stats.intervals.decision_bounds
    noise_floor: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    noise_floor_low: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    noise_floor_high: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    ratio_to_noise: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    p_beyond_noise: Optional[float] = pa.Field(nullable=True)  # noqa: UP045
    null_percentile: Optional[float] = pa.Field(nullable=True)  # noqa: UP045

    class Config:
        strict = "filter"
        coerce = True
