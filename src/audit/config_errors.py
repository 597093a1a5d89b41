"""Hydra composition errors as one line that names the valid options.

Hydra prints a typo in an override over eight to twelve lines (with the config search path and a
hint about an environment variable); the line a user needs, the options that would have worked,
is missing for mistyped keys. This module turns those errors into one line, e.g.
``unknown key 'design.replicatez'; valid keys under 'design': replicates, seed, adaptive, ...
(did you mean 'replicates'?)``. A key mistyped in a config file gets the same line naming the
file, and a file that is not YAML one line naming the file, the place and the parser's problem.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import typing
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import TracebackType

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig
from omegaconf.errors import (ConfigAttributeError, ConfigKeyError, InterpolationKeyError,
                              OmegaConfBaseException)

from audit.config_files import (MANY_OPTION_GROUPS, check_chosen_files_hold_settings,
                                check_grid_is_swept, check_group_choices, check_model_names,
                                check_working_folder, checked_after_composing,
                                discard_job_directory)
from audit.cli import shows_instead_of_running, split_overrides
from audit.config_entries import (SOURCE, config_file, config_folders, entry_added_by_keys,
                                  flat_entry, unknown_entry)
from audit.config_keys import (paths_ending_in, removed_on_command_line, under_null_setting,
                               valid_keys)
from audit.config_ranges import ConfigValueError
from audit.errors import did_you_mean
from audit.hydra_errors import (HYDRA_MODES, conflicting_hydra_modes, overlong_number,
                                 run_folder_problem)
from audit.methods.configs import AuditConfig, to_audit_config
from audit.yaml_files import (frame_in, unreadable_config_file, unreadable_config_line,
                              yaml_file_problem)
from hydra_plugins.audit_configs import user_conf_dir

HYDRA_ERRORS = (ConfigCompositionException, MissingConfigException, OverrideParseException,
                OmegaConfBaseException)
OVERRIDE_GRAMMAR_URL = "https://hydra.cc/docs/advanced/override_grammar/basic/"
_GROUP_TWICE = re.compile(r"Multiple values for (?P<group>\w+)\. To override|"
                          r"(?P<again>\w+) appears more than once in the final defaults list")
_UNREAD_GROUP = re.compile(r"Could not override '(?P<group>\w+)'\. No match in the defaults list")


def config_groups(conf_dir: Path) -> list[str]:
    return sorted(path.name for path in Path(conf_dir).iterdir()
                  if path.is_dir() and path.name != "hydra"
                  and not path.name.startswith((".", "_")))


def _composition_cause(error: BaseException) -> BaseException | None:
    """The OmegaConf error inside a composition error. An override's error is its __cause__; an
    error in a config file (`In 'model/typo': ConfigKeyError raised while composing config`) is
    raised while Hydra handles it, without `from`, so it is only the __context__."""
    if not isinstance(error, ConfigCompositionException):
        return error
    return error.__cause__ or error.__context__


def _sweep_file_problem(error: BaseException, conf_dir: Path) -> str:
    """A sweep file without the `# @package _global_` line puts its keys under `sweep`, which
    no config has (an empty one puts nothing there): it read "unknown key 'sweep' ... (did you
    mean 'sweep'?)" (bad-input review 2026-12-04)."""
    name = SOURCE.search(str(error))["source"]
    path = next((folder / f"{name}.yaml" for folder in config_folders(conf_dir)
                 if (folder / f"{name}.yaml").is_file()), None)
    lines = [line for line in (path.read_text(encoding="utf-8").splitlines() if path else [])
             if line.strip() and not line.lstrip().startswith("#")]
    problem = "holds no settings" if path and not lines else (
        "lacks its first line, `# @package _global_`, so its keys went under 'sweep'")
    return (f"{config_file(name)} {problem}: a sweep file starts with the line `# @package "
            f"_global_` and sets hydra.sweeper.params, as src/audit/conf/sweep/models.yaml does")


def _in_file(error: BaseException) -> str:
    """` in conf/model/typo.yaml` for an error Hydra found in a config file, else empty."""
    source = SOURCE.match(str(error)) if isinstance(error, ConfigCompositionException) else None
    return f" in {config_file(source['source'])}" if source else ""


def _loaded_by_hydra(traceback: TracebackType | None) -> bool:
    """Whether an error was raised while Hydra read a config file (its config repository on the
    stack): a YAML error there is the user's config; anywhere else it may be a bug. Hydra 1.3
    raises the parser's error unwrapped, so its module name is the only mark; a Hydra that
    renames the module, or wraps the error in a ConfigCompositionException, leaves this False
    and the error keeps its traceback (or is caught as a Hydra error), never a wrong line."""
    return frame_in(traceback, "hydra._internal.config_repository") is not None


