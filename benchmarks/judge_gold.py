"""The default judge on the 57-answer gold sample every audit logs: judge alone and cascade.

Usage: python benchmarks/judge_gold.py   (about 4 minutes on 2 cores; a fresh response store)

The default cascade (rules, then Qwen2.5-Coder-1.5B scoring the letters of four described
outcomes, and asking whether an answer that does not decide refused) and the judge model alone
label the audit's own gold sample (`judge.gold_per_category` answers of each kind). Targets
(issue 19): cascade accuracy >= 0.90 and Cohen's kappa >= 0.85, judge alone >= 0.80. REACHED is
what the shipped judge reached when it was chosen (benchmarks/RESULTS.md, "Judge on the gold
set"); the script exits 1 when a figure falls below it. CI checks the cascade's figures on the
same sample through the README's smoke audit (tests/docs/test_readme_smoke.py), which labels it
anyway; the judge alone on all 57 answers costs another labelling pass, so it is measured here.

Ends with one machine-readable line:
RESULT judge_accuracy=<a> judge_kappa=<k> cascade_accuracy=<a> cascade_kappa=<k>
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import polars as pl
import sys
import tempfile
from hydra import compose, initialize_config_dir

from audit.llm.backends import create_backend
from audit.config import CONF_DIR, JudgeConfig
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch.judge.cascade import Judge
from audit.methods.rasch.judge.gold import gold_figures, gold_sample, label_gold
from audit.schemas import ItemSchema
from audit.methods.rasch.schemas import GoldSchema
from audit.tables import read_table
from audit.llm.store import ResponseStore

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"cascade": {"gold/accuracy": 0.90, "gold/cohen_kappa": 0.85},
           "judge": {"gold/accuracy": 0.80}}
# What the shipped default judge reached on the sample (see the module docstring), measured with
# the embedded runtime (xllamacpp), judge.decoding=letters with the refusal check at -0.5 and the
# rules of this commit: cascade 56/57 = 0.982 with kappa 0.975, judge alone 54/57 = 0.947 with
# kappa 0.926 (letters without the check: 51/57; the decision words before them: 45/57). Both are
# partly in-sample: the rules' lean and refusal phrases and the lettered prompt's wording were
# chosen on the odd-numbered half of the gold set, which holds part of this sample, and the
# check's cut on each half. Chosen on one half and measured on the other
# (benchmarks/judge_refusal_cut.py), the cascade reads 0.914 and 0.923 and the judge alone
# 0.842 and 0.868; the whole set: cascade 0.918 (kappa 0.889), judge alone 0.855 (kappa 0.802).
REACHED = {"cascade": {"gold/accuracy": 0.98, "gold/cohen_kappa": 0.97},
           "judge": {"gold/accuracy": 0.94, "gold/cohen_kappa": 0.92}}


def default_judge_config() -> JudgeConfig:
    """The default judge as `python -m audit.judge_eval` composes it (conf/judge_eval.yaml names
    the same judge as the audit's conf/config.yaml), through the same schema as every command."""
    register_configs()
    with initialize_config_dir(CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("judge_eval", overrides=["tracking=none",
                                                                 "paths.output_dir=."])).judge


def _by_category(results: pl.DataFrame) -> str:
    table = gold_figures(results).by_category
    return "; ".join(f"{category} {accuracy:.2f} (n={count})" for category, count, accuracy, _
                     in table.iter_rows())


def main() -> int:
    # No options; --help says what the run costs before it labels anything.
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    config = default_judge_config()
    gold = gold_sample(read_table(ROOT / config.gold_file, GoldSchema, "judge gold set"),
                       config.gold_per_category)
    items = read_table(ROOT / config.gold_items, ItemSchema, "gold items")
    judges = [Judge(name, create_backend(model), model)
              for name, model in sorted(config.models.items())]
    failures, figures = [], {}
    with tempfile.TemporaryDirectory() as folder, \
            ResponseStore(Path(folder) / "store.sqlite3") as store:
        for mode, use_rules in (("judge", False), ("cascade", True)):
            results, _ = label_gold(gold, items, dataclasses.replace(config, use_rules=use_rules),
                                    judges, store)
            metrics = gold_figures(results).metrics
            figures[f"{mode}_accuracy"] = metrics["gold/accuracy"]
            figures[f"{mode}_kappa"] = metrics["gold/cohen_kappa"]
            print(f"{mode}: accuracy {metrics['gold/accuracy']:.3f}, kappa "
                  f"{metrics['gold/cohen_kappa']:.3f} on {gold.height} answers; by kind: "
                  f"{_by_category(results)}")
            for name, floor in REACHED[mode].items():
                if not metrics[name] >= floor:
                    failures.append(f"{mode} {name} {metrics[name]:.3f} < {floor} "
                                    f"(target {TARGETS[mode].get(name, 'none')})")
    print("RESULT " + " ".join(f"{name}={value:.3f}" for name, value in figures.items()))
    for failure in failures:
        print("BELOW WHAT WAS REACHED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
