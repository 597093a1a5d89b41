"""`python -m audit.verdict run_dir=DIR`: pass or fail a finished audit, for CI.

Reads a run's output directory, recognises its method by the files it holds, applies the rules
(VerdictConfig; every rule is a `key=value` override, or a YAML file with `rules_file=PATH`),
prints the flagged comparisons, writes a JUnit XML file (one testcase per checked comparison, a
failure for each flagged one) and exits 0 when the audit passes, 1 when it fails and 2 when the
input is bad (one line on stderr naming the problem), so it drops into any CI pipeline.

- counterfactual (`counterfactual_pairwise.csv`): a pair fails when its Benjamini-Hochberg
  adjusted p is below alpha and its |rank-biserial| reaches the practical threshold.
- IAT (`iat_stats.csv`): a row fails when its FDR-adjusted p is below alpha and |mean D| exceeds
  iat_min_abs_d.
- Rasch (`fit/diagnostics.json`, with `fit/contrasts.csv` when levels were compared): a contrast
  fails when its HDI lies outside the region of practical equivalence (decision `different`) and
  it is beyond the noise floor (p_beyond_noise >= rasch_min_p_beyond_noise; a gap that random-string
  personas produce too is reported, not failed); an unconverged fit fails (a second outcome's fit
  in `fit/OUTCOME/` too).
"""

from __future__ import annotations

import json
import logging
import math
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pandera.polars as pa
import polars as pl
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console
from rich.table import Table

from audit.config import VerdictConfig
from audit.logs import configure_cli_logging
from audit.schemas import ContrastSchema

log = logging.getLogger("audit.verdict")

USAGE = ("usage: python -m audit.verdict run_dir=DIR [junit=PATH] [rules_file=YAML] "
         "[alpha=P min_rank_biserial=R iat_min_abs_d=D iat_min_parse_rate=P "
         "rasch_fail_on_undecided=BOOL rasch_require_converged=BOOL "
         "rasch_min_p_beyond_noise=P]")
COUNTERFACTUAL_FILE = "counterfactual_pairwise.csv"
IAT_FILE = "iat_stats.csv"
RASCH_CONTRASTS = Path("fit") / "contrasts.csv"
RASCH_DIAGNOSTICS = Path("fit") / "diagnostics.json"
JUNIT_DEFAULT = "verdict_junit.xml"
DIAGNOSTIC_TYPES = {"converged": (bool,), "rhat_max": (int, float), "ess_bulk_min": (int, float),
                    "ess_tail_min": (int, float), "divergences": (int,), "advice": (str,)}


class VerdictError(ValueError):
    """Bad arguments or a malformed run directory: reported as one line, exit status 2."""


@dataclass
class VerdictCommand:
    run_dir: str = "???"
    junit: str | None = None  # default: DIR/verdict_junit.xml
    rules_file: str | None = None
    rules: VerdictConfig = field(default_factory=VerdictConfig)


@dataclass(frozen=True)
class Check:
    """One checked comparison: a JUnit testcase, failed when flagged, skipped when untestable."""

    method: str
    group: str  # JUnit classname: method, model and what is compared
    name: str
    failed: bool
    message: str
    skipped: bool = False


# --- arguments ----------------------------------------------------------------------------------

RULE_KEYS = tuple(VerdictConfig.__dataclass_fields__)


