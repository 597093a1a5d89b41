"""Where the Rasch stages keep their tables, and the fit's files (posterior, summary, contrasts)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import arviz as az
import polars as pl
from xarray import DataTree

from audit.methods.rasch.config import FitConfig
from audit.errors import AuditError
from audit.methods.rasch.irt import RaschFit, diagnose
from audit.methods.rasch.irt.hurdle import ABSTAINED_OUTCOME, DECIDED_OUTCOME
from audit.methods.run import RunFiles
from audit.schemas import SummarySchema
from audit.tables import read_frame, read_table, write_frame

PROMPTS, RESPONSES = "prompts.parquet", "responses.parquet"
LABELS, VOTES, GOLD = "labels.parquet", "judge_votes.parquet", "judge_gold.parquet"
FIT, REPORT = "fit", "report"  # folders


class StageFiles(RunFiles):
    """Where each Rasch stage's tables live (flat in one run directory, or in the stage folders
    `dvc repro` uses: see audit.methods.run.RunFiles)."""

    @property
    def prompts(self) -> Path:
        return self.path(PROMPTS)

    @property
    def responses(self) -> Path:
        return self.path(RESPONSES)

    @property
    def labels(self) -> Path:
        return self.path(LABELS)

    @property
    def votes(self) -> Path:
        return self.path(VOTES)

    @property
    def gold(self) -> Path:
        return self.path(GOLD)

    @property
    def fit(self) -> Path:
        return self.path(FIT)

    @property
    def report(self) -> Path:
        return self.path(REPORT)


def write_fit(fit: RaschFit, directory: Path) -> None:
    """Posterior, summary, contrasts and a diagnostics verdict; companions in sub-directories."""
    directory.mkdir(parents=True, exist_ok=True)
    write_frame(fit.summary, directory / "summary.csv")
    fit.idata.to_netcdf(str(directory / "posterior.nc"))
    if fit.item_gaps.height:
        write_frame(fit.item_gaps, directory / "item_gaps.csv")
    for companion in fit.companions:
        write_fit(companion, directory / companion.outcome)
    contrasts = fit.all_contrasts()
    if contrasts.height:
        write_frame(contrasts, directory / "contrasts.csv")
    diagnostics = fit.diagnostics
    (directory / "diagnostics.json").write_text(json.dumps({
        "converged": fit.converged, "rhat_max": diagnostics.rhat_max,
        "ess_bulk_min": diagnostics.ess_bulk_min, "ess_tail_min": diagnostics.ess_tail_min,
        "divergences": diagnostics.divergences, "advice": "; ".join(fit.problems()),
        "outcomes": [companion.outcome for companion in fit.all_fits()],
        "judge_error": {companion.outcome: (companion.judge_confusion.as_dict()
                                            if companion.judge_confusion else None)
                        for companion in fit.all_fits()},
    }, indent=2, allow_nan=True) + "\n")


def read_posterior(path: Path) -> DataTree:
    """A posterior.nc as an ArviZ 1 DataTree, loaded into memory (the file is not held open, so a
    rerun can replace it). Files written by releases on ArviZ 0.23 (InferenceData) have the same
    netCDF groups and open the same way (tests/methods/rasch/test_posterior_files.py)."""
    return az.from_netcdf(str(path)).load()


def read_fit(directory: Path, fit_config: FitConfig) -> RaschFit:
    """The fit written by write_fit, with its diagnostics recomputed against fit_config."""
    posterior = directory / "posterior.nc"
    if not posterior.is_file():
        raise AuditError(f"posterior not found at {posterior}: run the fit stage first")
    idata = read_posterior(posterior)
    summary = read_table(directory / "summary.csv", SummarySchema, "fit summary")
    contrasts_file = directory / "contrasts.csv"
    contrasts = read_frame(contrasts_file, "contrasts") if contrasts_file.is_file() \
        else pl.DataFrame()
    if fit_config.model == "hurdle":  # the two steps of one model, named by step
        outcome, further = DECIDED_OUTCOME, [ABSTAINED_OUTCOME]
    else:
        outcome = fit_config.outcome
        further = [fit_config.second_outcome] if fit_config.second_outcome else []
    companions = tuple(read_fit(directory / coding,
                                replace(fit_config, model="rasch", outcome=coding,
                                        second_outcome=None))
                       for coding in further)
    if contrasts.height and "outcome" in contrasts.columns:
        contrasts = contrasts.filter(pl.col("outcome") == outcome).drop("outcome")
    gaps_file = directory / "item_gaps.csv"
    return RaschFit(idata=idata, summary=summary, diagnostics=diagnose(idata, summary, fit_config),
                    contrasts=contrasts, outcome=outcome, companions=companions,
                    item_gaps=read_frame(gaps_file, "item gaps") if gaps_file.is_file()
                    else pl.DataFrame())
