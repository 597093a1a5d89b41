"""`python -m audit.verdict run_dir=DIR`: pass or fail a finished audit, for CI.

Reads the method from the run's recorded config (`config.yaml`, written by every run next to its
tables, or in `report/` by the Rasch report stage), applies that method's rules
(methods/NAME/verdict.py, found through the method registry; every rule is a `key=value` override of
VerdictConfig, or a YAML file with `rules_file=PATH`), prints the failed checks, writes a JUnit XML
file (one testcase per check: each comparison, and a Rasch fit's convergence; a failure for each
failed one; on bad input, one error naming it), says where the run's report is, and exits 0 when
the audit passes, 1 when it fails, 2 when the input is bad (one line on stderr naming the
problem) and 3 when no comparison of groups could be judged (every one skipped as untestable, or
none at all: NOT TESTED; a fit's convergence passes nothing), so it drops into any CI pipeline
and a design that could not fail never reads as a pass.
"""

from __future__ import annotations

import logging
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, fields
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException
from rich.console import Console
from rich.table import Table

from audit.cli import printed_help, refused_arguments
from audit.config import SharedVerdictRules
from audit.config_ranges import check_config
from audit.errors import AuditError, did_you_mean
from audit.logs import configure_cli_logging
from audit.methods.checks import Check, VerdictError
from audit.methods import method_module, registered_methods
from audit.methods.configs import VerdictConfig
from audit.methods.layout import VERDICT_JUNIT_FILE, found_run_file
from audit.methods.verdict import (judge_run, recorded_method, recorded_setting,
                                   verdict_outcome, verdict_text)
from audit.tables import write_atomically
from audit.outputs import check_junit_output
from audit.yaml_files import SAVE_AS_UTF8, YAML_LOAD_ERRORS, yaml_load_problem

log = logging.getLogger("audit.verdict")

RULE_KEYS = tuple(rule.name for rule in fields(VerdictConfig))
USAGE = ("usage: python -m audit.verdict run_dir=DIR [junit=PATH] [rules_file=YAML] ["
         + " ".join(f"{key}=..." for key in RULE_KEYS) + "]")
JUNIT_DEFAULT = VERDICT_JUNIT_FILE
# Exit statuses (docs/commands.md); 2, bad input, is returned where the error is caught.
EXIT_CODES = {"PASS": 0, "FAIL": 1, "NOT TESTED": 3}
# The not-testable checks a NOT TESTED verdict prints; the JUnit file holds them all.
MAX_UNTESTABLE_SHOWN = 10


@dataclass
class VerdictCommand:
    run_dir: str = "???"
    junit: str | None = None  # default: DIR/verdict_junit.xml
    rules_file: str | None = None
    rules: VerdictConfig = field(default_factory=VerdictConfig)


# --- arguments ----------------------------------------------------------------------------------

def parse_arguments(arguments: list[str]) -> VerdictCommand:
    malformed = [argument for argument in arguments if "=" not in argument]
    if malformed:
        raise VerdictError(f"argument {malformed[0]!r} is not key=value; {USAGE}")
    if any(argument.split("=", 1)[0] == "rules" for argument in arguments):
        # OmegaConf said "Merge error: str is not a subclass of VerdictConfig".
        raise VerdictError("rules= is not an option: pass a YAML file of rules as rules_file=PATH, "
                           f"or one rule as RULE=VALUE ({', '.join(RULE_KEYS[:2])}, ...)")
    dotlist = [f"rules.{argument}" if argument.split("=", 1)[0] in RULE_KEYS else argument
               for argument in arguments]
    with refused_arguments(arguments, VerdictCommand, VerdictError, USAGE,
                           {"rules": RULE_KEYS}):
        merged = OmegaConf.merge(OmegaConf.structured(VerdictCommand),
                                 OmegaConf.from_dotlist(dotlist))
        if merged.rules_file:
            from_file = read_rules_file(Path(merged.rules_file))
            # The file sets the rules; arguments on the command line still win.
            overrides = OmegaConf.from_dotlist([item for item in dotlist
                                                if item.startswith("rules.")])
            merged.rules = OmegaConf.merge(from_file, overrides.get("rules", {}))
        command: VerdictCommand = OmegaConf.to_object(merged)  # type: ignore[assignment]
    check_rules(command.rules)
    return command


