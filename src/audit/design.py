"""Expanding a design: items x personas x models x replicates -> one row per independent request."""

from __future__ import annotations

import hashlib
import re

import polars as pl

from audit.errors import AuditError
from audit.config import DesignConfig, ModelConfig
from audit.personas import FILLED_SLOT, fill_template, persona_sentence
from audit.schemas import PromptSchema, validate

_SPACES = re.compile(r"\s+")


def replicate_seed(design_seed: int, replicate: int) -> int:
    """Distinct, stable seeds per replicate, so replicates are real repeated draws and the cache
    (which keys on the seed) never collapses them into one answer."""
    digest = hashlib.sha256(f"{design_seed}:{replicate}".encode()).hexdigest()
    return int(digest[:8], 16) % (2**31 - 1)


def render_prompt(scenario: str, question: str, sentence: str) -> str:
    filled = scenario.replace("{persona}", sentence)
    return _SPACES.sub(" ", f"{filled} {question}").strip()


def persona_prompt(item: dict, persona: dict) -> str:
    """The item asked of one persona. An item with a `{persona}` slot gets the sentence "The
    {role} is {descriptor}."; a filled item (discrim-eval's templates: a "{race} {gender}" slot)
    names the person in its own words, with agreeing pronouns (audit.personas.fill_template)."""
    if FILLED_SLOT in item["scenario"]:
        scenario = fill_template(item["scenario"], persona["kind"], persona["descriptor"],
                                 persona["gender"], item.get("baseline_scenario"))
        return render_prompt(scenario, item["question"], "")
    sentence = persona_sentence(item["role"], persona["kind"], persona["descriptor"])
    return render_prompt(item["scenario"], item["question"], sentence)


def prompt_id(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).hexdigest()[:20]


def expand_design(
    items: pl.DataFrame,
    personas: pl.DataFrame,
    models: dict[str, ModelConfig],
    design: DesignConfig,
) -> pl.DataFrame:
    if not models:
        raise AuditError("no model to audit: choose one with model=NAME (see conf/model/)")
    if design.replicates < 1:
        raise AuditError(f"design.replicates must be at least 1, got {design.replicates}")
    rows = []
    for model_name in sorted(models):
        system_prompt = models[model_name].system_prompt
        for persona in personas.sort("persona_id").iter_rows(named=True):
            for item in items.sort("item_id").iter_rows(named=True):
                user_prompt = persona_prompt(item, persona)
                for replicate in range(design.replicates):
                    seed = replicate_seed(design.seed, replicate)
                    rows.append({
                        "prompt_id": prompt_id(model_name, persona["persona_id"], item["item_id"],
                                               replicate, seed, system_prompt, user_prompt),
                        "respondent_id": f"{model_name}/{persona['persona_id']}",
                        "model_name": model_name,
                        "persona_id": persona["persona_id"],
                        "persona_kind": persona["kind"],
                        "gender": persona["gender"],
                        "race": persona["race"],
                        "item_id": item["item_id"],
                        "domain": item["domain"],
                        "replicate": replicate,
                        "seed": seed,
                        "question": item["question"],
                        "favourable_option": item["favourable_option"],
                        "unfavourable_option": item["unfavourable_option"],
                        "system_prompt": system_prompt,
                        "user_prompt": user_prompt,
                    })
    prompts = pl.DataFrame(rows, infer_schema_length=None)
    return validate(prompts, PromptSchema, "prompts")


# design.* keys that only the adaptive Rasch respond stage reads (methods/rasch/adaptive.py).
ADAPTIVE_KEYS = ("max_prompts", "max_tokens_budget", "max_answer_minutes", "round_prompts",
                 "futility", "futility_from")
ADAPTIVE_METHOD = "rasch"


def check_adaptive_settings(method: str, design: DesignConfig, ingest_input: str | None = None,
                            ignored: str = "this run would send its whole design") -> None:
    """Refuse design.adaptive or a budget where nothing reads it, before any request: every
    other path sends the whole design, so a budget typed for a paid API would be silently
    overspent. A futility setting counts when it differs from its default. ``ignored``: what
    the caller would do instead (audit.plan simulates the whole design)."""
    if design.adaptive and method != ADAPTIVE_METHOD:
        raise AuditError(f"design.adaptive=true applies to the Rasch method only; method={method} "
                         "sends its whole design: drop design.adaptive and its budgets, or use "
                         f"method={ADAPTIVE_METHOD}")
    if design.adaptive and ingest_input:
        raise AuditError(f"design.adaptive=true chooses the prompts to send, but ingest.input="
                         f"{ingest_input} imports answers already given: drop design.adaptive")
    if design.adaptive:
        return
    defaults = DesignConfig()
    typed = [f"design.{key}" for key in ADAPTIVE_KEYS
             if getattr(design, key) != getattr(defaults, key)]
    if typed:
        verb = "apply" if len(typed) > 1 else "applies"
        raise AuditError(f"{', '.join(typed)} {verb} to an adaptive Rasch audit only, and "
                         f"{ignored}: add design.adaptive=true (with "
                         f"method={ADAPTIVE_METHOD}), or drop {'them' if len(typed) > 1 else 'it'}")
