"""Logging for the command-line entry points: one format, and third-party chatter kept down."""

from __future__ import annotations

import logging
import warnings

# Loggers that announce, at INFO, things a user cannot act on: ArviZ lists optional preview
# packages that are not installed; httpx logs one line per HTTP request (hundreds a run with a
# server backend); MLflow logs its database-table creation and migration in a second format of
# its own.
QUIET_LOGGERS = ("arviz.preview", "httpx", "mlflow.store.db.utils", "alembic")


def silence_library_warnings() -> None:
    """ArviZ 0.23 prints a multi-line FutureWarning about its coming 1.x refactor once a day on
    import; this project pins arviz 0.23 (Python 3.11), so it tells a user nothing."""
    warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                            category=FutureWarning)


def quiet_noisy_loggers() -> None:
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def configure_cli_logging() -> None:
    """For entry points Hydra does not configure (`audit.stages`, `audit.fit`, `audit.params`)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_noisy_loggers()
