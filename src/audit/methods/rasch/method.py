"""The Rasch audit (design, respond, judge, fit, report) as a registered method.

Its stages live in stages.py because `dvc repro` runs them one by one; this class only lets
`method=rasch` be chosen like any other method.
"""

from __future__ import annotations

from pathlib import Path

from audit.config import AuditConfig
from audit.methods.rasch.stages import run_audit


class RaschMethod:
    name = "rasch"

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        return run_audit(cfg, output_dir)
