"""Registers audit's config schema with Hydra in any process that composes conf/.

`python -m audit` registers it itself; a Hydra plugin module is imported by every Hydra process,
which includes DVC's `dvc exp run` when `.dvc/config` enables Hydra composition, so conf/config.yaml
(whose defaults start with `audit_schema`) composes there too.
"""

from audit.config import register_configs

register_configs()
