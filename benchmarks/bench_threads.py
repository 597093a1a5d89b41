"""Why the embedded backends never start more llama.cpp threads than the process has cores.

Usage: python benchmarks/bench_threads.py [--prompts 8] [--model qwen_coder_0_5b]

llama.cpp's threads wait for each other at every layer by spinning, so a thread that has no core
of its own (the process is pinned to fewer CPUs than threads, or other jobs hold the cores)
stalls the others until the scheduler runs it. In one run, on the same prompts of the default
design, each configuration in its own process (its affinity set before the model loads):
- baseline: every CPU of this machine, the configured thread count (the default audit, idle);
- one CPU, the configured thread count: what an uncapped backend does when pinned to one core;
- one CPU, one thread: what `usable_threads` starts there.
Prints seconds a prompt for each and their ratios to the baseline, ending with
RESULT one_cpu_uncapped_vs_baseline=<x> one_cpu_capped_vs_baseline=<y>
(seconds a prompt over the baseline's; lower is better). Measured 2026-11-25 on the idle 2-core
machine, 8 prompts: 0.85 s a prompt, 52.05 s uncapped on one CPU (61x: this run alone takes
about 7 minutes), 1.39 s capped (1.62x).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from audit.cli.params import compose_params
from audit.config import CONF_DIR
from audit.config_errors import one_line_config_errors
from audit.llm.backends import embedded
from audit.llm.backends.packaged import resolve_model_path
from audit.methods.rasch.design import design_stage


def child(model_name: str, prompts: int, cpus: int, threads: int) -> None:
    """One configuration: pin to `cpus` CPUs, load with `threads` threads, time the prompts."""
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cpus]))
    cfg = compose_params([f"model={model_name}"])
    model = cfg.model[model_name]
    rows = design_stage(cfg).sort("prompt_id").head(prompts).iter_rows(named=True)
    # load_runtime itself takes the thread count as given: the cap lives in the backends.
    runtime = embedded.load_runtime(resolve_model_path(model.model), model.n_ctx, threads, 1)
    payloads = [{"messages": [{"role": "system", "content": row["system_prompt"]},
                              {"role": "user", "content": row["user_prompt"]}],
                 "temperature": 0.0, "max_tokens": model.sampling.max_tokens, "seed": 1}
                for row in rows]
    runtime.handle_chat_completions(payloads[0])  # warm-up, outside the timing
    started = time.perf_counter()
    for payload in payloads:
        runtime.handle_chat_completions(payload)
    print(json.dumps({"seconds_per_prompt": (time.perf_counter() - started) / len(payloads)}))
    embedded.close_runtimes()


def measure(model_name: str, prompts: int, cpus: int, threads: int) -> float:
    done = subprocess.run([sys.executable, __file__, "--child", str(cpus), str(threads),
                           "--model", model_name, "--prompts", str(prompts)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds_per_prompt"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--model", default="qwen_coder_0_5b")
    parser.add_argument("--child", type=int, nargs=2, metavar=("CPUS", "THREADS"))
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.model, arguments.prompts, *arguments.child)
        return
    with one_line_config_errors(Path(CONF_DIR)):  # a mistyped --model: one line, exit 2
        threads = compose_params([f"model={arguments.model}"]).model[arguments.model].n_threads
    cpus = len(os.sched_getaffinity(0))
    print(f"{arguments.prompts} prompts of the default design, model {arguments.model}, "
          f"{cpus} CPUs, {threads} threads configured")
    baseline = measure(arguments.model, arguments.prompts, cpus, threads)
    uncapped = measure(arguments.model, arguments.prompts, 1, threads)
    capped = measure(arguments.model, arguments.prompts, 1, 1)
    for name, seconds in ((f"{cpus} CPUs, {threads} threads (baseline)", baseline),
                          (f"1 CPU, {threads} threads (uncapped)", uncapped),
                          ("1 CPU, 1 thread (capped)", capped)):
        print(f"{name:<36} {seconds:6.2f} s a prompt  {seconds / baseline:5.2f}x the baseline")
    print(f"RESULT one_cpu_uncapped_vs_baseline={uncapped / baseline:.2f} "
          f"one_cpu_capped_vs_baseline={capped / baseline:.2f}")


if __name__ == "__main__":
    main()
