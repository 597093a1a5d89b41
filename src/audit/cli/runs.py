"""`python -m audit.runs`: compare past audits without the MLflow UI, and re-create one.

    python -m audit.runs                          # the latest runs, what varies between them
    python -m audit.runs --sweep PARENT_ID        # the jobs of one sweep
    python -m audit.runs --metric 'contrast/*'    # add metrics (shell-style patterns)
    python -m audit.runs show RUN_ID              # provenance and the commands to re-create it
    python -m audit.runs params RUN_ID            # write that run's params.yaml for `dvc repro`
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from audit.cli import OneLineParser, path_argument
from audit.cli.params import HEADER, check_params_output, overrides_file, params_yaml
from audit.cli.recreate import RUN_ID, reproduction_steps
from audit.config import CONF_DIR, TrackingConfig
from audit.config_errors import describe
from audit.errors import AuditError
from audit.methods import headline_metrics, registered_methods
from audit.methods.configs import to_audit_config
from audit.tracking import mlflow as tracking
from audit.logs import configure_cli_logging, counted
from audit.tracking.runs_table import runs_frame, short_id, started_text, unmatched_patterns
from audit.tables import write_frame
from audit.outputs import check_output, check_replaces_only, is_text
from audit.tracking.store import TrackingError, not_a_store_file, reach_store, sqlite_path

log = logging.getLogger(__name__)

MAX_VARYING_COLUMNS = 5
CONFIG_ARTIFACT = "config.yaml"
OVERRIDES_ARTIFACT = "hydra/overrides.yaml"


def known_headline_metrics(method: str) -> tuple[str, ...]:
    """A registered method's headline metrics, for runs logged before runs recorded them."""
    return headline_metrics(method) if method in registered_methods() else ()