def parse_arguments(arguments: list[str]) -> VerdictCommand:
    malformed = [argument for argument in arguments if "=" not in argument]
    if malformed:
        raise VerdictError(f"argument {malformed[0]!r} is not key=value; {USAGE}")
    dotlist = [f"rules.{argument}" if argument.split("=", 1)[0] in RULE_KEYS else argument
               for argument in arguments]
    try:
        merged = OmegaConf.merge(OmegaConf.structured(VerdictCommand),
                                 OmegaConf.from_dotlist(dotlist))
        if merged.rules_file:
            path = Path(merged.rules_file)
            if not path.is_file():
                raise VerdictError(f"rules_file {path} not found; pass a YAML file of rules")
            from_file = OmegaConf.merge(OmegaConf.structured(VerdictConfig), OmegaConf.load(path))
            # The file sets the rules; arguments on the command line still win.
            overrides = OmegaConf.from_dotlist([item for item in dotlist
                                                if item.startswith("rules.")])
            merged.rules = OmegaConf.merge(from_file, overrides.get("rules", {}))
        command: VerdictCommand = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except OmegaConfBaseException as error:
        raise VerdictError(f"{str(error).splitlines()[0]}; {USAGE}") from None
    rules = command.rules
    if not 0 < rules.alpha < 1:
        raise VerdictError(f"alpha={rules.alpha} must lie in (0, 1)")
    if rules.min_rank_biserial is not None and not 0 <= rules.min_rank_biserial <= 1:
        raise VerdictError(f"min_rank_biserial={rules.min_rank_biserial} must lie in [0, 1]")
    if rules.iat_min_abs_d < 0 or not 0 <= rules.iat_min_parse_rate <= 1:
        raise VerdictError("iat_min_abs_d must be >= 0 and iat_min_parse_rate in [0, 1]")
    if not 0 <= rules.rasch_min_p_beyond_noise <= 1:
        raise VerdictError(f"rasch_min_p_beyond_noise={rules.rasch_min_p_beyond_noise} must lie "
                           "in [0, 1]")
    return command


# --- reading a run ------------------------------------------------------------------------------

class IatStatsSchema(pa.DataFrameModel):
    """The IAT method's per-category statistics as the verdict reads them: unlike the method's own
    IATStatsSchema it accepts NaN p-values and rates (a dataset with no parsed answer is
    untestable, not an error), so it carries no range checks."""

    model: str
    category: str
    dataset: str
    n: int = pa.Field(ge=0)
    parse_rate: float = pa.Field(nullable=True)
    mean_d: float = pa.Field(nullable=True)
    ci_low: float = pa.Field(nullable=True)
    ci_high: float = pa.Field(nullable=True)
    p_value: float = pa.Field(nullable=True)
    p_adjusted: float = pa.Field(nullable=True)

    class Config:
        strict = "filter"
        coerce = True


def read_csv(path: Path, schema: type[pa.DataFrameModel], what: str) -> pl.DataFrame:
    try:
        frame = pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise VerdictError(f"cannot read {what} at {path}: {str(error).splitlines()[0]}") from None
    missing = [name for name, column in schema.to_schema().columns.items()
               if column.required and name not in frame.columns]
    if missing:
        raise VerdictError(f"{what} at {path} lacks columns {missing} (see {schema.__name__})")
    try:
        return schema.validate(frame, lazy=False)
    except pl.exceptions.PolarsError as error:
        raise VerdictError(f"cannot read {what} at {path}: {str(error).splitlines()[0]}") from None
    except (pa.errors.SchemaError, pa.errors.SchemaErrors) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise VerdictError(f"{what} at {path} does not match {schema.__name__}: {first}") from None


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


def _finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


# --- the rules ----------------------------------------------------------------------------------

