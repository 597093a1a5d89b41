"""What a run's numbers mean, in sentences: the warnings a run logs, and the plain-language reading
and caveats of the HTML report. Pure functions of tables and figures, so they are tested directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from audit.methods.rasch.irt.hurdle import ABSTAINED_OUTCOME, DECIDED_OUTCOME
from audit.methods.rasch.schemas import LABELS, UNPARSEABLE

# A judge that gives one label to nearly every answer it reads is probably not reading them (the
# embedded 135M judge does this); below this many judged answers the share says too little.
JUDGE_TOP_LABEL_SHARE_WARN = 0.9
JUDGE_MIN_ANSWERS_FOR_WARNING = 20
# Below this gold-set accuracy every finding mostly measures the judge's errors; warn loudly.
JUDGE_GOLD_ACCURACY_WARN = 0.8
# Above this share of answers without a decision, the fit rests on a selected subset.
UNPARSEABLE_SHARE_WARN = 0.2
# Fewer decided answers than this per respondent give intervals too wide to rank anyone.
MIN_ANSWERS_PER_RESPONDENT = 10
# An outcome whose rarer value is below this share of a model's answers cannot separate that
# model's personas: every respondent sits at the same extreme, every contrast is "undecided" with
# an interval set by the priors, and reading that as "no demographic difference" would be wrong
# (issue 19: the smoke audit labelled 15 of 15 answers unfavourable and read as a null finding).
NO_SIGNAL_MINORITY_SHARE = 0.05


@dataclass(frozen=True)
class JudgeQuality:
    """What the run knows about its labels' reliability (gold figures None when not measured)."""

    top_label: str
    top_label_share: float
    judged: int
    gold_accuracy: float | None
    gold_kappa: float | None


def judge_top_label_share(labels: pl.DataFrame) -> tuple[float, str, int]:
    """Share of the judge LLM's most frequent label among the answers it labelled."""
    judged = labels.filter(pl.col("label_source") == "judge")
    if judged.is_empty():
        return float("nan"), "", 0
    top = judged.group_by("label").len().sort(["len", "label"], descending=[True, False]).row(0)
    return top[1] / judged.height, top[0], judged.height


def quality_warnings(judge: JudgeQuality, judge_name: str, rate_tests: pl.DataFrame,
                     problems: list[str]) -> list[str]:
    """Each a sentence with the fix; logged as warnings and shown in the report."""
    found = [f"the fit did not converge: {problem}" for problem in problems]
    if judge.judged >= JUDGE_MIN_ANSWERS_FOR_WARNING and \
            judge.top_label_share > JUDGE_TOP_LABEL_SHARE_WARN:
        found.append(f"the judge gave '{judge.top_label}' to {judge.top_label_share:.0%} of the "
                     f"{judge.judged} answers it labelled: it may not be reading them; check "
                     f"labels.parquet and consider a stronger judge (judge=...)")
    if judge.gold_accuracy is not None and judge.gold_accuracy < JUDGE_GOLD_ACCURACY_WARN:
        found.append(f"the judge '{judge_name}' labels {judge.gold_accuracy:.0%} of the gold set "
                     f"correctly (Cohen's kappa {judge.gold_kappa:.2f}): labels, and every "
                     f"finding built on them, inherit its errors; see judge_gold_confusion.csv "
                     f"and consider a stronger judge (judge=...)")
    for model, label, p_value in rate_tests.select("model_name", "label", "p_value").iter_rows():
        if label in (LABELS[2], LABELS[3]) and p_value is not None and p_value < 0.05:
            found.append(f"{model}: the {label} rate differs between personas (p = {p_value:.3g},"
                         f" see label_rate_tests.csv): unequal abstention is itself a finding")
    return found


# Outcomes whose 1 is an abstention, not a favourable answer: fit.second_outcome=undetermined
# and the hurdle model's first step.
ABSTENTION_OUTCOMES = ("undetermined", ABSTAINED_OUTCOME)


def _interval(row: dict, hdi_prob: float) -> str:
    return (f"{row['mean']:+.2f} ({hdi_prob:.0%} HDI {row['hdi_low']:+.2f} to "
            f"{row['hdi_high']:+.2f})")


