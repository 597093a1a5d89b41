"""The fit of a command `python -m audit.fit` has parsed (audit.cli.fit_arguments): read the
long table, sample, write the fit and print the ranking.

Apart from the arguments so that a refused argument is said before this loads the table reader
and the sampler (pandera, pymc, nutpie: about 5 s of imports, 2026-12-07), not after.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import polars as pl

from audit.cli.fit_arguments import PRIORS, FitCommand, FitInputError, check_input
from audit.cli.fit_correction import as_numbers, not_whole, read_correction, whole_numbers
from audit.errors import AuditError
from audit.methods.checks import percent, signed
from audit.methods.rasch.analyse import write_fit
from audit.methods.rasch.ingest.tables import blank_as_null
from audit.methods.rasch.irt import fit_rasch, respondent_ranking
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.methods.rasch.irt.judge_error import ANY_PATH, JudgeCorrection
from audit.tables import named_as, read_frame, require_columns

log = logging.getLogger("audit.fit")

# Values an error shows of a column: enough to recognise the problem, one line whatever the table.
SHOWN_VALUES = 5


def _offending(values: pl.Series, bad: pl.Series, outcome: str, rule: str) -> FitInputError:
    """The outcome column's values at fault (a few, distinct, sorted) and the first one's row
    (counted from 1 below the header), not the column's first values, which may all be fine."""
    found = values.filter(bad).unique().sort()
    shown = found.head(SHOWN_VALUES).to_list()
    more = f" and {found.len() - SHOWN_VALUES} more" if found.len() > SHOWN_VALUES else ""
    row = bad.arg_true()[0] + 1
    return FitInputError(f"column {outcome!r} must hold {rule}; found {shown}{more} (first at row "
                         f"{row}): make every answer 0 or 1, or pass outcome=COLUMN naming the "
                         "column that is")


def read_long_table(path: Path, respondent: str, item: str, outcome: str,
                    source: str | None = None) -> pl.DataFrame:
    """Read CSV or parquet and rename the three columns to respondent, item, y (and the
    labelling-path column ``source``, when named, to label_source)."""
    check_input(path)
    try:
        # As text: ids keep their digits ("007" and "7" are two respondents; inferred as
        # integers they became one, and items "1E2" and "100" one float, without a word:
        # bad-input review 2026-12-05). The outcome's numbers are read from the text below.
        table = read_frame(path, "input table", "pass input=PATH to a CSV or parquet long table "
                           "with a row per answer", as_text=True)
    except AuditError as error:
        raise FitInputError(str(error)) from None
    wanted = {"respondent": respondent, "item": item, "outcome": outcome,
              **({"source": source} if source else {})}
    try:
        table = named_as(table, list(wanted.values()), path, "input table")
    except AuditError as error:
        raise FitInputError(str(error)) from None
    missing = [key for key, column in wanted.items() if column not in table.columns]
    try:
        require_columns(table, list(wanted.values()), path, "input table",
                        "pass " + " ".join(f"{key}=COLUMN" for key in missing) + " to name "
                        + ("the column that holds it" if len(missing) == 1
                           else "the columns that hold them"))
    except AuditError as error:
        raise FitInputError(str(error)) from None
    if table.height == 0:  # before the fit's warnings, which would count its 0 respondents
        raise FitInputError(f"input table {path} has no rows: it needs one row per answer "
                            f"({respondent}, {item}, {outcome})")
    _warn_tiled(table, path)
    for column in (respondent, item, *([source] if source else [])):
        if table.schema[column].is_nested() or table.schema[column] == pl.Object:
            # A parquet list column was a polars cast traceback (bad-input review 2026-12-06).
            raise FitInputError(f"column {column!r} of {path} holds lists or objects, not ids: "
                                "give each row one id")
    long = table.select(
        pl.col(respondent).cast(pl.String).alias("respondent"),
        pl.col(item).cast(pl.String).alias("item"),
        pl.col(outcome).alias("y"),
        *([pl.col(source).cast(pl.String).alias(PATH_COLUMN)] if source else []),
    )
    # Ids as ingest reads them, without surrounding spaces, one of only spaces empty: "a "
    # beside "a" fitted two respondents that printed alike, and a quoted "" one was named
    # "theta", which the ranking left out (bad-input review 2026-12-06).
    long = blank_as_null(long, tuple(column for column in long.columns if column != "y"))
    # The user's names of long's columns, in its order: only those with empty cells are named.
    names = dict(zip(long.columns, wanted.values()))
    empty = [column for column in long.columns if long.get_column(column).null_count()]
    if empty:
        row = long.select(pl.any_horizontal(pl.col(empty).is_null()).arg_max()).item() + 1
        raise FitInputError(f"{path} has empty cells in {', '.join(names[c] for c in empty)} "
                            f"(first at row {row}); drop or fill those rows first")
    outcomes = long.get_column("y")
    y = whole_numbers(outcomes)  # true/false become 1/0
    if y is None:
        bad = not_whole(outcomes)
        if not bad.any():  # whole, yet no Int64 (beyond its range): show the column's values
            bad = pl.Series([True] * outcomes.len())
        raise _offending(as_numbers(outcomes), bad, outcome, "0 or 1 (or true/false)")
    if not y.is_in([0, 1]).all():
        raise _offending(y, ~y.is_in([0, 1]), outcome, "only 0 or 1")
    return long.with_columns(y=y)


