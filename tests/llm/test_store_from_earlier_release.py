"""A response store written by the release before the Python 3.12 upgrade serves the upgraded
audit: the same prompts give the same request keys, so no answer is bought twice.

Fixtures (tests/fixtures/release_0_1/README.md): the request keys of every prompt of the default
audit and the response store of a smoke audit, both made by release 0.1.0 (commit 9cee62d,
Python 3.11, PyMC 5.28). Slow: the identity of an embedded model is its file's digest, so the
default models' files are assembled (once per machine)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from audit.cli.params import compose_params
from audit.llm.engine import plan_requests, summarise_responses
from audit.methods.rasch.design import backends_for, models_for, design_stage
from audit.methods.run import answer_prompts

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures" / "release_0_1"
RELEASE_0_1_EXPLICIT = tuple(f"{race}_{gender}" for gender in ("man", "woman")
                             for race in ("white", "black", "hispanic", "asian"))


def test_every_prompt_of_the_default_audit_keeps_its_request_key() -> None:
    """Fails if anything that enters a key changed: the prompt text (items, personas, templates),
    the system prompt, sampling parameters, seeds, the model identity or the key's encoding."""
    # Release 0.1's default persona set: one explicit phrasing per cell and 8 null personas (today's
    # default adds a second phrasing per cell and keeps the first 4 of the same null personas),
    # asked twice (today's default asks once; its first replicate's keys are the same).
    cfg = compose_params([f"personas.explicit_ids=[{','.join(RELEASE_0_1_EXPLICIT)}]",
                          "personas.null_count=8", "design.replicates=2"])
    prompts = design_stage(cfg)
    planned = plan_requests(prompts, backends_for(cfg, prompts), models_for(cfg, prompts))
    keys = sorted({item.key for item in planned})
    kept = (FIXTURES / "default_audit_request_keys.txt").read_text().split()
    assert len(prompts) == len(kept) == 408
    assert keys == kept


def test_the_smoke_audit_is_answered_from_the_earlier_store(tmp_path: Path) -> None:
    """The store file itself (schema, WAL, rows) is read by today's code: every smoke prompt is
    served from it and none is sent (a sent prompt would load the model and count as sent)."""
    store = tmp_path / "responses.sqlite3"
    shutil.copy(FIXTURES / "smoke_responses.sqlite3", store)
    cfg = compose_params(["items=smoke", "personas=smoke", "design.replicates=1",
                          f"paths.response_store={store}"])
    prompts = design_stage(cfg)
    responses = answer_prompts(cfg, prompts, models_for(cfg, prompts), "Rasch")
    assert summarise_responses(responses) == {"sent": 0, "cached": 15, "failed": 0}
    assert responses.filter(responses["response_text"].str.len_chars() > 0).height == 15
