"""The self-contained HTML report: one file a reviewer can open anywhere, with no network.

Figures are embedded as base64 PNG data URIs and the page carries a Content-Security-Policy that
forbids every fetch, so a page that renders in a browser renders from this file alone. The
template (templates/report.html.j2) ships in the package; this module only fills it.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import polars as pl

from audit.methods.checks import percent, signed
from audit.methods.configs import AuditConfig
from audit.methods.rasch.irt import Diagnostics
from audit.methods.rasch.no_signal import JudgeQuality
from audit.methods.rasch.report.reading import respondent_names, unmeasured_judge_note
from audit.methods.rasch.schemas import JUDGE_FAILED, LABELS, UNPARSEABLE
from audit.methods.rasch.verdict import interval_word
from audit.tracking.mlflow import code_state

TEMPLATE = "report.html.j2"
THETA_ROWS_SHOWN = 40


def png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def diagnostic_checks(diagnostics: Diagnostics) -> list[dict[str, Any]]:
    return [
        {"name": "R-hat, largest", "value": _number(diagnostics.rhat_max),
         "limit": f"<= {diagnostics.rhat_limit}",
         "ok": diagnostics.rhat_max <= diagnostics.rhat_limit},
        {"name": "bulk ESS, smallest", "value": _number(diagnostics.ess_bulk_min, 0),
         "limit": f">= {diagnostics.ess_limit:.0f}",
         "ok": diagnostics.ess_bulk_min >= diagnostics.ess_limit},
        {"name": "tail ESS, smallest", "value": _number(diagnostics.ess_tail_min, 0),
         "limit": f">= {diagnostics.ess_limit:.0f}",
         "ok": diagnostics.ess_tail_min >= diagnostics.ess_limit},
        {"name": "divergent transitions", "value": str(diagnostics.divergences), "limit": "0",
         "ok": diagnostics.divergences == 0},
    ]


@dataclass(frozen=True)
class ReportInputs:
    """Everything the page shows, gathered by publish.py from the run's tables and figures."""

    cfg: AuditConfig
    prompts: pl.DataFrame
    responses: pl.DataFrame
    labels: pl.DataFrame
    thetas: pl.DataFrame
    contrasts: pl.DataFrame | None
    diagnostics: Diagnostics
    advice: list[str]
    judge: JudgeQuality
    gold_metrics: dict[str, float] | None
    gold_confusion: pl.DataFrame | None
    panel_metrics: dict[str, float]
    figures: dict[str, Path]  # key in the template -> PNG file
    model_identities: dict[str, dict[str, str]]
    reading: list[str]
    caveats: list[str]
    warnings: list[str]
    provenance: dict[str, str]
    # Why the run cannot show or rule out a difference (no_signal.no_signal_reasons); empty: it can.
    no_signal: list[str] = field(default_factory=list)
    # sigma_null (and sigma_residual) per model against their prior; None without an estimated
    # floor (every fit but explanatory).
    noise_floor: pl.DataFrame | None = None
    # judge_sensitivity / judge_specificity summary rows when the fit read labels through the
    # judge's errors (fit.judge_error); None when it read them as truth.
    judge_rates: pl.DataFrame | None = None
    # The judge's agreement with the rules per attribute level on its re-read sample
    # (judge/rule_check.py); None when nothing was re-read.
    rule_agreement: pl.DataFrame | None = None
    # An adaptive run (design.adaptive): prompts asked, the design's, looks and the stop;
    # None for a fixed run.
    adaptive: dict[str, Any] | None = None