def read_rules_file(path: Path) -> DictConfig:
    """`rules_file=PATH` as rules; a file that is missing, not UTF-8, not YAML, not a mapping or
    names an unknown rule is bad input (exit 2) named with the file, never a traceback read as
    FAIL."""
    if not path.is_file():
        problem = "is a folder, not a file" if path.is_dir() else "not found"
        raise VerdictError(f"rules_file {path} {problem}; pass a YAML file of rules")
    fix = f"write it as `rule: value` lines, rules among {', '.join(RULE_KEYS)}"
    try:
        loaded = OmegaConf.load(path)
    except YAML_LOAD_ERRORS as error:  # a UnicodeDecodeError was a traceback: a FAILED gate
        utf8 = f"{SAVE_AS_UTF8} and " if isinstance(error, UnicodeDecodeError) else ""
        raise VerdictError(f"rules_file {path} is not readable: {yaml_load_problem(error)}; "
                           f"{utf8}{fix}") from None
    if not isinstance(loaded, DictConfig):
        raise VerdictError(f"rules_file {path} holds a list, not a mapping of rules; {fix}")
    try:
        return OmegaConf.merge(OmegaConf.structured(VerdictConfig), loaded)
    except OmegaConfBaseException as error:
        key = getattr(error, "full_key", None)
        # "Key 'foo' not in 'VerdictConfig'" named an internal class (review 2026-12-04).
        problem = (f"unknown rule {key!r}{did_you_mean(str(key), RULE_KEYS)}"
                   if isinstance(error, ConfigKeyError) and key
                   else f"{f'rule {key}: ' if key else ''}{str(error).splitlines()[0]}")
        raise VerdictError(f"rules_file {path}: {problem}; {fix}") from None


def check_rules(rules: VerdictConfig) -> None:
    """Each rule with a `range` in its field metadata (alpha in (0, 1); methods/NAME/config.py
    VERDICT_RULES) lies in it: the check every config section gets (audit.config_ranges)."""
    check_config(rules, error=VerdictError)


# --- reporting ----------------------------------------------------------------------------------

def rules_set_by_fit(method: str) -> dict[str, str]:
    """The shared rules `method` fixes when it fits, each with the setting that fixes it (its
    config's optional RULES_SET_BY_FIT); none for checks of no audit method (`audit.compare`'s)."""
    if method not in registered_methods():
        return {}
    return getattr(method_module(method, "config"), "RULES_SET_BY_FIT", {})


def rules_read(method: str) -> list[str]:
    """The rules a run of `method` is judged by: the shared ones its fit does not fix, and its
    own VERDICT_RULES; none for checks of no audit method (`audit.compare`'s, judged by its own
    options)."""
    if method not in registered_methods():
        return []
    fixed = rules_set_by_fit(method)
    return [*(rule.name for rule in fields(SharedVerdictRules) if rule.name not in fixed),
            *(rule.name for rule in fields(method_module(method, "config").VERDICT_RULES))]


def settings_that_ruled(method: str, run_dir: Path) -> dict[str, object]:
    """The run's own settings that play a shared rule's part for `method` (a Rasch run's
    fit.familywise_alpha), as its config recorded them; those it did not record are left out."""
    found = {key: recorded_setting(run_dir, key) for key in rules_set_by_fit(method).values()}
    return {key: value for key, value in found.items() if value is not None}


def junit_xml(checks: list[Check], run_dir: Path, rules: VerdictConfig) -> ET.ElementTree:
    """One testsuite per method; its properties are the rules that judged it (a rule of another
    method, or alpha on a Rasch run, decided nothing and is not recorded as if it had)."""
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
        ruled = {**{key: getattr(rules, key) for key in rules_read(method)},
                 **settings_that_ruled(method, run_dir)}
        for key, value in sorted(ruled.items()):
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


def error_junit_xml(problem: str, run_dir: Path) -> ET.ElementTree:
    """The JUnit file of a verdict that could not be given (bad input, exit 2): one errored
    testcase naming the problem, so a CI step that publishes the file whatever the exit status
    shows this, not an earlier run's results left in the folder."""
    counts = {"tests": "1", "failures": "0", "errors": "1", "skipped": "0"}
    root = ET.Element("testsuites", name="audit.verdict", **counts)
    suite = ET.SubElement(root, "testsuite", name="audit.verdict", **counts, time="0")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="run_dir", value=str(run_dir))
    case = ET.SubElement(suite, "testcase", classname="audit.verdict", name="read the run",
                         time="0")
    ET.SubElement(case, "error", message=problem, type="bad input").text = problem
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(tree: ET.ElementTree, path: Path) -> None:
    write_atomically(path, lambda partial: tree.write(partial, encoding="utf-8",
                                                       xml_declaration=True))


def print_verdict(checks: list[Check], run_dir: Path, console: Console | None = None) -> None:
    console = console or Console(width=max(Console().width, 120))
    failed = [check for check in checks if check.failed]
    # Without a failure, why each check could not be judged, so the fix (more names, a baseline)
    # shows: a PASS with checks not testable listed none of them, their reasons only in the
    # JUnit file (CI review 2026-12-02).
    shown = failed or [check for check in checks if check.skipped][:MAX_UNTESTABLE_SHOWN]
    if shown:
        skipped = sum(check.skipped for check in checks)
        title = (f"Failed checks ({len(failed)} of {len(checks)})" if failed else
                 f"Checks not testable ({len(shown)} of {skipped} shown, of {len(checks)} checks)")
        table = Table(title=title)
        for column in ("method", "what", "check", "why"):
            table.add_column(column, overflow="fold")
        for check in shown:
            table.add_row(check.method, check.group.split(".", 1)[-1], check.name, check.message)
        console.print(table)
    report = found_run_file(run_dir, "report.html")
    console.print(f"report: {report}" if report else f"tables: {run_dir}", soft_wrap=True)
    console.print(f"verdict: {verdict_text(checks)}")


