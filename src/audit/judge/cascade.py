"""The labelling cascade: rules for answers that state a decision plainly, the LLM judge for the rest.

Only successful responses are labelled: an infrastructure error is not behaviour and never gets a
label. Each label records which step produced it, so rule coverage and judge load are visible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import polars as pl

from audit.backends import Backend
from audit.config import JudgeConfig
from audit.engine import track
from audit.judge.llm import judge_answer
from audit.judge.rules import label_by_rules
from audit.schemas import LabelSchema, validate
from audit.store import ResponseStore


def label_responses(
    prompts: pl.DataFrame,
    responses: pl.DataFrame,
    judge_config: JudgeConfig,
    judge_backend: Backend | None,
    store: ResponseStore,
    show_progress: Callable[[Iterable, int, str], Iterable] = track,
) -> pl.DataFrame:
    answered = (
        responses.filter(pl.col("status") == "ok")
        .join(prompts.select("prompt_id", "question", "favourable_option",
                             "unfavourable_option"), on="prompt_id", how="inner")
        .sort("prompt_id")
    )
    rows = []
    for row in show_progress(answered.iter_rows(named=True), answered.height, "judge"):
        answer = row["response_text"] or ""
        match = (label_by_rules(answer, row["favourable_option"], row["unfavourable_option"])
                 if judge_config.use_rules else None)
        if match is not None:
            rows.append({"prompt_id": row["prompt_id"], "label": match.label,
                         "label_source": "rule", "rationale": f"rule matched: {match.evidence}"})
            continue
        if judge_backend is None:
            rows.append({"prompt_id": row["prompt_id"], "label": "unparseable",
                         "label_source": "none", "rationale": "no rule matched and no judge model"})
            continue
        verdict = judge_answer(judge_backend, judge_config, store, row["question"], answer,
                               row["favourable_option"], row["unfavourable_option"])
        rows.append({"prompt_id": row["prompt_id"], "label": verdict.label,
                     "label_source": "judge", "rationale": verdict.rationale})
    labels = pl.DataFrame(rows, schema={"prompt_id": pl.Utf8, "label": pl.Utf8,
                                        "label_source": pl.Utf8, "rationale": pl.Utf8})
    return validate(labels, LabelSchema, "labels")
