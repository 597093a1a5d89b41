"""`python -m audit.methods.dif.compare DIR`: accuracy against bias across the jobs of a sweep.

A command, so it lives with the others (audit.cli); audit.methods.dif.compare forwards to it, the
name the docs give.

`python -m audit -m method=dif +sweep=models` runs one job (one model) per directory, so no single
job sees every model. This gathers each job's `dif_models.csv` under DIR, fits the line across
models (audit.methods.dif.analyse.across_models) and writes `dif_models_all.csv`,
`dif_across_models.csv` and `dif_accuracy_vs_bias.png` into DIR.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

from audit.cli import OneLineParser, path_argument
from audit.errors import AuditError
from audit.logs import configure_cli_logging
from audit.outputs import why_unwritable
from audit.methods.dif.analyse import across_models
from audit.methods.dif import report as dif_plots
from audit.methods.dif.schemas import DIFModelSchema
from audit.tracking.jobs import in_job_order
from audit.tables import read_table, save_figure, write_frame

log = logging.getLogger(__name__)
# What to do about a job's table that does not read: each is the DIF method's own output.
OUTPUT_FILES = ("dif_models_all.csv", "dif_across_models.csv", "dif_accuracy_vs_bias.png")
DIF_TABLE_FIX = ("rerun that job (python -m audit method=dif ...), or move its folder out of the "
                 "sweep's directory")


def gather(directory: Path) -> pl.DataFrame:
    if not directory.is_dir():  # was "no dif_models.csv under nope" (review 2026-12-04)
        problem = "is a file, not a folder" if directory.exists() else "does not exist"
        raise AuditError(f"{directory} {problem}: give the sweep's directory (multirun/DATE/TIME)"
                         f" after its DIF jobs have finished")
    # In job order: by name, "the last job" of a model in jobs 2 and 10 was job 2.
    files = sorted(directory.rglob("dif_models.csv"),
                   key=lambda file: in_job_order(directory, file))
    if not files:
        raise AuditError(f"no dif_models.csv under {directory}: give the sweep's directory "
                         f"(multirun/DATE/TIME) after its DIF jobs have finished")
    frames = [read_table(file, DIFModelSchema, "DIF model table", DIF_TABLE_FIX,
                         columns_fix=DIF_TABLE_FIX,
                         nan_as_null=True).with_columns(
                  job=pl.lit(str(file.parent.relative_to(directory)))) for file in files]
    table = pl.concat(frames, how="diagonal_relaxed")
    if not table.height:  # was empty tables, an empty figure and matplotlib's legend warning
        where = (f"{files[0]} holds" if len(files) == 1 else
                 f"all {len(files)} dif_models.csv files under {directory} ({files[0]}, ...) hold")
        raise AuditError(f"{where} a header and no model: {DIF_TABLE_FIX}")
    repeated = table.group_by("model_name", "dataset").len().filter(pl.col("len") > 1)
    if repeated.height:  # the same model in several jobs: keep its latest (highest) job's
        log.warning("models %s appear in several jobs; keeping the last job of each",
                    sorted(repeated["model_name"].unique().to_list()))
        table = table.unique(["model_name", "dataset"], keep="last", maintain_order=True)
    return table.sort(["model_name", "dataset"])


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m audit.methods.dif.compare",
                           description=__doc__)
    parser.add_argument("directory", type=path_argument())
    arguments = parser.parse_args(argv)
    configure_cli_logging()
    try:
        models = gather(arguments.directory)
        for name in OUTPUT_FILES:  # a folder under a file's name was a traceback after the fit
            reason = why_unwritable(arguments.directory / name)
            if reason:
                raise AuditError(f"{reason}: this command writes {name} into "
                                 f"{arguments.directory}; move it out of the way and rerun")
    except AuditError as error:
        log.error("%s", error)
        return 2

    across = across_models(models)
    models_file, across_file, plot_file = (arguments.directory / name for name in OUTPUT_FILES)
    write_frame(models, models_file)
    write_frame(across, across_file)
    save_figure(dif_plots.accuracy_vs_bias_plot(models, across), plot_file)
    for row in across.iter_rows(named=True):
        log.info("%s: %d models, slope %s, R^2 %s", row["dataset"], row["n_models"],
                 row["slope"], row["r_squared"])
    log.info("wrote %s, %s and %s in %s", *OUTPUT_FILES, arguments.directory)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
