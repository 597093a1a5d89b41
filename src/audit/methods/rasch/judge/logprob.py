"""The decision read from the audited model's own probabilities, with no judge.

For a prompt that asks "Answer APPROVE or DENY", the backend scores how likely the answer is to
open with each option word, summed over case and spacing variants ("APPROVE", "Approve",
" approve", ...). p_favourable = P(favourable) / (P(favourable) + P(unfavourable)) is the model's
preference between the two options, and the decision mass P(favourable) + P(unfavourable) says
how much the model intended to answer with an option word at all: a model about to write prose
puts little mass on either, and its preference then says little about what it would decide.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from scipy.special import logsumexp

from audit.methods.rasch.schemas import LABELS, UNPARSEABLE


def option_variants(option: str) -> tuple[str, ...]:
    """The spellings a reply may open with: upper, title and lower case, with or without a space."""
    spellings = dict.fromkeys((option.upper(), option.capitalize(), option.lower()))
    return tuple(dict.fromkeys(prefix + spelling for spelling in spellings for prefix in ("", " ")))


@dataclass(frozen=True)
class OptionScore:
    p_favourable: float
    decision_mass: float

    def label(self, min_decision_mass: float) -> str:
        if self.decision_mass < min_decision_mass:
            return UNPARSEABLE
        return LABELS[0] if self.p_favourable >= 0.5 else LABELS[1]

    def rationale(self, favourable: str) -> str:
        return (f"P({favourable.upper()} | option words) = {self.p_favourable:.3f}, "
                f"decision mass {self.decision_mass:.3f}")


def option_score(scores: dict[str, float], favourable: str, unfavourable: str) -> OptionScore:
    """Combine per-variant log-probabilities (as the backend returned them) into one score."""
    favourable_lp = logsumexp([scores[v] for v in option_variants(favourable)])
    unfavourable_lp = logsumexp([scores[v] for v in option_variants(unfavourable)])
    total = float(logsumexp([favourable_lp, unfavourable_lp]))
    return OptionScore(p_favourable=math.exp(favourable_lp - total),
                       decision_mass=min(1.0, math.exp(total)))


def parse_scores(reply: str, expected: tuple[str, ...]) -> dict[str, float] | None:
    """A backend's scoring reply, or None when it is not a JSON object scoring every variant."""
    try:
        parsed = json.loads(reply)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(parsed, dict) or any(
            not isinstance(parsed.get(option), (int, float)) or parsed[option] > 0
            for option in expected):
        return None
    return {option: float(parsed[option]) for option in expected}
