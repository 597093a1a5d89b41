"""Where `python -m audit.plan plan.from_run=RUN` finds its run (cli/plan.resolved_source,
pilot.run_files): a run directory, or a run in the MLflow store found as audit.runs finds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.cli.plan import resolved_source
from audit.config import TrackingConfig
from audit.errors import AuditError
from audit.methods.rasch.pilot import run_files


def store_with_runs(folder: Path) -> tuple[TrackingConfig, dict[str, str]]:
    """A store with a Rasch run and an IAT run (method tags as audit runs set them)."""
    from mlflow import MlflowClient

    settings = TrackingConfig(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}",
                              experiment="audit")
    client = MlflowClient(settings.tracking_uri)
    experiment = client.create_experiment("audit",
                                          artifact_location=(folder / "artifacts").as_uri())
    runs = {method: client.create_run(experiment, tags={"method": method}).info.run_id
            for method in ("rasch", "iat")}
    return settings, runs


def test_a_store_that_does_not_exist_is_named_not_created(tmp_path: Path):
    """Defect 5 of the adaptive review: plan.from_run=ID with a store that does not exist made
    MLflow create the database (954 KB) and its directory; a mistyped run directory did too."""
    settings = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'no_such_dir' / 'mlflow.db'}")
    with pytest.raises(AuditError, match=r"no MLflow store at .*no_such_dir/mlflow.db .*does not "
                                         r"exist.*tracking.tracking_uri=URI"):
        resolved_source("0123456789abcdef", settings)
    with pytest.raises(AuditError, match="no such run directory"):
        resolved_source(str(tmp_path / "no" / "such" / "dir"), settings)
    assert list(tmp_path.iterdir()) == []


def test_the_ids_audit_runs_shows_are_found_and_another_methods_run_is_named(tmp_path: Path):
    """Defect 5 of the adaptive review: the 8 characters of a run id that `python -m audit.runs`
    shows were refused ("neither a run directory nor an MLflow run"), and an IAT run's failure
    read as a missing Rasch artifact."""
    settings, runs = store_with_runs(tmp_path)
    assert resolved_source(runs["rasch"][:8], settings) == runs["rasch"]
    assert resolved_source(runs["rasch"], settings) == runs["rasch"]
    with pytest.raises(AuditError, match=r"0 runs in .* \(any experiment\)"):
        resolved_source("ffffffff", settings)
    assert resolved_source(str(tmp_path), settings) == str(tmp_path)  # a directory, as given
    with pytest.raises(AuditError, match=f"run {runs['iat']} is a run of method=iat, not a "
                                         "Rasch run"):
        run_files(runs["iat"], settings.tracking_uri, tmp_path / "scratch")


@pytest.mark.parametrize("layout", ["flat", "stages"])
def test_a_run_directory_is_read_in_either_layout(tmp_path: Path, layout: str):
    """Bug caught: plan.from_run=pipeline (the run `dvc repro` makes, each stage's files in its
    own folder) was refused as "a directory without fit/posterior.nc", although the verdict and
    the findings read that layout; the stage folders are those of the analyse, design and
    score stages that write the files."""
    folders = ({"fit/posterior.nc": "", "prompts.parquet": "", "judge_gold.parquet": ""}
               if layout == "flat" else
               {"fit/posterior.nc": "analyse", "prompts.parquet": "design",
                "judge_gold.parquet": "score"})
    for name, stage in folders.items():
        path = tmp_path / stage / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    files = run_files(str(tmp_path), "sqlite:///unused.db", tmp_path / "scratch")
    assert {str(name): path.relative_to(tmp_path).as_posix() for name, path in files.items()} \
        == {name: f"{stage}/{name}".lstrip("/") for name, stage in folders.items()}


def test_a_run_directory_without_gold_plans_without_it_and_one_without_a_fit_is_refused(
        tmp_path: Path):
    """Bugs caught: a run without the judge's gold results (judge.evaluate_on_gold=false) refused,
    or a directory without a posterior taken for a run."""
    (tmp_path / "design").mkdir()
    (tmp_path / "design" / "prompts.parquet").write_bytes(b"")
    with pytest.raises(AuditError, match="without fit/posterior.nc and prompts.parquet.*dvc"):
        run_files(str(tmp_path), "sqlite:///unused.db", tmp_path / "scratch")
    (tmp_path / "analyse" / "fit").mkdir(parents=True)
    (tmp_path / "analyse" / "fit" / "posterior.nc").write_bytes(b"")
    files = run_files(str(tmp_path), "sqlite:///unused.db", tmp_path / "scratch")
    assert [name for name, path in files.items() if path is None] == [Path("judge_gold.parquet")]


@pytest.mark.parametrize("damage", ["not netCDF", "truncated"])
def test_a_damaged_posterior_of_a_past_run_is_one_line_naming_the_run(tmp_path: Path,
                                                                     damage: str):
    """Bug caught (bad-input review 2026-12-04): plan.from_run=RUN whose fit/posterior.nc is
    not a netCDF file (xarray's ValueError, "did not find a match in any of xarray's currently
    installed IO backends") or a cut one (h5py's OSError) was a traceback."""
    from audit.methods.rasch.pilot import run_components
    from audit.methods.rasch.simulation import VarianceComponents

    release = Path(__file__).parents[1] / "fixtures" / "release_0_1" / "posterior.nc"
    (tmp_path / "fit").mkdir()
    (tmp_path / "fit" / "posterior.nc").write_bytes(
        b"junk\n" if damage == "not netCDF" else release.read_bytes()[:20000])
    (tmp_path / "prompts.parquet").write_bytes(b"")
    with pytest.raises(AuditError) as refused:
        run_components(str(tmp_path), "sqlite:///unused.db", ("race",), "favourable",
                       VarianceComponents(), count=1, seed=0)
    reason = "not a netCDF file" if damage == "not netCDF" else "truncated file"
    assert re.fullmatch(rf"cannot read the posterior fit/posterior.nc of plan.from_run="
                        rf"{re.escape(str(tmp_path))} \(.*{reason}.*\): rerun that run, or "
                        rf"choose another for plan.from_run", str(refused.value)), refused.value


def test_an_mlflow_run_without_gold_plans_without_it_and_one_without_prompts_is_refused(
        tmp_path: Path):
    """Bug caught: of a run in the MLflow store, a missing judge/judge_gold.parquet (a run with
    judge.evaluate_on_gold=false) must plan without the gold results, and a missing
    data/prompts.parquet must be refused: the two were swapped, so a run without gold results
    was refused and one without prompts planned. By hand: the Rasch run logs fit/posterior.nc
    and data/prompts.parquet only, so the gold file alone is None."""
    from mlflow import MlflowClient

    settings, runs = store_with_runs(tmp_path)
    client = MlflowClient(settings.tracking_uri)
    for folder, name in (("fit", "posterior.nc"), ("data", "prompts.parquet")):
        local = tmp_path / "logged" / folder / name
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(b"")
        client.log_artifact(runs["rasch"], str(local), folder)
    files = run_files(runs["rasch"], settings.tracking_uri, tmp_path / "scratch")
    assert [name for name, path in files.items() if path is None] == [Path("judge_gold.parquet")]
    assert files[Path("prompts.parquet")].name == "prompts.parquet"
    bare = client.create_run(client.get_run(runs["rasch"]).info.experiment_id,
                              tags={"method": "rasch"}).info.run_id
    client.log_artifact(bare, str(tmp_path / "logged" / "fit" / "posterior.nc"), "fit")
    with pytest.raises(AuditError, match="has no artifact data/prompts.parquet"):
        run_files(bare, settings.tracking_uri, tmp_path / "scratch2")
