"""Logging for the command-line entry points: one format, and third-party chatter kept down."""

from __future__ import annotations

import logging

# Loggers that announce, at INFO, things a user cannot act on (ArviZ lists optional preview
# packages that are not installed).
QUIET_LOGGERS = ("arviz.preview",)


def quiet_noisy_loggers() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def configure_cli_logging() -> None:
    """For entry points Hydra does not configure (`audit.stages`, `audit.fit`, `audit.params`)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_noisy_loggers()
