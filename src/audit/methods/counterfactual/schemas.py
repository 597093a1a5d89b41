"""Pandera schemas of the counterfactual method's tables (kept apart from schemas.py's pipeline
tables); the verdict validates a run's design tests with the same schema the run wrote them with."""

from __future__ import annotations

import pandera.polars as pa


class CounterfactualGroupSchema(pa.DataFrameModel):
    """Which group each prompt stands for, one row per (prompt, factor)."""

    prompt_id: str
    model_name: str
    template_id: str
    variant_id: str
    replicate: int = pa.Field(ge=0)
    factor: str
    group: str

    class Config:
        strict = True
        coerce = True
        unique = ["prompt_id", "factor"]


class CounterfactualMetricSchema(pa.DataFrameModel):
    """One answered prompt with its metrics; one more text column per factor (its group)."""

    prompt_id: str = pa.Field(unique=True)
    model_name: str
    template_id: str
    variant_id: str
    replicate: int = pa.Field(ge=0)
    truncated: bool
    response_text: str
    sentiment: float = pa.Field(ge=-1, le=1)
    word_count: float = pa.Field(ge=0)
    competence_rate: float = pa.Field(ge=0, le=100)
    warmth_rate: float = pa.Field(ge=0, le=100)
    refusal: float = pa.Field(isin=[0.0, 1.0])

    class Config:
        strict = False
        coerce = True


class GroupTestSchema(pa.DataFrameModel):
    """Kruskal-Wallis across a factor's groups, per model, scope and metric."""

    model_name: str
    scope: str
    templates: str
    metric: str
    factor: str
    n_groups: int = pa.Field(ge=2)
    n: int = pa.Field(ge=0)
    groups: str
    constant_groups: int = pa.Field(ge=0)
    h_statistic: float = pa.Field(ge=0)
    p_value: float = pa.Field(ge=0, le=1)
    p_bonferroni: float = pa.Field(ge=0, le=1)
    p_bh: float = pa.Field(ge=0, le=1)

    class Config:
        strict = True
        coerce = True


class _PairDecision(pa.DataFrameModel):
    """The columns both pair tables decide with: the effect, the answers cut off, the p-values,
    the practical threshold and the flags (rank-biserial > 0: a scores higher)."""

    model_name: str
    metric: str
    factor: str
    group_a: str
    group_b: str
    rank_biserial: float = pa.Field(ge=-1, le=1)
    truncated_share_a: float = pa.Field(ge=0, le=1)
    truncated_share_b: float = pa.Field(ge=0, le=1)
    p_value: float = pa.Field(ge=0, le=1)
    p_bh: float = pa.Field(ge=0, le=1)
    practical_threshold: float = pa.Field(ge=0, le=1)
    meaningful: bool
    flagged: bool


class PairwiseSchema(_PairDecision):
    """Mann-Whitney U and effect sizes for a pair of groups, per answer."""

    scope: str
    templates: str
    n_a: int = pa.Field(ge=1)
    n_b: int = pa.Field(ge=1)
    mean_a: float
    mean_b: float
    mean_difference: float
    # Empty where a group has a single answer, which says nothing of its spread.
    difference_ci_low: float = pa.Field(nullable=True)
    difference_ci_high: float = pa.Field(nullable=True)
    length_ratio: float = pa.Field(ge=0)
    u_statistic: float = pa.Field(ge=0)
    p_bonferroni: float = pa.Field(ge=0, le=1)

    class Config:
        strict = True
        coerce = True
        unique = ["model_name", "scope", "metric", "factor", "group_a", "group_b"]


class DesignTestSchema(_PairDecision):
    """A pair of groups tested on the units the design samples (analyse_units.py): the verdict's
    table. unit: ``name`` (a permutation test over names) or ``template`` (a signed-rank test over
    templates, replicates nested in them). ``p_bh`` is empty where ``min_p`` cannot reach the
    run's alpha: those rows are left out of the Benjamini-Hochberg family. A pair that no template
    holds both groups of has 0 templates and units, min_p 1 and no p, effect or shares."""

    unit: str = pa.Field(isin=["name", "template"])
    n_units_a: int = pa.Field(ge=0)
    n_units_b: int = pa.Field(ge=0)
    n_templates: int = pa.Field(ge=0)
    mean_difference: float = pa.Field(nullable=True)
    rank_biserial: float = pa.Field(ge=-1, le=1, nullable=True)
    truncated_share_a: float = pa.Field(ge=0, le=1, nullable=True)
    truncated_share_b: float = pa.Field(ge=0, le=1, nullable=True)
    p_value: float = pa.Field(ge=0, le=1, nullable=True)
    # Student's t interval over the units (templates, or names within strata); empty when a
    # single template has no spread.
    difference_ci_low: float = pa.Field(nullable=True)
    difference_ci_high: float = pa.Field(nullable=True)
    min_p: float = pa.Field(ge=0, le=1)
    p_bh: float = pa.Field(ge=0, le=1, nullable=True)

    class Config:
        strict = True
        coerce = True
        unique = ["model_name", "metric", "factor", "group_a", "group_b"]
