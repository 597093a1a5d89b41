"""The allowed values of config settings, declared on the structured-config fields and checked
for every section once the config is composed.

Hydra checks that a value has the field's type; whether it makes sense (a probability above 1, no
draws, a negative ROPE that turns the decision rule inside out) is declared here, as field
metadata: ``"range"`` (a Range, or a (low, high) tuple: the closed interval), ``"choices"``
(the valid strings) and ``"blank_fix"`` (a text that may be null but not empty: the fix to
name). `check_config` walks a config instance (dataclass fields, dict entries of
dataclasses) and refuses the first value outside its declaration with one line naming the key, the
value and what is allowed, before any stage runs: `python -m audit`, audit.ingest, audit.plan,
audit.stages and audit.params compose through audit.methods.configs.to_audit_config, which calls
it; `python -m audit.verdict` checks its rules and `python -m audit.fit` its sampler the same way.
A null value is always allowed here: a field that may be null says so in its type.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.errors import AuditError
from audit.redaction import holds_credential


class ConfigValueError(AuditError):
    """A setting's value outside what its field declares (a range or a list of choices)."""


@dataclass(frozen=True)
class Range:
    """An interval of allowed numbers; an open end excludes its bound."""

    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return True  # not a number: the field's type is Hydra's check
        if not math.isfinite(value):
            # An infinite end is open (__str__): `fit.rope=inf` passed as `<= inf`, and every
            # contrast read "inside the ROPE", a CI pass for any gap; `requests_per_minute=inf`
            # divided by zero in the rate limiter (bad-input review 2026-12-04).
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    def __str__(self) -> str:
        """Interval notation; an infinite end is always open: `(0, 1)`, `[1, inf)`."""
        opening = "(" if self.open_low or math.isinf(self.low) else "["
        closing = ")" if self.open_high or math.isinf(self.high) else "]"
        return f"{opening}{_number(self.low)}, {_number(self.high)}{closing}"


def _number(bound: float) -> str:
    if math.isinf(bound):
        return "inf" if bound > 0 else "-inf"
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def as_range(declared: Range | tuple[float, float]) -> Range:
    """A field's `range` metadata as a Range; a (low, high) tuple is the closed interval."""
    return declared if isinstance(declared, Range) else Range(*declared)


# The most resamples a bootstrap or permutation test takes: far beyond any p-value's need, and
# memory a laptop has; iat.bootstrap_resamples=99999999999 passed the range check, started the
# model run, then asked numpy for 35.7 TiB (bad-input review 2026-12-06).
MAX_RESAMPLES = 1_000_000


def within(default: Any, low: float = -math.inf, high: float = math.inf, *,
           open_low: bool = False, open_high: bool = False, share: bool = True) -> Any:
    """A dataclass field with `default` whose value must lie between `low` and `high`.
    `share=False`: a value in [0, 1] that is no share (an effect size), so a whole number given
    for it is not read as a percent ("min_rank_biserial=3 ... 0.03 for 3%" misled: review
    2026-12-04)."""
    return dataclasses.field(default=default, metadata={
        "range": Range(low, high, open_low, open_high), "share": share})


def seed_setting(default: int) -> Any:
    """A dataclass field for a seed: 0 to 2**32 - 2, which every consumer takes (numpy's
    generators any integer from 0, nutpie an unsigned one, llama.cpp 32 bits, where 2**32 - 1
    is LLAMA_DEFAULT_SEED, "a random seed": DIF sends its seed as the request's). A negative
    seed passed validation and stopped nutpie with an OverflowError traceback after every
    prompt had been answered (bad-input review 2026-12-04)."""
    return within(default, 0, 2**32 - 2)


def each_within(default: Sequence[float], low: float = -math.inf, high: float = math.inf) -> Any:
    """A dataclass list field with `default` whose entries must each lie in [low, high]; an
    empty list is refused too (a list of design sizes to try must name at least one)."""
    return dataclasses.field(default_factory=lambda: list(default), metadata={
        "each_range": Range(low, high)})


def one_of(default: str | None, choices: Sequence[str]) -> Any:
    """A dataclass field with `default` whose value must be one of `choices` (or null, when the
    field's type allows it)."""
    return dataclasses.field(default=default, metadata={"choices": tuple(choices)})


