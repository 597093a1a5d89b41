"""Selecting the decision scenarios that enter a design from the shipped (or a user's) item bank."""

from __future__ import annotations

import polars as pl

from audit.config import ItemsConfig
from audit.schemas import ItemSchema, validate


def select_items(bank: pl.DataFrame, config: ItemsConfig) -> pl.DataFrame:
    bank = validate(bank, ItemSchema, f"item bank {config.bank}")
    selected = bank
    if config.domains:
        known = sorted(bank["domain"].unique().to_list())
        unknown = sorted(set(config.domains) - set(known))
        if unknown:
            raise ValueError(f"unknown domains {unknown} in items.domains; valid: {', '.join(known)}")
        selected = selected.filter(pl.col("domain").is_in(config.domains))
    if config.item_ids:
        known_ids = set(selected["item_id"].to_list())
        unknown = sorted(set(config.item_ids) - known_ids)
        if unknown:
            raise ValueError(
                f"unknown item ids {unknown} in items.item_ids (after the domain filter); "
                f"see {config.bank} for valid ids"
            )
        selected = selected.filter(pl.col("item_id").is_in(config.item_ids))
    if config.per_domain is not None:
        if config.per_domain < 1:
            raise ValueError(f"items.per_domain={config.per_domain} must be at least 1 (or null)")
        selected = (selected.sort("item_id")
                    .filter(pl.int_range(pl.len()).over("domain") < config.per_domain))
    if selected.is_empty():
        raise ValueError("the item selection is empty: check items.domains and items.item_ids")
    return selected.sort("item_id")
