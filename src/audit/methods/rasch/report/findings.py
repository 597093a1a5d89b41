"""What a Rasch run found, for the summary every run ends with (audit.methods.summary): each
demographic contrast of `fit/contrasts.csv` in words, after the no-signal headline when the run has
one, and for an adaptive run what it asked and why it stopped. The decision is the fit's (its
family-wise HDI against the ROPE), as the verdict reads it; a `different` gap's rank among
null-vs-null gaps follows as a diagnostic.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from audit.methods.configs import AuditConfig
from audit.methods.rasch.adaptive_run import ROUNDS, adaptive_note
from audit.methods.rasch.design import PROMPTS
from audit.methods.rasch.irt.explanatory import design_aliasing
from audit.methods.rasch.report.metrics import contrast_metric_names
from audit.methods.rasch.report.reading import (
    gap_words,
    rope_words,
)
from audit.methods.checks import finite, percent
from audit.methods.rasch.judge.rule_check import agreement_warnings
from audit.methods.rasch.verdict import (
    CONTRASTS_FILE,
    family_interval,
    interval_word,
    null_rank_words,
    read_rasch,
    showable_words,
)
from audit.methods.findings import Findings, Headline, number
from audit.methods.layout import run_file
from audit.tables import read_frame

# The judge's agreement with the rules per group (publish.py writes it; judge/rule_check.py).
RULE_AGREEMENT_FILE = "report/judge_rule_agreement.csv"

NO_CONTRASTS = ("this fit compares no groups (fit.attributes is empty): the ranking above orders "
                "the respondents")


def decision_words(row: Mapping, outcome: str) -> str:
    """The fit's decision in words, with the direction of a gap and its rank among null gaps."""
    if row["decision"] == "equivalent":
        return "no practical difference (inside the ROPE)"
    if row["decision"] == "undecided":
        # "too wide to tell" was wrong for a narrow interval across the ROPE's edge: the width
        # says what the run could have shown instead.
        showable = showable_words(row)
        return ("undecided (neither clear of the ROPE nor inside it"
                + (f"; {showable}" if showable else "") + ")")
    gap = gap_words({**row, "outcome": outcome}, row["mean"] > 0)
    percentile = row.get("null_percentile")
    rank = f" ({null_rank_words(percentile)})" if finite(percentile) else ""
    return f"different: {gap}{rank}"


def decision_detail(row: Mapping, hdi_prob: float) -> str:
    """The interval the decision was taken on and the ROPE, where that is not the reported HDI
    (family-wise control): without it "undecided" stood next to a 94% HDI clear of zero."""
    family = family_interval(row, hdi_prob)
    if family is None:
        return ""
    mass, low, high = family
    rope = rope_words(row)
    return (f"decided on the {percent(mass)} {interval_word(row)} {number(low)} to {number(high)}"
            + (f" against the {rope}" if rope else ""))


def headlines(contrasts: pl.DataFrame, outcome: str, hdi_prob: float) -> list[Headline]:
    several = contrasts["model_name"].n_unique() > 1
    outcomes = contrasts["outcome"].n_unique() if "outcome" in contrasts.columns else 1
    found = []
    for row, metric in zip(contrasts.iter_rows(named=True), contrast_metric_names(contrasts)):
        coding = row.get("outcome") or outcome
        where = ", ".join([*([row["model_name"]] if several else []),
                           *([f"outcome {coding}"] if outcomes > 1 else [])])
        found.append(Headline(
            f"{row['attribute']} {row['level_a']} vs {row['level_b']}"
            + (f" ({where})" if where else ""),
            decision_words(row, coding), row["mean"], row["hdi_low"], row["hdi_high"],
            f"{percent(hdi_prob)} HDI", detail=decision_detail(row, hdi_prob),
            metric=f"{metric}/mean", unit="log-odds"))
    return found


def findings(cfg: AuditConfig, run_dir: Path, result: Mapping[str, object]) -> Findings:
    contrasts, _ = read_rasch(run_dir)
    no_signal = result.get("no_signal")
    agreement = run_file(run_dir, RULE_AGREEMENT_FILE)
    rule_check = (agreement_warnings(read_frame(agreement, "judge rule agreement"))
                  if agreement.is_file() else [])
    adaptive = adaptive_note(run_file(run_dir, ROUNDS), run_file(run_dir, PROMPTS))
    prompts = run_file(run_dir, PROMPTS)
    aliased = (design_aliasing(read_frame(prompts, "prompts"), cfg.fit.attributes)
               if prompts.is_file() else [])
    return Findings(headlines(contrasts, cfg.fit.outcome, cfg.fit.hdi_prob),
                    notes=[*([str(no_signal)] if no_signal else []),
                           *([adaptive] if adaptive else []), *aliased, *rule_check],
                    source=run_file(run_dir, CONTRASTS_FILE), empty=NO_CONTRASTS,
                    metrics=("no_signal", "rhat_max"))
