"""The default judge's gold-set figures, measured with the real model: the issue-19 targets.

The default cascade (rules, then Qwen2.5-Coder-1.5B scoring the letters of four described
outcomes, and asking whether an answer that does not decide refused) and the judge model alone
label the audit's own gold sample (`judge.gold_per_category` answers of each kind, the sample
every run logs). Targets: cascade accuracy >= 0.90 and Cohen's kappa >= 0.85, judge alone >= 0.80.
The thresholds below are what the shipped judge reached when it was chosen (benchmarks/RESULTS.md,
"Judge on the gold set", with the figures on the whole gold set and its held-out half; the
judge itself is described in docs/judge.md).
Raise a threshold when a better judge reaches more; never lower one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest
from omegaconf import OmegaConf

from audit.llm.backends import create_backend
from audit.config import CONF_DIR, JudgeConfig
from audit.methods.rasch.judge.cascade import Judge
from audit.methods.rasch.judge.gold import gold_figures, gold_sample, label_gold
from audit.schemas import GoldSchema, ItemSchema, validate
from audit.llm.store import ResponseStore

ROOT = Path(__file__).resolve().parents[4]
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
    default = OmegaConf.load(Path(CONF_DIR) / "config.yaml")
    name = next(entry["judge"] for entry in OmegaConf.to_container(default.defaults)
                if isinstance(entry, dict) and "judge" in entry)
    merged = OmegaConf.merge(OmegaConf.structured(JudgeConfig),
                             OmegaConf.load(Path(CONF_DIR) / "judge" / f"{name}.yaml"))
    return OmegaConf.to_object(merged)


def _by_category(results: pl.DataFrame) -> str:
    table = gold_figures(results).by_category
    return "; ".join(f"{category} {accuracy:.2f} (n={count})" for category, count, accuracy, _
                     in table.iter_rows())


@pytest.mark.slow
def test_the_default_judge_meets_what_it_reached_on_the_gold_sample(tmp_path):
    config = default_judge_config()
    assert config.decoding == "letters" and config.refusal_check and config.models, \
        "the default judge changed: re-measure"
    gold = gold_sample(validate(pl.read_csv(ROOT / config.gold_file), GoldSchema, "gold"),
                       config.gold_per_category)
    items = validate(pl.read_csv(ROOT / config.gold_items), ItemSchema, "items")
    judges = [Judge(name, create_backend(model), model)
              for name, model in sorted(config.models.items())]
    quiet = {"show_progress": lambda rows, total, name: rows}
    failures = []
    with ResponseStore(tmp_path / "store.sqlite3") as store:
        for mode, use_rules in (("judge", False), ("cascade", True)):
            results, _ = label_gold(gold, items, dataclasses.replace(config, use_rules=use_rules),
                                    judges, store, **quiet)
            metrics = gold_figures(results).metrics
            for name, floor in REACHED[mode].items():
                if not metrics[name] >= floor:
                    failures.append(f"{mode} {name} {metrics[name]:.3f} < {floor} "
                                    f"(target {TARGETS[mode].get(name, 'none')}); by kind: "
                                    f"{_by_category(results)}")
    assert not failures, "\n".join(failures)

