"""`python -m audit.stages STAGE`: one stage of the method in params.yaml, what dvc.yaml runs.

    python -m audit.stages design --params params.yaml --dir pipeline

Every method declares the same stages (design, respond, score, analyse, report), so dvc.yaml's
stages are the same for all of them and this command dispatches on `method` in params.yaml: a
params.yaml with method=iat runs the IAT stages and logs an IAT run, never the Rasch report.
Each stage's files go to DIR/STAGE/ (the out folder dvc.yaml declares for it); the report stage
also writes DIR/report/metrics.json, the headline figures `dvc metrics diff` compares, and ends
with the summary `python -m audit` ends with (what was found, the verdict CI would give DIR).
The Rasch method's older stage names (judge, judge_gold, fit) still work. A params.yaml that
`dvc exp run -S` composed without the overrides recorded in params.overrides is refused
(audit.cli.params.check_kept_overrides).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from audit.cli import OneLineParser, path_argument
from audit.cli.params import check_kept_overrides, composed_by_dvc, overrides_file, settings_beyond
from audit.config import CONF_DIR
from audit.config_errors import describe
from audit.config_ranges import ConfigValueError
from audit.methods.configs import AuditConfig, to_audit_config
from audit.errors import AuditError, did_you_mean
from audit.interrupts import (interrupted_line, interrupted_status, raise_dropped_interrupt,
                              termination_as_interrupt)
from audit.llm.backends import BackendError
from audit.logs import configure_cli_logging
from audit.methods import AuditMethod, create_method, registered_methods
from audit.methods.layout import stage_name
from audit.methods.run import STAGE_NAMES, find_stage, run_one_stage, stage_files
from audit.methods.summary import state_summary
from audit.outputs import check_output
from audit.tracking.mlflow import TrackingError
from audit.yaml_files import SAVE_AS_UTF8, YAML_LOAD_ERRORS, not_settings, yaml_load_problem

log = logging.getLogger(__name__)


def load_params(path: Path) -> AuditConfig:
    """params.yaml as the config; a file that is not YAML, or holds a key the config lacks (a
    stale file from an older version, a typo) or a bad value, is one line naming the file, the
    key and the fix (exit 2), not a traceback."""
    if path.is_dir():  # was "params file not found: /tmp" (bad-input review 2026-12-05)
        raise AuditError(f"--params {path} is a folder: pass the params file, such as "
                         f"{path / 'params.yaml'} (write it with `python -m audit.params`)")
    if not path.is_file():
        raise AuditError(f"params file not found: {path} (write it with `python -m audit.params`)")
    fix = "write it again with `python -m audit.params [OVERRIDES]` (or fix it by hand)"
    try:
        loaded = OmegaConf.load(path)
        # An empty or partial file was "invalid value for 'judge.name': Structured config of type
        # `JudgeConfig` has missing mandatory value", a list "Cannot merge DictConfig with
        # ListConfig" (bad-input review 2026-12-04): say what the file lacks.
        held = not_settings(loaded)
        if held:
            raise AuditError(f"params file {path} {held}: it should hold the whole composed "
                             f"config, by section; {fix}")
        config = to_audit_config(loaded)
        if config.method not in registered_methods():  # named the method, not the file
            raise AuditError(f"params file {path}: method: {config.method} is unknown (one of "
                             f"{', '.join(sorted(registered_methods()))})"
                             f"{did_you_mean(config.method, list(registered_methods()))}; {fix}")
        return config
    except YAML_LOAD_ERRORS as error:  # not UTF-8, or recursive: was a traceback
        utf8 = f"{SAVE_AS_UTF8}, or " if isinstance(error, UnicodeDecodeError) else ""
        raise AuditError(f"params file {path} is not readable: {yaml_load_problem(error)}; "
                         f"{utf8}{fix}") from None
    except MissingMandatoryValue as error:
        raise AuditError(f"params file {path} does not set {error.full_key or 'a required key'}:"
                         f" it should hold the whole composed config, not part of one; {fix}")\
            from None
    except OmegaConfBaseException as error:
        raise AuditError(f"params file {path}: {describe(error, Path(CONF_DIR))}; "
                         f"{fix}") from None
    except ConfigValueError as error:  # a value outside its declared range (audit.config_ranges)
        raise AuditError(f"params file {path}: {error}; {fix}") from None


def report_summary(method: AuditMethod, cfg: AuditConfig, directory: Path,
                   result: dict[str, object]) -> None:
    """The run's summary after the report stage. The stage's files and MLflow run are written by
    then, so a method whose findings cannot read the stage folders (a plug-in that joins `run_dir`
    and a file name itself instead of audit.methods.layout.run_file) costs a warning, not the
    stage."""
    try:
        state_summary(method, cfg, directory, result)
    except TrackingError:  # the store failed: exit 2 with its line, not a warning
        raise
    except AuditError as error:
        log.warning("no summary of the pipeline in %s: %s", directory, error)


def check_earlier_stage(method: AuditMethod, stage: str, arguments: argparse.Namespace) -> None:
    """A stage whose earlier stage wrote none of its files in --dir (never run, or another --dir)
    is refused naming the command that runs it (each stage reads the one before it): the table
    reader's fix, "or check the path in the config", named a setting this command does
    not have (the folder is --dir; review 2026-12-07)."""
    names = [each.name for each in method.stages]
    index = names.index(find_stage(method.stages, stage).name)
    if index == 0:
        return
    earlier = method.stages[index - 1]
    files = stage_files(method.stages, arguments.dir)
    if not any(files.path(name).exists() for name in earlier.writes):
        raise AuditError(f"stage {names[index]} reads what stage {earlier.name} writes, and "
                         f"{arguments.dir / earlier.name}/ holds none of it: run `python -m "
                         f"audit.stages {earlier.name} --params {arguments.params} --dir "
                         f"{arguments.dir}` first (or `dvc repro`, which runs every stage in "
                         f"order), or pass the --dir it wrote")


def recorded_overrides(params: Path, cfg: AuditConfig | None = None) -> list[str] | None:
    """The overrides params.yaml was composed from (params.overrides, written by
    `python -m audit.params`), which name and tag the MLflow run; None for a file without one.
    For a params.yaml `dvc exp run -S` composed, with ``cfg`` (the file's config), also the
    settings it makes beyond them (params.settings_beyond): DVC does not update the record."""
    record = overrides_file(params)
    if not record.is_file():
        return None
    overrides = [line.strip() for line in record.read_text().splitlines() if line.strip()]
    if cfg is None or not composed_by_dvc(params):
        return overrides
    return [*overrides, *settings_beyond(cfg, overrides)]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m audit.stages", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", help="design, respond, score, analyse or report")
    parser.add_argument("--params", type=path_argument(), default=Path("params.yaml"))
    parser.add_argument("--dir", type=path_argument(), default=Path("pipeline"))
    arguments = parser.parse_args(argv)
    configure_cli_logging()
    with termination_as_interrupt():
        return run_command(arguments)


def run_command(arguments: argparse.Namespace) -> int:
    """The stage the arguments name, to its exit status."""
    try:
        stage = stage_name(arguments.stage)  # a mistyped stage: its own line, before params.yaml
        check_output(arguments.dir, "--dir ", folder=True)
        # Each stage writes DIR/STAGE/: a file there was a FileExistsError traceback.
        check_output(arguments.dir / stage, "--dir ", folder=True)
        cfg = load_params(arguments.params)
        check_kept_overrides(arguments.params, cfg)
        method = create_method(cfg.method)
        check_earlier_stage(method, arguments.stage, arguments)
        result = run_one_stage(method.stages, arguments.stage, cfg, arguments.dir,
                               recorded_overrides(arguments.params, cfg))
        raise_dropped_interrupt()  # asked to stop: `dvc repro` must not start the next stage
        if find_stage(method.stages, arguments.stage).name == STAGE_NAMES[-1]:
            report_summary(method, cfg, arguments.dir, result)
    except (AuditError, BackendError) as error:
        log.error("%s", error)
        return 2
    except KeyboardInterrupt as interrupted:  # Ctrl-C under `dvc repro`: as `python -m audit`
        log.error("%s", interrupted_line(interrupted, "answers", "the response store"))
        return interrupted_status()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