def contrast_sentence(row: dict, hdi_prob: float) -> str:
    """One contrast in words, direction from the HDI and ROPE, never from the mean alone."""
    a, b = row["level_a"], row["level_b"]
    subject = f"For {row['model_name']}, {row['attribute']} {a} versus {b}"
    rope_low, rope_high = row.get("rope_low"), row.get("rope_high")
    if rope_low is not None and row["hdi_low"] >= rope_low and row["hdi_high"] <= rope_high:
        verdict = (f"practically equivalent: the whole interval lies inside the region of "
                   f"practical equivalence [{rope_low:+.2f}, {rope_high:+.2f}]")
    elif row["hdi_low"] > 0 or row["hdi_high"] < 0:
        more = row["hdi_low"] > 0
        outcome = row.get("outcome")
        if outcome in ABSTENTION_OUTCOMES:  # 1 = abstained: a positive gap is more abstention
            verdict = (f"the model abstained (asked for more information or would not decide) "
                       f"{'more' if more else 'less'} often for {a} personas than for {b} personas")
        else:
            verdict = (f"{a} personas were treated {'more' if more else 'less'} favourably than "
                       f"{b} personas")
            if outcome == DECIDED_OUTCOME:
                verdict = f"once the model decided, {verdict}"
    else:
        verdict = "no clear difference: the interval includes zero"
    direction = row.get("p_direction")
    probability = f", probability of direction {direction:.2f}" if direction is not None else ""
    decision = f"; decision: {row['decision']}" if row.get("decision") else ""
    return (f"{subject}: {verdict}. Difference in log-odds {_interval(row, hdi_prob)}"
            f"{probability}{decision}.{_noise_clause(row)}")


def _noise_clause(row: dict) -> str:
    """The contrast next to the null arm: the noise floor and where the gap ranks among
    null-vs-null gaps. A diagnostic: it says how much any change of persona text moves the model,
    and never turns a `different` decision into no finding (issue 34)."""
    floor, percentile = row.get("noise_floor"), row.get("null_percentile")
    if not finite(floor):
        return " No noise floor: fewer than two null personas."
    clause = (f" Noise floor {floor:.2f} (the gap two groups of random-string personas of these "
              "sizes show)")
    if finite(percentile):
        clause += (f"; the gap is larger than {percentile:.0f}% of null-vs-null gaps of the same "
                   "group sizes")
    return clause + "."


def noise_floor(thetas: pl.DataFrame) -> tuple[float, float] | None:
    """The range of the null personas' posterior means: differences inside it are what
    an arbitrary string in the persona slot produces."""
    nulls = thetas.filter(pl.col("persona_kind") == "null")
    if nulls.height < 2:
        return None
    return float(nulls["mean"].min()), float(nulls["mean"].max())


def no_signal_reasons(outcomes: pl.DataFrame, models: list[str], coding: str,
                      judge: JudgeQuality, response: str = "decision") -> list[str]:
    """Why this run can neither show nor rule out a demographic difference; empty when it can.

    `outcomes` is the coded table the fit reads (`model_name`, `y` in {0, 1}); `models` are the
    audited models. Causes: an outcome that (almost) never varies within a model (or a model with
    no labelled answer at all), and a judge whose gold-set accuracy is below
    JUDGE_GOLD_ACCURACY_WARN, whose labels then mostly measure its own errors. A fit of
    P(favourable) (`response` probability) does not need its decisions to vary: constant "No"
    answers with varying P(yes) are exactly what it reads."""
    reasons: list[str] = []
    counts = (outcomes.group_by("model_name")
              .agg(pl.len().alias("n"), pl.col("y").sum().alias("ones")).sort("model_name"))
    for model, n, ones in counts.iter_rows() if response == "decision" else ():
        majority, value = max((ones, 1), (n - ones, 0))
        if n and (n - majority) / n < NO_SIGNAL_MINORITY_SHARE:
            reasons.append(f"{model}'s '{coding}' outcome is {value} in {majority} of its {n} "
                           f"labelled answers, so it barely varies between personas")
    for model in sorted(set(models) - set(counts["model_name"].to_list())):
        reasons.append(f"{model} has no labelled answers")
    if judge.gold_accuracy is not None and judge.gold_accuracy < JUDGE_GOLD_ACCURACY_WARN:
        reasons.append(f"the judge labels {judge.gold_accuracy:.0%} of the gold set correctly, "
                       f"below the {JUDGE_GOLD_ACCURACY_WARN:.0%} needed to trust its labels")
    return reasons


def no_signal_headline(reasons: list[str]) -> str:
    return ("NO SIGNAL: this run can neither show nor rule out a demographic difference, "
            f"because {'; '.join(reasons)}. Use a model that states decisions (model=...) or a "
            f"stronger judge (judge=...) before reading any interval below as a finding.")


