"""`python -m audit.fit input=PATH output=DIR`: the Rasch fit on any long response table.

For users who already have labelled responses (from another tool, or the original audit's CSV)
and want the same posterior this project computes. Arguments are ``key=value`` pairs merged into
a structured config, so a mistyped key or a wrong type fails with one line before anything runs.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch, respondent_ranking
from audit.logs import configure_cli_logging
from audit.config_ranges import check_config
from audit.errors import AuditError, did_you_mean
from audit.methods.checks import percent, signed
from audit.methods.rasch.analyse import FIT_FILES, write_fit
from audit.methods.rasch.ingest.tables import blank_as_null
from audit.methods.rasch.irt.indexing import PATH_COLUMN
from audit.methods.rasch.irt.judge_error import ANY_PATH, JudgeCorrection
from audit.cli.fit_correction import as_numbers, not_whole, read_correction, whole_numbers
from audit.tables import check_output, column_key, named_as, read_frame, require_columns
from audit.cli import printed_help, refused_arguments

log = logging.getLogger("audit.fit")

# `prior=` names the model by what a user of the original audit knows it as.
PRIORS = {"seed": "rasch_seed", "rasch": "rasch"}
USAGE = ("usage: python -m audit.fit input=PATH output=DIR [respondent=COL item=COL outcome=COL "
         "prior=seed|rasch gold=PATH|confusion=PATH source=COL draws=N tune=N chains=N cores=N "
         "target_accept=P seed=N hdi_prob=P judge_imputations=N (or fit.draws=N ...)]")


# Sampler settings are FitConfig's own fields, so their defaults have one home: the audit's.
SAMPLER_KEYS = ("draws", "tune", "chains", "cores", "target_accept", "seed", "hdi_prob",
                "judge_imputations")
# Values an error shows of a column: enough to recognise the problem, one line whatever the table.
SHOWN_VALUES = 5


@dataclass
class FitCommand:
    input: str = "???"
    output: str = "???"
    respondent: str = "respondent"
    item: str = "item"
    outcome: str = "y"  # the column; FitConfig.outcome (the label coding) does not apply here
    prior: str = "rasch"
    # The labeller's errors (fit_correction.py): hand-checked 0/1 pairs, or their counts; and
    # the input's column that says which labelling path labelled each answer.
    gold: str | None = None
    confusion: str | None = None
    source: str | None = None
    sampler: FitConfig = field(default_factory=FitConfig)


class FitInputError(AuditError):
    """Bad arguments or a bad table, reported as one line."""


def sampler_setting(argument: str) -> str | None:
    """The sampler setting `argument` makes, as `key=value` (`fit.draws=500`: `draws=500`), or
    None when it sets something else."""
    key, _, value = argument.partition("=")
    setting = _setting_of(key)
    return f"{setting}={value}" if setting in SAMPLER_KEYS else None


def _setting_of(key: str) -> str:
    """`fit.draws` and `draws` set one thing (the last won without a word)."""
    short = key.removeprefix("fit.")
    return short if short in SAMPLER_KEYS else key


def parse_arguments(arguments: list[str]) -> FitCommand:
    malformed = [argument for argument in arguments if "=" not in argument]
    if malformed:
        raise FitInputError(f"argument {malformed[0]!r} is not key=value; {USAGE}")
    # The audit's other fit.* settings were "unknown option 'fit'" (bad-input review
    # 2026-12-04): name the setting, what audit.fit takes of fit.*, and what chooses the model.
    audit_only = [argument.partition("=")[0] for argument in arguments
                  if argument.startswith("fit.") and sampler_setting(argument) is None]
    if audit_only:
        key = audit_only[0]
        raise FitInputError(
            f"{key} is not an audit.fit option"
            f"{did_you_mean(key.removeprefix('fit.'), SAMPLER_KEYS)}: of the audit's fit.* "
            f"settings it takes {', '.join(SAMPLER_KEYS)}, and prior=rasch|seed chooses the "
            f"model; {USAGE}")
    with refused_arguments(arguments, FitCommand, FitInputError, USAGE,
                           {"sampler": SAMPLER_KEYS}, setting_of=_setting_of):
        # `draws=500` is short for `sampler.draws=500`; FitConfig's other fields are not options.
        # `fit.draws=500` too: the audit's name, which the fit's advice names ("raise fit.tune
        # and fit.draws") and a user of the audit types.
        dotlist = [f"sampler.{setting}" if (setting := sampler_setting(argument)) else argument
                   for argument in arguments]
        merged = OmegaConf.merge(OmegaConf.structured(FitCommand), OmegaConf.from_dotlist(dotlist))
        command: FitCommand = OmegaConf.to_object(merged)  # type: ignore[assignment]
    hidden = [argument for argument in arguments if argument.startswith("sampler.")]
    if hidden:
        raise FitInputError(f"{hidden[0]!r} is not an option; {USAGE}")
    # The sampler settings' declared ranges (hdi_prob in (0, 1), draws >= 1, judge_imputations
    # in [1, 1000], rope >= 0): the check every audit config gets, before anything is sampled.
    check_config(command.sampler, error=FitInputError)
    # The fit writes a folder of files: one it cannot create (a file, a path through a file,
    # /proc) is named now, not by a traceback after minutes of sampling that lose the fit.
    check_output(Path(command.output), "output=", folder=True, error=FitInputError)
    _check_not_overwritten(command)
    _check_roles(command)
    if command.prior not in PRIORS:
        raise FitInputError(f"prior={command.prior} is unknown; use prior=seed (N(0,1) theta and "
                            "b, the original audit) or prior=rasch (identified, the default)")
    return command


def _same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: equal once resolved (`..`, symlinks, the working
    folder), or, both existing, one file by the file system (a case-insensitive one)."""
    try:
        return first.resolve() == second.resolve() or (
            first.exists() and second.exists() and os.path.samefile(first, second))
    except (OSError, RuntimeError):  # a path that cannot be resolved is read, or written, later
        return False


