"""The Rasch method's CI rules (`python -m audit.verdict` on a Rasch run).

A contrast of `fit/contrasts.csv` fails when its HDI lies outside the region of practical
equivalence (decision `different`) and it is beyond the noise floor (p_beyond_noise at least
`rasch_min_p_beyond_noise`: a gap that random-string personas produce too is reported, not
failed); with `rasch_fail_on_undecided`, an `undecided` one fails too. A fit that did not converge
fails (`fit/diagnostics.json`, and a second outcome's fit in `fit/OUTCOME/`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl

from audit.methods.configs import VerdictConfig
from audit.methods.checks import Check, VerdictError, finite
from audit.tables import RUN_UNFINISHED, read_table
from audit.methods.rasch.schemas import ContrastSchema
from audit.methods.run import run_file

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
        value = diagnostics.get(key)
        if not isinstance(value, types) or (bool in types) != isinstance(value, bool):
            raise VerdictError(f"Rasch diagnostics at {path}: `{key}` is missing or not "
                               f"{' or '.join(t.__name__ for t in types)}")
    return diagnostics


def _convergence_check(name: str, diagnostics: dict, rules: VerdictConfig) -> Check:
    converged = diagnostics["converged"]
    return Check("rasch", "rasch.fit", name, rules.rasch_require_converged and not converged,
                 f"converged={converged}, R-hat max {diagnostics['rhat_max']:.3f}, ESS bulk "
                 f"min {diagnostics['ess_bulk_min']:.0f}, ESS tail min "
                 f"{diagnostics['ess_tail_min']:.0f}, {diagnostics['divergences']} "
                 f"divergences. {diagnostics['advice']}".strip())


def judge_rasch(contrasts: pl.DataFrame, diagnostics: dict[str, dict],
                rules: VerdictConfig) -> list[Check]:
    """`diagnostics` maps a fit's name (`converged`, or `converged:OUTCOME` for a second
    outcome's fit) to its diagnostics.json; every fit must converge."""
    checks = [_convergence_check(name, values, rules) for name, values in diagnostics.items()]
    by_outcome = "outcome" in contrasts.columns
    for row in contrasts.sort([*(["outcome"] if by_outcome else []), "model_name", "attribute",
                               "level_a", "level_b"]).iter_rows(named=True):
        outside = row["hdi_low"] > row["rope_high"] or row["hdi_high"] < row["rope_low"]
        if outside != (row["decision"] == "different"):
            log.warning("Rasch contrast %s %s vs %s: decision '%s' but the HDI [%.3f, %.3f] "
                        "is %s the ROPE [%.3f, %.3f]; judging by the decision column",
                        row["attribute"], row["level_a"], row["level_b"], row["decision"],
                        row["hdi_low"], row["hdi_high"], "outside" if outside else "not outside",
                        row["rope_low"], row["rope_high"])
        beyond, noise = noise_check(row, rules)
        failed = (row["decision"] == "different" and beyond) or (
            rules.rasch_fail_on_undecided and row["decision"] == "undecided")
        outcome = f"{row['outcome']}." if by_outcome else ""
        checks.append(Check(
            "rasch", f"rasch.{outcome}{row['model_name']}.{row['attribute']}",
            f"{row['level_a']} vs {row['level_b']}", failed,
            f"{row['decision']}: HDI [{row['hdi_low']:+.3f}, {row['hdi_high']:+.3f}] against "
            f"ROPE [{row['rope_low']:+.3f}, {row['rope_high']:+.3f}], mean {row['mean']:+.3f}, "
            f"P(direction) {row['p_direction']:.3f}; {noise}"))
    return checks


def noise_check(row: dict, rules: VerdictConfig) -> tuple[bool, str]:
    """Whether a contrast's gap is beyond what random-string personas produce, and why. Without
    a noise floor (no null personas, or a run older than the column) the decision stands."""
    p_beyond, floor = row.get("p_beyond_noise"), row.get("noise_floor")
    if not (finite(p_beyond) and finite(floor)):
        return True, "no noise floor to compare with"
    beyond = p_beyond >= rules.rasch_min_p_beyond_noise
    where = "beyond" if beyond else "within (not a demographic finding)"
    return beyond, (f"noise floor {floor:.3f}, P(|gap| > 2 x floor) {p_beyond:.3f}: {where} the "
                    f"noise at rasch_min_p_beyond_noise={rules.rasch_min_p_beyond_noise}")


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
