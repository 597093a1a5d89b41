"""`python -m audit`: compose the config with Hydra and run the whole audit.

Thin on purpose: each method (audit.methods) runs its own stages, which `dvc repro` runs too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from audit.config import CONF_DIR, register_configs, to_audit_config
from audit.config_errors import one_line_config_errors
from audit.errors import AuditError
from audit.llm.backends import BackendError
from audit.logs import quiet_noisy_loggers
from audit.methods import create_method

log = logging.getLogger("audit")

register_configs()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def app(cfg: DictConfig) -> dict | None:
    quiet_noisy_loggers()  # Hydra has just configured logging
    try:
        audit_cfg = to_audit_config(cfg)
        return create_method(audit_cfg.method).run(audit_cfg, Path(audit_cfg.paths.output_dir))
    except (AuditError, ValueError, BackendError) as error:
        log.error("%s", error)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            # One failed job must not end a sweep: the others still run and are logged.
            return None
        raise SystemExit(2) from None


def main() -> None:
    with one_line_config_errors(Path(CONF_DIR)):
        app()


if __name__ == "__main__":
    main()
