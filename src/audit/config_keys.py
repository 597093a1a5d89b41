"""The keys a config schema allows at a dotted path, for the one-line errors that name them
(audit.config_errors) and for the commands that tell their own options from config overrides
(audit.cli.ingest); and the line for a key set inside a setting that is null."""

from __future__ import annotations

import dataclasses
import types
import typing

from audit.methods.configs import AuditConfig
from audit.yaml_files import frame_in


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


def paths_ending_in(key: str, schema: type = AuditConfig, within: tuple[str, ...] = ()
                    ) -> list[str]:
    """Every dotted path of the schema whose last key is `key`, shortest first (`replicates` ->
    ['design.replicates']): the hint for a right key written in the wrong place, as
    `python -m audit replicates=2` or `python -m audit.plan from_run=RUN`, whose names are too
    far from any key of that level for did_you_mean. Paths through a dict or list field
    (`model`, `judge.models`) are left out: their middle segment is a name or an index that only
    the chosen config knows."""
    found: list[str] = []
    for field in dataclasses.fields(schema):
        path = (*within, field.name)
        if field.name == key:
            found.append(".".join(path))
        hint = typing.get_type_hints(schema)[field.name]
        # A section, or an optional one (`AdaptiveConfig | None`); not a list's or dict's items.
        optional = typing.get_origin(hint) in (typing.Union, types.UnionType)
        nested = [option for option in (hint, *(typing.get_args(hint) if optional else ()))
                  if dataclasses.is_dataclass(option)]
        if nested:
            found += paths_ending_in(key, nested[0], path)
    return sorted(found, key=lambda path: (path.count("."), path))


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


def under_null_setting(error: BaseException, arguments: list[str]) -> str | None:
    """One line for an override of a key inside a setting that is null by default (a model's
    `hub`: `model.NAME.hub.repo=x/y`, or the whole `hub={repo: ...}`), which OmegaConf 2.3
    cannot merge: an AssertionError ("Unexpected type for root: NoneType") or AttributeError
    traceback from inside Hydra's composition (bad-input review 2026-12-04). None for any other
    error: raised anywhere but in OmegaConf under Hydra's config loader, it is a bug and keeps
    its traceback."""
    innermost = error.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    if (innermost is None
            or not innermost.tb_frame.f_globals.get("__name__", "").startswith("omegaconf.")
            or frame_in(error.__traceback__, "hydra._internal.config_loader_impl") is None):
        return None
    keys = [argument.lstrip("+~").split("=", 1)[0] for argument in arguments if "=" in argument]
    named = [key for key in keys if ".hub" in key] or [key for key in keys if key.count(".") > 1]
    shown = ", ".join(f"'{key}'" for key in named) or "an override"
    # A judge's models are written in its own file, under `models:`.
    where = ("under the model's name in `models:` of conf/judge/NAME.yaml"
             if named and all(key.startswith("judge.") for key in named)
             else "under the model's name in conf/model/NAME.yaml")
    return (f"{shown}: sets a setting that is null by default (a model's `hub`), or a key inside "
            f"it, which cannot be done from the command line: write the whole setting in a "
            f"config file, as docs/models.md shows (`hub: {{repo: ..., file: ..., revision: "
            f"..., sha256: ...}}` {where})")


def removed_on_command_line(full_key: str, arguments: typing.Sequence[str]) -> str | None:
    """One line for a key set under a section the same command line deletes (`~plan
    plan.gap=1`), which read "unknown key 'plan'; valid top-level keys: ..., plan, ... (did you
    mean 'plan'?)" (bad-input review 2026-12-06). None when no `~KEY` removed the key."""
    for argument in arguments:
        deleted = argument.removeprefix("~").partition("=")[0]
        if argument.startswith("~") and (full_key == deleted
                                         or full_key.startswith(f"{deleted}.")):
            setting = next((other for other in arguments if not other.startswith("~")
                            and other.lstrip("+").startswith(f"{deleted}.")), None)
            return (f"~{deleted} deletes '{deleted}' with every setting under it, so "
                    f"{setting or 'a setting under it'} has nowhere to go: leave out ~{deleted}")
    return None
