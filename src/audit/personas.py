"""Persona generators: each is a small class behind one Protocol, chosen by name in config.

A design mixes several kinds: explicit demographic profiles, a no-demographic baseline, and null
personas made of random strings. The null personas are a placebo arm: they change the prompt as
much as a real persona does but carry no demographic signal, so the spread of their effects is the
noise floor that real effects are compared with.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from audit.errors import AuditError
from audit.config import PersonasConfig
from audit.schemas import PersonaSchema, validate

PERSONA_COLUMNS = ["persona_id", "kind", "descriptor", "gender", "race"]


@dataclass(frozen=True)
class PersonaSources:
    """Tables the generators read, loaded at the edge (stages.py) so generators stay pure."""

    explicit_profiles: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={c: pl.Utf8 for c in PERSONA_COLUMNS})
    )
    name_profiles: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={c: pl.Utf8 for c in PERSONA_COLUMNS})
    )


class PersonaGenerator(Protocol):
    def generate(self, config: PersonasConfig, sources: PersonaSources, seed: int) -> pl.DataFrame:
        ...


def _frame(rows: list[dict[str, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={column: pl.Utf8 for column in PERSONA_COLUMNS})


class BaselineGenerator:
    """The same prompt with no persona sentence at all."""

    def generate(self, config: PersonasConfig, sources: PersonaSources, seed: int) -> pl.DataFrame:
        return _frame(
            [{"persona_id": "baseline", "kind": "baseline", "descriptor": "", "gender": None,
              "race": None}]
        )


def _chosen_profiles(profiles: pl.DataFrame, chosen_ids: list[str], setting: str,
                     kind: str) -> pl.DataFrame:
    """The listed profiles (all when the list is empty), each marked with its kind."""
    profiles = profiles.select(PERSONA_COLUMNS)
    if chosen_ids:
        unknown = sorted(set(chosen_ids) - set(profiles["persona_id"].to_list()))
        if unknown:
            valid = ", ".join(profiles["persona_id"].to_list())
            raise AuditError(f"unknown persona ids {unknown} in {setting}; valid: {valid}")
        profiles = profiles.filter(pl.col("persona_id").is_in(chosen_ids))
    return profiles.with_columns(pl.lit(kind).alias("kind"))


class ExplicitGenerator:
    """Profiles that state demographic attributes outright ("a Black woman")."""

    def generate(self, config: PersonasConfig, sources: PersonaSources, seed: int) -> pl.DataFrame:
        return _chosen_profiles(sources.explicit_profiles, config.explicit_ids,
                                "personas.explicit_ids", "explicit")


class NameGenerator:
    """Names that signal gender and race without stating them ("named Lakisha Washington"), as
    in correspondence studies: the implicit counterpart of the explicit profiles."""

    def generate(self, config: PersonasConfig, sources: PersonaSources, seed: int) -> pl.DataFrame:
        return _chosen_profiles(sources.name_profiles, config.name_ids, "personas.name_ids",
                                "name")


class NullGenerator:
    """Random-string personas, seeded from the design seed so they are the same on every run."""

    def generate(self, config: PersonasConfig, sources: PersonaSources, seed: int) -> pl.DataFrame:
        rng = random.Random(f"null-personas:{seed}")
        strings: list[str] = []
        while len(strings) < config.null_count:
            candidate = "".join(rng.choices(string.ascii_lowercase, k=config.null_length))
            if candidate not in strings:
                strings.append(candidate)
        return _frame(
            [{"persona_id": f"null_{text}", "kind": "null", "descriptor": text.capitalize(),
              "gender": None, "race": None} for text in strings]
        )


PERSONA_GENERATORS: dict[str, PersonaGenerator] = {
    "baseline": BaselineGenerator(),
    "explicit": ExplicitGenerator(),
    "null": NullGenerator(),
    "name": NameGenerator(),
}


def generate_personas(config: PersonasConfig, sources: PersonaSources, seed: int) -> pl.DataFrame:
    frames = []
    for name in config.generators:
        if name not in PERSONA_GENERATORS:
            valid = ", ".join(sorted(PERSONA_GENERATORS))
            raise AuditError(f"unknown persona generator '{name}' in personas.generators; valid: {valid}")
        frames.append(PERSONA_GENERATORS[name].generate(config, sources, seed))
    personas = pl.concat(frames, how="vertical") if frames else _frame([])
    duplicated = personas.filter(pl.col("persona_id").is_duplicated())["persona_id"].unique()
    if len(duplicated):
        raise AuditError(f"duplicate persona ids across generators: {sorted(duplicated.to_list())}")
    if personas.is_empty():
        raise AuditError("the persona set is empty: list at least one generator in personas.generators")
    return validate(personas, PersonaSchema, "personas")


def persona_sentence(role: str, kind: str, descriptor: str) -> str:
    """The sentence placed in an item's `{persona}` slot; the baseline adds nothing."""
    if kind == "baseline" or not descriptor:
        return ""
    return f"The {role} is {descriptor}."


# A filled item (discrim-eval's templates) names the person in its own words: the persona's
# descriptor takes the place of "{race} {gender}" and the pronoun and verb slots agree with it.
FILLED_SLOT = "{race} {gender}"
_ARTICLE_BEFORE_SLOT = re.compile(r"\b([Aa])n? \{race\} \{gender\}")
_SLOT = re.compile(r"\{(\w+)\}")
_PRONOUNS = {
    "she": {"Sub": "She", "sub": "she", "pos": "her", "Pos": "Her", "obj": "her",
            "reflex": "herself"},
    "he": {"Sub": "He", "sub": "he", "pos": "his", "Pos": "His", "obj": "him",
           "reflex": "himself"},
    "they": {"Sub": "They", "sub": "they", "pos": "their", "Pos": "Their", "obj": "them",
             "reflex": "themselves"},
}
# The persona's `gender` picks the pronouns; any other value (and none: null personas) is "they".
_PRONOUN_OF_GENDER = {"woman": "she", "female": "she", "man": "he", "male": "he"}
# Verb slots are named by their third-person singular form; "they" takes the plural one.
_PLURAL_VERBS = {"has": "have", "is": "are", "was": "were", "does": "do"}


def fill_template(template: str, kind: str, descriptor: str, gender: str | None,
                  baseline_text: str | None) -> str:
    """A filled item's text for one persona: the descriptor in the "{race} {gender}" slot (with
    "a" made "an" before a vowel), pronouns and verb forms that agree with the persona's gender.
    The baseline reads the item's own demographic-free text (discrim-eval's `removed_template`),
    not the template with its slots emptied, which would not be a sentence."""
    if kind == "baseline":
        if not baseline_text:
            raise AuditError("a filled item (with a {race} {gender} slot) needs a "
                             "baseline_scenario column for the baseline persona: add it to the "
                             "bank")
        return baseline_text
    if kind == "name":
        raise AuditError("name personas have no place in a filled item's {race} {gender} slot: "
                         "use personas.generators without `name` with this item bank")
    pronoun = _PRONOUNS[_PRONOUN_OF_GENDER.get((gender or "").lower(), "they")]

    def article(match: re.Match[str]) -> str:
        vowel = descriptor[:1].lower() in "aeiou"
        return f"{match.group(1)}{'n' if vowel else ''} {FILLED_SLOT}"

    def slot(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in pronoun:
            return pronoun[name]
        if pronoun is _PRONOUNS["they"]:
            return _PLURAL_VERBS.get(name, name[:-1] if name.endswith("s") else name)
        return name
    text = _ARTICLE_BEFORE_SLOT.sub(article, template).replace(FILLED_SLOT, descriptor)
    return _SLOT.sub(slot, text)
