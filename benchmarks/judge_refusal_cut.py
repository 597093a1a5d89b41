"""Where the refusal check cuts, chosen on one half of the gold set and measured on the other.

Usage: python benchmarks/judge_refusal_cut.py [judge=NAME ...]  (Hydra overrides of judge_eval)

The refusal check (judge.refusal_check) asks the judge "did this answer refuse?" for every answer
its first question reads as not deciding, and calls it a refusal when log P(Yes) - log P(No) is
above judge.refusal_log_odds. That cut is one number fitted to labelled data, so its figures are
honest only on answers it was not chosen on: this script labels the whole gold set once per cut
(the judge's replies are scored once and then read from the response store, so the grid costs
nothing more), picks the best cut on the odd-numbered half and reports it on the even half, and
the other way round, for the judge alone and for the cascade. On a fresh store the first pass
labels 441 answers plus the checks (about 25 minutes on 2 cores with the default judge).

Ends with one machine-readable line:
RESULT judge_cut_odd=<c> judge_heldout_even=<a> judge_cut_even=<c> judge_heldout_odd=<a>
cascade_cut_odd=<c> cascade_heldout_even=<a> cascade_cut_even=<c> cascade_heldout_odd=<a>
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
from hydra import compose, initialize_config_dir

from audit.config import CONF_DIR
from audit.config_errors import one_line_config_errors

from audit.methods.configs import register_configs, to_audit_config
from audit.data_files import data_file
from audit.llm.store import ResponseStore
from audit.methods.rasch.judge.gold import label_gold
from audit.methods.rasch.score import judge_panel
from audit.schemas import ItemSchema
from audit.methods.rasch.schemas import GoldSchema
from audit.tables import read_table

CUTS = tuple(round(float(cut), 2) for cut in np.arange(-2.0, 0.51, 0.25))


def correct_by_half(results: pl.DataFrame) -> dict[str, np.ndarray]:
    number = results["gold_id"].str.extract(r"(\d+)$").cast(pl.Int64).to_numpy()
    correct = (results["true_label"] == results["label"]).to_numpy()
    return {"odd": correct[number % 2 == 1], "even": correct[number % 2 == 0]}


def main(overrides: list[str]) -> None:
    register_configs()
    # An override judge_eval does not know: one line naming it, exit 2.
    with one_line_config_errors(Path(CONF_DIR)), initialize_config_dir(CONF_DIR,
                                                                       version_base="1.3"):
        cfg = to_audit_config(compose("judge_eval", overrides=["tracking=none",
                                                               "paths.output_dir=.", *overrides]))
    gold = read_table(data_file(cfg.judge.gold_file, "judge gold set", "judge.gold_file"),
                      GoldSchema, "judge gold set")
    items = read_table(data_file(cfg.judge.gold_items, "gold-set item bank", "judge.gold_items"),
                       ItemSchema, "gold-set item bank")
    judges = judge_panel(cfg)
    result = {}
    with ResponseStore(cfg.paths.response_store) as store:
        for mode, use_rules in (("judge", False), ("cascade", True)):
            accuracy = {}  # cut -> half -> accuracy; None: no check
            for cut in (None, *CUTS):
                config = dataclasses.replace(cfg.judge, use_rules=use_rules,
                                             refusal_check=cut is not None,
                                             refusal_log_odds=0.0 if cut is None else cut)
                results, _ = label_gold(gold, items, config, judges, store,
                                        show_progress=lambda rows, total, name: rows)
                accuracy[cut] = {half: float(values.mean())
                                 for half, values in correct_by_half(results).items()}
            print(f"{mode}: accuracy by cut (odd half / even half)")
            for cut, halves in accuracy.items():
                print(f"  {'no check' if cut is None else f'{cut:+.2f}':>9}  "
                      f"{halves['odd']:.3f} / {halves['even']:.3f}")
            for chosen_on, held_out in (("odd", "even"), ("even", "odd")):
                # Ties go to the cut nearer the judge's own even odds (0): the smaller change.
                cut = max(CUTS, key=lambda c: (accuracy[c][chosen_on], -abs(c)))
                result[f"{mode}_cut_{chosen_on}"] = cut
                result[f"{mode}_heldout_{held_out}"] = accuracy[cut][held_out]
                print(f"  chosen on the {chosen_on} half: {cut:+.2f}, held-out {held_out} half "
                      f"{accuracy[cut][held_out]:.3f} (no check: {accuracy[None][held_out]:.3f})")
    print("RESULT " + " ".join(f"{key}={value:.3f}" for key, value in result.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of judge_eval (judge=NAME)")
    main(parser.parse_args().overrides)
