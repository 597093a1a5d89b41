"""Each side of `python -m audit.compare`: a run directory or MLflow run read into one model's
prompts and labels, its gold-set results and the config sections a comparison reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from audit.cli.runs import CONFIG_ARTIFACT, run_source
from audit.config import TrackingConfig
from audit.errors import AuditError, first_line
from audit.methods.layout import found_run_file, runs_inside
from audit.methods.rasch import comparison
from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.schemas import GoldResultSchema, LabelSchema
from audit.methods.verdict import recorded_config_file
from audit.schemas import PromptSchema
from audit.tables import read_table
from audit.tracking import mlflow as tracking
from audit.yaml_files import YAML_LOAD_ERRORS, not_settings, yaml_load_problem

STORE_OPTION = "tracking_uri=URI"  # how compare takes the store, for audit.runs' hints
DATA_FILES = {"prompts": ("data/prompts.parquet", "prompts.parquet"),
              "labels": ("data/labels.parquet", "labels.parquet"),
              "gold": ("judge/judge_gold.parquet", "judge_gold.parquet")}


@dataclass(frozen=True)
class RecordedConfig:
    fit: FitConfig
    tracking: TrackingConfig
    judge: str | None = None  # judge.name as the run recorded it


def fetch_run(source: str, tracking_uri: str, experiment: str, scratch: Path) -> tuple[Path, str]:
    """A run directory for `source` and its name: the directory itself, or the MLflow run's
    logged tables in `scratch` and its full run id."""
    settings = TrackingConfig(tracking_uri=tracking_uri, experiment=experiment)
    found = run_source(source, settings, STORE_OPTION, source)
    if isinstance(found, Path):
        return found, str(found.resolve())
    run_id = found
    tracking.check_artifacts(tracking_uri, run_id)
    folder = scratch / run_id
    for artifact, name in [*DATA_FILES.values(), (CONFIG_ARTIFACT, CONFIG_ARTIFACT)]:
        try:
            downloaded = tracking.download_artifact(tracking_uri, run_id, artifact, folder)
        except Exception:  # MLflow raises several types for a missing artifact
            continue
        Path(downloaded).rename(folder / name)
    return folder, run_id


def recorded_config(path: Path) -> RecordedConfig:
    """The fit and tracking sections of a run's config.yaml: all a comparison reads from it.
    One that is not YAML, or holds no settings, is refused with the fix: an empty one compared
    the run under the default fit settings, whatever it ran with (review 2026-12-04)."""
    fix = ("rerun the audit, or compare its MLflow run by id (its artifacts hold the config), "
           "or restore the file")
    try:
        loaded = OmegaConf.load(path)
        held = not_settings(loaded)
        if held:
            raise AuditError(f"{path} is not a run's config.yaml: it {held}; {fix}")
        sections = {}
        for section, kind in (("fit", FitConfig), ("tracking", TrackingConfig)):
            try:
                sections[section] = OmegaConf.to_object(OmegaConf.merge(
                    OmegaConf.structured(kind), loaded.get(section, {})))
            except OmegaConfBaseException as error:
                # The setting is named on a later line of OmegaConf's error, relative to the
                # section: "fit: {rope: wide}" read only "Value 'wide' ... Float".
                key = getattr(error, "full_key", None)
                where = f"{section}.{key}: " if key else ""
                raise AuditError(f"{path} is not a run's config.yaml ({where}"
                                 f"{first_line(error)}); {fix}") from None
        judge = loaded.get("judge", {}) or {}
        name = judge.get("name") if hasattr(judge, "get") else None
    except YAML_LOAD_ERRORS as error:  # not UTF-8, or recursive: was a traceback
        raise AuditError(f"{path} is not a run's config.yaml: {yaml_load_problem(error)}; "
                         f"{fix}") from None
    except OmegaConfBaseException as error:
        raise AuditError(f"{path} is not a run's config.yaml ({first_line(error)}); "
                         f"{fix}") from None
    return RecordedConfig(**sections, judge=None if name is None else str(name))


def read_side(label: str, source: str, run_dir: Path, model: str | None
              ) -> tuple[comparison.Side, RecordedConfig, pl.DataFrame | None]:
    paths = {key: found_run_file(run_dir, name) for key, (_, name) in DATA_FILES.items()}
    holds_runs = runs_inside(run_dir) if run_dir.is_dir() else None
    if holds_runs and paths["prompts"] is None:
        raise AuditError(f"{source} is not one run: {holds_runs}")
    for key in ("prompts", "labels"):
        if paths[key] is None:
            inside = (f" (a folder inside a run: pass the run's own folder, "
                      f"{run_dir.parent})" if run_dir.name in ("report", "fit", "data", "judge")
                      else "")
            raise AuditError(f"{source} has no {key} table{inside}: pass a finished Rasch "
                             "audit's run directory or MLflow run id")
    config = recorded_config_file(run_dir)
    if config is None:
        raise AuditError(f"{source} has no config.yaml: pass a run made by python -m audit")
    cfg = recorded_config(config)
    prompts = read_table(paths["prompts"], PromptSchema, "prompts")
    if prompts.is_empty():  # models[0] of none was an IndexError traceback, exit 1
        raise AuditError(f"{source} has no prompts (its prompts table holds no rows): pass a "
                         "finished Rasch audit's run directory or MLflow run id")
    models = sorted(set(prompts.get_column("model_name").to_list()))
    if model is None:
        if len(models) > 1:
            raise AuditError(f"{source} audited {len(models)} models ({', '.join(models)}): "
                             f"name one with model_{label.lower()}=NAME")
        model = models[0]
    elif model not in models:
        raise AuditError(f"model_{label.lower()}={model} is not in {source}; it audited "
                         f"{', '.join(models)}")
    prompts = prompts.filter(pl.col("model_name") == model)
    labels = read_table(paths["labels"], LabelSchema, "labels")
    gold = (read_table(paths["gold"], GoldResultSchema, "judge gold-set results")
            if paths["gold"] else None)
    # A run that never evaluated its judge logs no gold table (MLflow) or an empty one (its
    # directory): the same fact, read the same way.
    gold = gold if gold is not None and gold.height else None
    return comparison.Side(label, source, model, prompts, labels), cfg, gold
