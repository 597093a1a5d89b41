"""A sweep of every non-Rasch method nests its jobs under the sweep's parent run, with
`sweep/n_runs` counting them (issue 20: only the Rasch path nested; the other methods logged
top-level runs). Real `python -m audit +sweep=models` multiruns (the sweep file makes it one,
no -m), on the scripted backend so that only the run skeleton and the sweep callback are tested."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from audit.tracking.mlflow import PARENT_RUN_TAG, find_runs

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "iat": ["iat.datasets=[power]", "iat.variations=[replication]", "iat.iterations=1",
            "iat.bootstrap_resamples=100", "iat.permutation_resamples=100"],
    "dif": ["dif.datasets=[logic]", "dif.forms=[choice]", "dif.difficulties=[1]",
            "dif.per_cell=1", "dif.persona_ids=[woman]", "dif.null_count=2",
            "dif.permutation_resamples=99"],
    "counterfactual": ["counterfactual.templates=[{id: letter, text: 'Recommend {name}.'}]",
                       "counterfactual.bootstrap_resamples=100"],
}


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("method", sorted(TINY))
def test_a_sweep_of_each_method_nests_its_jobs_under_one_parent_run(method: str, tmp_path):
    conf = tmp_path / "conf" / "model"
    conf.mkdir(parents=True)
    (conf / "fake_a.yaml").write_text("fake_a:\n  backend: fake\n  model: fake-a\n")
    (conf / "fake_b.yaml").write_text("fake_b:\n  backend: fake\n  model: fake-b\n")
    names = tmp_path / "names.csv"
    pl.DataFrame({"first_name": ["Emily", "Lakisha"], "race": ["White", "Black"],
                  "gender": ["female", "female"]}).write_csv(names)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    command = [
        sys.executable, "-m", "audit", "+sweep=models", f"method={method}",
        "hydra.sweeper.params.model='fake_a,fake_b'",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.sweep.dir={tmp_path / 'multirun'}", *TINY[method],
        *([f"counterfactual.axes.name.file={names}"] if method == "counterfactual" else []),
        f"tracking.tracking_uri={uri}",
        f"tracking.artifact_root={tmp_path / 'artifacts'}",
        f"paths.response_store={tmp_path / 'store.sqlite'}"]
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    env["PYTHONPATH"] = str(PROJECT_ROOT / "src")
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]

    runs = find_runs(uri, "audit")
    (parent,) = [run for run in runs if run["tags"].get("audit.role") == "sweep"]
    assert parent["status"] == "FINISHED" and parent["metrics"]["sweep/n_runs"] == 2
    children = [run for run in runs if run["tags"].get(PARENT_RUN_TAG) == parent["run_id"]]
    # Named by what differs, the swept model; what the jobs share is the parent's.
    assert sorted(run["name"] for run in children) == [f"{method} fake_a", f"{method} fake_b"]
    assert len(runs) == 3  # no job logged a top-level run beside the parent
    for child in children:
        assert child["status"] == "FINISHED" and child["tags"]["method"] == method
        assert child["tags"]["sweep.job_num"] in ("0", "1")
        assert child["metrics"]["n_prompts"] > 0
