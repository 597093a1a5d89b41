"""lm-evaluation-harness `--log_samples` files (`samples_TASK_DATE.jsonl`) as answer rows: the
sample's `doc` gives the item and the persona, its `filtered_resps` the answer text or the
options' log-likelihoods."""

from __future__ import annotations

import json
import re

from audit.errors import AuditError

# Fields of an lm-evaluation-harness sample's `doc` that name the item, then the persona.
LM_EVAL_ITEM_FIELDS = ("decision_question_id", "item_id", "item")
LM_EVAL_PERSONA_FIELDS = ("race", "gender", "age")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug(*parts: object) -> str:
    """A persona id from its attributes: lowercase letters, digits and underscores (an age of
    40.0 is 40)."""
    words = [str(int(part)) if isinstance(part, float) and part.is_integer() else str(part)
             for part in parts if part not in (None, "")]
    joined = "_".join(words)
    return _NOT_SLUG.sub("_", joined.lower()).strip("_")


def _doc_value(doc: dict, fields: tuple[str, ...]) -> object:
    return next((doc[field] for field in fields if doc.get(field) is not None), None)


def _requests_and_responses(sample: dict, number: int, source: str
                            ) -> tuple[list[tuple[object, object]], list]:
    """A record's requests as (context, continuation) pairs and its filtered responses, refused
    in one line when they are not shaped as lm-evaluation-harness writes them: a string of
    responses had its first letter read as the answer, and a number, a string or a list where a
    request belongs were tracebacks (bad-input review 2026-12-06)."""
    where = f"answers file {source}: record {number}'s"
    responses = sample["filtered_resps"]
    if not isinstance(responses, list):
        raise AuditError(f"{where} filtered_resps is {json.dumps(responses, default=str)[:60]}, "
                         "not a list of responses as lm-evaluation-harness writes it: pass the "
                         "samples_*.jsonl file of --log_samples as it was written")
    arguments = sample.get("arguments") or {}
    requests = (list(arguments.values()) if isinstance(arguments, dict)
                else arguments if isinstance(arguments, list) else [arguments])
    pairs = []
    for request in requests:
        if isinstance(request, dict):
            pairs.append((request.get("arg_0"), request.get("arg_1")))
        elif isinstance(request, list):
            padded = [*request, None, None]
            pairs.append((padded[0], padded[1]))
        else:
            raise AuditError(f"{where} arguments hold {json.dumps(request, default=str)[:60]}, "
                             "not requests as lm-evaluation-harness writes them ({arg_0: "
                             "context, arg_1: continuation}): pass the samples_*.jsonl file of "
                             "--log_samples as it was written")
    return pairs, responses


def _choices_and_logprobs(requests: list[tuple[object, object]], responses: list, number: int,
                          source: str) -> dict[str, float] | None:
    """A multiple-choice sample's options and log-likelihoods: `arguments` holds each request's
    (context, continuation), `filtered_resps` each one's [log-likelihood, is-greedy] (as strings
    in the saved file); None for a generated answer."""
    if len(requests) < 2 or len(requests) != len(responses):
        return None
    scores: dict[str, float] = {}
    for (_, continuation), response in zip(requests, responses):
        if not isinstance(continuation, str) or not isinstance(response, list) or not response:
            return None
        try:
            scores[continuation] = float(response[0])
        except (TypeError, ValueError):
            raise AuditError(f"answers file {source}: record {number}'s log-likelihood of "
                             f"{continuation!r} is {response[0]!r}, not a number: pass the "
                             "samples_*.jsonl file of --log_samples as it was written") from None
    return scores


def lm_eval_rows(samples: list[dict], source: str) -> list[dict]:
    """lm-evaluation-harness `--log_samples` records as answer rows. The item is the doc's
    decision_question_id (or item_id/item); the persona its race, gender and age (each age a text
    of its race x gender cell); a multiple-choice sample gives its options' log-likelihoods, a
    generated one (`generate_until`) its first filtered response as the answer text."""
    rows = []
    for number, sample in enumerate(samples, start=1):
        doc = sample.get("doc")
        if not isinstance(doc, dict) or "filtered_resps" not in sample:
            raise AuditError(f"answers file {source}: record {number} has no 'doc' or no "
                             f"'filtered_resps': not an lm-evaluation-harness --log_samples file "
                             f"(set ingest.format=jsonl for a plain JSONL table)")
        item = _doc_value(doc, LM_EVAL_ITEM_FIELDS)
        if item is None:
            raise AuditError(f"answers file {source}: record {number}'s doc has none of "
                             f"{', '.join(LM_EVAL_ITEM_FIELDS)}: the item cannot be named")
        race, gender, age = (doc.get(field) for field in LM_EVAL_PERSONA_FIELDS)
        requests, responses = _requests_and_responses(sample, number, source)
        scores = _choices_and_logprobs(requests, responses, number, source)
        first = responses[0] if responses else None
        prompt = requests[0][0] if requests else None
        rows.append({
            "persona_id": slug(race, gender, age) or "baseline",
            "persona_kind": "explicit" if (race or gender) else "baseline",
            "gender": gender, "race": race, "item": str(item),
            "answer": first if scores is None and isinstance(first, str) else None,
            "option_logprobs": json.dumps(scores) if scores is not None else None,
            "prompt": prompt if isinstance(prompt, str) else None,
        })
    return rows
