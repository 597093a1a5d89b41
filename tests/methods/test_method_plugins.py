"""A fifth method brings its config section and its verdict rules in its own folder: audit.config
and the verdict find them through the registry (methods/__init__.py), naming no method."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]

PLUGIN_CONFIG = '''
from dataclasses import dataclass, field


@dataclass
class FifthConfig:
    window: int = 3


@dataclass
class FifthVerdictRules:
    fifth_max_gap: float = field(default=0.2, metadata={"range": (0.0, 1.0)})


SECTIONS = {"fifth": FifthConfig}
VERDICT_RULES = FifthVerdictRules
'''

PLUGIN_VERDICT = '''
from audit.methods.checks import Check


def judge_run(run_dir, rules):
    gap = float((run_dir / "gap.txt").read_text())
    return [Check("fifth", "fifth.m", "gap", gap > rules.fifth_max_gap, f"gap {gap}")]
'''

SCRIPT = '''
import sys
from pathlib import Path

import audit.methods
folder = Path(sys.argv[1])
audit.methods.__path__.append(str(folder))  # where the fifth method's package lives
audit.methods.METHODS["fifth"] = "audit.methods.fifth.method:FifthMethod"  # its registry line

from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError

from audit.cli.verdict import main
from audit.methods.configs import AuditConfig, VerdictConfig
from audit.methods.run import write_config

schema = OmegaConf.structured(AuditConfig)
merged = OmegaConf.merge(schema, {"method": "fifth", "fifth": {"window": 5}})
assert merged.fifth.window == 5 and merged.iat.iterations == 2, merged
try:
    OmegaConf.merge(schema, {"fifth": {"windw": 5}})  # the section is typed like any other
    raise AssertionError("a misspelt key of the fifth section composed")
except ConfigKeyError:
    pass
assert VerdictConfig().fifth_max_gap == 0.2
cfg = AuditConfig(method="fifth")
run = folder / "run"
write_config(cfg, run)
(run / "gap.txt").write_text("0.3")
codes = [main([f"run_dir={run}"]), main([f"run_dir={run}", "fifth_max_gap=0.5"]),
         main([f"run_dir={run}", "fifth_max_gap=2"])]
print("codes", codes)
'''


def test_a_fifth_method_registers_its_config_and_verdict_from_its_folder(tmp_path: Path):
    package = tmp_path / "fifth"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "config.py").write_text(textwrap.dedent(PLUGIN_CONFIG))
    (package / "verdict.py").write_text(textwrap.dedent(PLUGIN_VERDICT))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path,
                          env={"PYTHONPATH": str(PROJECT_ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    # fails at 0.3 > 0.2, passes with the rule raised, bad input for a rule out of its range
    assert "codes [1, 0, 2]" in done.stdout
