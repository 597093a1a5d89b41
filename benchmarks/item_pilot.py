"""Choose the default scenarios on a pilot that asks no demographic persona.

Usage: python benchmarks/item_pilot.py [--count 12] [--run DIR] [OVERRIDES...]

Runs every item of the bank under the baseline and the 8 null personas only, with a seed that is
not the default audit's (so the pilot's answers and null strings are not the audit's own), labels
the answers with the rules, and prints per item how often its answers went each way and the items
`audit.items.most_informative` keeps. An item that every placebo persona decides the same way
tells a Rasch fit nothing about differences between personas, so the default design spends its
prompts on the others. Hydra overrides pass through to the pilot audit (`model=qwen_coder_1_5b`
pilots another audited model: choose items for the model you audit). `--run DIR` reads an
existing pilot run instead of running one. The pilot audit runs in the folder you run this from,
as `python -m audit` does: a model of your own in ./conf/model/ is found, and the answers go to
that folder's response store, so a second run costs seconds.

Ends with `RESULT item_ids=<comma-separated ids> informative_share=<x> decided_share=<y>`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

from audit.items import most_informative, pilot_informativeness

PILOT_TABLES = ("prompts.parquet", "labels.parquet")  # what the pilot reads from a run
PILOT_SEED = 20261125  # not the default design's seed (20251123)
PILOT_OVERRIDES = [
    "items=full", 'personas.generators=[baseline,"null"]', f"design.seed={PILOT_SEED}",
    "design.replicates=1", "judge=rules_only", "tracking=none",
    "fit.attributes=[]",  # placebo personas hold no group to contrast (checked at the design)
    # The pilot that chose conf/items/default.yaml asked 8 placebo personas; the audit's own
    # default later fell to 4, which would halve the pilot's answers per item.
    "personas.null_count=8",
]


def run_pilot(run_dir: Path, overrides: list[str]) -> None:
    command = [sys.executable, "-m", "audit", *PILOT_OVERRIDES, *overrides,
               f"paths.output_dir={run_dir}", f"hydra.run.dir={run_dir}"]
    # In the caller's folder, not the clone's: the user's ./conf and response store live there.
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pilot audit failed:\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=12, help="how many items to keep")
    parser.add_argument("--run", type=Path, help="an existing pilot run directory")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for the pilot audit")
    args = parser.parse_args()
    missing = [name for name in PILOT_TABLES if args.run and not (args.run / name).is_file()]
    if missing:
        raise SystemExit(f"item_pilot.py: --run {args.run}: no {missing[0]} there; give the "
                         "folder of a finished pilot run (it holds prompts.parquet and "
                         "labels.parquet), or leave --run out to run one")
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run or Path(scratch) / "pilot"
        if args.run is None:
            run_pilot(run_dir, args.overrides)
        prompts, labels = (pl.read_parquet(run_dir / name) for name in PILOT_TABLES)
    pilot = labels.join(prompts.select("prompt_id", "item_id", "domain", "persona_kind"),
                        on="prompt_id")
    table = pilot_informativeness(pilot)
    kept = most_informative(table, args.count)
    with pl.Config(tbl_rows=-1, tbl_hide_dataframe_shape=True):
        print(table.with_columns(kept=pl.col("item_id").is_in(kept)))
    informative = table.filter(pl.col("informativeness") > 0).height / table.height
    decided = (table["favourable"].sum() + table["unfavourable"].sum()) / table["answers"].sum()
    print(f"RESULT item_ids={','.join(kept)} informative_share={informative:.3f} "
          f"decided_share={decided:.3f}")


if __name__ == "__main__":
    main()
