"""What a run's numbers mean, in sentences: the warnings a run logs, and the plain-language reading
and caveats of the HTML report. Pure functions of tables and figures, so they are tested directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import polars as pl

from audit.logs import counted
from audit.methods.checks import finite, percent, signed
from audit.methods.rasch.irt.hurdle import ABSTAINED_OUTCOME, DECIDED_OUTCOME
from audit.methods.rasch.no_signal import (JudgeQuality, no_signal_headline, untrusted_judge,
                                           untrusted_words)
from audit.methods.rasch.schemas import (IMPORTED_DECISIONS_FIX, JUDGE_FAILED, LABELS,
                                         UNJUDGED_SOURCES, UNPARSEABLE)
from audit.methods.rasch.verdict import (family_interval, interval_word, null_rank_words,
                                         showable_words)

# A judge that gives one label to nearly every answer it reads is probably not reading them (the
# embedded 135M judge does this); below this many judged answers the share says too little.
JUDGE_TOP_LABEL_SHARE_WARN = 0.9
JUDGE_MIN_ANSWERS_FOR_WARNING = 20
# Above this share of answers without a decision, the fit rests on a selected subset.
UNPARSEABLE_SHARE_WARN = 0.2
# Fewer decided answers than this per respondent give intervals too wide to rank anyone.
MIN_ANSWERS_PER_RESPONDENT = 10


def quality_warnings(judge: JudgeQuality, judge_name: str, rate_tests: pl.DataFrame,
                     problems: list[str]) -> list[str]:
    """Each a sentence with the fix; logged as warnings and shown in the report."""
    found = [f"the fit did not converge: {problem}" for problem in problems]
    if judge.judged >= JUDGE_MIN_ANSWERS_FOR_WARNING and \
            judge.top_label_share > JUDGE_TOP_LABEL_SHARE_WARN:
        found.append(f"the judge gave '{judge.top_label}' to {judge.top_label_share:.0%} of the "
                     f"{judge.judged} answers it labelled: it may not be reading them; check "
                     f"labels.parquet and consider a stronger judge (judge=...)")
    if untrusted_judge(judge):
        found.append(f"the judge '{judge_name}' {untrusted_words(judge)} (Cohen's kappa "
                     f"{judge.gold_kappa:.2f} over the gold answers it was heard on): labels, and every "
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
    return (f"{signed(row['mean'])} ({percent(hdi_prob)} HDI {signed(row['hdi_low'])} to "
            f"{signed(row['hdi_high'])})")


def rope_words(row: Mapping, digits: int = 2) -> str | None:
    """The ROPE as "ROPE ±0.18" (or "ROPE -0.10 to +0.20" when it is not symmetric)."""
    low, high = row.get("rope_low"), row.get("rope_high")
    if not (finite(low) and finite(high)):
        return None
    if math.isclose(-low, high):
        return f"ROPE ±{high:.{digits}f}"
    return f"ROPE {signed(low, digits)} to {signed(high, digits)}"


def gap_words(row: Mapping, more: bool) -> str:
    """Which way the gap goes, in the outcome's own terms."""
    a, b, outcome = row["level_a"], row["level_b"], row.get("outcome")
    if outcome in ABSTENTION_OUTCOMES:  # 1 = abstained: a positive gap is more abstention
        return (f"the model abstained (asked for more information or would not decide) "
                f"{'more' if more else 'less'} often for {a} personas than for {b} personas")
    words = f"{a} personas were treated {'more' if more else 'less'} favourably than {b} personas"
    return f"once the model decided, {words}" if outcome == DECIDED_OUTCOME else words


def _decision_reading(row: dict, hdi_prob: float) -> str:
    """The claim: the fit's decision, its interval against the ROPE (statistics.md)."""
    family = family_interval(row, hdi_prob)
    size = row.get("family_size")  # a float in the report's table: "over 7.0 contrasts"
    over = (f", over the run's {size:.0f} contrast{'' if size == 1 else 's'}" if finite(size)
            else "")
    familywise = finite(row.get("familywise_alpha"))
    interval = (f"the {percent(hdi_prob)} HDI" if family is None else
                f"the {'family-wise ' if familywise else ''}{percent(family[0])} "
                f"{interval_word(row)} ({signed(family[1])} to {signed(family[2])}"
                f"{over if familywise else ''})")
    rope = (f"the region of practical equivalence [{signed(row['rope_low'])}, "
            f"{signed(row['rope_high'])}]")
    if row["decision"] == "different":
        return f"{gap_words(row, row['mean'] > 0)}: {interval} lies wholly outside {rope}"
    if row["decision"] == "equivalent":
        return f"practically equivalent: {interval} lies wholly inside {rope}"
    reading = (f"undecided: {interval} reaches into {rope} without lying inside it, so this run "
               f"can neither show a difference nor rule one out")
    showable = showable_words(row)
    if showable:
        reading += f"; {showable}, so a smaller gap would usually go unseen"
    # Only where the reported HDI alone would have decided `different` (clear of the ROPE): an
    # HDI that excludes zero but reaches into the ROPE is undecided either way, and saying the
    # family-wise interval kept it so misread the rule.
    if family is not None and familywise and (row["hdi_low"] > row["rope_high"]
                                              or row["hdi_high"] < row["rope_low"]):
        reading += (f" (the {percent(hdi_prob)} HDI alone lies clear of the ROPE, but a "
                    f"decision is taken on the family-wise one, so that the contrasts together "
                    f"rarely yield a false difference)")
    return reading


