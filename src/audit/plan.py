"""`python -m audit.plan`: the Hydra entry point of the planner (audit.cli.plan).

The planner loads the sampler and the simulation (about 7 s of imports, 2026-12-07) only once
the config is composed and checked, so a mistyped key or a value out of its range is said in
about a second.
"""

from __future__ import annotations

import logging
from pathlib import Path

import hydra
from omegaconf import DictConfig

from audit.config import CONF_DIR
from audit.config_errors import one_line_config_errors, validated_config
from audit.errors import AuditError
from audit.interrupts import interrupted_by, interrupted_status, termination_as_interrupt
from audit.llm.backends import BackendError
from audit.logs import quiet_noisy_loggers
from audit.methods.configs import register_configs
from audit.tracking import sweeps

log = logging.getLogger("audit.plan")

register_configs()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="plan")
def app(cfg: DictConfig) -> None:
    quiet_noisy_loggers()
    try:
        audit_cfg = validated_config(cfg, Path(CONF_DIR))
        from audit.cli import plan

        table = plan.run_plan(audit_cfg, Path(audit_cfg.paths.output_dir))
    except KeyboardInterrupt:  # the simulations keep nothing until plan.csv is written
        log.error("%s before plan.csv was written; rerun the same command to plan",
                  interrupted_by())
        raise SystemExit(interrupted_status()) from None
    except (AuditError, BackendError) as error:
        log.error("%s", error)
        if sweeps.in_multirun():
            # As in `python -m audit -m`: the other plans of the sweep still run, and the sweep
            # exits 2 at its end (main). It stopped at the first, unsaid which were not made.
            sweeps.job_failed(str(error))
            return
        raise SystemExit(2) from None
    # The CLI's result on stdout (the log and the bars are on stderr).
    settings = audit_cfg.plan
    plan.print_plan(table, Path(audit_cfg.paths.output_dir) / "plan.csv", audit_cfg.fit.hdi_prob,
                    audit_cfg.design.adaptive,
                    pp=settings.gap if settings.gap_unit == "pp" else None)


def main() -> None:
    with termination_as_interrupt(), one_line_config_errors(Path(CONF_DIR)):
        app()
    failed = sweeps.failed_jobs_line("Fix the cause and rerun those jobs; each finished plan is "
                                     "in its job folder's plan.csv")
    if failed:
        log.error("%s", failed)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