def _check_not_overwritten(command: FitCommand) -> None:
    """An input that is a file the fit writes into output= would be replaced by it, the table
    lost once the fit finishes: refused before anything is read. So is a folder in output= named
    like a file the fit writes: it failed after sampling, the fit lost (bad-input review
    2026-12-06)."""
    output = Path(command.output)
    for name in FIT_FILES:
        if (output / name).is_dir():
            raise FitInputError(f"output={command.output} holds a folder named {name}, where the "
                                "fit writes its file: move that folder or choose another output "
                                "folder")
    for option in ("input", "gold", "confusion"):
        value = getattr(command, option)
        if not value:
            continue
        for name in FIT_FILES:
            if _same_file(output / name, Path(value)):
                raise FitInputError(f"output={command.output} would overwrite the {option} "
                                    f"{value} with the fit's {name}: choose another output "
                                    "folder")


def _check_roles(command: FitCommand) -> None:
    """One column named for two roles (respondent=item) fits nonsense: every answer its own
    respondent's item. Names are compared as the table's columns are matched (named_as: case and
    stray spaces aside). source= may share the respondent or item column (a labeller per
    respondent is a design), not the outcome's: each label would pick its own value's error
    rates."""
    roles = [("respondent", command.respondent), ("item", command.item),
             ("outcome", command.outcome)]
    if command.source:
        roles.append(("source", command.source))
    for index, (role, column) in enumerate(roles):
        for other, other_column in roles[index + 1:]:
            if other == "source" and role != "outcome":
                continue
            if column_key(column) == column_key(other_column):
                raise FitInputError(f"the column {column!r} is both {role}= and {other}=: each "
                                    f"role needs its own column; pass {role}=COLUMN or "
                                    f"{other}=COLUMN naming another")


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
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise FitInputError(f"input file {path} {what}; pass input=PATH to a CSV or parquet")
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        # Read as CSV, a JSON line's braces and quotes came back as "its columns" (bad-input
        # review 2026-12-02).
        raise FitInputError(f"input file {path} is JSON: audit.fit reads a CSV or parquet long "
                            "table; answers in JSON Lines import with python -m audit.ingest "
                            f"input={path}")
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


def main(arguments: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if arguments is None else arguments
    if printed_help(arguments, __doc__, USAGE):
        return 0
    try:
        command = parse_arguments(arguments)
        run(command)
    except AuditError as error:  # FitInputError, or a table or setting the model refuses
        log.error("%s", str(error).splitlines()[0])
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