def contrast_sentence(row: dict, hdi_prob: float, floor_from_prior: bool = False) -> str:
    """One contrast in words. The claim is the fit's decision, taken on its decision interval
    (family-wise under fit.familywise_alpha) against the ROPE, never on the mean or the reported
    HDI alone: on the embedded default a 94% HDI of -3.89 to -0.33 sat under an `undecided`
    decision (99.29% HDI -4.92 to +0.46), and the sentence read it as a difference."""
    subject = f"For {row['model_name']}, {row['attribute']} {row['level_a']} versus {row['level_b']}"
    verdict = _decision_reading(row, hdi_prob)
    direction = row.get("p_direction")
    probability = f", probability of direction {direction:.2f}" if direction is not None else ""
    return (f"{subject}: {verdict}. Difference in log-odds {_interval(row, hdi_prob)}"
            f"{probability}.{_noise_clause(row, hdi_prob, floor_from_prior)}")


def _noise_clause(row: dict, hdi_prob: float, floor_from_prior: bool = False) -> str:
    """The contrast next to the null arm: the noise floor and where the gap ranks among
    null-vs-null gaps. A diagnostic: it says how much any change of persona text moves the model,
    and never turns a `different` decision into no finding (issue 34). ``floor_from_prior``:
    the model's sigma_null is mostly its prior (noise_floor.py), which the sentence says, where
    it stated the floor as a measured fact about the model."""
    floor, percentile = row.get("noise_floor"), row.get("null_percentile")
    if not finite(floor):
        return " No noise floor: fewer than two null personas."
    low, high = row.get("noise_floor_low"), row.get("noise_floor_high")
    interval = (f"{percent(hdi_prob)} HDI {low:.2f} to {high:.2f}; "
                if finite(low) and finite(high) else "")  # runs before the interval had none
    clause = (f" Noise floor {floor:.2f} ({interval}the typical gap two groups of random-string "
              "personas of these sizes show"
              + ("; mostly from its prior, not measured by this audit" if floor_from_prior
                 else "") + ")")
    if finite(percentile):
        clause += f"; the gap is {null_rank_words(percentile)} of the same group sizes"
    return clause + "."


def respondent_names(thetas: pl.DataFrame) -> tuple[list[str], str | None]:
    """Each row's name for a table or figure, and the one audited model the rows share (None
    with several models, or a table without persona ids: then the full respondent id). With one
    model the persona alone: "qwen_coder_0_5b/" before every name cut the names to "woman_id…" in
    an 80-column terminal and crowded the figure's labels."""
    models = thetas["model_name"].unique().to_list() if "model_name" in thetas.columns else []
    if len(models) == 1 and "persona_id" in thetas.columns:
        return thetas["persona_id"].to_list(), models[0]
    return thetas["respondent_id"].to_list(), None


def noise_floor(thetas: pl.DataFrame) -> tuple[float, float] | None:
    """The range of the null personas' posterior means: differences inside it are what
    an arbitrary string in the persona slot produces."""
    nulls = thetas.filter(pl.col("persona_kind") == "null")
    if nulls.height < 2:
        return None
    return float(nulls["mean"].min()), float(nulls["mean"].max())


