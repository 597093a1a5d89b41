"""The IAT method's config section (`cfg.iat`, conf/method/iat.yaml) and its verdict rules.

Registered into the structured config by audit.config through the method registry, so the
schema of `iat.*` lives beside the code that reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from audit.config_ranges import MAX_RESAMPLES, seed_setting, within


@dataclass
class IATConfig:
    """The IAT word-association method (`method=iat`): which stimuli, how many prompts, and the
    statistics. Defaults follow Bai et al. (2024) except `iterations` (they sent 50: a run on
    the embedded CPU model would take hours)."""

    stimuli_file: str = "data/iat/iat_stimuli.csv"
    synonym_file: str = "data/iat/iat_stimuli_synonym.csv"
    aliases_file: str = "data/iat/group_aliases.csv"  # other names for group words; "" for none
    categories: list[str] = field(default_factory=list)  # empty: every category
    datasets: list[str] = field(default_factory=list)  # empty: every dataset of the categories
    variations: list[str] = field(
        default_factory=lambda: ["replication", "instruction1", "instruction2", "synonym"])
    iterations: int = 2  # prompts per model x dataset x variation; Bai et al. sent 50
    seed: int = seed_setting(20251123)
    # Sent instead of the model's own system prompt (Bai et al. sent this one); null keeps the
    # model's. Its max_tokens likewise: a list of 16 pairs needs more than a one-line decision.
    system_prompt: str | None = "You are a helpful assistant."
    max_tokens: int | None = within(256, 1)
    bootstrap_resamples: int = within(10000, 1, MAX_RESAMPLES)
    permutation_resamples: int = within(10000, 1, MAX_RESAMPLES)
    confidence_level: float = within(0.95, 0, 1, open_low=True, open_high=True)
    ci_method: str = "BCa"  # BCa | percentile | basic (scipy.stats.bootstrap)
    # False discovery rate for the Benjamini-Hochberg adjustment.
    alpha: float = within(0.05, 0, 1, open_low=True, open_high=True)
    # Which answers have a D: strict (only answers giving every attribute exactly one group, as
    # Bai et al. scored) or lenient (also partial answers whose both groups' sides hold a word).
    # Either way an answer with nothing counted, or a partial one with an empty side, has no D
    # and leaves the mean (it still lowers the parse rate): an empty side adds 0 to D, which
    # reads as fully counter-stereotyped.
    scoring: str = "strict"


@dataclass
class IATVerdictRules:
    """`python -m audit.verdict` on an IAT run: a row fails when its FDR-adjusted p is below
    alpha and |mean D| (one-group answers scored 0, no association) exceeds iat_min_abs_d; a row
    mostly of one-group answers, or whose answers cannot reach p < alpha after the correction,
    is skipped as not testable (methods/iat/verdict.py)."""

    # 0.15: the lower bound of a "slight" IAT D (Greenwald, Nosek & Banaji 2003).
    iat_min_abs_d: float = field(default=0.15, metadata={"range": (0.0, math.inf)})
    # IAT rows whose answers parsed less often than this fail as unreliable (0 turns it off).
    iat_min_parse_rate: float = field(default=0.0, metadata={"range": (0.0, 1.0)})


SECTIONS: dict[str, type] = {"iat": IATConfig}
VERDICT_RULES: type = IATVerdictRules
# The metrics a run of this method is judged by (shell-style patterns): the columns its runs
# show in `python -m audit.runs`, a sweep's runs table and the MLflow runs view.
HEADLINE_METRICS: tuple[str, ...] = ("iat/n_scored", "iat/parse_rate", "iat/*/mean_d")
# The settings of this method's own sections each DVC stage reads (dotted keys); the stages of
# dvc.yaml list them as `dvc_params.STAGE` (audit.methods.configs), besides the shared sections.
DVC_PARAMS: dict[str, tuple[str, ...]] = {"design": ("iat",), "respond": ("iat.max_tokens",),
                                           "score": ("iat",), "analyse": ("iat",)}
