"""`python -m audit.fit input=PATH output=DIR`: the Rasch fit on any long response table.

For users who already have labelled responses (from another tool, or the original audit's CSV)
and want the same posterior this project computes. Arguments are ``key=value`` pairs merged into
a structured config, so a mistyped key or a wrong type fails with one line before anything runs.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from audit.config import FitConfig
from audit.irt import fit_rasch, respondent_ranking
from audit.logs import configure_cli_logging

log = logging.getLogger("audit.fit")

# `prior=` names the model by what a user of the original audit knows it as.
PRIORS = {"seed": "rasch_seed", "rasch": "rasch"}
USAGE = ("usage: python -m audit.fit input=PATH output=DIR [respondent=COL item=COL outcome=COL "
         "prior=seed|rasch draws=N tune=N chains=N seed=N hdi_prob=P]")


@dataclass
class FitCommand:
    input: str = "???"
    output: str = "???"
    respondent: str = "respondent"
    item: str = "item"
    outcome: str = "y"
    prior: str = "rasch"
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    cores: int = 2
    target_accept: float = 0.8
    seed: int = 20251123
    hdi_prob: float = 0.94


class FitInputError(ValueError):
    """Bad arguments or a bad table, reported as one line."""


def parse_arguments(arguments: list[str]) -> FitCommand:
    malformed = [argument for argument in arguments if "=" not in argument]
    if malformed:
        raise FitInputError(f"argument {malformed[0]!r} is not key=value; {USAGE}")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(FitCommand), OmegaConf.from_dotlist(arguments))
        command: FitCommand = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except OmegaConfBaseException as error:
        raise FitInputError(f"{str(error).splitlines()[0]}; {USAGE}") from None
    if command.prior not in PRIORS:
        raise FitInputError(f"prior={command.prior} is unknown; use prior=seed (N(0,1) theta and b, "
                            "the original audit) or prior=rasch (identified, the default)")
    return command


def read_long_table(path: Path, respondent: str, item: str, outcome: str) -> pl.DataFrame:
    """Read CSV or parquet and rename the three columns to respondent, item, y."""
    if not path.is_file():
        raise FitInputError(f"input file {path} does not exist; pass input=PATH to a CSV or parquet")
    try:
        table = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FitInputError(f"cannot read {path} as {'parquet' if path.suffix == '.parquet' else 'CSV'}: "
                            f"{first_line}") from None
    wanted = {"respondent": respondent, "item": item, "outcome": outcome}
    missing = {key: column for key, column in wanted.items() if column not in table.columns}
    if missing:
        key, column = next(iter(missing.items()))
        raise FitInputError(f"{path} has no column {column!r}; its columns are "
                            f"{', '.join(table.columns)}: pass {key}=COLUMN")
    long = table.select(
        pl.col(respondent).cast(pl.String).alias("respondent"),
        pl.col(item).cast(pl.String).alias("item"),
        pl.col(outcome).alias("y"),
    )
    if long.null_count().sum_horizontal().item():
        raise FitInputError(f"{path} has empty cells in {respondent}, {item} or {outcome}; "
                            "drop or fill those rows first")
    y = long.get_column("y")
    if y.dtype == pl.Boolean:
        y = y.cast(pl.Int64)
    try:
        y = y.cast(pl.Int64, strict=True)
    except pl.exceptions.PolarsError:
        raise FitInputError(f"column {outcome!r} must hold 0 or 1 (or true/false); "
                            f"found {y.head(3).to_list()}") from None
    bad = y.filter(~y.is_in([0, 1]))
    if not bad.is_empty():
        raise FitInputError(f"column {outcome!r} must hold only 0 or 1; found {bad.unique().sort().to_list()}")
    return long.with_columns(y=y)


def run(command: FitCommand) -> pl.DataFrame:
    outcomes = read_long_table(Path(command.input), command.respondent, command.item, command.outcome)
    fit_config = FitConfig(
        model=PRIORS[command.prior], draws=command.draws, tune=command.tune, chains=command.chains,
        cores=command.cores, target_accept=command.target_accept, seed=command.seed,
        hdi_prob=command.hdi_prob,
    )
    fit = fit_rasch(outcomes, fit_config)
    output = Path(command.output)
    output.mkdir(parents=True, exist_ok=True)
    fit.summary.write_csv(output / "summary.csv")
    fit.idata.to_netcdf(str(output / "posterior.nc"))
    for problem in fit.diagnostics.problems():
        log.warning("fit did not converge: %s", problem)
    ranking = respondent_ranking(fit.summary)
    with pl.Config(tbl_rows=30, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        print(ranking.select("respondent", "mean", "hdi_low", "hdi_high").head(30))
    log.info("wrote %s and %s", output / "summary.csv", output / "posterior.nc")
    return fit.summary


def main(arguments: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if arguments is None else arguments
    try:
        command = parse_arguments(arguments)
        run(command)
    except FitInputError as error:
        log.error("%s", error)
        return 2
    except ValueError as error:  # schema or coding errors from the IRT package
        log.error("%s", str(error).splitlines()[0])
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
