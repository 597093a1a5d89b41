"""The arguments of `python -m audit.fit` (audit.cli.fit): read into a structured config and
checked, before the table reader and the sampler load (audit.cli.fit_run)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from audit.methods.rasch.config import FIT_FILES, FitConfig
from audit.config_ranges import check_config
from audit.errors import AuditError, did_you_mean
from audit.tables import column_key
from audit.outputs import check_output
from audit.cli import refused_arguments

# `prior=` names the model by what a user of the original audit knows it as.
PRIORS = {"seed": "rasch_seed", "rasch": "rasch"}
USAGE = ("usage: python -m audit.fit input=PATH output=DIR [respondent=COL item=COL outcome=COL "
         "prior=seed|rasch gold=PATH|confusion=PATH source=COL draws=N tune=N chains=N cores=N "
         "target_accept=P seed=N hdi_prob=P judge_imputations=N (or fit.draws=N ...)]")


# Sampler settings are FitConfig's own fields, so their defaults have one home: the audit's.
SAMPLER_KEYS = ("draws", "tune", "chains", "cores", "target_accept", "seed", "hdi_prob",
                "judge_imputations")


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


def check_input(path: Path) -> None:
    """An input that is no file audit.fit reads, said before the table reader loads."""
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise FitInputError(f"input file {path} {what}; pass input=PATH to a CSV or parquet")
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        # Read as CSV, a JSON line's braces and quotes came back as "its columns" (bad-input
        # review 2026-12-02).
        raise FitInputError(f"input file {path} is JSON: audit.fit reads a CSV or parquet long "
                            "table; answers in JSON Lines import with python -m audit.ingest "
                            f"input={path}")


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
