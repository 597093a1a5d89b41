"""Wall time of real audits on this machine: fresh (empty response store) and rerun (all cached).

Usage: python benchmarks/audit_wall_time.py [smoke|default|all]

Prints seconds per stage and in total, and the rerun/fresh ratio measured in the same run (the
rerun is served from the response store, so it isolates what is not LLM time: design, fit, MLflow);
ends with one `RESULT design=... fresh_s=... rerun_s=... rerun_over_fresh=...` line per design.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DESIGNS = {
    "smoke": ["items=smoke", "personas=smoke", "design.replicates=1"],
    "default": [],
}


def run_audit(work: Path, run_name: str, overrides: list[str]) -> tuple[float, dict]:
    command = [
        sys.executable, "-m", "audit", *overrides,
        f"paths.response_store={work / 'responses.sqlite3'}",
        f"tracking.tracking_uri=sqlite:///{work / 'mlflow.db'}",
        f"tracking.artifact_root={work / 'mlartifacts'}",
        f"hydra.run.dir={work / run_name}",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"audit failed:\n{done.stderr[-3000:]}")
    metrics = json.loads((work / run_name / "report" / "metrics.json").read_text())
    return seconds, metrics


def main() -> None:
    parser = argparse.ArgumentParser(description="Wall time of a fresh and a rerun audit.")
    parser.add_argument("design", nargs="?", default="smoke", choices=[*DESIGNS, "all"],
                        help="the design to time (default: smoke)")
    chosen = parser.parse_args().design
    names = list(DESIGNS) if chosen == "all" else [chosen]
    for name in names:
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            fresh_s, fresh = run_audit(work, "fresh", DESIGNS[name])
            rerun_s, _ = run_audit(work, "rerun", DESIGNS[name])
        stages = {key.split("/")[1]: round(value, 1) for key, value in fresh.items()
                  if key.startswith("duration_s/")}
        print(f"{name}: {int(fresh['n_prompts'])} prompts, fresh {fresh_s:.1f} s "
              f"(stages {stages}), rerun from the store {rerun_s:.1f} s, "
              f"rerun/fresh = {rerun_s / fresh_s:.2f}; rule share {fresh['rule_share']:.2f}, "
              f"R-hat max {fresh['rhat_max']:.3f}, ESS bulk min {fresh['ess_bulk_min']:.0f}")
        print(f"RESULT design={name} fresh_s={fresh_s:.1f} rerun_s={rerun_s:.1f} "
              f"rerun_over_fresh={rerun_s / fresh_s:.3f}")


if __name__ == "__main__":
    main()
