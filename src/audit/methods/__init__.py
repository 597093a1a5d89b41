"""Audit methods behind one Protocol, chosen by `method=NAME` (`conf/method/NAME.yaml`).

Every method (the Rasch audit, IAT word association, DIF accuracy, counterfactual generation)
declares the same five stages (design, respond, score, analyse, report; audit.methods.run), which
the one run skeleton runs in one process for `python -m audit` and one at a time for `dvc repro`.
The registry maps a name to an import path and imports lazily, as the backend registry does, so
choosing one method never imports another's dependencies. Adding a method is one folder and one
line here.

Besides its run class, a method's package holds, by convention, `config.py` (SECTIONS: its config
sections, added to AuditConfig; VERDICT_RULES: its verdict rule keys) and `verdict.py`
(`judge_run`: its CI rules). `method_module` finds them by the registry name, lazily.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from audit.errors import AuditError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from audit.config import AuditConfig
    from audit.methods.run import Stage
    from audit.methods.summary import Findings

METHODS: dict[str, str] = {
    "rasch": "audit.methods.rasch.method:RaschMethod",
    "iat": "audit.methods.iat.method:IATMethod",
    "dif": "audit.methods.dif.method:DIFMethod",
    "counterfactual": "audit.methods.counterfactual.method:CounterfactualMethod",
}


class AuditMethod(Protocol):
    """One way of auditing: from the composed config to the files in output_dir and a result."""

    name: str
    stages: Sequence[Stage]  # one for each name in audit.methods.run.STAGE_NAMES, in order

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        """Every stage in order (audit.methods.run.run_stages): tables into output_dir, one run."""
        ...

    def findings(self, cfg: AuditConfig, run_dir: Path,
                 result: Mapping[str, object]) -> Findings:
        """What the finished run found, from its tables (and `result`, what its stages
        returned): the headline comparisons the summary states (audit.methods.summary)."""
        ...


def create_method(name: str) -> AuditMethod:
    try:
        target = METHODS[name]
    except KeyError:
        valid = ", ".join(sorted(METHODS))
        raise AuditError(f"unknown method '{name}': choose method= one of {valid}") from None
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)()


def method_module(name: str, part: str) -> ModuleType:
    """A registered method's own module `audit.methods.NAME.PART` (`config`, `verdict`)."""
    if name not in METHODS:
        valid = ", ".join(sorted(METHODS))
        raise AuditError(f"unknown method '{name}': choose method= one of {valid}")
    return importlib.import_module(f"{__name__}.{name}.{part}")


__all__ = ["METHODS", "AuditMethod", "create_method", "method_module"]