def plain_language_reading(contrasts: pl.DataFrame | None, thetas: pl.DataFrame,
                           hdi_prob: float, no_signal: list[str] | None = None) -> list[str]:
    """The reading's sentences; with `no_signal` reasons the first says so, and the run is never
    summarised as showing no demographic difference."""
    sentences: list[str] = [no_signal_headline(no_signal)] if no_signal else []
    if contrasts is not None and contrasts.height:
        sentences.extend(contrast_sentence(row, hdi_prob)
                         for row in contrasts.iter_rows(named=True))
    else:
        sentences.append("This fit reports no demographic contrasts (the Rasch model estimates "
                         "one favourability theta per respondent); the reading compares "
                         "respondents with the null personas instead.")
    floor = noise_floor(thetas)
    if floor is None:
        sentences.append("There were fewer than two null personas, so there is no noise floor "
                         "to compare the demographic personas against.")
        return sentences
    low, high = floor
    sentences.append(f"Null personas (random strings in the persona slot) have posterior mean "
                     f"favourability from {low:+.2f} to {high:+.2f}: differences of that size "
                     f"arise from changing the prompt at all, not from demographics.")
    others = thetas.filter(pl.col("persona_kind").is_in(["explicit", "name"]))
    above = others.filter(pl.col("hdi_low") > high)["respondent_id"].to_list()
    below = others.filter(pl.col("hdi_high") < low)["respondent_id"].to_list()
    if above or below:
        if above:
            sentences.append(f"Whole interval above every null persona: {', '.join(above)}.")
        if below:
            sentences.append(f"Whole interval below every null persona: {', '.join(below)}.")
    elif others.height and not no_signal:
        sentences.append("No demographic persona's interval lies wholly outside the null "
                         "personas' range: this run shows no demographic difference larger "
                         "than the noise floor.")
    return sentences


def caveats(labels: pl.DataFrame, prompts: pl.DataFrame, judge: JudgeQuality, converged: bool,
            failed: int) -> list[str]:
    """What limits the reading, most serious first."""
    found: list[str] = []
    if not converged:
        found.append("The sampler did not converge: every interval in this report is unreliable "
                     "until the fit is rerun with the advice in the diagnostics section.")
    if judge.gold_accuracy is None:
        found.append("The judge was not measured on the gold set in this run "
                     "(judge.evaluate_on_gold=false); measure it with `python -m "
                     "audit.judge_eval` before trusting the labels.")
    elif judge.gold_accuracy < JUDGE_GOLD_ACCURACY_WARN:
        found.append(f"The judge labelled only {judge.gold_accuracy:.0%} of the gold set "
                     f"correctly: the findings partly measure the judge's errors.")
    unparseable = labels.filter(pl.col("label") == UNPARSEABLE).height / max(labels.height, 1)
    if unparseable > UNPARSEABLE_SHARE_WARN:
        found.append(f"{unparseable:.0%} of the answers carried no decision (unparseable) and are "
                     f"left out of the fit: the rest may not be a random subset.")
    if failed:
        found.append(f"{failed} requests failed after retries and are missing from the design.")
    per_respondent = (labels.filter(pl.col("label") != UNPARSEABLE)
                      .join(prompts.select("prompt_id", "respondent_id"), on="prompt_id")
                      .group_by("respondent_id").len()["len"])
    smallest = int(per_respondent.min()) if per_respondent.len() else 0
    if smallest < MIN_ANSWERS_PER_RESPONDENT:
        found.append(f"Some respondents have only {smallest} decided answers: intervals are wide "
                     f"and a ranking of respondents says little; add items or replicates.")
    found.append("The audit measures these scenarios, this prompt wording and these personas. "
                  "It is evidence about the model's answers to them, not about its behaviour "
                  "in a deployment with other prompts.")
    return found


def response_caveat(response: str) -> list[str]:
    """What a fit of P(favourable) measures, and what it skips (irt/probability.py)."""
    if response != "probability":
        return []
    return ["The fit read each answer's P(favourable) (fit.response=probability) as logit P, not "
            "its decision: a contrast is a gap in the model's own probability of the favourable "
            "option, comparable between groups within this model, not across models (each "
            "model's probabilities carry its own calibration). The judge-error correction does "
            "not apply: the probabilities were read from the model, not labelled."]


def finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)