def run(command: FitCommand) -> pl.DataFrame:
    correction = read_correction(command.gold, command.confusion)
    if command.source and correction is None:
        raise FitInputError("source=COLUMN names the labelling paths for a correction: pass "
                            "gold=PATH or confusion=PATH with it")
    outcomes = read_long_table(Path(command.input), command.respondent, command.item,
                               command.outcome, command.source)
    if correction is not None:
        _check_paths(correction, outcomes, command)
    _warn_degenerate(outcomes)
    # The fit is named after the input's column (diagnostics.json, the advice), not after the
    # audit's label coding: y here is whatever that column means.
    fit = replace(fit_rasch(outcomes, replace(command.sampler, model=PRIORS[command.prior]),
                            confusion=correction), outcome=command.outcome)
    output = Path(command.output)
    write_fit(fit, output)
    for problem in fit.diagnostics.problems():
        log.warning("fit did not converge: %s", problem)
    print(ranking_text(respondent_ranking(fit.summary), command))
    log.info("wrote %s and %s", output / "summary.csv", output / "posterior.nc")
    return fit.summary


def ranking_text(ranking: pl.DataFrame, command: FitCommand, shown: int = 30) -> str:
    """The respondents a user reads first, highest theta first: a title that says what theta
    and the interval are, and two decimals (the table printed 1.14102 and 0.59402 under bare
    `mean`, `hdi_low`, `hdi_high`, and cut at 30 rows without a word)."""
    level = percent(command.sampler.hdi_prob)
    rest = (f"; the first {shown} of {ranking.height}, all in summary.csv"
            if ranking.height > shown else "")
    # prior=rasch centres the thetas (zero-sum); prior=seed fixes their location by its priors
    # alone, so only their differences mean anything (docs/methods/rasch.md).
    origin = ("0 is the average respondent" if command.prior == "rasch"
              else "compare them as differences")
    title = (f"Respondents by theta, the log-odds scale of {command.outcome}=1 ({origin}): "
             f"posterior mean and {level} HDI, highest first{rest}")
    head = ranking.head(shown)
    # Written by signed(), as every signed figure a user reads (no "-0.00").
    table = head.select("respondent").with_columns(
        pl.Series(column, [signed(value) for value in head[column]], dtype=pl.String)
        for column in ("mean", "hdi_low", "hdi_high"))
    with pl.Config(tbl_rows=shown, tbl_hide_dataframe_shape=True,
                   tbl_hide_column_data_types=True):
        return f"{title}\n{table}"


def _warn_degenerate(outcomes: pl.DataFrame) -> None:
    """Warn of a table the fit runs on but cannot learn from (the audit's no-signal check has no
    other counterpart here): one respondent has no one to be compared with (its theta is pinned
    at 0), and an outcome that never varies says nothing about who gets it. The ranking would
    otherwise print as if it were a finding."""
    respondents = outcomes.get_column("respondent").n_unique()
    if respondents < 2:
        log.warning("the input has %d respondent: a ranking needs at least 2 to compare, so the "
                    "one below is not a finding", respondents)
    values = outcomes.get_column("y").unique().to_list()
    if len(values) == 1:
        log.warning("every outcome in the input is %s: nothing tells the respondents apart, so "
                    "their ranking below is not a finding", values[0])


def _warn_tiled(table: pl.DataFrame, path: Path) -> None:
    """Warn of a table that is its first rows repeated, row for row: a file pasted or exported
    twice. Read as given, each answer counts twice and every interval narrows (bad-input probe
    2026-12-07: a table pasted twice fitted without a word, the mean theta HDI 1.73 wide instead
    of 2.22). Rows alike one by one are replicates, as the fit reads them; a whole table
    repeated in order is what a copy looks like."""
    for copies in range(2, 11):
        if table.height % copies or table.height // copies < 2:
            continue
        part = table.height // copies
        if all(table.slice(index * part, part).equals(table.head(part))
               for index in range(1, copies)):
            log.warning("%s is its first %d rows repeated %d times, row for row, and the fit "
                        "reads each copy as further answers: if the file holds its answers "
                        "%d times (pasted or exported again), keep one copy", path, part, copies,
                        copies)
            return


def _check_paths(correction: JudgeCorrection, outcomes: pl.DataFrame,
                 command: FitCommand) -> None:
    """Every labelling path of the input has counts, before anything is sampled."""
    if command.prior == "seed":
        raise FitInputError("prior=seed reads labels as truth (the original audit); use "
                            "prior=rasch with gold= or confusion=")
    if ANY_PATH in correction.by_path:
        return
    if PATH_COLUMN not in outcomes.columns:
        raise FitInputError(f"the counts are per labelling path ({', '.join(correction.by_path)}): "
                            "pass source=COLUMN naming the input's column that holds the path")
    missing = sorted(set(outcomes[PATH_COLUMN].unique().to_list()) - set(correction.by_path))
    if missing:
        raise FitInputError(f"labelling path(s) {', '.join(missing)} of the input have no counts "
                            f"in the gold or confusion file (it has "
                            f"{', '.join(correction.by_path)}); add them there")
