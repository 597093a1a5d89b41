"""The Rasch audit's design: every chosen item asked under every persona, for each audited model and
replicate (audit.design.expand_design), and the models a prompts table names."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import yaml

from audit.config import CONF_DIR, ModelConfig
from audit.data_files import read_users_table
from audit.design import expand_design
from audit.errors import AuditError
from audit.items import select_items
from audit.llm.backends import Backend, create_backend
from audit.methods.configs import AuditConfig
from audit.personas import PersonaSources, generate_personas, near_spellings, unread_settings
from audit.schemas import ItemSchema, PersonaFileSchema

log = logging.getLogger(__name__)

# The design stage's table (the whole fixed design) and the respond stage's (the answers asked).
PROMPTS, RESPONSES = "prompts.parquet", "responses.parquet"


def design_stage(cfg: AuditConfig) -> pl.DataFrame:
    bank = read_users_table(cfg.items.bank, ItemSchema, "item bank", "items.bank")
    items = select_items(bank, cfg.items)
    explicit = (read_users_table(cfg.personas.explicit_file, PersonaFileSchema,
                                 "explicit personas", "personas.explicit_file")
                if "explicit" in cfg.personas.generators else PersonaSources().explicit_profiles)
    names = (read_users_table(cfg.personas.names_file, PersonaFileSchema, "name personas",
                              "personas.names_file")
             if "name" in cfg.personas.generators else PersonaSources().name_profiles)
    shipped = Path(CONF_DIR) / "personas" / f"{cfg.personas.name}.yaml"
    preset = (yaml.safe_load(shipped.read_text(encoding="utf-8")) if shipped.is_file() else None)
    for line in unread_settings(cfg.personas, preset or {}):
        log.warning("%s", line)
    personas = generate_personas(cfg.personas,
                                 PersonaSources(explicit_profiles=explicit, name_profiles=names),
                                 cfg.design.seed)
    for line in near_spellings(personas):
        log.warning("%s", line)
    return expand_design(items, personas, cfg.model, cfg.design)


def models_for(cfg: AuditConfig, prompts: pl.DataFrame) -> dict[str, ModelConfig]:
    """The configs of the models the prompts name; one line when the config lacks one."""
    model_names = sorted(prompts["model_name"].unique().to_list())
    missing = sorted(set(model_names) - set(cfg.model))
    if missing:
        raise AuditError(f"prompts name models {missing} that are not in the config: "
                         f"rerun the design stage or add them with model=[...]")
    return {name: cfg.model[name] for name in model_names}


def backends_for(cfg: AuditConfig, prompts: pl.DataFrame) -> dict[str, Backend]:
    return {name: create_backend(model) for name, model in models_for(cfg, prompts).items()}
