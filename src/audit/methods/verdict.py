"""A finished run judged by its own method's rules, and the verdict in one phrase.

The run's recorded config names its method; that method's rules (methods/NAME/verdict.py, found
through the registry) turn its tables into checks. `python -m audit.verdict` (audit.cli.verdict)
prints them and writes JUnit; every run's summary (summary.py) and `python -m audit.compare` say
the same verdict in the same words.
"""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from audit.methods import method_module, registered_methods
from audit.methods.checks import Check, VerdictError
from audit.methods.configs import VerdictConfig
from audit.logs import counted
from audit.methods.layout import CONFIG_FILE, STAGE_NAMES, found_run_file, run_file, runs_inside
from audit.yaml_files import YAML_LOAD_ERRORS, yaml_load_problem

HYDRA_DIR = ".hydra"  # what Hydra writes into a run's folder as the run starts
HYDRA_CONFIG = f"{HYDRA_DIR}/config.yaml"

log = logging.getLogger("audit.verdict")


def recorded_config_file(run_dir: Path) -> Path | None:
    """The config.yaml a finished run recorded (its report stage writes it: flat, or in report/);
    None when it has none."""
    return found_run_file(run_dir, CONFIG_FILE)


def recorded_setting(run_dir: Path, key: str) -> object | None:
    """A setting (dotted key) of the config the run recorded; None when the run recorded no
    config, or none that can be read, or not this setting."""
    path = recorded_config_file(run_dir)
    if path is None:
        return None
    try:
        recorded = OmegaConf.load(path)
        return OmegaConf.select(recorded, key, default=None)
    except (*YAML_LOAD_ERRORS, OmegaConfBaseException):
        return None


def recorded_method(run_dir: Path) -> str:
    """The `method` of the config the run recorded: the rules follow what the run was, not which
    files happen to lie in its folder."""
    stage = Path(run_dir)
    siblings = ("fit", *(name for name in STAGE_NAMES if name != stage.name))
    if stage.name in STAGE_NAMES and recorded_config_file(stage.parent) is not None \
            and any((stage.parent / name).is_dir() for name in siblings):
        # A Rasch run keeps its config.yaml in report/, so a user points there; read as a run,
        # the folder was "incomplete: report/fit/diagnostics.json is missing (rerun the fit
        # stage)", a costly fix for a wrong path (bad-input review 2026-12-02).
        raise VerdictError(f"run_dir={run_dir} is the {stage.name} folder of a run: pass the "
                           f"run's own folder, run_dir={stage.parent}")
    if not run_dir.is_dir():
        raise VerdictError(f"run_dir {run_dir} is not a directory: pass the output directory "
                           f"of a finished run")
    path = recorded_config_file(run_dir)
    if path is None:
        held = run_file(run_dir, CONFIG_FILE)
        if held.exists():  # a folder: was "no config.yaml in DIR", which the user can see is there
            raise VerdictError(f"{held} is a folder, not the config file a run records: move it "
                               f"aside and {rerun_fix(run_dir)}")
        raise VerdictError(f"no {CONFIG_FILE} in {run_dir}: {not_a_run(run_dir)}")
    damaged = None
    try:
        recorded = OmegaConf.load(path)
    except YAML_LOAD_ERRORS as error:
        damaged = yaml_load_problem(error)
    except OmegaConfBaseException as error:
        damaged = str(error).splitlines()[0] if str(error) else type(error).__name__
    else:
        if not isinstance(recorded, DictConfig):
            damaged = "it holds a list, not a mapping of settings"
        elif not recorded:
            damaged = "it holds no settings"  # was "records method None", naming no fix
    if damaged is not None:
        # A run's config.yaml is written whole by its report stage (methods/run.py), so one that
        # cannot be read was cut short or edited since: the run's answers are still stored.
        raise VerdictError(f"cannot read the run's config at {path}: {damaged}; the file is "
                           f"damaged or empty: {rerun_fix(run_dir)}, or restore the file")
    method = recorded.get("method")
    known = sorted(registered_methods())
    if method not in known:
        # A config.yaml with settings but no method is another tool's (every audit run's names
        # its method): it said "records method None".
        recorded_as = "no method" if method is None else f"method {method!r}"
        raise VerdictError(f"the run's config at {path} records {recorded_as}, not one of "
                           f"{', '.join(known)}: pass the output directory of an audit run")
    return method


