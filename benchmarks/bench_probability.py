"""Headline-contrast width per prompt spent: decisions against P(favourable) on the same prompts.

Usage: python benchmarks/bench_probability.py RUN_DIR [--fractions 0.25 0.5 1] [--draws 2000]

RUN_DIR is a finished Rasch run whose labels carry P(favourable) (`judge=logprob`, or an import
with option log-probabilities or a p_favourable column), for example

    python -m audit items=discrim_eval personas=discrim_eval items.per_domain=12 \
        design.replicates=1 judge=logprob paths.output_dir=RUN_DIR

No model is asked anything here: the run's prompts and labels are re-fitted. For each share of
the run's items (the first ones by item id; each subset keeps every persona), the run's own fit
settings (RUN_DIR/report/config.yaml, else fit=population's) are fitted twice, with
fit.response=decision and fit.response=probability, and the headline contrasts (every level pair
of fit.attributes) give their mean 94% HDI width and mean family-wise decision-interval width.
Prints one row per subset and response, then
RESULT prompts=<n> decision_hdi_width=<w> probability_hdi_width=<w> width_ratio=<r>
for the whole run: the mean 94% HDI width of the fit with response=decision and with
response=probability (the table's hdi_width column; its decision_width column is the
family-wise decision interval, another figure), width_ratio = probability / decision.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from dataclasses import fields, replace
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf

from audit.methods.configs import AuditConfig
from audit.methods.rasch.analyse import fit_stage
from audit.methods.rasch.config import FitConfig

log = logging.getLogger("bench_probability")
POPULATION = FitConfig(model="population", draws=2000, tune=1000, target_accept=0.95)


def run_fit_config(run_dir: Path) -> FitConfig:
    """The fit settings the run used, with its judge-error setting off (probabilities have none,
    and decisions are compared with them on equal terms)."""
    path = run_dir / "report" / "config.yaml"
    if not path.is_file():
        return POPULATION
    saved = OmegaConf.to_container(OmegaConf.load(path).fit)
    known = {field.name for field in fields(FitConfig)}
    return replace(FitConfig(**{key: value for key, value in saved.items() if key in known}),
                   judge_error=False, second_outcome=None)


def widths(run_dir: Path, fractions: list[float], fit_config: FitConfig) -> pl.DataFrame:
    prompts = pl.read_parquet(run_dir / "prompts.parquet")
    labels = pl.read_parquet(run_dir / "labels.parquet")
    items = sorted(prompts["item_id"].unique().to_list())
    rows = []
    for fraction in fractions:
        chosen = items[:max(2, math.ceil(fraction * len(items)))]
        subset = prompts.filter(pl.col("item_id").is_in(chosen))
        subset_labels = labels.filter(pl.col("prompt_id").is_in(subset["prompt_id"].to_list()))
        for response in ("decision", "probability"):
            started = time.perf_counter()
            fit = fit_stage(AuditConfig(fit=replace(fit_config, response=response)), subset,
                            subset_labels)
            contrasts = fit.contrasts
            rows.append({
                "items": len(chosen), "prompts": subset.height, "response": response,
                "hdi_width": float((contrasts["hdi_high"] - contrasts["hdi_low"]).mean()),
                "decision_width": float((contrasts["decision_high"]
                                         - contrasts["decision_low"]).mean()),
                "different": int((contrasts["decision"] == "different").sum()),
                "equivalent": int((contrasts["decision"] == "equivalent").sum()),
                "contrasts": contrasts.height, "rhat_max": fit.diagnostics.rhat_max,
                "divergences": fit.diagnostics.divergences,
                "seconds": round(time.perf_counter() - started, 1)})
            log.info("%s", rows[-1])
    return pl.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument("--draws", type=int, default=None,
                        help="draws a chain (default: the run's fit.draws)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    fit_config = run_fit_config(args.run_dir)
    if args.draws:
        fit_config = replace(fit_config, draws=args.draws)
    labels = pl.read_parquet(args.run_dir / "labels.parquet")
    decided = labels.filter(pl.col("label") != "unparseable")
    log.info("%d labelled answers: %d favourable, %d carry P(favourable) (mean %.3f)",
             decided.height, (decided["label"] == "favourable").sum(),
             decided["p_favourable"].is_not_null().sum(), decided["p_favourable"].mean() or 0.0)
    table = widths(args.run_dir, sorted(args.fractions), fit_config)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200):
        print(table)
    whole = table.filter(pl.col("items") == table["items"].max())
    by_response = dict(zip(whole["response"].to_list(), whole["hdi_width"].to_list()))
    print(f"RESULT prompts={int(whole['prompts'][0])} "
          f"decision_hdi_width={by_response['decision']:.3f} "
          f"probability_hdi_width={by_response['probability']:.3f} "
          f"width_ratio={by_response['probability'] / by_response['decision']:.3f}")


if __name__ == "__main__":
    main()