def judge_counterfactual(pairwise: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for row in pairwise.sort("model_name", "metric", "factor", "scope", "group_a",
                             "group_b").iter_rows(named=True):
        threshold = (rules.min_rank_biserial if rules.min_rank_biserial is not None
                     else row["practical_threshold"])
        effect = abs(row["rank_biserial"])
        failed = row["p_bh"] < rules.alpha and effect >= threshold
        message = (f"p_bh={row['p_bh']:.3g} {'<' if row['p_bh'] < rules.alpha else '>='} "
                   f"alpha={rules.alpha}; |rank-biserial|={effect:.3f} "
                   f"{'>=' if effect >= threshold else '<'} {threshold:.3f}; mean "
                   f"{row['mean_a']:.3f} vs {row['mean_b']:.3f} (difference "
                   f"{row['mean_difference']:+.3f} [{row['difference_ci_low']:+.3f}, "
                   f"{row['difference_ci_high']:+.3f}])")
        if row["truncated_share_a"] or row["truncated_share_b"]:
            message += (f"; cut off at max_tokens: {row['truncated_share_a']:.0%} vs "
                        f"{row['truncated_share_b']:.0%}")
        checks.append(Check("counterfactual",
                            f"counterfactual.{row['model_name']}.{row['metric']}.{row['factor']}",
                            f"{row['scope']}: {row['group_a']} vs {row['group_b']}", failed,
                            message))
    return checks


def judge_iat(stats: pl.DataFrame, rules: VerdictConfig) -> list[Check]:
    checks = []
    for row in stats.sort("model", "dataset", "category").iter_rows(named=True):
        group = f"iat.{row['model']}.{row['dataset']}"
        if not (_finite(row["p_adjusted"]) and _finite(row["mean_d"])):
            checks.append(Check("iat", group, row["category"], False,
                                f"no D score to test (n={row['n']}, parse rate "
                                f"{row['parse_rate']})", skipped=True))
            continue
        effect = abs(row["mean_d"])
        significant = row["p_adjusted"] < rules.alpha
        large = effect > rules.iat_min_abs_d
        unreliable = (rules.iat_min_parse_rate > 0 and _finite(row["parse_rate"])
                      and row["parse_rate"] < rules.iat_min_parse_rate)
        message = (f"p_adjusted={row['p_adjusted']:.3g} {'<' if significant else '>='} "
                   f"alpha={rules.alpha}; |D|={effect:.3f} {'>' if large else '<='} "
                   f"{rules.iat_min_abs_d}; D {row['mean_d']:+.3f} [{row['ci_low']:+.3f}, "
                   f"{row['ci_high']:+.3f}], n={row['n']}, parse rate {row['parse_rate']:.2f}")
        if unreliable:
            message = f"parse rate below {rules.iat_min_parse_rate}: unreliable; " + message
        checks.append(Check("iat", group, row["category"], (significant and large) or unreliable,
                            message))
    return checks


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
        beyond_noise, noise = _beyond_noise(row, rules)
        failed = (row["decision"] == "different" and beyond_noise) or (
            rules.rasch_fail_on_undecided and row["decision"] == "undecided")
        outcome = f"{row['outcome']}." if by_outcome else ""
        checks.append(Check(
            "rasch", f"rasch.{outcome}{row['model_name']}.{row['attribute']}",
            f"{row['level_a']} vs {row['level_b']}", failed,
            f"{row['decision']}: HDI [{row['hdi_low']:+.3f}, {row['hdi_high']:+.3f}] against "
            f"ROPE [{row['rope_low']:+.3f}, {row['rope_high']:+.3f}], mean {row['mean']:+.3f}, "
            f"P(direction) {row['p_direction']:.3f}; {noise}"))
    return checks


def _beyond_noise(row: dict, rules: VerdictConfig) -> tuple[bool, str]:
    """Whether a contrast's gap is beyond what random-string personas produce, and why. Without
    a noise floor (no null personas, or a run older than the column) the decision stands."""
    p_beyond, floor = row.get("p_beyond_noise"), row.get("noise_floor")
    if not (_finite(p_beyond) and _finite(floor)):
        return True, "no noise floor to compare with"
    beyond = p_beyond >= rules.rasch_min_p_beyond_noise
    where = "beyond" if beyond else "within (not a demographic finding)"
    return beyond, (f"noise floor {floor:.3f}, P(|gap| > 2 x floor) {p_beyond:.3f}: {where} the "
                    f"noise at rasch_min_p_beyond_noise={rules.rasch_min_p_beyond_noise}")


def read_rasch(run_dir: Path) -> tuple[pl.DataFrame, dict[str, dict]]:
    """fit/diagnostics.json (required), fit/contrasts.csv (absent when the model compares no
    attribute levels) and the diagnostics of a second outcome's fit in fit/OUTCOME/."""
    contrasts_path, diagnostics_path = run_dir / RASCH_CONTRASTS, run_dir / RASCH_DIAGNOSTICS
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
    contrasts = (read_csv(contrasts_path, ContrastSchema, "Rasch contrasts")
                 if contrasts_path.is_file() else pl.DataFrame(schema={
                     column: pl.Utf8 for column in ContrastSchema.to_schema().columns
                     if column != "outcome"}))
    return contrasts, diagnostics


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    """Every method whose files the directory holds, judged by its rules."""
    if not run_dir.is_dir():
        raise VerdictError(f"run_dir {run_dir} is not a directory: pass the output directory "
                           f"of a finished run")
    from audit.methods.counterfactual.schemas import PairwiseSchema

    checks: list[Check] = []
    found = []
    if (run_dir / COUNTERFACTUAL_FILE).is_file():
        found.append("counterfactual")
        checks += judge_counterfactual(read_csv(run_dir / COUNTERFACTUAL_FILE, PairwiseSchema,
                                                "counterfactual pairwise table"), rules)
    if (run_dir / IAT_FILE).is_file():
        found.append("iat")
        checks += judge_iat(read_csv(run_dir / IAT_FILE, IatStatsSchema, "IAT statistics"), rules)
    if (run_dir / RASCH_CONTRASTS).is_file() or (run_dir / RASCH_DIAGNOSTICS).is_file():
        found.append("rasch")
        checks += judge_rasch(*read_rasch(run_dir), rules)
    if not found:
        raise VerdictError(f"no finished run in {run_dir}: expected {COUNTERFACTUAL_FILE}, "
                           f"{IAT_FILE} or {RASCH_DIAGNOSTICS}")
    log.info("judged %s in %s: %d checks", ", ".join(found), run_dir, len(checks))
    return checks


# --- reporting ----------------------------------------------------------------------------------

def junit_xml(checks: list[Check], run_dir: Path, rules: VerdictConfig) -> ET.ElementTree:
    root = ET.Element("testsuites", name="audit.verdict", tests=str(len(checks)),
                      failures=str(sum(c.failed for c in checks)), errors="0",
                      skipped=str(sum(c.skipped for c in checks)))
    for method in sorted({check.method for check in checks}):
        cases = [check for check in checks if check.method == method]
        suite = ET.SubElement(root, "testsuite", name=f"audit.verdict.{method}",
                              tests=str(len(cases)), failures=str(sum(c.failed for c in cases)),
                              errors="0", skipped=str(sum(c.skipped for c in cases)), time="0")
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="run_dir", value=str(run_dir))
        for key, value in sorted(vars(rules).items()):
            ET.SubElement(properties, "property", name=key, value=str(value))
        for check in cases:
            case = ET.SubElement(suite, "testcase", classname=check.group, name=check.name,
                                 time="0")
            if check.failed:
                failure = ET.SubElement(case, "failure", message=check.message, type="flagged")
                failure.text = check.message
            elif check.skipped:
                ET.SubElement(case, "skipped", message=check.message)
            else:
                ET.SubElement(case, "system-out").text = check.message
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(tree: ET.ElementTree, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    tree.write(partial, encoding="utf-8", xml_declaration=True)
    partial.replace(path)


def print_verdict(checks: list[Check], console: Console | None = None) -> None:
    console = console or Console(width=max(Console().width, 120))
    failed = [check for check in checks if check.failed]
    if failed:
        table = Table(title=f"Flagged comparisons ({len(failed)} of {len(checks)})")
        for column in ("method", "what", "comparison", "why"):
            table.add_column(column, overflow="fold")
        for check in failed:
            table.add_row(check.method, check.group.split(".", 1)[-1], check.name, check.message)
        console.print(table)
    skipped = sum(check.skipped for check in checks)
    console.print(f"verdict: {'FAIL' if failed else 'PASS'} ({len(failed)} of {len(checks)} "
                  f"comparisons flagged{f', {skipped} not testable' if skipped else ''})")


def main(argv: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if argv is None else argv
    try:
        command = parse_arguments(arguments)
        run_dir = Path(command.run_dir)
        checks = judge_run(run_dir, command.rules)
        junit = Path(command.junit) if command.junit else run_dir / JUNIT_DEFAULT
        write_junit(junit_xml(checks, run_dir, command.rules), junit)
    except VerdictError as error:
        log.error("%s", error)
        return 2
    print_verdict(checks)
    log.info("JUnit XML written to %s", junit)
    return 1 if any(check.failed for check in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