def not_a_run(folder: Path) -> str:
    """What a folder without a recorded config is, and what to pass instead: a sweep's folder, an
    `audit.compare` output, a run that stopped before its report stage, or none of these (one
    message said "pass the output directory of a run" of all four; CI review 2026-12-02)."""
    inside = runs_inside(folder)
    if inside:
        return inside
    if (folder / "changes.csv").is_file():
        return ("it holds an `audit.compare` output, whose gate is that command's exit status "
                "and its compare_junit.xml: pass the folder of one audit run")
    started = sorted(name for name in ("prompts.parquet", "responses.parquet", "labels.parquet")
                     if (folder / name).is_file())
    if not started and (folder / HYDRA_CONFIG).is_file():
        started = [HYDRA_CONFIG]  # what Hydra writes as a run starts, before any stage
    if started or any((folder / stage).is_dir() for stage in STAGE_NAMES):
        return (f"the run there did not finish (it has {', '.join(started) or 'stage folders'} "
                f"but no {CONFIG_FILE}, which its report stage writes): {rerun_fix(folder)}")
    return ("the verdict reads the method from the config a run records there; pass the output "
            "directory of a run finished by `python -m audit` (or rerun it: older runs lack the "
            "file)")


def rerun_fix(run_dir: Path) -> str:
    """How to get a run's folder whole again: the same command, which resumes from the store
    (only what it lacks is sent), and where Hydra recorded that command's overrides."""
    overrides = run_dir / HYDRA_DIR / "overrides.yaml"
    where = f"; its overrides are in {overrides}" if overrides.is_file() else ""
    return (f"rerun the same command to resume (it sends only what the store lacks{where}), then "
            "judge the folder it writes")


def judge_run(run_dir: Path, rules: VerdictConfig) -> list[Check]:
    """The run's method, judged by that method's rules."""
    method = recorded_method(run_dir)
    checks = method_module(method, "verdict").judge_run(run_dir, rules)
    log.info("judged a %s run in %s: %d checks", method, run_dir, len(checks))
    return checks


def verdict_outcome(checks: list[Check]) -> str:
    """FAIL when a check failed; NOT TESTED when no comparison of groups could be judged (each
    skipped as untestable, or the run holds none: a fit's convergence alone passes nothing), so
    a run that could not fail never passes; else PASS."""
    if any(check.failed for check in checks):
        return "FAIL"
    if all(check.skipped for check in checks if check.about_groups):
        return "NOT TESTED"
    return "PASS"


def verdict_text(checks: list[Check]) -> str:
    """`FAIL (2 of 6 checks failed, 1 not testable)`, `PASS (0 of 8 checks failed; 7 of 7
    comparisons undecided, ...)` or `NOT TESTED (0 of 6 comparisons could be judged, 6 not
    testable)`: what CI decides, in one phrase (the command's last line, and the
    summary a run ends with). Checks, not comparisons: a Rasch run's checks include its fit's
    convergence besides the contrasts its summary lists."""
    outcome = verdict_outcome(checks)
    skipped = sum(check.skipped for check in checks)
    compared = sum(check.about_groups for check in checks)
    if outcome == "NOT TESTED":
        # Counted in the singular when one: "0 of 1 comparisons could be judged" (review
        # 2026-12-06).
        return (f"{outcome} (0 of {counted(compared, 'comparison')} could be judged, {skipped} "
                f"not testable)" if compared else f"{outcome} (the run holds no comparison to "
                "judge)")
    failed = sum(check.failed for check in checks)
    undecided = sum(check.undecided for check in checks)
    # Said on a PASS only (where no check failed): there it is the whole reason none did.
    doubt = (f"; {undecided} of {counted(compared, 'comparison')} undecided, a difference neither "
             "shown nor ruled out" if undecided and outcome == "PASS" else "")
    return (f"{outcome} ({failed} of {counted(len(checks), 'check')} failed"
            f"{f', {skipped} not testable' if skipped else ''}{doubt})")
