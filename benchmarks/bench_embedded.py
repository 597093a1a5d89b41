"""Local decoding speed of the respond stage: today's path against the embedded runtime.

Usage: python benchmarks/bench_embedded.py [--prompts 48] [--slots 1 2 4 8] [--model smollm2]
       [--repeats 1]

In one run, on the same prompts (the first N prompts of the default audit's design, by prompt
id) and the same model config (default: the default audit's model), through the real request
engine (`collect_responses`, a fresh response store each time):
- today's path: llama-cpp-python (`backend: llamacpp`), one request at a time, a fresh context
  per request (skipped, with a line saying so, when the `llamacpp` extra is not installed);
- the embedded runtime (xllamacpp, `backend: embedded`) with N parallel slots, N in --slots;
- the embedded runtime with prefix reuse (llama.cpp's prompt cache) at 1 slot and at the most
  slots asked for.
For each it prints output tokens/s, prompts/s and whether its texts equal the embedded runtime's
one-slot texts (the shipped default; reproducible: prompt cache off, one sequence at a time).
Model loading is outside the timings (one warm-up request first). Ends with one machine-readable
line, the fastest embedded configuration against today's path (or against the one-slot
embedded runtime when llama-cpp-python is absent):
RESULT prompts_per_s_ratio=<x> identical_texts=<true|false> best=<configuration>
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from audit.llm.backends import ChatRequest, Message, create_backend
from audit.llm.backends import embedded
from audit.config import ModelConfig
from audit.llm.engine import collect_responses
from audit.cli.params import compose_params
from audit.config import CONF_DIR
from audit.config_errors import one_line_config_errors
from audit.methods.rasch.design import design_stage
from audit.llm.store import ResponseStore

log = logging.getLogger("bench_embedded")


def measure(name: str, model: ModelConfig, prompts, work: Path, repeats: int) -> dict:
    """Best wall time of `repeats` runs of the respond stage, each into an empty store."""
    backend = create_backend(model)
    backend.complete(ChatRequest((Message("user", "Hello."),), 0.0, 1.0, 1, 1.0, 0))  # warm-up
    best = None
    for repeat in range(repeats):
        with ResponseStore(work / f"{name}-{repeat}.sqlite3") as store:
            started = time.perf_counter()
            responses = collect_responses(prompts, {model_name(prompts): backend},
                                          {model_name(prompts): model}, store,
                                          show_progress=False)
            seconds = time.perf_counter() - started
        if best is None or seconds < best["seconds"]:
            best = {"seconds": seconds, "texts": responses["response_text"].to_list(),
                    "tokens": int(responses["completion_tokens"].sum()),
                    "errors": int((responses["status"] == "error").sum())}
    embedded.close_runtimes()  # one runtime in memory at a time
    return best


def model_name(prompts) -> str:
    return prompts["model_name"][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--model", default=None, help="a model of conf/model (default: the "
                                                      "default audit's)")
    parser.add_argument("--repeats", type=int, default=1)
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("httpx", "audit"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    with one_line_config_errors(Path(CONF_DIR)):  # a mistyped --model: one line, exit 2
        cfg = compose_params([f"model={arguments.model}"] if arguments.model else [])
    prompts = design_stage(cfg).sort("prompt_id").head(arguments.prompts)
    name = model_name(prompts)
    model = replace(cfg.model[name], max_concurrency=1)
    log.info("%d prompts of the default design, model %s (%s), %d threads, max_tokens %d",
             prompts.height, name, model.model, model.n_threads, model.sampling.max_tokens)

    configurations: list[tuple[str, ModelConfig, bool]] = []
    if importlib.util.find_spec("llama_cpp") is not None:
        configurations.append(("llamacpp_serial", replace(model, backend="llamacpp"), False))
    else:
        log.info("llama-cpp-python is not installed (make setup-llamacpp): today's path skipped")
    for slots in arguments.slots:
        configurations.append((f"embedded_{slots}slot", replace(model, backend="embedded",
                                                                 max_concurrency=slots), False))
    for slots in sorted({1, max(arguments.slots)}):
        configurations.append((f"embedded_{slots}slot_prefix_reuse",
                               replace(model, backend="embedded", max_concurrency=slots), True))

    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, config, reuse in configurations:
            embedded.PINNED_SAMPLING["cache_prompt"] = reuse
            try:
                results[label] = measure(label, config, prompts, Path(scratch), arguments.repeats)
            finally:
                embedded.PINNED_SAMPLING["cache_prompt"] = False
            result = results[label]
            log.info("%-34s %7.1f s  %6.2f prompts/s  %6.1f tokens/s  %4d tokens  %d errors",
                     label, result["seconds"], prompts.height / result["seconds"],
                     result["tokens"] / result["seconds"], result["tokens"], result["errors"])

    reference = results["embedded_1slot"]["texts"] if "embedded_1slot" in results else None
    for label, result in results.items():
        if label.startswith("embedded") and reference is not None:
            same = sum(a == b for a, b in zip(result["texts"], reference))
            log.info("%-34s texts identical to embedded_1slot: %d of %d", label, same,
                     len(reference))
    baseline = results.get("llamacpp_serial") or results.get("embedded_1slot")
    candidates = {label: result for label, result in results.items()
                  if label.startswith("embedded")}
    best = min(candidates, key=lambda label: candidates[label]["seconds"])
    ratio = baseline["seconds"] / candidates[best]["seconds"]
    identical = reference is not None and candidates[best]["texts"] == reference
    print(f"RESULT prompts_per_s_ratio={ratio:.2f} identical_texts={str(identical).lower()} "
          f"best={best}")


if __name__ == "__main__":
    main()