def null_group_choice(error: ValueError | TypeError, conf_dir: Path,
                       arguments: Sequence[str]) -> str | None:
    """One line for `items=null` or `model=[a,null]` (a config group given null), which Hydra's
    defaults list refuses with a plain ValueError (a list: a TypeError): a traceback until
    2026-12-04. None for any other error."""
    said = ("Config group override must be a string or a list" if isinstance(error, ValueError)
            else "argument of type 'NoneType' is not iterable")
    if not (str(error).startswith(said)
            and frame_in(error.__traceback__, "hydra._internal.defaults_list") is not None):
        return None
    groups = config_groups(conf_dir)
    given = [(argument, match[1]) for argument in arguments
             if (match := re.fullmatch(r"\+*(\w+)=([^=]*)", argument)) and match[1] in groups
             and "null" in match[2].strip("[]").replace(" ", "").split(",")]
    argument, group = given[0] if given else ("a config group given null", "GROUP")
    return (f"{argument}: a config group takes the names of its options (the files of "
            f"conf/{group}/), not null; leave the override out for the default")


def _null_generator_hint(cause: OmegaConfBaseException) -> str:
    """Unquoted, the null persona generator's name is YAML's null (no value): the natural way to
    type personas.generators=[baseline,explicit,null] fails on a None the user never wrote."""
    if not str(cause.full_key).startswith("personas.generators") or "NoneType" not in str(cause):
        return ""
    return ("; quote the null generator's name, which unquoted means no value: "
            "'personas.generators=[baseline,explicit,\"null\"]' (the single quotes keep the "
            "shell from removing the double ones)")


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text)


def _near_or_elsewhere(key: str, options: list[str]) -> str:
    """The hint for an unknown key: the full paths where a key of its exact name lives
    (`replicates=2` -> design.replicates), else the option of its level it is closest to. The
    exact name goes first: `seed=3` was closest to the group `sweep`."""
    paths = paths_ending_in(key)
    if len(paths) == 1:
        return f" (did you mean '{paths[0]}'?)"
    if paths:
        return f" (did you mean one of {', '.join(paths)}?)"
    return did_you_mean(key, options)


def _unquoted_character(override: str) -> str | None:
    """A letter Hydra's grammar takes only in quotes (é, ü, ß: its unquoted values are ASCII).

    Hydra names the lexer ("LexerNoViableAltException: judge.name=é"), not the fix.
    """
    key, equals, value = override.partition("=")
    odd = next((character for character in value if not character.isascii()), None)
    if not equals or odd is None or not key.isascii():
        return None  # a non-ASCII key is unknown whatever its quotes
    def quoted(text: str) -> str:
        if text.isascii():
            return text
        quote = '"' if "'" in text else "'"
        return f"{quote}{text}{quote}"

    if value.startswith("[") and value.endswith("]"):  # quoted whole, a list is one string
        value = "[" + ",".join(quoted(element) for element in value[1:-1].split(",")) + "]"
        what = "each element that holds it"
    else:
        value, what = quoted(value), "the value"
    return (f"'{override}': '{odd}' is read only inside quotes: quote {what}, {key}={value} "
            "(in a shell, put the whole argument in the other quotes)")


