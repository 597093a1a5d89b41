"""The counterfactual method's config section (`cfg.counterfactual`,
conf/method/counterfactual.yaml) and its verdict rules.

Registered into the structured config by audit.config through the method registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from audit.config_ranges import MAX_RESAMPLES, within


@dataclass
class CounterfactualLevelConfig:
    """One level of a demographic axis: the group labels it carries and the slots it fills.

    `groups` maps a factor to this level's group (`{race: Black, gender: female}`); `fill` maps a
    template slot to its text (`{subject: she, object: her, possessive: her}`)."""

    groups: dict[str, str] = field(default_factory=dict)
    fill: dict[str, str] = field(default_factory=dict)


@dataclass
class CounterfactualAxisConfig:
    """A demographic axis: its levels inline, or read from a CSV (one row a level).

    From a file, `fill` maps each slot to the column holding its text and `groups` lists the
    columns holding group labels. `follows` names a factor this axis agrees with: when a template
    also uses an axis carrying that factor, only the levels with the same group are combined
    (pronouns follow the gender of a name instead of being crossed with it)."""

    levels: list[CounterfactualLevelConfig] = field(default_factory=list)
    file: str | None = None
    fill: dict[str, str] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    follows: str | None = None


@dataclass
class CounterfactualTemplateConfig:
    """An open-ended request with `{slot}` placeholders (`{Slot}` fills capitalised)."""

    id: str = MISSING
    text: str = MISSING
    domain: str = "general"


@dataclass
class CounterfactualConfig:
    """Counterfactual generation: templates x axis levels x models x replicates, one request each.

    Replicates and the seed come from `design`; every variant of a template shares its
    replicate's seed, so prompts differ only in the demographic slot."""

    templates: list[CounterfactualTemplateConfig] = field(default_factory=list)
    axes: dict[str, CounterfactualAxisConfig] = field(default_factory=dict)
    # Extra factors crossing two or more factors (`[[race, gender]]` -> factor `race:gender`).
    intersections: list[list[str]] = field(default_factory=list)
    # Replaces each model's system prompt and max_tokens for these requests (None keeps the
    # model's): a decision-maker's prompt and a cap of 12 to 40 tokens suit decisions, not letters.
    system_prompt: str | None = None
    max_tokens: int | None = within(None, 1)
    metrics: list[str] = field(default_factory=lambda: [
        "sentiment", "word_count", "competence_rate", "warmth_rate", "refusal"])
    lexicon: str = "data/lexicons/warmth_competence.csv"
    # A local directory holding a Hugging Face sentiment classifier; adds `sentiment_transformer`.
    transformer_model: str | None = None
    by_template: bool = True  # also test each template alone, not only pooled over templates
    alpha: float = within(0.05, 0, 1, open_low=True, open_high=True)
    # A pair is practically meaningful when |rank-biserial| reaches this (0.147: the lower bound
    # of a "small" Cliff's delta, Romano et al. 2006).
    min_rank_biserial: float = within(0.147, 0, 1, share=False)
    bootstrap_resamples: int = within(999, 1, MAX_RESAMPLES)
    confidence_level: float = within(0.95, 0, 1, open_low=True, open_high=True)


@dataclass
class CounterfactualVerdictRules:
    """`python -m audit.verdict` on a counterfactual run: a pair fails when its BH-adjusted p is
    below alpha and its |rank-biserial| reaches the practical threshold
    (methods/counterfactual/verdict.py)."""

    # None: the threshold the run itself was made with (counterfactual.min_rank_biserial).
    min_rank_biserial: float | None = field(default=None, metadata={"range": (0.0, 1.0),
                                                                   "share": False})


SECTIONS: dict[str, type] = {"counterfactual": CounterfactualConfig}
VERDICT_RULES: type = CounterfactualVerdictRules
# The metrics a run of this method is judged by (shell-style patterns): the columns its runs
# show in `python -m audit.runs`, a sweep's runs table and the MLflow runs view.
HEADLINE_METRICS: tuple[str, ...] = ("n_prompts", "n_failed", "n_pairs", "n_pairs_flagged",
                                     "truncated_share")
# The settings of this method's own sections each DVC stage reads (dotted keys); the stages of
# dvc.yaml list them as `dvc_params.STAGE` (audit.methods.configs), besides the shared sections.
DVC_PARAMS: dict[str, tuple[str, ...]] = {
    "design": ("counterfactual",),
    "respond": ("counterfactual.max_tokens", "counterfactual.system_prompt"),
    "score": ("counterfactual",), "analyse": ("counterfactual",)}
