"""The shipped embedded configuration is reproducible: the same prompt and seed give the same
text whatever else is in flight and whatever the runtime processed before.

Measured (backends/embedded.py): prefix reuse and parallel slots both change llama.cpp's logits,
so the default runtime has one slot and no prompt cache, and requests sent concurrently wait in
its queue. These tests fail if either default changes or the runtime starts reusing state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from audit.llm.backends import create_backend
from audit.config import DesignConfig, ModelConfig, SamplingConfig
from audit.design import expand_design
from audit.llm.engine import build_request, collect_responses, send
from audit.llm.store import ResponseStore

pytestmark = pytest.mark.slow
MODEL = ModelConfig(model="smollm2-135m-instruct", system_prompt="Decide first, then explain.",
                    sampling=SamplingConfig(temperature=0.7, top_p=0.95, max_tokens=16))


def test_fifty_prompts_give_the_same_texts_one_at_a_time_and_concurrently(items, personas,
                                                                          tmp_path):
    prompts = expand_design(items, personas, {"m": MODEL},
                            DesignConfig(replicates=4, seed=5)).sort("prompt_id").head(50)
    assert prompts.height == 50
    backend = create_backend(MODEL)  # the default: one slot
    # One at a time, in reverse order, so each prompt follows a different one than below.
    alone = {}
    with ResponseStore(tmp_path / "alone.sqlite3") as store:
        for row in reversed(prompts.rows(named=True)):
            request = build_request(MODEL, row["system_prompt"], row["user_prompt"], row["seed"])
            alone[row["prompt_id"]] = send(backend, request, store).completion.text
    # Eight at a time into the same runtime (its queue), through the engine.
    with ResponseStore(tmp_path / "together.sqlite3") as store:
        together = collect_responses(prompts, {"m": backend},
                                     {"m": replace(MODEL, max_concurrency=8)}, store,
                                     show_progress=False)
    assert together["status"].to_list() == ["ok"] * 50
    texts = dict(zip(together["prompt_id"], together["response_text"]))
    assert len(set(texts.values())) > 25  # real sampled answers, not one repeated text
    differing = [key for key in alone if alone[key] != texts[key]]
    assert not differing, f"{len(differing)} of 50 texts changed with what else was in flight"
