"""dvc.yaml without running DVC: the same five stages as the run skeleton, one out folder each,
and every dependency path exists for every method (a moved folder would otherwise make
`dvc repro` fail, or a moved file silently leave a stage's deps)."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest
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


def _imported_audit_modules(entries: list[Path]) -> set[Path]:
    """Every module of audit that `entries` import, at any depth and wherever the import sits (a
    function's lazy import counts: the stage runs it), with the packages' __init__ files on the
    way. Read from the source (ast), so nothing is imported or run."""
    source = PROJECT_ROOT / "src"

    def module_file(name: str) -> Path | None:
        path = source.joinpath(*name.split("."))
        for candidate in (path / "__init__.py", path.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    seen: set[Path] = set()
    todo = list(entries)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        parts = path.relative_to(source).with_suffix("").parts
        package = parts[:-1]  # an __init__'s package is its folder, as a module's
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join([*package[:len(package) - node.level + 1], node.module or ""]
                                if node.level else [node.module or ""]).strip(".")
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                pieces = name.split(".")
                if pieces[0] != "audit":
                    continue
                for depth in range(1, len(pieces) + 1):  # importing a.b.c runs a and a.b
                    found = module_file(".".join(pieces[:depth]))
                    if found is not None and found not in seen:
                        todo.append(found)
    return seen


def test_every_stage_depends_on_all_the_code_it_runs():
    """Bug caught: the stages' deps named the method's package, methods/run.py and one
    sub-package each, while `python -m audit.stages` also runs audit.schemas, audit.tables,
    audit.config, the shared methods/*.py and cli/stages.py: an edit there left `dvc repro`
    saying everything was up to date, on tables the new code would not write."""
    source = PROJECT_ROOT / "src"
    for method in METHODS:
        entries = [source / "audit" / "stages.py", source / "audit" / "cli" / "stages.py",
                   *(source / "audit" / "methods" / method).rglob("*.py")]
        code = _imported_audit_modules(entries)
        for name, stage in PIPELINE["stages"].items():
            covered = [PROJECT_ROOT / _resolve(dep, method) for dep in stage["deps"]
                       if dep.startswith("src/")]
            missed = sorted(str(path.relative_to(source)) for path in code
                            if not any(path == dep or path.is_relative_to(dep)
                                       for dep in covered))
            assert not missed, (method, name, missed)


def test_the_stages_name_no_method_and_read_each_methods_own_params_from_dvc_params():
    """dvc.yaml lists the shared sections and dvc_params.STAGE; what a method's stage reads of its
    own sections is declared in its package (DVC_PARAMS) and lands there in params.yaml, so a new
    method needs no edit here (a section listed by name would rerun other methods' stages, or
    miss a new method's settings)."""
    from audit.cli.params import compose_params
    from audit.config import SharedConfig
    from audit.methods import method_module

    shared = {field.name for field in fields(SharedConfig)}
    for name, stage in PIPELINE["stages"].items():
        listed = {param.split(".")[0] for param in stage["params"]}
        assert listed <= shared | {"dvc_params"}, (name, listed - shared)
        assert f"dvc_params.{name}" in stage["params"], name
    for method in METHODS:
        declared = method_module(method, "config").DVC_PARAMS
        root = OmegaConf.structured(compose_params([f"method={method}"]))
        composed = root.dvc_params
        for stage in PIPELINE["stages"]:
            assert composed[stage]["method"] == method
            keys = declared.get(stage, ())
            for key in keys(root) if callable(keys) else keys:
                assert OmegaConf.select(composed[stage], key) is not None, (method, stage, key)


def test_dvc_composes_the_dvc_params_as_audit_params_does(tmp_path: Path):
    """`dvc exp run -S` composes conf/pipeline.yaml itself (DVC's compose_and_dump, which resolves
    the config in place) with this project's Hydra plugin: the resolver must give DVC a value it
    can store, the same as `python -m audit.params` writes."""
    from dvc.utils.hydra import compose_and_dump

    from audit.cli.params import compose_params
    from audit.config import CONF_DIR
    from audit.methods.configs import DVC_STAGES

    assert DVC_STAGES == STAGE_NAMES
    output = tmp_path / "params.yaml"
    compose_and_dump(output, CONF_DIR, None, "pipeline", str(PROJECT_ROOT / "src"),
                     ["method=iat", "iat.max_tokens=64"])
    dumped = yaml.safe_load(output.read_text())["dvc_params"]
    assert dumped["respond"] == {"method": "iat", "iat": {"max_tokens": 64}}
    ours = OmegaConf.to_container(OmegaConf.structured(
        compose_params(["method=iat", "iat.max_tokens=64"])).dvc_params)
    assert dumped == ours



@pytest.mark.parametrize(("name", "expected"), [
    ("mine", "conf/items/mine.yaml holds no settings, so choosing it (items=mine) would set "
             "nothing: write its settings (the files in src/audit/conf/items/ show them), or "
             "choose another"),
    ("smoke", "conf/items/smoke.yaml holds no settings, and it takes the place of the shipped "
              "items=smoke, so items=smoke would set nothing: write its settings "
              "(src/audit/conf/items/smoke.yaml shows them), or delete it to use the shipped "
              "one"),
])
def test_dvc_refuses_a_chosen_user_file_that_holds_no_settings(tmp_path: Path, monkeypatch,
                                                               name: str, expected: str):
    """Bug caught (2026-12-05): `dvc exp run -S items=mine` with an empty conf/items/mine.yaml
    composed the shipped item bank (items.name default) without a word, since DVC composes in
    its own process and audit's check after composing never ran there. An empty file in place
    of a shipped option is named as such, and nothing is written."""
    from dvc.utils.hydra import compose_and_dump

    from audit.config import CONF_DIR
    from audit.config_ranges import ConfigValueError

    (tmp_path / "conf" / "items").mkdir(parents=True)
    (tmp_path / "conf" / "items" / f"{name}.yaml").write_text("# my scenarios, later\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigValueError) as refused:
        compose_and_dump(tmp_path / "params.yaml", CONF_DIR, None, "pipeline",
                         str(PROJECT_ROOT / "src"), [f"items={name}"])
    assert str(refused.value) == expected
    assert not (tmp_path / "params.yaml").exists()
    # A file with settings is read from the same folder: the refusal is for emptiness alone.
    (tmp_path / "conf" / "items" / f"{name}.yaml").write_text(
        f"name: {name}\nitem_ids: [hiring_01]\n")
    compose_and_dump(tmp_path / "params.yaml", CONF_DIR, None, "pipeline",
                     str(PROJECT_ROOT / "src"), [f"items={name}"])
    assert yaml.safe_load((tmp_path / "params.yaml").read_text())["items"]["item_ids"] == [
        "hiring_01"]

def test_a_params_yaml_from_a_past_runs_config_carries_the_dvc_params():
    """`python -m audit.runs params` writes params.yaml from a run's config.yaml, which has no
    dvc_params (only the pipeline config fills them): dvc.yaml's stages would not find theirs."""
    from audit.cli.params import params_yaml
    from audit.methods.configs import AuditConfig

    written = yaml.safe_load(params_yaml(AuditConfig(method="iat")))["dvc_params"]
    assert written["respond"] == {"method": "iat", "iat": {"max_tokens": 256}}
    assert set(written) == {*STAGE_NAMES, "answers_file"}
    assert written["answers_file"] == "data/items/decision_items.csv"  # no imported answers


def test_imported_answers_are_a_dependency_of_the_stages_that_read_them():
    """An imported audit's file is a dependency (dvc_params.answers_file) of design, respond and
    score, so that `dvc repro` re-creates the audit when the file changes."""
    from audit.cli.params import compose_params

    for stage in ("design", "respond", "score"):
        assert "${dvc_params.answers_file}" in PIPELINE["stages"][stage]["deps"], stage
    composed = OmegaConf.structured(compose_params(["ingest.input=answers.csv"]))
    assert composed.dvc_params.answers_file == "answers.csv"


def test_the_docs_say_a_code_edit_reruns_every_stage_the_fit_included():
    """Tracking review #10: a one-line report fix reruns the fit, while docs/reproducibility.md
    said only that "a change reruns only what depends on it". Every stage depends on all of
    audit's code (the test above says why); narrowing the deps means rewriting that sentence and
    this test."""
    assert all("src/audit" in stage["deps"] for stage in PIPELINE["stages"].values())
    text = " ".join((PROJECT_ROOT / "docs" / "reproducibility.md").read_text().split())
    assert ("any edit in it (a report template's one line included) reruns every stage, the fit "
            "included") in text