def _format(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# A column's width before rich folds it (a long run name or metric name wraps in its cell).
MAX_NATURAL_WIDTH = 30
# What each column adds beside its text: padding on both sides and the border.
COLUMN_FRAME = 3


def _natural_width(label: str, cells: list[str]) -> int:
    return min(max([len(label), *map(len, cells)]), MAX_NATURAL_WIDTH) + COLUMN_FRAME


def column_groups(columns: list[str], widths: dict[str, int], room: int) -> list[list[str]]:
    """The columns in tables that each fit in `room` characters: the first table takes them in
    order while they fit, each next one repeats run_id and takes the rest. One table squeezed
    every column of a 120-character terminal to four characters, and a piped table cut off the
    columns past its width (`--metric 'contrast/*/mean'` showed no contrast; CI review
    2026-12-02)."""
    groups: list[list[str]] = [[]]
    used = 1  # the table's left border
    for column in columns:
        if groups[-1] and used + widths[column] > room:
            groups.append(["run_id"] if column != "run_id" else [])
            used = 1 + widths["run_id"]
        groups[-1].append(column)
        used += widths[column]
    return groups


def print_runs(frame: pl.DataFrame, title: str, console: Console | None = None) -> None:
    console = console or Console()
    shown = [column for column in frame.columns if not column.startswith("param:")]
    varying = [column for column in frame.columns if column.startswith("param:")]
    shown[6:6] = varying[:MAX_VARYING_COLUMNS]
    # escape: run names and values hold brackets ("[model=smollm2]") that rich would otherwise
    # read as markup and drop
    cells = {column: [escape(short_id(value) if column == "run_id" else _format(value))
                      for value in frame.get_column(column).to_list()] for column in shown}
    widths = {column: _natural_width(column.split(":", 1)[-1], cells[column])
              for column in shown}
    groups = column_groups(shown, widths, console.width)
    for index, group in enumerate(groups):
        table = Table(title=title if index == 0 else f"{title}, continued "
                      f"({index + 1} of {len(groups)})")
        for column in group:
            table.add_column(column.split(":", 1)[-1],
                             justify="right" if column.startswith("metric:") else "left",
                             overflow="fold", no_wrap=column in ("run_id", "started"),
                             min_width=24 if column == "name" else None)
        for row in range(frame.height):
            table.add_row(*(cells[column][row] for column in group))
        console.print(table)
    if len(varying) > MAX_VARYING_COLUMNS:
        console.print(f"{len(varying) - MAX_VARYING_COLUMNS} more params vary: "
                      f"{', '.join(column[6:] for column in varying[MAX_VARYING_COLUMNS:])}")


STORE_OPTION = "--tracking-uri"  # how this command takes the store; audit.compare's differs


def elsewhere(option: str = STORE_OPTION) -> str:
    """The hint that the run may be in another store, naming the caller's own ``option``."""
    return (f"pass {option} with the store the run was logged to (the audit's "
            f"tracking.tracking_uri; default {TrackingConfig.tracking_uri}, relative to the "
            f"directory the audit ran in)")


def check_store(settings: TrackingConfig, option: str = STORE_OPTION) -> None:
    """A SQLite store that does not exist is named, instead of MLflow creating an empty one
    there and every run seeming missing; any other store is reached once, so a server that is
    down or a URI MLflow refuses is one line in seconds, not a traceback after its retries."""
    if not settings.tracking_uri.strip():  # MLflow took '' for its default and made ./mlflow.db
        raise LookupError(f"the store's URI is empty; {elsewhere(option)}")
    path = sqlite_path(settings.tracking_uri)
    if path is not None and not path.is_file():
        raise LookupError(f"no MLflow store at {settings.tracking_uri} ({path} "
                          f"{'is a folder' if path.is_dir() else 'does not exist'}); "
                          f"{elsewhere(option)}")
    problem = not_a_store_file(path) if path is not None else None
    if problem:
        raise LookupError(f"no MLflow store at {settings.tracking_uri} ({path} {problem}); "
                          f"{elsewhere(option)}")
    try:
        # elsewhere() names the command's own option: no tracking.tracking_uri to fix here.
        reach_store(settings, without_store=elsewhere(option), setting=None)
    except TrackingError as error:
        raise LookupError(str(error)) from None


def _resolve_run_id(settings: TrackingConfig, run_id: str, option: str = STORE_OPTION) -> str:
    """Accept the 8-character prefix the table shows; a run the store does not hold is one line
    naming the store that was searched."""
    if len(run_id) == 32:
        try:
            tracking.get_run(settings.tracking_uri, run_id)
        except LookupError as error:  # it names the store it looked in
            raise LookupError(f"{error}; {elsewhere(option)}") from None
        return run_id
    # The named experiment first, then every experiment: a run logged under another
    # tracking.experiment was found by its full id, but its prefix was "0 runs in experiment
    # 'audit'" with a hint to change the store (compare review 2026-12-02).
    for experiment, where in ((settings.experiment, f"experiment '{settings.experiment}'"),
                              (None, "any experiment")):
        matches = [run["run_id"] for run in tracking.find_runs(
            settings.tracking_uri, experiment, max_results=5000)
            if run["run_id"].startswith(run_id)]
        if matches:
            break
    if not matches:
        raise LookupError(f"0 runs in {settings.tracking_uri} (any experiment) start with "
                          f"'{run_id}': check the id, or {elsewhere(option)}")
    if len(matches) > 1:
        raise LookupError(f"{len(matches)} runs in {where} start with '{run_id}': give more "
                          "characters of the run id")
    return matches[0]


def run_source(source: str, settings: TrackingConfig, option: str, what: str) -> Path | str:
    """A run named on another command's line (`what`: how it names the argument, e.g.
    `plan.from_run=ID`): a run directory as given, else the full id of the run the store holds
    (the 8 characters audit.runs shows suffice). A store that does not exist is named, not
    created (MLflow creates its database, and its directory, on the first read)."""
    if Path(source).is_dir():
        return Path(source)
    if not RUN_ID.fullmatch(source):  # a mistyped folder, not "0 runs ... start with 'runs/a'"
        # A file was "no such run directory", sending a user to look for a path that exists
        # (bad-input review 2026-12-04).
        problem = "is a file, not a run directory" if Path(source).is_file() \
            else "no such run directory"
        raise AuditError(f"{what}: {problem} (nor an MLflow run id, which is hexadecimal: "
                         "python -m audit.runs lists them)")
    try:
        check_store(settings, option)
        return _resolve_run_id(settings, source, option)
    except LookupError as error:
        raise AuditError(f"{what} is neither a run directory nor a run in the store: "
                         f"{error.args[0] if error.args else error}") from None


def show_run(run: dict[str, Any], console: Console,
             tracking_uri: str = TrackingConfig.tracking_uri) -> None:
    tags = run["tags"]
    table = Table(title=escape(f"MLflow run {run['run_id']} ({run['name']})"), show_header=False)
    table.add_column("what")
    table.add_column("value", overflow="fold")
    rows = [("status", run["status"]), ("started", started_text(run["start_time"])),
            ("sweep parent", tags.get(tracking.PARENT_RUN_TAG, "")),
            ("converged", tags.get("converged", "")),
            *[(key, value) for key, value in sorted(tags.items())
              if key.startswith(("audit.", "git.", "dvc.", "config.", "model.",
                                 "judge_model.", "hydra.", "package.", "sweep.", "compare."))]]
    for key, value in rows:
        table.add_row(escape(key), escape(str(value)))
    console.print(table)
    console.print("To re-create it:")
    for step in reproduction_steps(run, tracking_uri):
        console.print(f"  {step}", highlight=False, markup=False)


def write_params(settings: TrackingConfig, run_id: str, output: Path,
                 pipeline_dir: str = "pipeline") -> Path:
    """The run's composed config, validated, as the params.yaml that `dvc repro` reads."""
    tracking.check_artifacts(settings.tracking_uri, run_id)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            path = tracking.download_artifact(settings.tracking_uri, run_id, CONFIG_ARTIFACT,
                                              Path(scratch))
        except Exception as error:  # MLflow raises several types for a missing artifact
            raise LookupError(f"run {run_id} has no {CONFIG_ARTIFACT} artifact: it was not "
                              f"logged by audit's report stage") from error
        composed = OmegaConf.load(path)
        overrides = run_overrides(settings, run_id, Path(scratch))
    composed.paths.output_dir = pipeline_dir
    try:
        config = to_audit_config(composed)
    except (OmegaConfBaseException, AuditError) as error:
        raise AuditError(other_version(settings, run_id, error)) from None
    header = HEADER.replace("Generated by `python -m audit.params`",
                            f"Re-created from MLflow run {run_id} by `python -m audit.runs params`")
    output.write_text(params_yaml(config, header))
    overrides_file(output).write_text("".join(f"{override}\n" for override in overrides))
    return output


def other_version(settings: TrackingConfig, run_id: str, error: Exception) -> str:
    """Why a run's logged config does not validate, as one line: a field this version removed,
    retyped or narrowed, and the audit version and commit that made the run, whose code reads
    it (`audit.runs show` lists the steps from that commit)."""
    problem = (describe(error, Path(CONF_DIR)) if isinstance(error, OmegaConfBaseException)
               else str(error))
    tags = tracking.get_run(settings.tracking_uri, run_id)["tags"]
    made_by = (f"audit {tags.get('audit.version', '(version not recorded)')}"
               f"{f' at commit {commit[:10]}' if (commit := tags.get('audit.commit')) else ''}")
    return (f"run {run_id}'s config does not fit audit {tracking.tool_version()}: {problem}; the "
            f"run was made by {made_by}: re-create it from that code (`python -m audit.runs show "
            f"{run_id[:8]}` lists the steps)")


def run_overrides(settings: TrackingConfig, run_id: str, scratch: Path) -> list[str]:
    """The Hydra overrides a run was started with (Hydra's overrides.yaml, logged with the run),
    without the sweep's and Hydra's own: what a later `dvc exp run -S` must repeat, recorded
    in params.overrides. Empty for a run made by `dvc repro` (no Hydra files), whose
    params.yaml had its overrides composed in already."""
    try:
        path = tracking.download_artifact(settings.tracking_uri, run_id, OVERRIDES_ARTIFACT,
                                          scratch)
    except Exception:  # MLflow raises several types for a missing artifact
        return []
    return [str(override) for override in OmegaConf.load(path)
            if not str(override).lstrip("+~").startswith(("hydra.", "sweep="))]


DEFAULT_LIMIT = 20  # runs listed without --limit
# MLflow's search_runs refuses max_results above this, with a traceback (bad-input review
# 2026-12-06).
MLFLOW_MAX_RESULTS = 50_000


def positive_integer(text: str) -> int:
    """--limit: MLflow refused 0 or a negative count, or one above MLFLOW_MAX_RESULTS, with a
    29-line traceback."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: pass a count of runs "
                                         "such as 20") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1: pass a count of runs such "
                                         "as 20")
    if value > MLFLOW_MAX_RESULTS:
        raise argparse.ArgumentTypeError(f"{value} must be at most {MLFLOW_MAX_RESULTS:,} (MLflow "
                                         "returns no more at once): pass a smaller count, or "
                                         "--sweep ID for one sweep's runs")
    return value


def run_id_argument(text: str) -> str:
    """argparse's type for a run id: an empty one (`--sweep ''`) listed every run, as if no
    sweep had been named (bad-input review 2026-12-07)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a run id, as the runs table shows it")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m audit.runs", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tracking-uri", default=tracking.default_tracking_uri())
    parser.add_argument("--experiment", default=TrackingConfig.experiment)
    parser.add_argument("--sweep", type=run_id_argument,
                        help="only the job runs of this sweep's parent run")
    parser.add_argument("--limit", type=positive_integer,
                        help=f"how many runs to list (newest first; default {DEFAULT_LIMIT})")
    parser.add_argument("--metric", action="append", default=[],
                        help="metric name or pattern to add as a column (repeatable)")
    parser.add_argument("--csv", type=path_argument("runs.csv"),
                        help="also write the table to this CSV file")
    # The store's options after a subcommand too (`show ID --tracking-uri URI`, as the
    # not-found message suggests), without overriding those given before it.
    store = OneLineParser(add_help=False)
    store.add_argument("--tracking-uri", default=argparse.SUPPRESS)
    store.add_argument("--experiment", default=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command")
    show = commands.add_parser("show", parents=[store],
                               help="one run's provenance and how to re-create it")
    show.add_argument("run_id")
    params = commands.add_parser("params", parents=[store],
                                 help="write a run's params.yaml for dvc repro")
    params.add_argument("run_id")
    params.add_argument("--output", type=path_argument("params.yaml"),
                        default=Path("params.yaml"))
    arguments = parser.parse_args(argv)
    table_options = [option for option, value in (("--sweep", arguments.sweep),
                                                  ("--limit", arguments.limit),
                                                  ("--metric", arguments.metric),
                                                  ("--csv", arguments.csv)) if value]
    if arguments.command and table_options:  # they were ignored without a word (review 12-07)
        parser.error(f"{', '.join(table_options)} shape the runs table, which `"
                     f"{arguments.command}` does not print: leave them out, or drop "
                     f"`{arguments.command} ID` to list the runs")
    arguments.limit = arguments.limit or DEFAULT_LIMIT
    configure_cli_logging()
    settings = TrackingConfig(tracking_uri=arguments.tracking_uri,
                              experiment=arguments.experiment)
    console = Console(width=max(Console().width, 160)) if not sys.stdout.isatty() else Console()
    try:
        # The file the command writes, named before the store is read, not by a traceback after.
        if arguments.command == "params":
            check_params_output(arguments.output)
        elif arguments.command is None and arguments.csv:
            check_output(arguments.csv, "--csv ")
            check_replaces_only(arguments.csv, "--csv ", "a text file", is_text)
        check_store(settings)
        if arguments.command == "show":
            show_run(tracking.get_run(settings.tracking_uri,
                                      _resolve_run_id(settings, arguments.run_id)), console,
                     settings.tracking_uri)
        elif arguments.command == "params":
            run_id = _resolve_run_id(settings, arguments.run_id)
            log.info("wrote %s from run %s", write_params(settings, run_id, arguments.output),
                     run_id)
        else:
            return _list(arguments, settings, console)
    except LookupError as error:
        log.error("%s", error.args[0] if error.args else error)
        return 2
    except AuditError as error:  # a recorded setting outside its range (audit.config_ranges)
        log.error("%s", error)
        return 2
    return 0


def _not_a_sweep(settings: TrackingConfig, run_id: str, typed: str) -> str | None:
    """Why --sweep's run is no sweep's parent run, naming the parent when it is one of its jobs;
    None for a parent. It was "no runs ... under sweep ID", exit 1, whatever the run was
    (bad-input review 2026-12-05)."""
    tags = tracking.get_run(settings.tracking_uri, run_id)["tags"]
    if tags.get("audit.role") == "sweep":
        return None
    parent = tags.get(tracking.PARENT_RUN_TAG)
    if parent and tracking.get_run(settings.tracking_uri, parent)["tags"].get(
            "audit.role") == "sweep":
        fix = f"it is a job of sweep {parent[:8]}: pass --sweep {parent[:8]}"
    else:
        fix = "pass a sweep's parent run (the runs named sweep:NAME)"
    return f"--sweep {typed}: run {run_id[:8]} is not a sweep's parent run; {fix}"


def _list(arguments: argparse.Namespace, settings: TrackingConfig, console: Console) -> int:
    query = ""
    if arguments.sweep:
        parent = _resolve_run_id(settings, arguments.sweep)
        problem = _not_a_sweep(settings, parent, arguments.sweep)
        if problem:
            log.error("%s", problem)
            return 2
        query = f"tags.`{tracking.PARENT_RUN_TAG}` = '{parent}'"
    runs = tracking.find_runs(settings.tracking_uri, settings.experiment, query, arguments.limit)
    # Experiments of audit's (MLflow makes `Default` in every store, where no audit logs).
    names = [] if runs else [name for name in tracking.experiment_names(settings.tracking_uri)
                             if name != "Default"]
    if names and settings.experiment not in names:  # a mistyped --experiment
        log.error("no experiment '%s' at %s; it has %s: pass --experiment NAME",
                  settings.experiment, settings.tracking_uri, ", ".join(map(repr, names)))
        return 2
    if not runs:
        log.error("no runs in experiment '%s' at %s%s", settings.experiment,
                  settings.tracking_uri, f" under sweep {arguments.sweep}" if arguments.sweep
                  else ": run an audit first (python -m audit)")
        return 1
    for line in unmatched_patterns(runs, arguments.metric):
        log.warning("%s", line)
    frame = runs_frame(runs, arguments.metric, known_headline_metrics)
    if arguments.csv:
        write_frame(frame, arguments.csv)
    where = f"sweep {arguments.sweep}" if arguments.sweep else f"experiment '{settings.experiment}'"
    print_runs(frame, f"{counted(len(runs), 'run')} in {where} (newest first)", console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