def describe(error: BaseException, conf_dir: Path, arguments: Sequence[str] = ()) -> str:
    """One line: what was wrong, and what would have been valid. `arguments`: the command line's
    overrides, when the error came from composing them (a config read from a file has none)."""
    if isinstance(error, yaml.YAMLError):
        return yaml_file_problem(error)
    if isinstance(error, (UnicodeDecodeError, RecursionError)):
        return unreadable_config_line(error, config_folders(conf_dir))
    if isinstance(error, MissingConfigException):
        missing = error.missing_cfg_file or ""
        group, _, option = missing.rpartition("/")
        options = list(error.options or []) or sorted(
            path.stem for path in (Path(conf_dir) / group).glob("*.yaml")) if group else []
        if group and options:
            near = did_you_mean(option, options)
            # Run from a subfolder, a user's own option was unknown with no word of where
            # options come from (bad-input review 2026-12-04).
            elsewhere = ("" if near or user_conf_dir() else
                         f"; there is no conf/ folder in {Path.cwd()}: your own config files "
                         f"are read from conf/{group}/ of the folder you run from")
            return (f"unknown option '{option}' for config group '{group}'; valid: "
                    f"{', '.join(options)}{near}{elsewhere}")
        return _first_line(str(error))
    unread = _UNREAD_GROUP.match(str(error))
    if (unread and unread["group"] in (valid_keys([]) or [])
            and unread["group"] in config_groups(conf_dir)):
        # A shipped group `python -m audit` reads (its config.yaml chooses every one), given to
        # a command that does not (audit.judge_eval has no items): Hydra's "use +items=smoke"
        # added one the command then ignored. A group only the user's ./conf has keeps + .
        group = unread["group"]
        return (f"this command does not read '{group}' (its config chooses no {group}): leave "
                f"the {group}= override out; with +{group}= it would be added and ignored")
    twice = _GROUP_TWICE.match(str(error))
    group = twice and (twice["group"] or twice["again"])
    if group and sum(argument.lstrip("+").partition("=")[0] == group
                     for argument in arguments) > 1:
        # Hydra's fix, "use 'override sweep: judges'", is for a defaults list; it stays for a
        # group a user's config file chooses again (a sweep file's `defaults: [/model: x]`).
        plus = "+" if group == "sweep" else ""  # the one group config.yaml does not choose
        listed = (f"list them in one, {plus}{group}=[A,B]" if group in MANY_OPTION_GROUPS
                  else f"it takes one (to run several, sweep them: -m {group}=A,B)")
        return f"{group} is chosen more than once on the command line: {listed}"
    if isinstance(error, OverrideParseException):
        override = getattr(error, "override", None)
        if override and "=" not in override:  # a bare path or word: Hydra's "missing EQUAL"
            return (f"argument '{override}' is not key=value: each argument sets one "
                    "config entry, as in model=smollm2 or ingest.input=answers.csv")
        unquoted = override and _unquoted_character(override)
        if unquoted:
            return unquoted
        return f"cannot parse an override: {_first_line(str(error))}; see {OVERRIDE_GRAMMAR_URL}"
    flat = flat_entry(str(error))
    if flat:
        return flat
    cause, where = _composition_cause(error), _in_file(error)
    if (isinstance(cause, (ConfigAttributeError, ConfigKeyError))
            and str(getattr(cause, "full_key", "")).split(".")[0] == "sweep"
            and SOURCE.search(str(error))):  # a sweep file's keys; not `+sweep.x=1` typed
        return _sweep_file_problem(error, conf_dir)
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and getattr(cause, "full_key",
                                                                             None):
        full_key = str(cause.full_key)
        *parent, key = full_key.split(".")
        removed = removed_on_command_line(full_key, arguments)
        if removed:
            return removed
        options = valid_keys(parent)
        if options is None:
            return (unknown_entry(parent, key, cause, conf_dir, where)
                    or f"unknown key '{full_key}'{where}: {_first_line(str(cause))}")
        if not parent:
            groups = [name for name in config_groups(conf_dir) if name not in options]
            return (f"unknown key '{full_key}'{where}; valid top-level keys: "
                    f"{', '.join(options)}; config groups: {', '.join(groups)} (add them with "
                    f"+GROUP=OPTION){_near_or_elsewhere(key, options + groups)}")
        return (f"unknown key '{full_key}'{where}; valid keys under '{'.'.join(parent)}': "
                f"{', '.join(options)}{_near_or_elsewhere(key, options)}")
    if isinstance(cause, InterpolationKeyError):  # `design.seed=${oops}`: Hydra's line alone
        key = str(getattr(cause, "full_key", "") or "")
        # Read from Hydra's record of the overrides the key is `task[0]`: no key of the user's.
        named = f"'{key}': " if key and "[" not in key and not key.startswith("hydra") else ""
        return (f"{named}{_first_line(str(cause))}{where}: a ${{...}} in a value names another "
                f"key of the config (as in design.seed=${{fit.seed}}); name a key it has, or "
                f"write the value itself")
    added = entry_added_by_keys(error, cause, conf_dir)
    if added:
        return added
    if isinstance(cause, OmegaConfBaseException) and getattr(cause, "full_key", None):
        if "is not a ListConfig, list or tuple" in str(cause):  # read "AnyNode is not a ..."
            key, value = str(cause.full_key), getattr(cause, "value", None)
            shown = "VALUE" if value is None or isinstance(value, (dict, list)) else value
            return (f"'{key}'{where} takes a list, not one value: write it in brackets, "
                    f"{key}=[{shown}] (in a config file `{key.rsplit('.', 1)[-1]}: [{shown}]`)")
        if "does not support deletion" in str(cause):  # `~design.seed`: a schema's setting
            key = str(cause.full_key)
            return (f"~{key} cannot remove a setting, which every run has: set it instead "
                    f"({key}=VALUE), or leave the override out for its default")
        return (f"invalid value for '{cause.full_key}'{where}: {_first_line(str(cause))}"
                f"{_null_generator_hint(cause)}")
    if str(error).startswith("Ambiguous value for argument"):
        override = str(error).split("'")[1] if "'" in str(error) else str(error)
        return (f"ambiguous override '{override}': add -m (--multirun) to sweep over the values, "
                f"or write key=[a,b] for a list")
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines[:3]) if lines else type(error).__name__


# Whether the user had set HYDRA_FULL_ERROR=1 before one_line_config_errors set it for its own
# use: such a user gets the traceback of every config error, as Hydra would give it.
_user_wants_traceback = False


