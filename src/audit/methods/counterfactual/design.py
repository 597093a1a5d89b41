"""Counterfactual prompts: templates whose slots are filled by every combination of axis levels.

A variant of a template differs from its siblings only in the demographic text filled into its
slots, and every variant of a template shares its replicate's seed, so a difference between the
answers is caused by that text (and sampling noise), not by the task. Expansion is deterministic:
templates, axes and levels are walked in sorted order and identifiers are content hashes.
"""

from __future__ import annotations

import dataclasses
import itertools
import string
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from audit.errors import AuditError, did_you_mean
from audit.config import DesignConfig, ModelConfig
from audit.methods.counterfactual.config import (
    CounterfactualAxisConfig,
    CounterfactualConfig,
    CounterfactualTemplateConfig,
)
from audit.data_files import data_file
from audit.design import prompt_id, replicate_seed
from audit.schemas import PromptSchema, validate
from audit.tables import read_frame

# A level's group for factors it does not carry is null; an intersection joins its parts so.
INTERSECTION_SEPARATOR = ":"


@dataclass(frozen=True)
class Level:
    """One level of an axis: its id (its fill texts), group labels and slot texts."""

    axis: str
    level_id: str
    groups: tuple[tuple[str, str], ...]
    fill: tuple[tuple[str, str], ...]

    @property
    def group_map(self) -> dict[str, str]:
        return dict(self.groups)


@dataclass(frozen=True)
class Variant:
    """A template with every slot filled: the text sent and the groups it stands for."""

    template_id: str
    domain: str
    variant_id: str
    template_text: str
    text: str
    groups: tuple[tuple[str, str], ...]


def _level(axis: str, groups: dict[str, str], fill: dict[str, str], where: str) -> Level:
    if not fill:
        raise AuditError(f"a level of counterfactual axis '{axis}' fills no slot: give it "
                         f"`fill: {{SLOT: TEXT}}`")
    if not groups:
        raise AuditError(f"a level of counterfactual axis '{axis}' has no group label: give it "
                         f"`groups: {{FACTOR: GROUP}}` so the analysis can compare it")
    # An empty cell was the text "None": a prompt "Hi None" sent to every model, or a race group
    # "None" compared with the others (mutation review 2026-12-06).
    blank = next((key for key, value in [*fill.items(), *groups.items()]
                  if value is None or not str(value).strip()), None)
    if blank is not None:
        raise AuditError(f"counterfactual axis '{axis}': {where} leaves '{blank}' empty: every "
                         f"level needs its fill text and its groups; fill it, or drop the level")
    level_id = "/".join(str(text) for text in fill.values())  # in the config's order
    return Level(axis, level_id, tuple(sorted((k, str(v)) for k, v in groups.items())),
                 tuple(sorted((k.lower(), str(v)) for k, v in fill.items())))


def load_axis(name: str, config: CounterfactualAxisConfig, root: Path = Path(".")) -> list[Level]:
    """The levels of one axis, inline or from its CSV, sorted by id."""
    if config.file and config.levels:
        raise AuditError(f"counterfactual axis '{name}' has both `file` and `levels`: keep one")
    if config.file:
        path = data_file(root / config.file, f"counterfactual axis '{name}' file",
                         f"counterfactual.axes.{name}.file")  # the user's, else the shipped copy
        table = read_frame(path, f"counterfactual axis '{name}' file",
                           f"fix the file or counterfactual.axes.{name}.file", as_text=True)
        wanted = [*config.fill.values(), *config.groups]
        missing = [column for column in wanted if column not in table.columns]
        if missing or not config.fill or not config.groups:
            raise AuditError(f"counterfactual axis '{name}': {path} needs `fill` (slot: column) "
                             f"and `groups` (columns) naming its columns {table.columns}; "
                             f"missing {missing}")
        # Row numbers as a spreadsheet shows them: the header is row 1.
        levels = [_level(name, {column: row[column] for column in config.groups},
                         {slot: row[column] for slot, column in config.fill.items()},
                         f"{path} row {number}")
                  for number, row in enumerate(table.iter_rows(named=True), start=2)]
    else:
        levels = [_level(name, dict(level.groups), dict(level.fill), f"level {number}")
                  for number, level in enumerate(config.levels, start=1)]
    if not levels:
        raise AuditError(f"counterfactual axis '{name}' has no levels: list `levels` or a `file`")
    ids = [level.level_id for level in levels]
    duplicated = sorted({level_id for level_id in ids if ids.count(level_id) > 1})
    if duplicated:
        raise AuditError(f"counterfactual axis '{name}' repeats levels {duplicated}")
    return sorted(levels, key=lambda level: level.level_id)


