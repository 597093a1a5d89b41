"""`python -m audit.fit input=PATH output=DIR`: the Rasch fit on any long response table.

For users who already have labelled responses (from another tool, or the original audit's CSV)
and want the same posterior this project computes. Arguments are ``key=value`` pairs merged into
a structured config, so a mistyped key or a wrong type fails with one line before anything runs.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from audit.cli import printed_help
# What tests and callers import from here: the arguments' part (fit_arguments.py) is light.
from audit.cli.fit_arguments import (FitInputError, USAGE, check_input,  # noqa: F401
                                     parse_arguments)
from audit.errors import AuditError
from audit.interrupts import interrupted_by, interrupted_status, termination_as_interrupt
from audit.logs import configure_cli_logging

log = logging.getLogger("audit.fit")


def main(arguments: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if arguments is None else arguments
    if printed_help(arguments, __doc__, USAGE):
        return 0
    with termination_as_interrupt():
        return fit_command(arguments)


def fit_command(arguments: list[str]) -> int:
    """The fit the arguments ask for, to its exit status."""
    output = None
    try:
        command = parse_arguments(arguments)
        output = command.output
        check_input(Path(command.input))
        # The table reader and the sampler load only now, once the arguments and the input's
        # path are good: a refused one is said in about a second, not after 5 s of imports.
        from audit.cli.fit_run import run
        run(command)
    except AuditError as error:  # FitInputError, or a table or setting the model refuses
        log.error("%s", str(error).splitlines()[0])
        return 2
    except KeyboardInterrupt:  # the sampler keeps nothing until the fit is written
        log.error("%s before the fit was written%s; rerun the same command to fit",
                  interrupted_by(), f" to {output}" if output else "")
        return interrupted_status()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
