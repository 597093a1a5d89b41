"""What composition hides about the chosen config files: a file that holds no settings, two
model files that share a name, a list of options for a group that takes one, a sweep file's grid
in a single run; and the directory Hydra made for a job that one of these refused.

A model file's settings sit under the model's name (`my_vllm:` then its keys), and the chosen
files merge into one `model` mapping, so two files that name the same model (a file copied and
edited without renaming its top key) became one model, the later file's, without a word: `model=
[my_model,my_model_copy]` audited one model. Hydra records no choice for a list-valued group, so
the chosen files are read from the command's override.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from audit.config import CONF_DIR
from audit.config_ranges import ConfigValueError
from audit.yaml_files import shown_path

GROUP = "model"
USER_SCHEME = "audit-user"  # the user's ./conf (hydra_plugins.audit_configs.UserConfSource)
# The config sources that read a folder of YAML files: the shipped one (Hydra's file://) and the
# user's ./conf (audit's own, hydra_plugins.audit_configs).
FILE_SCHEMES = ("file", USER_SCHEME)


def command_line_choices(overrides: Iterable[str]) -> dict[str, list[str]]:
    """Each key that a `key=a` or `key=[a,b]` override sets (with +, ++ or no prefix), with the
    names it gives: a later override of a key replaces an earlier one, as in Hydra, and `null`
    names no option."""
    chosen: dict[str, list[str]] = {}
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        if value:
            chosen[key] = [name.strip().strip("'\"") for name in value.strip("[]").split(",")
                           if name.strip() and name.strip() != "null"]
    return chosen


def chosen_options(overrides: Iterable[str], group: str = GROUP) -> list[str]:
    """The options a `group=a` or `group=[a,b]` override chose; empty when none did (the
    defaults list chose one, which cannot collide) or `group=null` chose none."""
    return command_line_choices(overrides).get(group, [])


def option_file(sources: Iterable[Mapping[str, Any]], group: str, name: str) -> Path | None:
    """The file Hydra reads for `group=name`: the first file source that holds it (the user's
    ./conf comes before the shipped configs)."""
    for source in sources:
        if source.get("schema") in FILE_SCHEMES:
            path = Path(source["path"]) / group / f"{name}.yaml"
            if path.is_file():
                return path
    return None


# True while an audit command composes (audit.config_errors.one_line_config_errors): it checks
# the chosen files itself once composed (check_chosen_files_hold_settings), and says whether the
# command line or a defaults list chose the empty one. Kept here, not in the Hydra plugin that
# reads it: Hydra 1.3 executes plugin modules afresh when it scans for plugins, which would give
# the plugin a second variable.
_checked_after_composing: ContextVar[bool] = ContextVar("checked_after_composing", default=False)


@contextmanager
def checked_after_composing() -> Iterator[None]:
    """Compose with the empty-file check left to the command (see _checked_after_composing)."""
    token = _checked_after_composing.set(True)
    try:
        yield
    finally:
        _checked_after_composing.reset(token)


def empty_file_problem(shown: str, group: str, name: str, *, replaces_shipped: bool,
                       instead: str = "choose another") -> str:
    """The line for a chosen config file (`group=name`, its path `shown`) that holds no
    settings: `replaces_shipped` when it takes the place of a shipped option of its name,
    `instead` the other fix (how the file was chosen, where that is known)."""
    choice = f"{group}={name}" if group else f"the {name} config"
    folder = f"src/audit/conf/{group}/" if group else "src/audit/conf/"
    if replaces_shipped:
        return (f"{shown} holds no settings, and it takes the place of the shipped {choice}, so "
                f"{choice} would set nothing: write its settings ({folder}{name}.yaml shows "
                f"them), or delete it to use the shipped one")
    return (f"{shown} holds no settings, so choosing it ({choice}) would set nothing: write its "
            f"settings (the files in {folder} show them), or {instead}")


def chosen_files_checked_after_composing() -> bool:
    return _checked_after_composing.get()


def check_chosen_files_hold_settings(hydra: DictConfig) -> None:
    """Refuse a chosen group file that holds no settings (empty, or only comments): Hydra reads
    it as an empty mapping, so `items=mine` with an empty conf/items/mine.yaml audited the
    shipped bank, and a run whose file was saved before it was written said nothing (noticed
    2026-12-04). `hydra`: a job's Hydra config, or compose()'s with return_hydra_config. An
    empty sweep file is refused earlier, while Hydra composes it."""
    sources = list(hydra.runtime.config_sources)
    # Hydra records no choice for a list (`items=[mine]`, `model=[a,b]`): the command line's
    # are read from its overrides, each key that names a group (a file of that name is there).
    on_command_line = {(group, name)
                       for group, names in command_line_choices(hydra.overrides.task).items()
                       if not group.startswith("hydra") for name in names}
    by_default = {(str(group), name) for group, name in hydra.runtime.choices.items()
                  if isinstance(name, str) and not str(group).startswith("hydra")}
    for group, name in sorted(on_command_line | by_default):
        # A value with a slash is a path, not an option (`paths.root_dir=/srv`): joined to a
        # config folder, an absolute one would name a file outside it.
        path = option_file(sources, group, name) if "/" not in name else None
        if path is None or yaml.safe_load(path.read_text(encoding="utf-8")) is not None:
            continue
        # The user's file of a shipped option's name replaces it, chosen or not.
        shipped = Path(CONF_DIR) / group / f"{name}.yaml"
        chosen_by = ("leave it out of the command line" if (group, name) in on_command_line
                     else "choose another in your defaults list")
        raise ConfigValueError(empty_file_problem(
            shown_path(str(path)), group, name,
            replaces_shipped=shipped.is_file() and not shipped.samefile(path), instead=chosen_by))


# The groups whose chosen options add up: the audited models (one mapping by name) and the sweep
# presets (their grids join into one). Every other group takes one option, and Hydra merges a
# list of them into one section, the last one's settings winning: `method=[rasch,iat]` ran the
# IAT alone, `fit=[rasch,twopl]` was fit=twopl (bad-input review 2026-12-04).
MANY_OPTION_GROUPS = frozenset({GROUP, "sweep"})


def check_group_choices(hydra: DictConfig) -> None:
    """Refuse a group the command line removes (`~items`) and a list of options for a group that
    takes one, naming the group and what to type instead."""
    folders = [Path(source["path"]) for source in hydra.runtime.config_sources
               if source.get("schema") in FILE_SCHEMES]
    for override in hydra.overrides.task:
        group = override.partition("=")[0]
        if not group.startswith("~") or "." in group or "/" in group or group == "~sweep":
            continue  # a sweep is optional: `~sweep` undoes a `+sweep=` before it
        group = group[1:]
        options = sorted({path.stem for folder in folders
                          for path in (folder / group).glob("*.yaml")})
        # Hydra's delete left the run on the schema's defaults without a word: `~items`
        # audited all 48 scenarios of the bank, not the default 12; `~judge` read "Missing
        # mandatory value: name"; `~design` dropped config.yaml's design settings (reviews
        # 2026-12-04).
        if options:
            raise ConfigValueError(
                f"~{group} removes the run's {group}, and every run needs one: leave the "
                f"override out, or choose one with {group}=OPTION ({', '.join(options)})")
        raise ConfigValueError(
            f"~{group} removes a section every run has (its settings would fall back to the "
            f"schema's defaults): leave the override out, or set its keys ({group}.KEY=VALUE)")
    for group, names in command_line_choices(hydra.overrides.task).items():
        if len(names) < 2 or group in MANY_OPTION_GROUPS or group.startswith("hydra") \
                or not any((folder / group).is_dir() for folder in folders):
            continue
        raise ConfigValueError(
            f"{group}=[{','.join(names)}] chooses {len(names)} options of {group}, which takes "
            f"one (Hydra would merge them into one, the last one's settings winning): choose "
            f"one, or run each in a sweep, python -m audit -m {group}={','.join(names)}")


def check_model_names(overrides: Iterable[str], sources: Iterable[Mapping[str, Any]],
                      composed_models: int) -> None:
    """Refuse chosen model files that define the same model name, in one line naming them."""
    chosen = chosen_options(overrides)
    if len(chosen) <= composed_models:
        return
    sources = list(sources)
    files: dict[str, list[str]] = {}
    for name in dict.fromkeys(chosen):
        path = option_file(sources, GROUP, name)
        content = yaml.safe_load(path.read_text(encoding="utf-8")) if path else None
        for model in content if isinstance(content, dict) else ():
            files.setdefault(str(model), []).append(f"{GROUP}/{name}.yaml")
    shared = {model: names for model, names in files.items() if len(names) > 1}
    if shared:
        model, names = next(iter(sorted(shared.items())))
        # The file whose first line is not its own name is the copy to rename.
        misnamed = next((name for name in names if Path(name).stem != model), names[-1])
        raise ConfigValueError(
            f"{' and '.join(names)} both define the model '{model}', so the run would audit one "
            f"model where {len(chosen)} were chosen: a model file's first line is the model's "
            f"name; make it `{Path(misnamed).stem}:` in conf/{misnamed}")


def check_working_folder(hydra: DictConfig) -> None:
    """Refuse hydra.job.chdir=true: a job run inside its output folder reads every relative path
    from there, so the response store (.audit/responses.sqlite3) was a new, empty one in each
    run, no run resumed, and ./data and ./conf fell back to the shipped copies without a word
    (bad-input review 2026-12-04)."""
    if hydra.job.get("chdir"):
        # Back where the command ran, so the refused run's folder is removed like any other's.
        os.chdir(hydra.runtime.cwd)
        raise ConfigValueError(
            "hydra.job.chdir=true would run the audit inside its output folder, where the "
            "relative paths (the response store, ./data, ./conf) name other files, so no run "
            "would resume: leave hydra.job.chdir out (the outputs go to the run folder anyway)")


def check_grid_is_swept(hydra: DictConfig) -> None:
    """Refuse a grid (hydra.sweeper.params, from a sweep file) in a single run, which ignores
    it: a user's sweep file without `mode: MULTIRUN` ran its base config once, and said nothing
    (bad-input review 2026-12-04)."""
    grid = hydra.sweeper.get("params") if hydra.get("sweeper") else None
    if hydra.mode == RunMode.RUN and grid:
        raise ConfigValueError(
            f"the config sets a sweep's grid (hydra.sweeper.params: {', '.join(map(str, grid))}) "
            f"but runs once (hydra.mode RUN), which ignores it: run with -m, or give the sweep "
            f"file `mode: MULTIRUN` under `hydra:`, as src/audit/conf/sweep/models.yaml has")


def discard_job_directory() -> None:
    """Remove the directory Hydra made for a run the schema refused, so that a typo leaves no
    `outputs/DATE/TIME/` behind, when it holds only what Hydra wrote there (its config copies
    and empty logs); then its parents up to the working directory while they are empty. A
    directory with anything else in it (a run directory used again) is kept whole."""
    try:
        hydra = HydraConfig.get()
        mode, output_dir, subdir = hydra.mode, hydra.runtime.output_dir, hydra.output_subdir
    except (ValueError, OmegaConfBaseException):  # not in a Hydra job: a notebook's compose()
        return
    if mode != RunMode.RUN or not output_dir:
        return
    directory, working = Path(output_dir).resolve(), Path.cwd().resolve()
    if directory == working or directory in working.parents:  # hydra.run.dir=. and the like
        return
    own = directory / subdir if subdir else None
    for path in directory.rglob("*"):
        written_by_hydra = (own is not None and own in path.parents) or path == own or (
            path.is_file() and path.suffix == ".log" and path.stat().st_size == 0)
        if not written_by_hydra:
            return
    shutil.rmtree(directory, ignore_errors=True)
    for parent in directory.parents:
        if working not in parent.parents:
            break
        try:
            parent.rmdir()  # only while empty
        except OSError:
            break
