"""`python -m audit.compare A B [max_worsening=DELTA]`: the change in each gap between two runs.

A and B are run directories or MLflow run ids (or their 8-character prefixes, as
`python -m audit.runs` shows them); `python -m audit.compare RUN model_a=X model_b=Y` compares two
audited models of one run. Both sides go into ONE joint fit (methods/rasch/comparison.py): the
population-contrast model with item difficulties shared (on the items both runs asked, unless
items=all), and, when both runs asked the same prompts, a prompt effect shared by both. Where the
sides differ beyond the change (items, run B's fit settings, judges read as truth) the summary
says how (methods/rasch/comparison_sides.py). Per contrast between levels labelled on
both sides it prints one line (the gap on each side, the change B - A with its HDI, P(worse), the
ROPE decision and the gate) and names each level or attribute not compared, writes the
change table, a forest plot, an HTML report and a JUnit file, logs its own MLflow run tagged with
both sources, and exits 1 when a contrast worsens beyond `max_worsening` (logits, or `5pp` for
percentage points) with probability `worsening_prob` or the fit did not converge, 0 otherwise,
2 on bad input (checked before the fit).
"""

from __future__ import annotations

import logging
import sys

from audit.cli import printed_help
# What tests and callers import from here: the arguments' part (compare_arguments.py) is light.
from audit.cli.compare_arguments import (USAGE, output_paths, parse_arguments,  # noqa: F401
                                         read_arguments)
from audit.errors import AuditError
from audit.interrupts import interrupted_by, interrupted_status, termination_as_interrupt
from audit.logs import configure_cli_logging

log = logging.getLogger("audit.compare")


def main(argv: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if argv is None else argv
    if printed_help(arguments, __doc__, USAGE):
        return 0
    with termination_as_interrupt():
        try:
            checked = read_arguments(arguments)
            # The runs' readers, the sampler and MLflow load only now, once the arguments are
            # good: a refused one is said in about a second, not after 6 s of imports.
            from audit.cli.compare_run import run
            return run(checked)
        except AuditError as error:
            log.error("%s", error)
            return 2
        except KeyboardInterrupt:  # the joint fit keeps nothing; its files come at the end
            log.error("%s before the comparison was finished; rerun the same command to "
                      "compare", interrupted_by())
            return interrupted_status()


if __name__ == "__main__":
    raise SystemExit(main())
