"""The Rasch method's CI rules (`python -m audit.verdict` on a Rasch run).

A contrast of `fit/contrasts.csv` fails when its family-wise HDI (mass `decision_prob`,
1 - alpha / K over the K contrasts this verdict judges, of every model, the pooled rows and every
outcome; alpha is fit.familywise_alpha, so a run with no group difference fails at most alpha of
the time) lies outside the region of practical equivalence (decision `different`); with
`rasch_fail_on_undecided`, an `undecided` one fails too. Null personas do not forgive a
`different` contrast: where it ranks among null-vs-null contrasts (`null_percentile`) is shown in
the check's message as a diagnostic.
A run written before the family-wise columns is judged on its `hdi_low`/`hdi_high` decision, as it
was then. A fit that did not converge fails (`fit/diagnostics.json`, and a second outcome's fit in
`fit/OUTCOME/`). A run the report calls NO SIGNAL (the reasons the analyse stage writes into
`fit/diagnostics.json` as `no_signal`) cannot pass: each contrast that is not `different` is not
testable, so the run reads NOT TESTED unless one is `different`, which still fails.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check, VerdictError, finite, percent, signed
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.rasch.schemas import ContrastSchema
from audit.methods.layout import run_file

log = logging.getLogger(__name__)

# Written by the fit stage (methods/rasch/analyse.py write_fit) under the run's fit/ folder.
CONTRASTS_FILE = Path("fit") / "contrasts.csv"
DIAGNOSTICS_FILE = Path("fit") / "diagnostics.json"
DIAGNOSTIC_TYPES = {"converged": (bool,), "rhat_max": (int, float), "ess_bulk_min": (int, float),
                    "ess_tail_min": (int, float), "divergences": (int,), "advice": (str,)}


def read_diagnostics(path: Path) -> dict:
    try:
        diagnostics = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise VerdictError(f"cannot read Rasch diagnostics at {path}: {error}") from None
    if not isinstance(diagnostics, dict):
        raise VerdictError(f"Rasch diagnostics at {path} must be a JSON object")
    for key, types in DIAGNOSTIC_TYPES.items():
        if float in types and key in diagnostics and diagnostics[key] is None:
            diagnostics[key] = math.nan  # a figure the fit could not compute (write_json)
        value = diagnostics.get(key)
        if not isinstance(value, types) or (bool in types) != isinstance(value, bool):
            raise VerdictError(f"Rasch diagnostics at {path}: `{key}` is missing or not "
                               f"{' or '.join(t.__name__ for t in types)}")
    reasons = diagnostics.get("no_signal", [])  # absent: a fit by `python -m audit.fit`
    if not isinstance(reasons, list) or not all(isinstance(item, str) for item in reasons):
        raise VerdictError(f"Rasch diagnostics at {path}: `no_signal` is not a list of reasons; "
                           f"rerun the analyse stage")
    return diagnostics


def _convergence_check(name: str, diagnostics: dict, rules: VerdictConfig) -> Check:
    converged = diagnostics["converged"]
    outcome = name.partition(":")[2]  # converged:OUTCOME, a second outcome's fit
    return Check("rasch", "rasch.fit", name, rules.rasch_require_converged and not converged,
                 f"converged={converged}, R-hat max {diagnostics['rhat_max']:.3f}, ESS bulk "
                 f"min {diagnostics['ess_bulk_min']:.0f}, ESS tail min "
                 f"{diagnostics['ess_tail_min']:.0f}, {diagnostics['divergences']} "
                 f"divergences. {diagnostics['advice']}".strip(), about_groups=False,
                 failed_title=f"{f'the {outcome} ' if outcome else ''}fit did not converge "
                              f"(R-hat max {diagnostics['rhat_max']:.3f}, "
                              f"{diagnostics['divergences']} divergences)")


def contrast_fails(row: Mapping, rules: VerdictConfig, no_signal: bool = False
                   ) -> tuple[bool, bool]:
    """(failed, not testable) of one contrast row under the CI rules: a `different` fails, and
    an `undecided` too under rasch_fail_on_undecided; a fit with no signal leaves every other
    contrast not testable. The planner counts power with this very rule (power.ci_failures)."""
    different = row["decision"] == "different"
    untestable = no_signal and not different
    failed = not untestable and (different or (
        rules.rasch_fail_on_undecided and row["decision"] == "undecided"))
    return failed, untestable


def judge_rasch(contrasts: pl.DataFrame, diagnostics: dict[str, dict],
                rules: VerdictConfig) -> list[Check]:
    """`diagnostics` maps a fit's name (`converged`, or `converged:OUTCOME` for a second
    outcome's fit) to its diagnostics.json; every fit must converge. The main fit's `no_signal`
    reasons make every contrast but a `different` one not testable: the report says such a run
    can neither show nor rule out a difference, and a green gate beside it said the opposite."""
    checks = [_convergence_check(name, values, rules) for name, values in diagnostics.items()]
    no_signal = diagnostics.get("converged", {}).get("no_signal") or []
    if contrasts.is_empty():  # convergence alone must not pass a run that compared no groups
        checks.append(Check("rasch", "rasch.contrasts", "group contrasts", False, (
            "not testable: the fit compared no groups: no attribute of fit.attributes has two "
            "levels with labelled answers, or, under a fit without level effects (fit=rasch, "
            "twopl, hurdle), no two levels share a cell of the other attributes (they move "
            "together; the run's log names them); give personas that differ in gender or race "
            "and cross each other, or fit=population"), skipped=True))
        return checks
    by_outcome = "outcome" in contrasts.columns
    for row in contrasts.sort([*(["outcome"] if by_outcome else []), "model_name", "attribute",
                               "level_a", "level_b"]).iter_rows(named=True):
        interval, low, high = decision_interval(row)
        outside = low > row["rope_high"] or high < row["rope_low"]
        if outside != (row["decision"] == "different"):
            log.warning("Rasch contrast %s %s vs %s: decision '%s' but the %s [%.3f, %.3f] "
                        "is %s the ROPE [%.3f, %.3f]; judging by the decision column",
                        row["attribute"], row["level_a"], row["level_b"], row["decision"],
                        interval, low, high, "outside" if outside else "not outside",
                        row["rope_low"], row["rope_high"])
        failed, untestable = contrast_fails(row, rules, bool(no_signal))
        outcome = f"{row['outcome']}." if by_outcome else ""
        message = (f"{row['decision']}: {interval} [{signed(low, 3)}, {signed(high, 3)}] "
                   f"against ROPE [{signed(row['rope_low'], 3)}, {signed(row['rope_high'], 3)}], "
                   f"mean {signed(row['mean'], 3)}, P(direction) {row['p_direction']:.3f}; "
                   f"{null_rank(row)}")
        showable = showable_words(row) if row["decision"] == "undecided" else None
        if showable:
            message += f"; {showable}"
        if no_signal:
            message = (f"{'not testable: ' if untestable else ''}NO SIGNAL "
                       f"({'; '.join(no_signal)}); {message}")
        checks.append(Check(
            "rasch", f"rasch.{outcome}{row['model_name']}.{row['attribute']}",
            f"{row['level_a']} vs {row['level_b']}", failed, message, skipped=untestable,
            undecided=row["decision"] == "undecided" and not untestable))
    return checks


def decided_on(row: Mapping) -> tuple[float, float, float] | None:
    """(mass, low, high) of the HDI a contrast was decided on (family-wise under
    fit.familywise_alpha: 1 - alpha / K, usually wider than the reported one); None in a run
    written before it."""
    mass, low, high = row.get("decision_prob"), row.get("decision_low"), row.get("decision_high")
    if finite(mass) and finite(low) and finite(high):
        return float(mass), float(low), float(high)
    return None


def interval_word(row: Mapping) -> str:
    """What the interval decided on is: "HDI", or "normal interval" where the draws could not
    place an HDI of that mass (stats.intervals.decision_bounds)."""
    return "normal interval" if row.get("decision_interval_kind") == "normal" else "HDI"


def family_interval(row: Mapping, hdi_prob: float) -> tuple[float, float, float] | None:
    """decided_on where that is not the reported HDI of mass ``hdi_prob`` (fit.familywise_alpha
    set, or a normal interval of that mass where the draws could not place the HDI), else None: a 94% HDI clear of zero can then sit under an `undecided` decision, and a
    reader must see which interval decided."""
    decided = decided_on(row)
    if decided is None or (math.isclose(decided[0], hdi_prob)
                           and row.get("decision_interval_kind") != "normal"):
        return None
    return decided


def null_rank_words(percentile: float) -> str:
    """"larger than 99% of null-vs-null gaps": the percent rounded down, so the words stay true
    (99.95 read "larger than 100%" when rounded). Here, not in irt/null_rank.py, because that
    package loads PyMC and the verdict CLI does not need it."""
    return f"larger than {math.floor(percentile)}% of null-vs-null gaps"


def decision_interval(row: dict) -> tuple[str, float, float]:
    """The interval a contrast was decided on, named: the family-wise HDI, or, in a run written
    before it existed, the reported HDI."""
    decided = decided_on(row)
    if decided is not None:
        mass, low, high = decided
        family = (f"alpha {row['familywise_alpha']:g} over the run's {row['family_size']:.0f} "
                  "contrasts"
                  if finite(row.get("familywise_alpha")) else "no family-wise control")
        return f"{percent(mass)} {interval_word(row)} ({family})", low, high
    return "HDI (a run without family-wise decisions)", row["hdi_low"], row["hdi_high"]


# Odds ratios above this are said as "over" it: beyond, the figure means only "enormous".
ODDS_RATIO_SAID_UP_TO = 10_000


def showable_gap(row: Mapping) -> tuple[float, float] | None:
    """The gaps (below, above) beyond which an interval as wide as this contrast's decision
    interval would lie clear of the ROPE: an undecided contrast's answer to "what could this run
    have shown?" (about: a real gap of that size would give an interval of about this width).
    None without a finite interval and ROPE."""
    _, low, high = decision_interval(dict(row))
    rope_low, rope_high = row.get("rope_low"), row.get("rope_high")
    if not all(finite(value) for value in (low, high, rope_low, rope_high)):
        return None
    half = (high - low) / 2
    return rope_low - half, rope_high + half


def showable_words(row: Mapping) -> str | None:
    """showable_gap as the clause the summary, the report's reading and the CI verdict all say:
    "an interval this wide clears the ROPE only for a gap beyond ±5.5 in log-odds, an odds ratio
    of 245". On the smoke run an `undecided` beside an interval ten logits wide told no reader
    that fifteen answers could show only a gap above five logits."""
    bounds = showable_gap(row)
    if bounds is None:
        return None
    below, above = bounds
    where = (f"beyond ±{above:.1f}" if math.isclose(-below, above, abs_tol=0.05)
             else f"below {signed(below, 1)} or above {signed(above, 1)}")
    farther = max(-below, above)  # the odds ratio of the farther bound, on an asymmetric ROPE
    if farther > math.log(ODDS_RATIO_SAID_UP_TO):  # a fit with next to no data: exp() overflows
        odds = f"an odds ratio over {ODDS_RATIO_SAID_UP_TO:,}"
    else:
        ratio = math.exp(farther)
        odds = f"an odds ratio of {ratio:.{0 if ratio >= 10 else 1}f}"
    return f"an interval this wide clears the ROPE only for a gap {where} in log-odds, {odds}"


def null_rank(row: dict) -> str:
    """Where the gap ranks among null-vs-null gaps of the same group sizes (a diagnostic)."""
    percentile = row.get("null_percentile")
    if not finite(percentile):
        return "no null-vs-null comparison (fewer than two null personas, or an older run)"
    return (f"{null_rank_words(percentile)} of the same group sizes (a diagnostic: it does not "
            "change the decision)")


def read_rasch(run_dir: Path) -> tuple[pl.DataFrame, dict[str, dict]]:
    """fit/diagnostics.json (required), fit/contrasts.csv (absent when the model compares no
    attribute levels) and the diagnostics of a second outcome's fit in fit/OUTCOME/."""
    contrasts_path, diagnostics_path = (run_file(run_dir, CONTRASTS_FILE),
                                        run_file(run_dir, DIAGNOSTICS_FILE))
    if not diagnostics_path.is_file():
        raise VerdictError(f"Rasch run in {run_dir} is incomplete: {diagnostics_path} is "
                           f"missing (rerun the fit stage)")
    main_fit = read_diagnostics(diagnostics_path)
    diagnostics = {"converged": main_fit}
    outcomes = main_fit.get("outcomes", [])
    for outcome in outcomes if isinstance(outcomes, list) else []:
        companion = diagnostics_path.parent / str(outcome) / "diagnostics.json"
        if companion.is_file():
            diagnostics[f"converged:{outcome}"] = read_diagnostics(companion)
    contrasts = (read_table(contrasts_path, ContrastSchema, "Rasch contrasts",
                            RUN_UNFINISHED, nan_as_null=True)
                 if contrasts_path.is_file() else pl.DataFrame(schema={
                     column: pl.Utf8 for column in ContrastSchema.to_schema().columns
                     if column != "outcome"}))
    return contrasts, diagnostics


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    return judge_rasch(*read_rasch(run_dir), rules)