def template_slots(text: str) -> set[str]:
    """The slots a template uses, lowercased (`{Subject}` uses slot `subject`)."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
    except ValueError as error:
        raise AuditError(f"template text {text[:40]!r}... is malformed ({error}): write literal "
                         f"braces as {{{{ and }}}}") from None
    if any(not field.isidentifier() for field in fields):
        raise AuditError(f"template text {text[:40]!r}... has a slot that is not a plain name: "
                         f"use {{name}}, {{age}}, ...")
    return {field.lower() for field in fields}


def fill_template(text: str, fill: dict[str, str]) -> str:
    """Fill `{slot}` as given and `{Slot}` capitalised (for a pronoun opening a sentence)."""
    values = {}
    for _, field, _, _ in string.Formatter().parse(text):
        if field is not None:
            value = fill[field.lower()]
            values[field] = value[:1].upper() + value[1:] if field[:1].isupper() else value
    return text.format_map(values)


def _agrees(combination: tuple[Level, ...], follows: dict[str, str | None]) -> bool:
    """A following axis keeps only levels whose group matches the other axes' group."""
    for level in combination:
        factor = follows.get(level.axis)
        if factor is None:
            continue
        others = [other.group_map[factor] for other in combination
                  if other.axis != level.axis and factor in other.group_map]
        if others and any(group != level.group_map.get(factor) for group in others):
            return False
    return True


def _intersect(groups: dict[str, str], intersections: list[list[str]]) -> dict[str, str]:
    crossed = dict(groups)
    for factors in intersections:
        if all(factor in groups for factor in factors):
            crossed[INTERSECTION_SEPARATOR.join(factors)] = INTERSECTION_SEPARATOR.join(
                groups[factor] for factor in factors)
    return crossed


def expand_template(template: CounterfactualTemplateConfig, axes: dict[str, list[Level]],
                    follows: dict[str, str | None],
                    intersections: list[list[str]]) -> list[Variant]:
    """Every agreeing combination of the levels of the axes whose slots the template uses."""
    slots = template_slots(template.text)
    fills_by_axis = {name: {slot for level in levels for slot, _ in level.fill}
                     for name, levels in axes.items()}
    used = sorted(name for name, fills in fills_by_axis.items() if fills & slots)
    unfilled = slots - set().union(*(fills_by_axis[name] for name in used))
    if unfilled:
        raise AuditError(f"template '{template.id}' has slots {sorted(unfilled)} that no "
                         f"counterfactual axis fills: add an axis or fix the template")
    if not used:
        raise AuditError(f"template '{template.id}' has no demographic slot: it would send the "
                         f"same prompt to every group; add e.g. {{name}}")
    variants = []
    for combination in itertools.product(*(axes[name] for name in used)):
        if not _agrees(combination, follows):
            continue
        fill: dict[str, str] = {}
        groups: dict[str, str] = {}
        for level in combination:
            fill.update(level.fill)
            groups.update(level.group_map)
        missing = sorted(slots - set(fill))
        if missing:
            raise AuditError(f"template '{template.id}': level "
                             f"{'|'.join(lv.level_id for lv in combination)} leaves slots "
                             f"{missing} empty; give every level of an axis the same slots")
        variant_id = "|".join(f"{level.axis}={level.level_id}" for level in combination)
        variants.append(Variant(template.id, template.domain, variant_id, template.text,
                                fill_template(template.text, fill),
                                tuple(sorted(_intersect(groups, intersections).items()))))
    if not variants:
        raise AuditError(f"template '{template.id}': no combination of levels agrees (check "
                         f"the axes' `follows` and group labels)")
    return variants


def check_intersections(intersections: list[list[str]], axes: dict[str, list[Level]]) -> None:
    """Refuse an intersection naming a factor no axis groups by: it crossed no variant and was
    left out without a word, so `[race, gendr]` lost the intersection's analysis (bad-input
    review 2026-12-04)."""
    factors = sorted({factor for levels in axes.values() for level in levels
                      for factor in level.group_map})
    for intersection in intersections:
        unknown = [factor for factor in intersection if factor not in factors]
        if unknown:
            raise AuditError(f"counterfactual.intersections {list(intersection)} names "
                             f"{unknown[0]!r}{did_you_mean(unknown[0], factors)}, which no axis "
                             f"groups by; the axes group by {', '.join(factors)}")


