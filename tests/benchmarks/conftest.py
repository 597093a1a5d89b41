"""The benchmark scripts, loaded as modules: they are scripts in benchmarks/, not a package."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str) -> ModuleType:
    """benchmarks/NAME.py as module NAME (registered, so its dataclasses resolve their module;
    the scripts put benchmarks/ on sys.path for their sibling bench_shared themselves)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> Callable[[str], ModuleType]:
    return load_script
