"""The package has no import cycle, counting imports inside functions (a cycle dodged by a
function-level import is still a cycle: it breaks as soon as someone hoists the import) and under
`if TYPE_CHECKING:` (a cycle of type hints still ties two modules that should depend one way; only
a package's hints at its own submodules are left out, since every submodule's import runs through
its package anyway), and every module imports on its own in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "audit"


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = ("audit", *path.relative_to(root).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every audit module this file imports, at any depth, `if TYPE_CHECKING:` blocks included
    except a package's hints at its own submodules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own_parts = ""
    if path.name == "__init__.py":
        own_parts = next(name for name, file in modules.items() if file == path) + "."
    hints: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hints |= names_imported(ast.Module(body=node.body, type_ignores=[]))
            node.body = []
    found = names_imported(tree) | {name for name in hints
                                    if not (own_parts and name.startswith(own_parts))}
    return {name for name in found if name in modules and name != "audit"}


def names_imported(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function(tmp_path: Path):
    package = tmp_path / "audit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from audit.b import f\n")
    (package / "b.py").write_text("def f():\n    from audit.a import g\n")
    modules = module_files(package)
    graph = {name: imports_of(path, modules) for name, path in modules.items()}
    assert first_cycle(graph) == ["audit.a", "audit.b", "audit.a"]


def test_the_cycle_finder_finds_a_cycle_of_type_hints(tmp_path: Path):
    package = tmp_path / "audit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from audit.b import f\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from audit.a import Hint\n")
    modules = module_files(package)
    graph = {name: imports_of(path, modules) for name, path in modules.items()}
    assert first_cycle(graph) == ["audit.a", "audit.b", "audit.a"]


def test_no_import_cycle_in_the_package():
    modules = module_files()
    graph = {name: imports_of(path, modules) for name, path in modules.items()}
    assert first_cycle(graph) is None


def test_every_module_imports_first():
    """Import order must not matter: each module is imported with no other audit module loaded
    (third-party packages stay loaded, so one process does it in seconds)."""
    names = list(module_files())
    code = ("import importlib, sys\n"
            "for name in sys.argv[1:]:\n"
            "    [sys.modules.pop(m) for m in list(sys.modules) if m.startswith('audit')]\n"
            "    importlib.import_module(name)\n")
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                          env={"PYTHONPATH": str(PACKAGE.parent), "PATH": "/usr/bin:/bin"},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


HEAVY = {"pandera", "pandas", "pymc", "nutpie", "arviz", "mlflow"}


@pytest.mark.parametrize(("command", "refused"), [
    (["audit", "design.replicatez=2"], "unknown key 'design.replicatez'"),
    (["audit.fit", "input=answers.csv", "output=out", "colour=red"], "unknown option 'colour'"),
    (["audit.fit", "input=answers.csv", "output=out"], "answers.csv does not exist"),
    (["audit.compare", "a", "b", "colour=red"], "unknown option colour"),
    (["audit.compare", "a", "b", "max_worsening=lots"], "max_worsening=lots is not a number"),
    (["audit.plan", "plan.gapp=1"], "unknown key 'plan.gapp'"),
    (["audit.plan", "design.replicates=0"], "design.replicates=0 must lie in [1, inf)"),
])
def test_a_mistyped_key_is_refused_without_loading_pandera_or_the_sampler(tmp_path: Path,
                                                                          command, refused):
    """A command that ends at its config (a typo, --help, --cfg) loads no table schemas and no
    sampler: pandera and the pandas it brings took 1.0 s of the 2.3 s `python -m audit` spent
    refusing a mistyped key (2026-12-07), paid again by every such test; `python -m audit.fit`
    took 7.8 s to refuse an argument, 6 s of it the sampler's imports (0.85 s without them),
    `python -m audit.compare` 7.3 s and `python -m audit.plan` 8.9 s. Fails when a module on that
    path imports one of them at its top again (audit.tables did; the fit, compare and plan
    commands imported the sampler)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", *command],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and refused in done.stderr, done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
              if line.startswith("import time:") and line.count("|") == 2}
    assert "audit.errors" in loaded  # the importtime lines were read
    assert not loaded & HEAVY, loaded & HEAVY


# The foundation every method builds on: it must work for a method it has never heard of, so it
# imports no method package and not the registry (audit.methods) that finds them.
FOUNDATION = ("audit.config", "audit.errors", "audit.tables", "audit.schemas", "audit.stats",
              "audit.llm", "audit.tracking")


def foundation_imports_of_methods(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Foundation module -> the audit.methods modules it imports (at any depth in the file)."""
    found = {}
    for name, path in modules.items():
        if any(name == root or name.startswith(f"{root}.") for root in FOUNDATION):
            methods = {target for target in imports_of(path, modules)
                       if target == "audit.methods" or target.startswith("audit.methods.")}
            if methods:
                found[name] = methods
    return found


def test_the_foundation_rule_finds_a_method_import_hidden_in_a_function(tmp_path: Path):
    package = tmp_path / "audit"
    (package / "methods" / "iat").mkdir(parents=True)
    for init in (package, package / "methods", package / "methods" / "iat"):
        (init / "__init__.py").write_text("")
    (package / "methods" / "iat" / "config.py").write_text("")
    (package / "config.py").write_text("def sections():\n    from audit.methods.iat import config\n")
    assert foundation_imports_of_methods(module_files(package)) == {
        "audit.config": {"audit.methods.iat", "audit.methods.iat.config"}}


def test_no_foundation_module_imports_a_method_or_the_registry():
    assert foundation_imports_of_methods(module_files()) == {}