def expand_variants(config: CounterfactualConfig, root: Path = Path(".")) -> list[Variant]:
    if not config.templates:
        raise AuditError("counterfactual.templates is empty: list at least one template "
                         "(see src/audit/conf/method/counterfactual.yaml)")
    ids = [template.id for template in config.templates]
    if len(set(ids)) != len(ids):
        raise AuditError(f"counterfactual template ids repeat: {sorted(ids)}")
    axes = {name: load_axis(name, axis, root) for name, axis in sorted(config.axes.items())}
    check_intersections(config.intersections, axes)
    follows = {name: axis.follows for name, axis in config.axes.items()}
    return [variant for template in sorted(config.templates, key=lambda t: t.id)
            for variant in expand_template(template, axes, follows, config.intersections)]


def request_models(models: dict[str, ModelConfig],
                   config: CounterfactualConfig) -> dict[str, ModelConfig]:
    """Each model as it is sent these requests: the method's system prompt and token budget."""
    adjusted = {}
    for name, model in models.items():
        sampling = (dataclasses.replace(model.sampling, max_tokens=config.max_tokens)
                    if config.max_tokens is not None else model.sampling)
        system_prompt = (config.system_prompt if config.system_prompt is not None
                         else model.system_prompt)
        adjusted[name] = dataclasses.replace(model, sampling=sampling,
                                             system_prompt=system_prompt)
    return adjusted


@dataclass(frozen=True)
class CounterfactualDesign:
    prompts: pl.DataFrame  # PromptSchema, what the engine sends
    groups: pl.DataFrame  # prompt_id, model_name, template_id, variant_id, replicate, factor, group


def build_design(variants: list[Variant], models: dict[str, ModelConfig],
                 design: DesignConfig) -> CounterfactualDesign:
    """Variants x models x replicates; every variant of a replicate shares its seed."""
    if not models:
        raise AuditError("no model to audit: choose one with model=NAME (see conf/model/)")
    if design.replicates < 1:
        raise AuditError(f"design.replicates must be at least 1, got {design.replicates}")
    prompts, groups = [], []
    for model_name in sorted(models):
        system_prompt = models[model_name].system_prompt
        for variant in variants:
            group_map = dict(variant.groups)
            for replicate in range(design.replicates):
                seed = replicate_seed(design.seed, replicate)
                identifier = prompt_id("counterfactual", model_name, variant.template_id,
                                       variant.variant_id, replicate, seed, system_prompt,
                                       variant.text)
                prompts.append({
                    "prompt_id": identifier,
                    "respondent_id": f"{model_name}/{variant.variant_id}",
                    "model_name": model_name,
                    "persona_id": variant.variant_id,
                    "persona_kind": "name" if "{name}" in variant.template_text.lower()
                    else "explicit",
                    "gender": group_map.get("gender"),
                    "race": group_map.get("race"),
                    "item_id": variant.template_id,
                    "domain": variant.domain,
                    "replicate": replicate,
                    "seed": seed,
                    "question": variant.template_text,
                    "favourable_option": "",
                    "unfavourable_option": "",
                    "system_prompt": system_prompt,
                    "user_prompt": variant.text,
                })
                groups.extend({"prompt_id": identifier, "model_name": model_name,
                               "template_id": variant.template_id,
                               "variant_id": variant.variant_id, "replicate": replicate,
                               "factor": factor, "group": group}
                              for factor, group in variant.groups)
    prompt_table = pl.DataFrame(prompts, schema_overrides={"gender": pl.Utf8, "race": pl.Utf8},
                                infer_schema_length=None).sort("prompt_id")
    group_table = pl.DataFrame(groups, schema={
        "prompt_id": pl.Utf8, "model_name": pl.Utf8, "template_id": pl.Utf8,
        "variant_id": pl.Utf8, "replicate": pl.Int64, "factor": pl.Utf8, "group": pl.Utf8,
    }).sort("prompt_id", "factor")
    return CounterfactualDesign(validate(prompt_table, PromptSchema, "counterfactual prompts"),
                                group_table)
