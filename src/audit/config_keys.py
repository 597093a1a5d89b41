"""The keys a config schema allows at a dotted path, for the one-line errors that name them
(audit.config_errors) and for the commands that tell their own options from config overrides
(audit.cli.ingest)."""

from __future__ import annotations

import dataclasses
import typing

from audit.methods.configs import AuditConfig


def valid_keys(path: list[str], schema: type = AuditConfig) -> list[str] | None:
    """The keys the schema allows under a dotted path; None when the path leaves the schema.

    A dict-valued field (``model: dict[str, ModelConfig]``) takes any name, so one path segment
    is skipped there: ``model.smollm2.sampling`` lists the fields of SamplingConfig."""
    current: object = schema
    segments = list(path)
    while segments:
        segment = segments.pop(0)
        if not dataclasses.is_dataclass(current):
            return None
        hints = typing.get_type_hints(current)
        if segment not in hints:
            return None
        current = hints[segment]
        if typing.get_origin(current) is dict:
            if not segments:
                return None  # any name is valid directly under a dict field
            segments.pop(0)
            current = typing.get_args(current)[1]
    if not dataclasses.is_dataclass(current):
        return None
    return [field.name for field in dataclasses.fields(current)]


def entry_schema(path: list[str], schema: type = AuditConfig) -> type | None:
    """The dataclass of the entries of the dict field at `path` (`model` -> ModelConfig,
    `judge.models` -> ModelConfig); None when `path` is not such a field."""
    current: object = schema
    for segment in path:
        if not dataclasses.is_dataclass(current):
            return None
        current = typing.get_type_hints(current).get(segment)
    if typing.get_origin(current) is not dict:
        return None
    entry = typing.get_args(current)[1]
    return entry if dataclasses.is_dataclass(entry) else None
