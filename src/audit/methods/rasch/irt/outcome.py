"""Outcome coding: which judge labels count as the binary outcome a Rasch model sees.

The coding is configuration, not code, because the same labels support different questions:
"who is treated favourably" (``favourable``) or the original audit's "who does the model hedge
on" (``undetermined``). Keeping every coding in one table makes the choice visible in a run's
parameters and impossible to mistype silently.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import polars as pl

from audit.errors import AuditError
from audit.schemas import validate
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE, OutcomeSchema

logger = logging.getLogger(__name__)

# Every coding maps each label in LABELS to 0 or 1; `unparseable` is never coded because an
# answer the judge could not read says nothing about how the respondent was treated, and
# `judge_failed` (a judge request that failed) is no label at all.
NEVER_CODED: tuple[str, ...] = (UNPARSEABLE, JUDGE_FAILED)
OUTCOME_CODINGS: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        "favourable": MappingProxyType(
            {
                "favourable": 1,
                "unfavourable": 0,
                "needs_more_information": 0,
                "refusal": 0,
            }
        ),
        # The coding of the original Rasch audit: 1 = the model would not decide.
        "undetermined": MappingProxyType(
            {
                "favourable": 0,
                "unfavourable": 0,
                "needs_more_information": 1,
                "refusal": 0,
            }
        ),
    }
)

REQUIRED_LABEL_COLUMNS: tuple[str, ...] = ("respondent_id", "item_id", "label")
OUTCOME_COLUMNS: tuple[str, ...] = ("respondent", "item", "y")


def dropped_labels(coding: str, drop_labels: Sequence[str]) -> list[str]:
    """The labels of ``drop_labels`` that `coding` drops: all but its event (y = 1), which is
    never dropped (code_outcomes). The judge's gold counts drop the same labels
    (judge_error.judge_confusion), so the rates are those of the labels the fit reads."""
    mapping = dict(OUTCOME_CODINGS[coding])
    return [label for label in drop_labels if mapping.get(label) != 1]


def code_outcomes(
    labels: pl.DataFrame, coding: str, drop_labels: Sequence[str] = ()
) -> pl.DataFrame:
    """Turn labelled responses into the long 0/1 table the IRT fit reads.

    Unparseable answers are always dropped; ``drop_labels`` removes further labels (for example
    refusals, when a refusal should not count as unfavourable) before coding, so the dropped
    responses leave the denominator instead of becoming zeros. A label the coding counts as its
    event (y = 1) is never dropped: ``fit.drop_labels`` is shared by ``fit.outcome`` and
    ``fit.second_outcome``, and dropping ``needs_more_information`` from the favourability fit
    must not leave the abstention fit without a single event. Columns beyond the required ones
    (``label`` included) are kept after ``respondent, item, y`` so later stages can still group
    by model, persona or domain.
    """
    if coding not in OUTCOME_CODINGS:
        valid = ", ".join(sorted(OUTCOME_CODINGS))
        raise AuditError(f"unknown outcome coding {coding!r}; valid codings: {valid}")
    missing = [column for column in REQUIRED_LABEL_COLUMNS if column not in labels.columns]
    if missing:
        raise AuditError(
            f"labels table lacks column(s) {', '.join(missing)}; "
            f"it needs {', '.join(REQUIRED_LABEL_COLUMNS)}"
        )
    clashing = [column for column in OUTCOME_COLUMNS if column in labels.columns]
    if clashing:
        raise AuditError(
            f"labels table already has column(s) {', '.join(clashing)}, which coding would "
            "overwrite; rename or drop them first"
        )
    unknown_drops = sorted(set(drop_labels) - set(LABELS) - set(NEVER_CODED))
    if unknown_drops:
        raise AuditError(
            f"drop_labels holds unknown label(s) {', '.join(unknown_drops)}; "
            f"known labels: {', '.join(LABELS)}"
        )
    labels = labels.with_columns(pl.col("label").cast(pl.String))  # an empty column has no type
    present = set(labels.get_column("label").unique().to_list())
    unknown_labels = sorted(str(label) for label in present - set(LABELS) - set(NEVER_CODED))
    if unknown_labels:
        raise AuditError(
            f"labels table holds unknown label(s) {', '.join(unknown_labels)}; "
            f"known labels: {', '.join((*LABELS, *NEVER_CODED))}"
        )

    mapping = dict(OUTCOME_CODINGS[coding])
    events = sorted(label for label in set(drop_labels) if mapping.get(label) == 1)
    if events:
        logger.info("coding %s: kept %s although drop_labels names it: it is this coding's "
                    "event, and dropping it would leave no 1s to fit", coding, ", ".join(events))
    excluded = [*NEVER_CODED, *dropped_labels(coding, drop_labels)]
    kept_columns = [column for column in labels.columns if column not in ("respondent_id", "item_id")]
    coded = labels.filter(~pl.col("label").is_in(excluded)).select(
        pl.col("respondent_id").cast(pl.String).alias("respondent"),
        pl.col("item_id").cast(pl.String).alias("item"),
        pl.col("label").replace_strict(mapping, return_dtype=pl.Int64).alias("y"),
        *kept_columns,
    )
    # OutcomeSchema filters columns it does not name, so validate the core and re-attach the rest.
    core = validate(coded.select(OUTCOME_COLUMNS), OutcomeSchema, "coded outcomes")
    return pl.concat([core, coded.select(kept_columns)], how="horizontal")
