"""The words an IAT answer may mention, and the form they are matched in.

A dataset's lexicon is its attribute words (with their valence) and its group words (with their
side, and the aliases a user gives, "white" -> "caucasian"). design.py builds one for every
stimulus set to reject a set whose words clash; score.py reads answers with it. Both match words
in one normalised form (`normalise`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from audit.errors import AuditError

DEFAULT, STIGMA = "default", "stigma"
POSITIVE, NEGATIVE = "positive", "negative"
SIDES = (DEFAULT, STIGMA)

_APOSTROPHES = re.compile(r"['’‘`´]")
_NON_WORD = re.compile(r"[\W_]+")
# Parts of multiword group names too common or too short to stand for the name on their own.
_PARTIAL_STOPWORDS = frozenset({"the", "and", "of", "ed", "al", "el", "van", "de", "student",
                                "person", "people", "group"})
_PARTIAL_MIN_LENGTH = 3


def normalise(text: str) -> str:
    """Lowercase words separated by single spaces: the form answers and stimuli are matched in."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_NON_WORD.sub(" ", _APOSTROPHES.sub("", text)).split())


@dataclass(frozen=True)
class Lexicon:
    """What one answer may mention: attributes with their valence, group phrases with their side.

    "Positive" is the first half of a dataset's attributes, the half stereotypically paired with
    the default group (for weapons: the harmless objects; for careers: the career words)."""

    attributes: Mapping[str, tuple[str, str]]  # normalised phrase -> (attribute, valence)
    groups: Mapping[str, str]  # normalised phrase -> side
    partial_groups: Mapping[str, str] = field(default_factory=dict)  # a name's part -> side

    @classmethod
    def build(cls, positive: Iterable[str], negative: Iterable[str], default_words: Iterable[str],
              stigma_words: Iterable[str],
              aliases: Mapping[str, Iterable[str]] | None = None) -> Lexicon:
        """Aliases map a group word to other names for it ("white" -> "caucasian")."""
        attributes: dict[str, tuple[str, str]] = {}
        for valence, words in ((POSITIVE, positive), (NEGATIVE, negative)):
            for word in words:
                key = normalise(word)
                if not key:
                    raise AuditError(f"attribute {word!r} has no letters or digits; write the "
                                     "word a model may answer with")
                if key in attributes and attributes[key] != (word, valence):
                    raise AuditError(f"attribute {word!r} appears twice in one dataset; keep one")
                attributes[key] = (word, valence)
        groups: dict[str, str] = {}
        aliases = {normalise(word): list(names) for word, names in (aliases or {}).items()}
        for side, words in ((DEFAULT, default_words), (STIGMA, stigma_words)):
            for word in words:
                for position, name in enumerate((word, *aliases.get(normalise(word), ()))):
                    key = normalise(name)
                    if not key:  # an empty phrase matches between any two non-word characters
                        what = f"alias {name!r} of {word!r}" if position else \
                            f"group word {name!r}"
                        raise AuditError(f"{what} has no letters or digits; write the word a "
                                         "model may answer with")
                    if groups.get(key, side) != side:
                        raise AuditError(f"group word {name!r} names both groups of one "
                                         "dataset; give each group its own words")
                    groups[key] = side
        clash = sorted(set(attributes) & set(groups))
        if clash:
            raise AuditError(f"{clash[0]!r} is both an attribute and a group word; make "
                             "every word distinct")
        return cls(attributes, groups, _partial_names(groups, attributes))


def _partial_names(groups: Mapping[str, str], attributes: Mapping[str, object]) -> dict[str, str]:
    """Each word of a multiword group name that belongs to names of one side only."""
    seen: dict[str, set[str]] = {}
    for phrase, side in groups.items():
        words = phrase.split()
        if len(words) > 1:
            for word in words:
                seen.setdefault(word, set()).add(side)
    attribute_words = {word for phrase in attributes for word in phrase.split()}
    return {word: next(iter(sides)) for word, sides in seen.items()
            if len(sides) == 1 and word not in groups and word not in attribute_words
            and word not in _PARTIAL_STOPWORDS and len(word) >= _PARTIAL_MIN_LENGTH}

