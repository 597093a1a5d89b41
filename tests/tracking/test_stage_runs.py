"""Runs made by `python -m audit.stages` (`dvc repro`) are named and tagged by the overrides
params.yaml was composed from and log every stage's duration (review2/tracking.md #7)."""

from __future__ import annotations

import json

from hydra import compose, initialize_config_dir

from audit.config import CONF_DIR
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.run import STAGE_NAMES, Stage, run_one_stage
from audit.methods.timings import TIMINGS_FOLDER
from audit.methods.run_identity import flat_config, run_name, run_tags

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=list(overrides)))


def _probe_stage(name: str) -> Stage:
    def run(cfg, files, clock):
        return {"timings": dict(clock.timings), "name": run_name(cfg),
                "tags": run_tags(cfg, flat_config(cfg))}
    return Stage(name, run, ())


def test_stage_runs_are_named_and_tagged_by_their_overrides_and_log_every_duration(tmp_path):
    """Under `dvc repro` the run was named like a default audit, had no hydra.overrides tag and
    no duration_s/* metrics (each stage saw only its own clock)."""
    cfg = composed("tracking=none", f"paths.output_dir={tmp_path}")
    stages = [_probe_stage(name) for name in STAGE_NAMES]
    overrides = ["items=smoke", "design.replicates=1", f"paths.output_dir={tmp_path}"]
    for name in STAGE_NAMES:
        result = run_one_stage(stages, name, cfg, tmp_path, overrides)
        assert json.loads((tmp_path / TIMINGS_FOLDER / f"{name}.json").read_text())["seconds"] >= 0
        # Nothing new in the stage's own out folder: DVC hashes it, and a new wall time there
        # made every later stage (the fit included) rerun after a rerun with identical tables.
        written = sorted(path.name for path in (tmp_path / name).iterdir())
        assert written == (["metrics.json"] if name == "report" else [])  # DVC's metrics only
    assert set(result["timings"]) == set(STAGE_NAMES[:-1])
    assert result["name"].endswith(" items=smoke design.replicates=1")
    assert result["tags"]["hydra.overrides"] == " ".join(overrides)
    named = composed("tracking=none", f"paths.output_dir={tmp_path}", "tracking.run_name=mine")
    # The name the user gave is kept as given (dvc exp run -S tracking.run_name=... got the
    # overrides appended to it).
    assert run_one_stage(stages, "report", named, tmp_path, overrides)["name"] == "mine"
    unknown = run_one_stage(stages, "report", cfg, tmp_path)  # no params.overrides: no tag
    assert "hydra.overrides" not in unknown["tags"] and "=" not in unknown["name"]


def test_a_stage_run_logs_its_overrides_where_audit_runs_params_restores_them(tmp_path):
    """A run made by `dvc repro` logged no Hydra overrides file, so `audit.runs params` wrote an
    empty params.overrides: a later `dvc exp run -S` was no longer held to repeat items=smoke
    and would silently compose the default design. The overrides now go with the run's
    provenance files, in Hydra's overrides.yaml."""
    from omegaconf import OmegaConf

    from audit.methods.run import provenance_files

    cfg = composed("tracking=none", f"paths.output_dir={tmp_path}")
    config_file = tmp_path / "config.yaml"
    config_file.write_text("{}\n")
    overrides = ["items=smoke", "design.replicates=1"]
    files = {}

    def report(cfg, _files, _clock):
        files.update({f"{folder}/{path.name}": path
                      for folder, path in provenance_files(cfg, config_file)})
    stages = [*(_probe_stage(name) for name in STAGE_NAMES[:-1]), Stage("report", report, ())]
    run_one_stage(stages, "report", cfg, tmp_path, overrides)
    assert list(OmegaConf.load(files["hydra/overrides.yaml"])) == overrides
