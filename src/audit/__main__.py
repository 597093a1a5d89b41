"""`python -m audit`: compose the config with Hydra and run the whole audit.

Thin on purpose: each method (audit.methods) runs its own stages, which `dvc repro` runs too, and
the run ends with its answer (audit.methods.summary). Ctrl-C or SIGTERM ends it with one line, what
is saved and that the same command resumes, and exit status 130 or 143 (audit.interrupts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import hydra
from omegaconf import DictConfig

from audit.config import CONF_DIR

from audit.methods.configs import AuditConfig, register_configs
from audit.config_errors import one_line_config_errors, validated_config
from audit.errors import AuditError
from audit.interrupts import interrupted_line, interrupted_status, termination_as_interrupt
from audit.llm.backends import BackendError
from audit.logs import quiet_noisy_loggers
from audit.methods import create_method, hydra_record, run_folder
from audit.methods.summary import run_method
from audit.tracking import sweeps

log = logging.getLogger("audit")

register_configs()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def app(cfg: DictConfig) -> dict | None:
    return run_composed(cfg)


def run_composed(cfg: DictConfig,
                 prepare: Callable[[AuditConfig], AuditConfig] | None = None) -> dict | None:
    """The composed config's method, run to its summary; `prepare` adjusts the validated config
    first (`python -m audit.ingest`: the imported models). User errors end with one line."""
    quiet_noisy_loggers()  # Hydra has just configured logging
    try:
        audit_cfg = validated_config(cfg, Path(CONF_DIR))
        if prepare is not None:
            audit_cfg = prepare(audit_cfg)
        return run_method(create_method(audit_cfg.method), audit_cfg,
                          Path(audit_cfg.paths.output_dir))
    except KeyboardInterrupt as interrupted:
        log.error("%s", interrupted_line(interrupted, "answers", cfg.paths.response_store))
        raise SystemExit(interrupted_status()) from None
    except (AuditError, BackendError) as error:
        log.error("%s", error)
        if sweeps.in_multirun():
            # One failed job must not end a sweep: the others still run and are logged, and
            # the sweep exits 2 at its end (main).
            sweeps.job_failed(str(error))
            return None
        raise SystemExit(2) from None
    finally:
        # A run refused before it started leaves the folder's earlier run as it was, Hydra's
        # record of it included (Hydra wrote the refused command's over it).
        hydra_record.put_back_unstarted()
        run_folder.release()


def main() -> None:
    try:
        with termination_as_interrupt(), one_line_config_errors(Path(CONF_DIR)):
            app()
    except BaseException as ended:
        # Whatever stops a sweep after its parent run was created (a job's bug, Ctrl-C) ends
        # that run FAILED: Hydra skips on_multirun_end then, and the run stayed RUNNING.
        sweeps.end_unfinished_sweep(ended)
        raise
    sweeps.end_unfinished_sweep(None)
    failed = sweeps.failed_jobs_line("Fix the cause and rerun: finished answers are served from "
                                     "the response store")
    if failed:  # a multirun whose jobs failed must not pass a CI step
        log.error("%s", failed)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
