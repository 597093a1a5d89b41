"""`python -m audit.ingest input=FILE [OVERRIDES]`: audit answers collected elsewhere.

    python -m audit.ingest input=answers.csv items=discrim_eval judge=rules_only
    python -m audit.ingest input=samples_discrim_eval_explicit_2026-11-26.jsonl items=discrim_eval

One row per answer (CSV, parquet, JSONL, or lm-evaluation-harness's --log_samples JSONL): the
model, the persona, the item, and the answer text (labelled by the configured judge) or a decision
already made. The Rasch method runs with `ingest.input` set, so the fit, the report, the MLflow run
(tagged with the answers' source and digest) and `python -m audit.verdict` are those of a generated
audit. `input=`, `format=` and `personas_file=` are short for the `ingest.` settings;
docs/ingest.md has the columns.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from audit.__main__ import run_composed
from audit.config import CONF_DIR
from audit.config_errors import one_line_config_errors
from audit.config_keys import valid_keys
from audit.errors import AuditError, did_you_mean
from audit.interrupts import termination_as_interrupt
from audit.logs import said_once
from audit.methods.configs import AuditConfig, register_configs
from audit.methods.rasch.ingest.stages import with_imported_models

register_configs()
# Short forms users type (`input` as the issue and the docs name it) for the ingest.* settings.
SHORT_KEYS = ("input", "format", "personas_file")
INGEST_LOGGERS = ("audit.methods.rasch.ingest.tables", "audit.methods.rasch.ingest.values")


def expand_short_keys(arguments: list[str]) -> list[str]:
    """`input=FILE` -> `ingest.input=FILE` (and format=, personas_file=); everything else as is.
    A key that is no setting of the config but is close to a short key (`fromat=csv`) is
    refused naming the short keys: Hydra's refusal listed every top-level key and not them."""
    expanded = []
    for argument in arguments:
        key, separator, value = argument.partition("=")
        top = key.lstrip("+~").split(".")[0]
        if separator and key not in SHORT_KEYS and top not in (*(valid_keys([]) or []), "hydra"):
            hint = did_you_mean(top, SHORT_KEYS)
            if hint:
                raise AuditError(f"unknown key '{key}'{hint}: audit.ingest's short keys are "
                                 f"{', '.join(f'{short}=' for short in SHORT_KEYS)}")
        expanded.append(f"ingest.{key}={value}" if separator and key in SHORT_KEYS else argument)
    return expanded


def imported_config(cfg: AuditConfig) -> AuditConfig:
    """The composed config for answers from `ingest.input`: the Rasch method, with the answers'
    models as the audited models (each with the imported backend)."""
    if cfg.method != "rasch":
        raise AuditError(f"imported answers are audited by the Rasch method, not "
                         f"method={cfg.method}: drop the method= override")
    if not cfg.ingest.input:
        raise AuditError("no answers to import: name the file with input=FILE")
    return with_imported_models(cfg)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="ingest")
def app(cfg: DictConfig) -> dict | None:
    # The stages read the answers file one after another (with_imported_models, then design,
    # respond and score): a warning about its values is said once, not once a read.
    with said_once(*INGEST_LOGGERS):
        return run_composed(cfg, imported_config)


def main() -> None:
    try:
        sys.argv[1:] = expand_short_keys(sys.argv[1:])
    except AuditError as error:
        sys.stderr.write(f"config error: {error}\n")
        raise SystemExit(2) from None
    with termination_as_interrupt(), one_line_config_errors(Path(CONF_DIR)):
        app()


if __name__ == "__main__":
    main()
