"""Share of an audited model's answers that state a decision the rules can read, and its cost.

Usage: python benchmarks/decided_share.py MODEL [--caps=8,16,24] [HYDRA_OVERRIDE ...]
e.g.   python benchmarks/decided_share.py qwen_coder_0_5b items.per_domain=2 personas=smoke \
           model.qwen_coder_0_5b.sampling.max_tokens=24

Composes the audit config with `model=MODEL` and the overrides, runs the real design and respond
stages (answers are cached in the response store given by paths.response_store, so re-reading a
setting costs nothing), labels every answer with the rule step only, and prints one JSON line:
the share labelled favourable / unfavourable / needs_more_information / refusal / left to the LLM
judge, the favourable share among decided answers, tokens and seconds per answer. `--caps` also
reads every answer cut to its first N tokens: sampling draws one token at a time, so an answer
generated with max_tokens=40 begins with exactly the tokens max_tokens=N would have returned, and
one generation measures every shorter cap (up to re-tokenising the text, which is exact for all
but rare merges at the cut). The baseline
to compare with is the same command on `smollm2` with today's settings, run in the same session.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from audit.config import CONF_DIR
from audit.config_errors import one_line_config_errors
from audit.llm.backends.packaged import resolve_model_path
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch.judge.rules import label_by_rules
from audit.methods.rasch.design import design_stage
from audit.methods.rasch.method import respond_stage


def decided(texts: list[tuple[str, str, str]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for text, favourable, unfavourable in texts:
        match = label_by_rules(text, favourable, unfavourable)
        counts[match.label if match else "judge"] += 1
    return counts


def cap_shares(model_file: str, texts: list[tuple[str, str, str]], caps: list[int]) -> dict:
    from llama_cpp import Llama  # the tokenizer only: vocab_only loads no weights

    vocab = Llama(model_path=str(resolve_model_path(model_file)), vocab_only=True, verbose=False)
    shares = {}
    for cap in caps:
        cut = [(vocab.detokenize(vocab.tokenize(text.encode(), add_bos=False)[:cap])
                .decode("utf-8", "replace"), favourable, unfavourable)
               for text, favourable, unfavourable in texts]
        counts = decided(cut)
        shares[cap] = round((counts["favourable"] + counts["unfavourable"]) / len(cut), 3)
    return shares


def compose_audit_config(model: str, overrides: list[str]) -> DictConfig:
    """The audit config `python -m audit model=MODEL OVERRIDES...` runs, from the packaged
    conf/ (audit.config.CONF_DIR: the repository has no conf/ of its own since beb78eb)."""
    register_configs()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=[f"model={model}", *overrides])


def main() -> None:
    usage = "usage: python benchmarks/decided_share.py MODEL [--caps=8,16] [OVERRIDE ...]"
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(f"{usage}\n\n{__doc__}")
        sys.exit(0)
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(usage)
    arguments = sys.argv[2:]
    caps = [int(cap) for argument in arguments if argument.startswith("--caps=")
            for cap in argument.removeprefix("--caps=").split(",")]
    model, overrides = sys.argv[1], [a for a in arguments if not a.startswith("--caps=")]
    # A model or override the config does not know: one line naming the valid choices, exit 2.
    with one_line_config_errors(Path(CONF_DIR)):
        composed = compose_audit_config(model, overrides)
    cfg = to_audit_config(composed)
    prompts = design_stage(cfg)
    started = time.perf_counter()
    responses = respond_stage(cfg, prompts)
    wall = time.perf_counter() - started
    table = prompts.join(responses, on="prompt_id")
    answered = table.filter(table["status"] == "ok")
    texts = list(answered.select("response_text", "favourable_option", "unfavourable_option")
                 .iter_rows())
    counts = decided(texts)
    counts["error"] = table.height - answered.height
    total = len(table)
    n_decided = counts["favourable"] + counts["unfavourable"]
    sent = table.filter(~table["from_cache"])
    print(json.dumps({
        "model": model, "overrides": overrides, "prompts": total,
        "decided_share": round(n_decided / total, 3),
        "favourable_among_decided": (round(counts["favourable"] / n_decided, 3)
                                     if n_decided else None),
        "shares": {label: round(count / total, 3) for label, count in sorted(counts.items())},
        "mean_completion_tokens": round(float(table["completion_tokens"].mean() or 0), 1),
        "median_latency_s": round(float(table["latency_s"].median() or 0), 2),
        "sent": len(sent), "respond_wall_s": round(wall, 1),
        "decided_share_if_cut_to_tokens": (cap_shares(cfg.model[model].model, texts, caps)
                                           if caps else None),
        "examples": [text[:80] for text, _, _ in texts[:4]],
    }))


if __name__ == "__main__":
    main()
