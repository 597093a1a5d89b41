"""The DIF design: the item bank (shipped or generated), the personas (none, real, null) and one
greedy prompt per model x persona x item."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.config import ModelConfig, PersonasConfig
from audit.design import prompt_id
from audit.methods.dif import items as dif_items
from audit.methods.dif.config import DIFConfig
from audit.methods.dif.schemas import DIFItemSchema, DIFPersonaSchema, DIFPromptSchema
from audit.personas import NullGenerator, PersonaSources
from audit.schemas import validate

log = logging.getLogger(__name__)
PERSONA_ROLES = ("system", "user")

def load_items(dif: DIFConfig, shipped: pl.DataFrame | None,
               custom: pl.DataFrame | None, custom_source: Path | None) -> pl.DataFrame:
    """The configured cells of the shipped bank (or of a bank generated from dif.seed when no
    file is given), plus every user item."""
    if shipped is not None:
        bank = dif_items.select_items(validate(shipped, DIFItemSchema, "DIF item bank"),
                                      dif.datasets, dif.forms, dif.difficulties, dif.per_cell)
    else:
        bank = dif_items.generate_items(dif.seed, dif.per_cell or 10, dif.datasets, dif.forms,
                                        dif.difficulties)
    if custom is not None:
        user = dif_items.load_custom_items(custom, custom_source or Path("?"))
        bank = pl.concat([frame.select(dif_items.ITEM_COLUMNS).cast(dif_items.ITEM_SCHEMA)
                          for frame in (bank, user)])
    return validate(bank, DIFItemSchema, "DIF items (shipped and custom; item_id must be unique)")


def build_personas(dif: DIFConfig, real: pl.DataFrame) -> pl.DataFrame:
    """Baseline (no persona), the chosen sociodemographic personas and the null personas."""
    missing = sorted({"persona_id", "category", "descriptor"} - set(real.columns))
    if missing:
        raise AuditError(f"the DIF persona file lacks the column(s) {missing}: it needs "
                         f"persona_id, category and descriptor (see data/README.md)")
    real = real.select("persona_id", pl.col("category").alias("persona_category"), "descriptor")
    if dif.persona_ids:
        unknown = sorted(set(dif.persona_ids) - set(real["persona_id"].to_list()))
        if unknown:
            raise AuditError(f"unknown persona ids {unknown} in dif.persona_ids; valid: "
                             f"{', '.join(real['persona_id'].to_list())}")
        real = real.filter(pl.col("persona_id").is_in(dif.persona_ids))
    null = NullGenerator().generate(
        PersonasConfig(null_count=dif.null_count, null_length=dif.null_length), PersonaSources(),
        dif.seed)
    frames = [
        pl.DataFrame({"persona_id": ["baseline"], "persona_kind": ["baseline"],
                      "persona_category": ["baseline"], "descriptor": [""]}),
        real.with_columns(persona_kind=pl.lit("real")),
        null.select("persona_id", "descriptor").with_columns(
            persona_kind=pl.lit("null"), persona_category=pl.lit("null")),
    ]
    columns = ["persona_id", "persona_kind", "persona_category", "descriptor"]
    personas = pl.concat([frame.select(columns) for frame in frames])
    return validate(personas, DIFPersonaSchema, "DIF personas").sort("persona_id")


def greedy_models(models: dict[str, ModelConfig], max_tokens: int) -> dict[str, ModelConfig]:
    """The model configs as DIF sends them: greedy, answer-length, no decision-maker prompt."""
    return {name: dataclasses.replace(
        model, system_prompt="",
        sampling=dataclasses.replace(model.sampling, temperature=0.0, top_p=1.0,
                                     max_tokens=max_tokens)) for name, model in models.items()}


def check_config(dif: DIFConfig) -> None:
    if "{persona}" not in dif.persona_sentence:
        raise AuditError(f"dif.persona_sentence '{dif.persona_sentence}' has no {{persona}} slot: "
                         f"write it like 'You are {{persona}}.'")
    if dif.persona_role not in PERSONA_ROLES:
        raise AuditError(f"unknown dif.persona_role '{dif.persona_role}': use system or user")
    if not 0 < dif.alpha < 1 or dif.permutation_resamples < 99 or dif.max_tokens < 1:
        raise AuditError("dif.alpha must be in (0, 1), dif.permutation_resamples at least 99 and "
                         "dif.max_tokens at least 1")


def build_prompts(items: pl.DataFrame, personas: pl.DataFrame, models: dict[str, ModelConfig],
                  dif: DIFConfig) -> pl.DataFrame:
    """Every model x persona x item as one request; the persona sentence is the only change."""
    check_config(dif)
    if not models:
        raise AuditError("no model to audit: choose one with model=NAME (see conf/model/)")
    rows = []
    for model_name in sorted(models):
        for persona in personas.sort("persona_id").iter_rows(named=True):
            sentence = (dif.persona_sentence.replace("{persona}", persona["descriptor"])
                        if persona["persona_kind"] != "baseline" else "")
            for item in items.sort("item_id").iter_rows(named=True):
                instruction = dif.instruction_choice if item["form"] == "choice" \
                    else dif.instruction_free
                question = f"{item['question']}\n\n{instruction}"
                system, user = (sentence, question) if dif.persona_role == "system" else \
                    ("", f"{sentence}\n\n{question}" if sentence else question)
                rows.append({
                    "prompt_id": prompt_id("dif", model_name, persona["persona_id"],
                                           item["item_id"], dif.seed, system, user),
                    "model_name": model_name, "persona_id": persona["persona_id"],
                    "persona_kind": persona["persona_kind"],
                    "persona_category": persona["persona_category"], "item_id": item["item_id"],
                    "dataset": item["dataset"], "form": item["form"],
                    "difficulty": item["difficulty"], "seed": dif.seed, "system_prompt": system,
                    "user_prompt": user})
    return validate(pl.DataFrame(rows, infer_schema_length=None), DIFPromptSchema, "DIF prompts")