def build_context(inputs: ReportInputs, run_id: str | None) -> dict[str, Any]:
    cfg, prompts, labels = inputs.cfg, inputs.prompts, inputs.labels
    # Named over every row: named over the rows shown, a ranking topped by one of two models
    # would drop the model from its names.
    names = respondent_names(inputs.thetas)[0][:THETA_ROWS_SHOWN]
    personas = prompts.select("persona_id", "persona_kind").unique().sort("persona_id")
    kinds = {kind: count for kind, count in
             personas.group_by("persona_kind").len().sort("persona_kind").iter_rows()}
    label_counts = [(label, labels.filter(pl.col("label") == label).height)
                    for label in (*LABELS, UNPARSEABLE, JUDGE_FAILED)]
    label_counts = [(label, count) for label, count in label_counts
                    if count or label != JUDGE_FAILED]  # the counts add up to the answers
    gold = None
    if inputs.gold_metrics is not None:
        metrics = inputs.gold_metrics
        gold = {"n": int(metrics["gold/n"]), "accuracy": metrics["gold/accuracy"],
                "accuracy_low": metrics["gold/accuracy_low"],
                "accuracy_high": metrics["gold/accuracy_high"],
                # Old runs' metrics lack it; the page then shows the overall accuracy only.
                "labelled_accuracy": metrics.get("gold/labelled_accuracy"),
                "labelled_accuracy_low": metrics.get("gold/labelled_accuracy_low"),
                "labelled_accuracy_high": metrics.get("gold/labelled_accuracy_high"),
                "unparseable_share": metrics.get("gold/unparseable_share"),
                "kappa": metrics["gold/cohen_kappa"],
                "rules_coverage": metrics["gold/rules_coverage"],
                "rules_accuracy": metrics["gold/rules_accuracy"],
                "judge_coverage": metrics["gold/judge_coverage"],
                "judge_accuracy": metrics["gold/judge_accuracy"]}
    confusion = None
    if inputs.gold_confusion is not None and inputs.gold_confusion.height:
        confusion = {"columns": inputs.gold_confusion.columns,
                     "rows": inputs.gold_confusion.rows()}
    panel = None
    if "judge/n_judges" in inputs.panel_metrics:
        panel = {"alpha": inputs.panel_metrics["judge/krippendorff_alpha"],
                 "kappa": inputs.panel_metrics["judge/fleiss_kappa"],
                 "n_judges": inputs.panel_metrics["judge/n_judges"]}
    models = [{"name": name, "backend": identity.get("backend", model.backend),
               "model": identity.get("model", model.model), "digest": identity.get("digest", "")}
              for name, model in sorted(cfg.model.items())
              for identity in [inputs.model_identities.get(name, {})]]
    responses = inputs.responses
    return {
        "title": f"Audit report: {', '.join(sorted(cfg.model))} ({cfg.method})",
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "run_id": run_id, "experiment": cfg.tracking.experiment,
        # The code's commit (audit.commit, else the folder's); none where neither is known: the
        # header said "commit unknown", as if the record had been lost.
        **dict(zip(("commit", "dirty"), code_state(inputs.provenance))),
        "version": inputs.provenance.get("audit.version", "unknown"),
        "config_hash": inputs.provenance.get("config.hash", ""),
        "converged": inputs.diagnostics.converged, "advice": inputs.advice,
        "no_signal": inputs.no_signal,
        "models": models,
        "items": {"name": cfg.items.name, "count": prompts["item_id"].n_unique(),
                  "domains": sorted(prompts["domain"].unique().to_list()),
                  "ids": sorted(prompts["item_id"].unique().to_list())},
        "personas": kinds, "persona_ids": personas["persona_id"].to_list(),
        "design": {"replicates": cfg.design.replicates, "seed": cfg.design.seed},
        "counts": {"prompts": prompts.height,
                   "ok": responses.filter(pl.col("status") == "ok").height,
                   "failed": responses.filter(pl.col("status") == "error").height,
                   "from_store": responses.filter(pl.col("from_cache")).height,
                   "labelled": labels.height},
        "unmeasured_judge": unmeasured_judge_note(labels, cfg.judge.name),
        "judge": {"name": cfg.judge.name, "method": cfg.judge.method,
                  "use_rules": cfg.judge.use_rules, "models": sorted(cfg.judge.models),
                  "rule_check_per_group": cfg.judge.rule_check_per_group},
        "label_counts": label_counts,
        "fit": cfg.fit, "hdi_label": percent(cfg.fit.hdi_prob),
        "contrasts": (list(inputs.contrasts.iter_rows(named=True))
                      if inputs.contrasts is not None and inputs.contrasts.height else None),
        "noise_floor": (list(inputs.noise_floor.iter_rows(named=True))
                        if inputs.noise_floor is not None else None),
        "judge_rates": (list(inputs.judge_rates.iter_rows(named=True))
                        if inputs.judge_rates is not None else None),
        "rule_agreement": (list(inputs.rule_agreement.iter_rows(named=True))
                           if inputs.rule_agreement is not None else None),
        "adaptive": inputs.adaptive,
        "thetas": [{**row, "name": name} for name, row in zip(
            names, inputs.thetas.head(THETA_ROWS_SHOWN).iter_rows(named=True))],
        "gold": gold, "confusion": confusion, "panel": panel,
        "top_label": {"label": inputs.judge.top_label, "share": inputs.judge.top_label_share,
                      "judged": inputs.judge.judged},
        "checks": diagnostic_checks(inputs.diagnostics),
        "figures": {key: png_data_uri(path) for key, path in inputs.figures.items()},
        "reading": inputs.reading, "caveats": inputs.caveats, "warnings": inputs.warnings,
    }


def template_environment() -> jinja2.Environment:
    """The shipped templates (a run's report, compare's page) with the filters they use."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("audit.methods.rasch.report", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,  # a missing value is a bug, not an empty cell
    )
    environment.filters["num"] = _number_or_na
    environment.filters["percent"] = percent
    environment.filters["percentile"] = _percentile
    environment.filters["signed"] = signed
    environment.filters["interval_word"] = interval_word
    return environment


def render_report(context: dict[str, Any]) -> str:
    return template_environment().get_template(TEMPLATE).render(**context)


def _percentile(value: float | None) -> str:
    """A percentile (0 to 100, null_rank.py) as a percentage: printed bare, 0.50 read as a share,
    a median gap, where it was half a percent, and beside the reading's "larger than 0%"."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.3g}%"


def _number_or_na(value: float | None, digits: int = 2) -> str:
    """NaN (a statistic with nothing to measure, e.g. the judge model's accuracy when rules
    labelled everything) reads as n/a, not as a number."""
    return _number(value, digits)
