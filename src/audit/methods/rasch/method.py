"""The Rasch audit (design, respond, judge, fit, report) as a registered method.

Its stages live in stages.py (score is the judge, analyse the fit); this class lets `method=rasch`
be chosen like any other method.
"""

from __future__ import annotations

from pathlib import Path

from audit.methods.configs import AuditConfig
from audit.methods.rasch.report.findings import findings
from audit.methods.rasch.stages import STAGES
from audit.methods.run import run_stages


class RaschMethod:
    name = "rasch"
    stages = STAGES
    findings = staticmethod(findings)  # its contrasts in words, for the run's summary

    def run(self, cfg: AuditConfig, output_dir: Path) -> dict[str, object]:
        return run_stages(self.stages, cfg, output_dir)
