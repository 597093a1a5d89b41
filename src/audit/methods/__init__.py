"""Audit methods behind one Protocol, chosen by `method=NAME` (`conf/method/NAME.yaml`).

Every method (the Rasch audit, IAT word association, DIF accuracy, counterfactual generation)
declares the same five stages (design, respond, score, analyse, report; audit.methods.run), which
the one run skeleton runs in one process for `python -m audit` and one at a time for `dvc repro`.
The registry maps a name to an import path and imports lazily, as the backend registry does, so
choosing one method never imports another's dependencies. A built-in method is one folder and
one line in METHODS; a method outside this project is a package that declares itself under the
`audit.methods` entry-point group (`NAME = "package.method:Class"` in its pyproject.toml, then
`pip install` it): docs/methods/writing.md.

Every method package has the same files with the same roles: method.py (the class and its
stages), design, score, analyse, report, verdict (`judge_run`: its CI rules), config (SECTIONS: its
config sections, added to AuditConfig by audit.methods.configs; VERDICT_RULES: its verdict rule
keys; HEADLINE_METRICS: the columns of its runs; DVC_PARAMS: the settings of its own each DVC stage
reads) and schemas. `method_module` finds them next to the registered class, lazily.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from audit.errors import AuditError, did_you_mean

if TYPE_CHECKING:
    from collections.abc import Mapping

    from audit.methods.configs import AuditConfig
    from audit.methods.run import Stage
    from audit.methods.findings import Findings

# The built-in methods: name -> "module:Class".
METHODS: dict[str, str] = {
    "rasch": "audit.methods.rasch.method:RaschMethod",
    "iat": "audit.methods.iat.method:IATMethod",
    "dif": "audit.methods.dif.method:DIFMethod",
    "counterfactual": "audit.methods.counterfactual.method:CounterfactualMethod",
}


class AuditMethod(Protocol):
    """One way of auditing: from the composed config to the files in output_dir and a result."""

    name: str
    stages: Sequence[Stage]  # one for each name in audit.methods.layout.STAGE_NAMES, in order

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        """Every stage in order (audit.methods.run.run_stages): tables into output_dir, one run."""
        ...

    def findings(self, cfg: AuditConfig, run_dir: Path,
                 result: Mapping[str, object]) -> Findings:
        """What the finished run found, from its tables (and `result`, what its stages
        returned): the headline comparisons the summary states (audit.methods.findings).
        `run_dir` is a `python -m audit` run's folder or a `dvc repro` pipeline's (tables in
        STAGE/ folders): find a table with audit.methods.layout.run_file(run_dir, NAME)."""
        ...


# Methods installed from elsewhere declare themselves in this entry-point group.
ENTRY_POINT_GROUP = "audit.methods"


@cache
def registered_methods() -> dict[str, str]:
    """Every method `method=` can name: the built-in ones, then the installed plug-ins."""
    methods = dict(METHODS)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in methods and methods[entry.name] != entry.value:
            raise TypeError(f"method '{entry.name}' of entry point {entry.value} is already "
                            f"registered as {methods[entry.name]}")
        methods[entry.name] = entry.value
    return methods


def _target(name: str) -> str:
    methods = registered_methods()
    if name not in methods:
        valid = ", ".join(sorted(methods))
        raise AuditError(f"unknown method '{name}': choose method= one of {valid}"
                         f"{did_you_mean(name, list(methods))}")
    return methods[name]


def create_method(name: str) -> AuditMethod:
    module_name, class_name = _target(name).split(":")
    return getattr(importlib.import_module(module_name), class_name)()


def method_module(name: str, part: str) -> ModuleType:
    """A registered method's own module PART (`config`, `verdict`, ...): the module of that name
    in the package that holds its class (`audit.methods.iat.config`)."""
    package = _target(name).split(":")[0].rpartition(".")[0]
    return importlib.import_module(f"{package}.{part}")


def headline_metrics(name: str) -> tuple[str, ...]:
    """The metric names (shell-style patterns) a run of `name` is judged by: the columns the
    runs table shows for it."""
    return tuple(method_module(name, "config").HEADLINE_METRICS)


__all__ = ["ENTRY_POINT_GROUP", "METHODS", "AuditMethod", "create_method", "headline_metrics",
           "method_module", "registered_methods"]