def warn_unused_rules(arguments: list[str], method: str, run_dir: Path) -> None:
    """A rule typed for another method's runs (iat_min_abs_d on a Rasch run), or one this
    method fixes when it fits (alpha on a Rasch run), changes nothing: said, where it passed
    silently, so a gate's author does not believe it is in force."""
    own = set(rules_read(method))
    fixed = rules_set_by_fit(method)
    ruled = settings_that_ruled(method, run_dir)
    every = {rule.name for rule in fields(VerdictConfig)}
    typed = dict(argument.split("=", 1) for argument in arguments)
    unused = [key for key in typed if key in every and key not in own and key not in fixed]
    if unused:
        log.warning("%s %s for other methods' runs, and this is a %s run: not used (a %s "
                    "run's rules: %s)", ", ".join(unused),
                    "is a rule" if len(unused) == 1 else "are rules", method, method,
                    ", ".join(sorted(own)))
    for key in (key for key in typed if key in fixed):
        setting = fixed[key]
        recorded = ruled.get(setting)
        if recorded is not None and _same_value(typed[key], recorded):
            continue
        at = f"{setting}={recorded}" if recorded is not None else setting
        log.warning("%s=%s does not apply to a %s run: its decisions were made when it was "
                    "fitted, at %s; to judge it at another level, rerun it with %s=%s (the "
                    "answers come from the store)", key, typed[key], method, at, setting,
                    typed[key])


def _same_value(typed: str, recorded: object) -> bool:
    try:
        return float(typed) == float(recorded)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return typed == str(recorded)


def main(argv: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if argv is None else argv
    if printed_help(arguments, __doc__, USAGE):
        return 0
    command: VerdictCommand | None = None
    junit: Path | None = None
    try:
        command = parse_arguments(arguments)
        run_dir = Path(command.run_dir)
        # A JUnit path that cannot be written is bad input, named before the run is judged (it
        # was a traceback, exit 1 on a passing run, with no verdict line); the default one, in
        # the run's folder, once judging has found that folder.
        junit = (check_junit_output(Path(command.junit), VerdictError) if command.junit else None)
        checks = judge_run(run_dir, command.rules)
        warn_unused_rules(arguments, recorded_method(run_dir), run_dir)
        junit = junit or check_junit_output(run_dir / JUNIT_DEFAULT, VerdictError)
        write_junit(junit_xml(checks, run_dir, command.rules), junit)
    except AuditError as error:  # VerdictError, or a run table that cannot be read
        log.error("%s", error)
        if command is None:  # a bad rule or rules_file: the file still says so, where it goes
            command, junit = stated_destination(arguments)
        write_error_junit(str(error), command, junit)
        return 2
    print_verdict(checks, run_dir)
    log.info("JUnit XML written to %s", junit)
    return EXIT_CODES[verdict_outcome(checks)]


def stated_destination(arguments: list[str]) -> tuple[VerdictCommand | None, Path | None]:
    """run_dir= and junit= as typed, when the other arguments could not be read (a rule out of
    its range, an unknown one, a rules_file that is missing): a CI step that publishes the JUnit
    file whatever the exit status showed the earlier run's PASS (docs review 2026-12-07). The
    last of each, as OmegaConf's dotlist takes it; None when run_dir= is missing or empty."""
    typed = dict(argument.split("=", 1) for argument in arguments if "=" in argument)
    if not typed.get("run_dir"):
        return None, None
    command = VerdictCommand(run_dir=typed["run_dir"], junit=typed.get("junit") or None)
    if command.junit is None:
        return command, None
    try:
        return command, check_junit_output(Path(command.junit), VerdictError)
    except AuditError:  # no file where the path is bad: the line already names the problem
        return command, None


def write_error_junit(problem: str, command: VerdictCommand | None, junit: Path | None) -> None:
    """Bad input still leaves a JUnit file saying so where the verdict would have written one:
    junit=PATH once it passed its check, else the run folder's default file when that folder
    exists. Never where the arguments could not be read, in place of a junit=PATH that failed
    its check, nor in a folder it would create."""
    if command is None or (command.junit and junit is None):
        return
    run_dir = Path(command.run_dir)
    path = junit or (run_dir / JUNIT_DEFAULT if run_dir.is_dir() else None)
    if path is None or path.is_dir():
        return
    try:
        write_junit(error_junit_xml(problem, run_dir), path)
    except OSError as error:  # the problem above is the one to report
        log.warning("could not write the JUnit file %s: %s", path, error)


if __name__ == "__main__":
    raise SystemExit(main())
