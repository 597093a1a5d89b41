"""The commands other than `python -m audit`; their old module names forward here."""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import NoReturn

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import (ConfigKeyError, MissingMandatoryValue, OmegaConfBaseException,
                              ValidationError)

from audit.errors import did_you_mean

HELP_FLAGS = frozenset({"-h", "--help"})


class OneLineParser(argparse.ArgumentParser):
    """argparse for the commands that take options (runs, stages, params, the DIF comparison),
    refusing a bad argument in one line that points to --help: argparse's own refusal printed
    the whole usage block above it (five lines for `audit.runs --limit 0`), burying the line
    that says what to fix. Subcommands' parsers are made of this class too (argparse's
    default)."""

    def __init__(self, *args, **kwargs) -> None:
        # Each option this parser takes, recorded as it is added (argparse keeps them only in
        # private attributes), with those of its parents; a parent of another class leaves the
        # list incomplete, and then unknown_option says nothing.
        self.options: set[str] = set()
        self.complete = all(isinstance(parent, OneLineParser)
                            for parent in kwargs.get("parents", ()))
        for parent in kwargs.get("parents", ()):
            self.options |= getattr(parent, "options", set())
        self.subcommands: list[argparse.Action] = []
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.update(action.option_strings)
        return action

    def add_subparsers(self, **kwargs) -> argparse.Action:
        action = super().add_subparsers(**kwargs)
        self.subcommands.append(action)
        return action

    def all_options(self) -> set[str] | None:
        """Every option of this parser and its subcommands; None when one's list is incomplete."""
        options, parsers = set(self.options), list(self.subcommands)
        complete = self.complete
        for action in parsers:
            for parser in (action.choices or {}).values():
                found = parser.all_options() if isinstance(parser, OneLineParser) else None
                complete = complete and found is not None
                options |= found or set()
        return options if complete else None

    def unknown_option(self, arguments: Sequence[str]) -> str | None:
        """An option none of the parsers takes (`--tracking_uri`), or one typed key=value, as
        audit.compare and audit.fit take theirs (`tracking_uri=URI`): argparse read the word
        after an unknown option as the subcommand, "invalid choice: 'sqlite:///m.db'" (bad-input
        review 2026-12-05)."""
        options = self.all_options()
        if not options:
            return None
        for argument in arguments:
            if argument == "--":
                return None
            name, equals, _ = argument.partition("=")
            if argument.startswith("-") and not _is_number(argument):
                if name in options or any(option.startswith(name) for option in options
                                          if name.startswith("--")):
                    continue  # argparse's own abbreviations (`--track`) stay its to judge
                return f"unknown option {name}{did_you_mean(name, sorted(options))}"
            if equals and not argument.startswith("-"):
                typed = f"--{name.rsplit('.', 1)[-1].replace('_', '-')}"
                if typed in options:
                    return f"{argument} is not an option here: write {typed} VALUE"
        return None

    def parse_args(self, args: Sequence[str] | None = None,
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        arguments = list(sys.argv[1:] if args is None else args)
        problem = self.unknown_option(arguments)
        if problem:
            self.error(problem)
        return super().parse_args(arguments, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def path_argument(file_example: str | None = None) -> Callable[[str], Path]:
    """argparse's type for a path option, where `type=Path` read an empty value as the current
    folder (`audit.stages --dir ''` wrote the pipeline's stage folders there) and dropped a
    trailing slash (`audit.params --output d/` wrote a file named d; bad-input review
    2026-12-06). `file_example`: the option names a file the command writes (e.g.
    params.yaml), so a path ending in a slash, which names a folder, is refused too."""

    def parse(text: str) -> Path:
        if not text.strip():
            raise argparse.ArgumentTypeError("is empty: give it a path")
        if file_example and text.endswith(("/", os.sep)):
            raise argparse.ArgumentTypeError(
                f"{text} ends in a slash, which names a folder: pass a file's path, such as "
                f"{text}{file_example}")
        return Path(text)

    return parse


def _is_number(argument: str) -> bool:
    try:
        float(argument)
    except ValueError:
        return False
    return True


def printed_help(arguments: Sequence[str], doc: str | None, usage: str) -> bool:
    """For the commands that take ``key=value`` arguments (fit, iat, verdict, compare): with
    ``-h`` or ``--help`` among them, the usage line and the command's description on stdout,
    and True (the command then exits 0). They refused `--help` as an argument that is not
    key=value, and compare took it for a run to compare."""
    if not HELP_FLAGS & set(arguments):
        return False
    sys.stdout.write(f"{usage}\n\n{inspect.cleandoc(doc or '')}\n")
    return True


def empty_value(key: str) -> str:
    """The phrase for `KEY=` typed with no value (every key=value command says it alike)."""
    return f"{key}= is empty: give it a value"


def argument_problem(error: OmegaConfBaseException, command: type,
                     nested: Mapping[str, Sequence[str]] | None = None,
                     arguments: Sequence[str] = ()) -> str:
    """One phrase for an argument a key=value command's structured config (the dataclass
    ``command``) refused, naming the option as it is typed (`draws`, not the `sampler.draws` it
    is stored under: ``nested`` maps such a section to the keys typed bare) and, for an unknown
    one, the closest option. OmegaConf's own first line named the command's internal class
    (`Key 'foo' not in 'FitCommand'`) and no option."""
    nested = nested or {}
    options = [*(field.name for field in fields(command) if field.name not in nested),
               *(key for keys in nested.values() for key in keys)]
    key = str(getattr(error, "full_key", None) or getattr(error, "key", None) or "")
    for prefix in nested:
        key = key.removeprefix(f"{prefix}.")
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, MissingMandatoryValue) and key:
        return f"{key}= is missing"
    if isinstance(error, ConfigKeyError) and key:
        return f"unknown option {key!r}{did_you_mean(key, options)}"
    if isinstance(error, ValidationError) and key:
        # `input=` reads as null: "Incompatible value 'None' for field of type 'str'" did not say
        # the value was left out (bad-input review 2026-12-04).
        typed = {name.split(".")[-1]: value for name, _, value
                 in (argument.partition("=") for argument in arguments)}
        if typed.get(key) == "":
            return empty_value(key)
        return f"invalid value for {key!r}: {first_line}"
    return first_line


def unreadable_value(arguments: Sequence[str], error: yaml.YAMLError) -> str:
    """One phrase for the argument whose value YAML cannot read (OmegaConf reads each value as
    YAML): `input=*.csv`, a file pattern the shell left as typed because no file matched it,
    was yaml's ScannerError traceback (`*` starts a YAML alias)."""
    for argument in arguments:
        try:
            OmegaConf.from_dotlist([argument])
        except yaml.YAMLError as found:
            error = found
            break
    else:
        argument = None
    problem = str(getattr(error, "problem", None) or type(error).__name__)
    named = f"argument {argument!r}" if argument else "an argument"
    return (f"{named}: its value cannot be read ({problem}): if it is a file pattern, no file "
            "matched it; other text goes in quotes, \"key='value'\"")


def check_given_once(arguments: Sequence[str], error: type[Exception], usage: str,
                     may_be_empty: frozenset[str] = frozenset(),
                     setting_of: Callable[[str], str] = str) -> None:
    """Refuse a key=value argument with an empty value or one whose setting is given twice
    (refused_arguments says why), in one line ending with `usage`."""
    empty = [key for key, _, value in (argument.partition("=") for argument in arguments)
             if not value.strip() and key.split(".")[-1] not in may_be_empty]
    if empty:
        raise error(f"{empty_value(empty[0])}; {usage}")
    settings = [setting_of(argument.partition("=")[0]) for argument in arguments]
    twice = next((setting for setting in settings if settings.count(setting) > 1), None)
    if twice:
        given = " and ".join(argument for argument, setting in zip(arguments, settings)
                             if setting == twice)
        raise error(f"{twice} is given more than once ({given}): give it once; {usage}")


@contextmanager
def refused_arguments(arguments: Sequence[str], command: type, error: type[Exception],
                      usage: str, nested: Mapping[str, Sequence[str]] | None = None,
                      may_be_empty: frozenset[str] = frozenset(),
                      setting_of: Callable[[str], str] = str) -> Iterator[None]:
    """Read a key=value command's arguments into its structured config (the dataclass
    ``command``) inside this block: a value YAML cannot read, or an option the config refuses,
    raises ``error`` with one phrase naming the argument, then the usage line. fit, iat and
    verdict each had these two except clauses. A key given an empty value is refused first:
    read as text, `rules_file=` and `junit=` fell back to their defaults without a word, so a
    CI step whose `rules_file=$RULES` lost its variable gated on the shipped rules (bad-input
    review 2026-12-06); read as a path, `import_dir=` was the current folder. `may_be_empty`:
    the keys whose empty value means something (the IAT's `aliases_file=`: no aliases). A key
    given twice is refused too: the last value won without a word. `setting_of` maps a key to
    the setting it makes, for a command with two keys for one (audit.fit's `draws` and
    `fit.draws`)."""
    check_given_once(arguments, error, usage, may_be_empty, setting_of)
    try:
        yield
    except yaml.YAMLError as found:
        raise error(f"{unreadable_value(arguments, found)}; {usage}") from None
    except OmegaConfBaseException as found:
        raise error(f"{argument_problem(found, command, nested, arguments)}; {usage}") from None


# Hydra's flags that take the next argument as their value (hydra/_internal/utils.py,
# get_args_parser); --info takes one only when it names what to show.
_HYDRA_VALUE_FLAGS = frozenset({"-c", "--cfg", "-p", "--package", "-cp", "--config-path", "-cn",
                                "--config-name", "-cd", "--config-dir", "--experimental-rerun"})
_HYDRA_INFO = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")
# Its long flags that take none: argparse accepts any unambiguous prefix of a long flag (`--cf
# job`), so a prefix of a value flag alone takes a value.
_HYDRA_BARE_FLAGS = ("--help", "--hydra-help", "--version", "--run", "--multirun",
                     "--shell-completion", "--resolve", "--info")


def _takes_value(flag: str, following: Sequence[str]) -> bool:
    """Whether a Hydra flag reads the argument after it as its value."""
    if flag in ("-i", "--info"):
        return bool(following) and following[0] in _HYDRA_INFO
    if flag in _HYDRA_VALUE_FLAGS:
        return True
    return (flag.startswith("--") and "=" not in flag
            and any(name.startswith(flag) for name in _HYDRA_VALUE_FLAGS if name[1] == "-")
            and not any(name.startswith(flag) for name in _HYDRA_BARE_FLAGS))


# Hydra's flags that show the composed config, help or info instead of running the command.
_HYDRA_PREVIEW_FLAGS = ("--cfg", "--info", "--help", "--hydra-help")


def shows_instead_of_running(arguments: Sequence[str]) -> bool:
    """Whether Hydra only shows something (`--cfg job`, `--info`, `--help`), so that no command
    runs its checks of the composed config. A prefix argparse would take as ambiguous (`--c`)
    counts too: argparse then refuses the command line before anything is composed."""
    for argument in arguments:
        flag = argument.split("=", 1)[0]
        if flag in ("-c", "-i", "-h") or (
                flag.startswith("--") and len(flag) > 2
                and any(name.startswith(flag) for name in _HYDRA_PREVIEW_FLAGS)):
            return True
    return False


def split_overrides(arguments: Sequence[str]) -> str | None:
    """One line for overrides on both sides of a Hydra flag (`model=x -m items=smoke`), or None.
    Hydra's argparse reads one run of overrides, and the later ones were a 7-line usage block
    ending "unrecognized arguments: items=smoke", of an override that was valid (bad-input
    review 2026-12-04)."""
    runs, in_run, flags = 0, False, []
    remaining = list(arguments)
    while remaining:
        argument = remaining.pop(0)
        if argument.startswith("-"):
            flags.append(" ".join([argument, remaining.pop(0)]
                                  if _takes_value(argument, remaining) and remaining
                                  else [argument]))
            in_run = False
        elif not in_run:
            runs, in_run = runs + 1, True
    if runs < 2:
        return None
    shown = " ".join(flags)
    return (f"overrides on both sides of {shown}: Hydra reads only the first run of them, so "
            f"put them all after the flags ({shown} KEY=VALUE ...)")