def plain_language_reading(contrasts: pl.DataFrame | None, thetas: pl.DataFrame,
                           hdi_prob: float, no_signal: list[str] | None = None,
                           floor_from_prior: frozenset[str] = frozenset()) -> list[str]:
    """The reading's sentences; with `no_signal` reasons the first says so, and the run is never
    summarised as showing no demographic difference. ``floor_from_prior``: the audited models
    whose noise floor is mostly its prior (noise_floor_table's ``estimated`` false)."""
    sentences: list[str] = [no_signal_headline(no_signal)] if no_signal else []
    if contrasts is not None and contrasts.height:
        sentences.extend(contrast_sentence(row, hdi_prob, row["model_name"] in floor_from_prior)
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
    floors = (contrasts is not None and "noise_floor" in contrasts.columns
              and contrasts["noise_floor"].drop_nulls().len() > 0)
    # Their posterior means are pulled towards each other by the fit (partial pooling), so the
    # range understates how far a persona text moves the model: on the smoke run it was 0.0006
    # wide beside a noise floor of 0.94. The measure is the noise floor, from their spread.
    sentences.append(f"Null personas (random strings in the persona slot) have posterior mean "
                     f"favourability from {signed(low)} to {signed(high)}; the fit pulls these "
                     f"means towards each other, so "
                     + ("the noise floor above, from their estimated spread, says how far any "
                        "change of persona text moves this model; a diagnostic, not a discount "
                        "on the contrasts above." if floors else
                        "the range understates how far any change of persona text moves this "
                        "model."))
    # Named over every row, as the ranking names them (a subset of one of two models' rows
    # would lose its model).
    others = (thetas.with_columns(name=pl.Series(respondent_names(thetas)[0], dtype=pl.Utf8))
              .filter(pl.col("persona_kind").is_in(["explicit", "name"])))
    above = others.filter(pl.col("hdi_low") > high)["name"].to_list()
    below = others.filter(pl.col("hdi_high") < low)["name"].to_list()
    if above or below:
        if above:
            sentences.append(f"Whole interval above every null persona: {', '.join(above)}.")
        if below:
            sentences.append(f"Whole interval below every null persona: {', '.join(below)}.")
    # Nothing is said when no interval lies outside: against a range the fit has shrunk, with
    # intervals several logits wide, that could hardly come out otherwise, and it read as
    # reassurance (review of what reaches the user, 2026-12-02).
    return sentences


def unmeasured_judge_note(labels: pl.DataFrame, judge_name: str) -> str | None:
    """Why no gold figures stand beside these labels, and what measures or corrects them; None
    where nothing needs measuring (every label the audited model's own option preference). The
    one sentence said "judge.evaluate_on_gold=false; measure it with audit.judge_eval" of a
    file of imported decisions too, where neither was true (judge review 2026-12-02)."""
    sources = (set(labels.get_column("label_source").drop_nulls().to_list()) - {"none"}
               if "label_source" in labels.columns else set())
    if sources and sources <= set(UNJUDGED_SOURCES):
        if "imported" not in sources:
            return None
        return ("No judge read this run's answers: the decisions imported with them were read "
                f"as given, uncorrected; {IMPORTED_DECISIONS_FIX}.")
    return ("The judge was not measured on the gold set in this run "
            "(judge.evaluate_on_gold=false); measure it with `python -m audit.judge_eval "
            f"judge={judge_name}` before trusting the labels.")


def caveats(labels: pl.DataFrame, prompts: pl.DataFrame, judge: JudgeQuality, converged: bool,
            failed: int, judge_name: str) -> list[str]:
    """What limits the reading, most serious first."""
    found: list[str] = []
    if not converged:
        found.append("The sampler did not converge: every interval in this report is unreliable "
                     "until the fit is rerun with the advice in the diagnostics section.")
    if judge.gold_accuracy is None:
        note = unmeasured_judge_note(labels, judge_name)
        if note:
            found.append(note)
    elif untrusted_judge(judge):
        found.append(f"The judge {untrusted_words(judge)}: the findings partly measure "
                     f"the judge's errors.")
    unparseable = labels.filter(pl.col("label") == UNPARSEABLE).height / max(labels.height, 1)
    unlabelled_gold = judge.gold_unlabelled_share
    if unlabelled_gold is not None and unlabelled_gold > UNPARSEABLE_SHARE_WARN:
        found.append(f"The judge left {unlabelled_gold:.0%} of the gold answers unlabelled "
                     f"(unparseable), and {unparseable:.0%} of this audit's: unlabelled answers "
                     f"are left out of the fit, so the findings are about the answers that state "
                     f"a decision it can read.")
    if unparseable > UNPARSEABLE_SHARE_WARN:
        found.append(f"{unparseable:.0%} of the answers carried no decision (unparseable) and are "
                     f"left out of the fit: the rest may not be a random subset.")
    if failed:
        found.append(f"{counted(failed, 'request')} failed after retries and "
                     f"{'is' if failed == 1 else 'are'} missing from the design.")
    judge_failed = labels.filter(pl.col("label") == JUDGE_FAILED).height
    if judge_failed:  # infrastructure, not the answers: its own sentence, never "no decision"
        found.append(f"{counted(judge_failed, 'answer', ('has', 'have'))} no label because a "
                     f"judge request failed after its retries (engine.max_failed_share accepted "
                     f"the gap): {'it is' if judge_failed == 1 else 'they are'} left out of the "
                     f"fit, and rerunning asks the judge again.")
    per_respondent = (labels.filter(pl.col("label").is_in(LABELS))
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