def not_blank(default: str | None, fix: str) -> Any:
    """A dataclass text field with `default` that may be left out (null) but not given empty:
    `key=` reads as "", which a name setting would otherwise take for "use the default" without
    a word. `fix` says what to write instead."""
    return dataclasses.field(default=default, metadata={"blank_fix": fix})


def server_url(default: Any, *, many: bool = False) -> Any:
    """A dataclass field for a server's URL (a list of them with `many`): refused when it holds
    a credential, which would reach MLflow's params, the logs and error messages in clear. The
    key belongs in the environment variable `api_key_env` names."""
    if many:
        return dataclasses.field(default_factory=lambda: list(default),
                                 metadata={"server_url": True})
    return dataclasses.field(default=default, metadata={"server_url": True})


def value_problem(key: str, value: Any, metadata: Mapping[str, Any]) -> str | None:
    """What is wrong with `key`'s `value` under its field's metadata, in one line; None if fine."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):  # ranged or not: never a setting
        return f"{key}=nan is not a number: give one"
    declared = metadata.get("range")
    if declared is not None and isinstance(value, float) and math.isinf(value):
        return f"{key}={_number(value)} is not a finite number: give one in {as_range(declared)}"
    if declared is not None and value not in as_range(declared):
        hint = _percent_hint(key, value, declared) if metadata.get("share", True) else ""
        return f"{key}={value} must lie in {as_range(declared)}{hint}"
    blank_fix = metadata.get("blank_fix")
    if blank_fix is not None and isinstance(value, str) and not value.strip():
        return f"{key} is empty: {blank_fix}"
    if metadata.get("server_url"):
        urls = [value] if isinstance(value, str) else list(value)
        if any(isinstance(url, str) and holds_credential(url) for url in urls):
            # The value is not repeated: the line would carry the key into the terminal's log.
            return (f"{key} holds a credential (a password or key in the URL), which would be "
                    f"logged in clear: remove it and name the environment variable that holds "
                    f"the key in api_key_env")
    choices = metadata.get("choices")
    if choices is not None and value not in choices:
        return f"{key}={value} is not one of {', '.join(choices)}"
    each = metadata.get("each_range")
    if each is not None:
        entries = list(value)
        if not entries:
            return f"{key}=[] must name at least one value in {each}"
        outside = [entry for entry in entries if entry not in each]
        if outside:
            return f"{key}={entries}: {outside[0]} must lie in {each}"
    return None


def _percent_hint(key: str, value: Any, declared: Range | tuple[float, float]) -> str:
    """For a share (a range within [0, 1]) given as a whole percent (`fit.hdi_prob=94`): the
    value that was meant, which "must lie in (0, 1)" left to the reader. Not for 1.5, which is
    no more likely a percent than a slip. `value` is a number here: Range admits any other
    value (and a bool), so only a number reaches this."""
    bounds = as_range(declared)
    if bounds.low < 0 or bounds.high > 1 or not 1 < value <= 100 or value != int(value) \
            or value / 100 not in bounds:
        return ""
    return f": a share, so {key}={value / 100:g} for {value:g}%"


def settings(instance: Any, prefix: str = "") -> Iterator[tuple[str, Any, dataclasses.Field]]:
    """Every setting of `instance` (a dataclass; its nested dataclasses and dict entries too) as
    (dotted key, the dataclass that holds it, its field), in field order."""
    for config_field in dataclasses.fields(instance):
        key = f"{prefix}{config_field.name}"
        yield key, instance, config_field
        value = getattr(instance, config_field.name)
        if dataclasses.is_dataclass(value):
            yield from settings(value, f"{key}.")
        elif isinstance(value, Mapping):
            for name, entry in value.items():
                if dataclasses.is_dataclass(entry):
                    yield from settings(entry, f"{key}.{name}.")


def config_problems(instance: Any, prefix: str = "") -> Iterator[str]:
    """Every value of `instance` outside its field's declared range or choices, as one line
    each, in field order."""
    for key, owner, config_field in settings(instance, prefix):
        problem = value_problem(key, getattr(owner, config_field.name), config_field.metadata)
        if problem:
            yield problem


def check_config(instance: Any, prefix: str = "",
                 error: type[AuditError] = ConfigValueError) -> None:
    """Refuse the first value outside its field's declaration with one line (exit 2 where the
    entry points catch AuditError), naming the key, the value and what is allowed."""
    problem = next(config_problems(instance, prefix), None)
    if problem:
        raise error(problem)
