"""dvc.yaml without running DVC: the same five stages as the run skeleton, one out folder each,
and every dependency path exists for every method (a moved folder would otherwise make
`dvc repro` fail, or a moved file silently leave a stage's deps)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from audit.methods import METHODS
from audit.methods.run import STAGE_NAMES

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = yaml.safe_load((PROJECT_ROOT / "dvc.yaml").read_text())
PARAMS = OmegaConf.load(PROJECT_ROOT / "params.yaml")


def _resolve(path: str, method: str) -> str:
    """DVC's templating, for the ${...} names dvc.yaml uses, with params.yaml's values."""
    return re.sub(r"\$\{([^}]+)\}", lambda match: method if match[1] == "method"
                  else str(OmegaConf.select(PARAMS, match[1])), path)


def test_the_stages_are_the_run_skeletons_and_each_runs_itself():
    assert tuple(PIPELINE["stages"]) == STAGE_NAMES
    for name, stage in PIPELINE["stages"].items():
        assert stage["cmd"].split()[:4] == ["python", "-m", "audit.stages", name]
        assert stage["outs"] == [f"pipeline/{name}"]
    assert PIPELINE["metrics"] == ["pipeline/report/metrics.json"]


def test_every_dependency_exists_for_every_method():
    for method in METHODS:
        for name, stage in PIPELINE["stages"].items():
            for dep in stage["deps"]:
                path = _resolve(dep, method)
                if not path.startswith("pipeline/"):
                    assert (PROJECT_ROOT / path).exists(), (method, name, path)


def test_code_dependencies_are_folders_or_single_shared_modules():
    """A folder keeps a file added or moved inside it; named files are the shared modules a
    stage runs and nothing else (a file named here that moves fails the test above)."""
    for stage in PIPELINE["stages"].values():
        code = [dep for dep in stage["deps"] if dep.startswith("src/")]
        assert "src/audit/methods/${method}" in code
        for dep in code:
            path = PROJECT_ROOT / _resolve(dep, "rasch")
            assert path.is_dir() or path.suffix == ".py", dep