@contextmanager
def one_line_config_errors(conf_dir: Path, hydra_arguments: bool = True) -> Iterator[None]:
    """Run a Hydra entry point so that a composition error ends it with one line and exit 2.

    Hydra reports errors itself unless HYDRA_FULL_ERROR is set; it is set here, for the entry
    point's time, so the error reaches this function. A user who set it already gets Hydra's
    full traceback as before. `hydra_arguments`: Hydra reads the command line (not so for
    audit.params, which composes with its own parser's overrides)."""
    global _user_wants_traceback
    split = split_overrides(sys.argv[1:]) if hydra_arguments else None
    if split:
        exit_with_config_line(split)
    previous, wanted = os.environ.get("HYDRA_FULL_ERROR"), _user_wants_traceback
    _user_wants_traceback = previous == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        # The command checks an empty chosen file once composed and says how it was chosen; a
        # preview (--cfg job) runs no command, so the file's source refuses it while loading.
        shown_only = hydra_arguments and shows_instead_of_running(sys.argv[1:])
        with nullcontext() if shown_only else checked_after_composing():
            yield
    except HYDRA_ERRORS as error:
        exit_on_config_error(error, conf_dir)
    except ConfigValueError as error:  # the user conf's source refused a file while loading
        exit_with_config_line(str(error))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
        # A config file that is not YAML, not UTF-8 (PowerShell's `>` writes UTF-16) or holds an
        # alias inside itself, raised by Hydra unwrapped: a traceback, thousands of lines long
        # for the alias.
        if not _loaded_by_hydra(error.__traceback__):
            raise  # YAML read anywhere else: a bug keeps its traceback
        if (isinstance(error, RecursionError)
                and unreadable_config_file(error, config_folders(conf_dir)) is None):
            raise  # no config file recurses: a bug (in a structured config, say) keeps it too
        exit_on_config_error(error, conf_dir)
    except (AssertionError, AttributeError) as error:
        line = under_null_setting(error, sys.argv[1:])
        if line is None or _user_wants_traceback:
            raise  # anywhere but OmegaConf under Hydra's loader: a bug keeps its traceback
        exit_with_config_line(line)
    except OSError as error:
        line = run_folder_problem(error)
        if line is None or _user_wants_traceback:
            raise  # an OSError from anywhere but Hydra making the run's folder keeps it
        exit_with_config_line(line)
    except (ValueError, TypeError) as error:
        line = (HYDRA_MODES if isinstance(error, ValueError) and conflicting_hydra_modes(error)
                else overlong_number(error, sys.argv[1:])
                or null_group_choice(error, conf_dir, sys.argv[1:]))
        if line is None or _user_wants_traceback:
            raise  # any other ValueError or TypeError is a bug: it keeps its traceback
        exit_with_config_line(line)
    finally:
        _user_wants_traceback = wanted
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = previous


def validated_config(cfg: DictConfig, conf_dir: Path) -> AuditConfig:
    """A Hydra job's composed config as the AuditConfig its command runs. A config error the
    schema finds only here (a key that `+` added and no schema has: `+design.replicate=2`) is
    one line and exit 2 too, not Hydra's `Error executing job` line and then this one. A config
    refused here, by key or by value, takes the directory Hydra made for the job with it."""
    try:
        if HydraConfig.initialized():
            check_chosen_files_hold_settings(HydraConfig.get())
            check_group_choices(HydraConfig.get())
        audit_cfg = to_audit_config(cfg)
        if HydraConfig.initialized():
            hydra = HydraConfig.get()
            check_model_names(hydra.overrides.task, hydra.runtime.config_sources,
                              len(audit_cfg.model))
            check_grid_is_swept(hydra)
            check_working_folder(hydra)
        return audit_cfg
    except HYDRA_ERRORS as error:
        discard_job_directory()
        exit_on_config_error(error, conf_dir)
    except ConfigValueError:  # a value out of its range: the entry point's one line and exit 2
        discard_job_directory()
        raise


def exit_on_config_error(error: BaseException, conf_dir: Path) -> typing.NoReturn:
    """A config error's one line on stderr and exit 2 (the traceback for a user who set
    HYDRA_FULL_ERROR=1)."""
    if _user_wants_traceback:
        raise error
    exit_with_config_line(describe(error, conf_dir, sys.argv[1:]))


def exit_with_config_line(line: str) -> typing.NoReturn:
    """A config problem found outside composition: its one line on stderr and exit 2."""
    _stderr_logger().error("%s", line)
    raise SystemExit(2) from None


def _stderr_logger() -> logging.Logger:
    """Always stderr and one line: Hydra may have pointed the other loggers at stdout (a
    multirun's) or at nothing yet (a composition error comes before its logging setup)."""
    logger = logging.getLogger("audit.config_errors")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("config error: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    return logger
