"""What is wrong with a YAML file a user wrote, as a phrase for one line: a syntax error, bytes
that are not UTF-8, an alias inside itself.

Every file a user hands the tool goes through one of these: the config files Hydra composes
(audit.config_errors), params.yaml (`audit.stages`), a rules file and a run's recorded config
(`audit.verdict`, `audit.compare`). The loaders' own messages name no fix, and two of them are
tracebacks: a UnicodeDecodeError, and a RecursionError thousands of lines long.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import FrameType, TracebackType

from omegaconf import DictConfig, ListConfig, OmegaConf
from yaml import YAMLError  # PyYAML: what omegaconf and Hydra parse YAML with

from audit.errors import first_line

# What loading a YAML file can raise, besides OmegaConf's own errors: a file that cannot be
# opened, a syntax error, bytes that are not UTF-8 (UTF-16, as PowerShell's `>` writes; a
# Latin-1 byte) and an alias inside itself (`a: &x [*x]`), which the loader follows until
# RecursionError. Caught around a load alone, so a bug elsewhere keeps its traceback.
YAML_LOAD_ERRORS = (OSError, YAMLError, UnicodeDecodeError, RecursionError)

# The fix for a file that is not UTF-8: how to save it so, from where such files come from.
SAVE_AS_UTF8 = "save it as UTF-8 (PowerShell: `| Out-File -Encoding utf8`)"


def yaml_problem(error: Exception) -> str:
    """A YAML file's syntax error as the phrase that follows "it is not valid YAML", ` (line 2):
    expected the node content, but found '<stream end>'`: the parser's `problem` says what it
    expected, its first line (`while parsing a flow node`) does not. An error with no position
    (a reader's bad character) is `: PROBLEM`; it was "YAML : PROBLEM"."""
    problem = getattr(error, "problem", None) or first_line(error)
    where = getattr(error, "problem_mark", None)
    return f"{f' (line {where.line + 1})' if where is not None else ''}: {problem}"


def yaml_load_problem(error: Exception) -> str:
    """What is wrong with a YAML file whose load raised one of YAML_LOAD_ERRORS, as a phrase
    (`it is UTF-16 text, as PowerShell's `>` writes`): never the exception's own text, which for
    a RecursionError in OmegaConf runs to thousands of `full_key: a[0][0]...` lines."""
    if isinstance(error, UnicodeDecodeError):
        if bytes(error.object[:2]) in (b"\xff\xfe", b"\xfe\xff"):
            return "it is UTF-16 text, as PowerShell's `>` writes"
        return (f"it is not UTF-8 text (byte {error.object[error.start]:#04x}: Latin-1 or "
                "another legacy encoding)")
    if isinstance(error, OSError):
        # No errno: OmegaConf's own IOError for a file holding one number or date, not settings.
        return (f"it cannot be read ({error.strerror})" if error.strerror else
                f"it holds no mapping of settings ({error})")
    if isinstance(error, RecursionError):
        return "an alias in it contains itself (like `a: &x [*x]`), or it nests too deep"
    return f"it is not valid YAML{yaml_problem(error)}"


def unreadable_yaml_file(folders: Iterable[Path], error: UnicodeDecodeError | RecursionError
                         ) -> tuple[Path, Exception] | None:
    """Which YAML file under `folders` a loader that raised `error` without naming its file
    (Hydra composing its config search path) failed on, with that file's own error: the first
    that is not UTF-8 for a UnicodeDecodeError, whose load recurses for a RecursionError. None
    when none is."""
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.yaml")):
            try:
                if isinstance(error, UnicodeDecodeError):
                    path.read_bytes().decode("utf-8")
                else:
                    OmegaConf.load(path)
            except type(error) as found:
                return path, found
            except Exception:  # noqa: BLE001 - another problem of another file: not this one
                continue
    return None


def not_settings(loaded: object) -> str | None:
    """What a loaded YAML file that should hold settings by section holds instead ("holds no
    settings", "holds a list"), or None when it holds a mapping of them. Merged with a schema,
    an empty file fell back to every default and a list was "Cannot merge DictConfig with
    ListConfig"."""
    if isinstance(loaded, DictConfig) and loaded:
        return None
    return "holds a list" if isinstance(loaded, ListConfig) and loaded else "holds no settings"


# --- config files Hydra composes ----------------------------------------------------------------

def shown_path(name: str) -> str:
    """A config file's path as the user knows it: from the folder they ran in when it lies there
    (`conf/model/broken.yaml`), else as YAML named it."""
    try:
        return str(Path(name).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return name


def yaml_file_problem(error: YAMLError) -> str:
    """A config file that is not YAML (an unclosed `{`, a tab in the indentation) as one line
    naming the file, where and what, e.g. `conf/model/broken.yaml is not valid YAML (line 5,
    column 13: while parsing a flow mapping, expected ',' or '}', but got '<stream end>' at line
    6, column 1): fix the file`. The parser's context mark is where the construct it could not
    finish began (the `{`), its problem mark where it gave up (often the file's end)."""
    context, problem = getattr(error, "context", None), getattr(error, "problem", None)
    start, end = getattr(error, "context_mark", None), getattr(error, "problem_mark", None)
    mark = start or end
    if mark is None or not problem:
        return f"a config file is not valid YAML: {first_line(error)}; fix the file"
    text = f"{context}, {problem}" if context and start is not None else problem
    if start is not None and end is not None and (end.line, end.column) != (start.line,
                                                                            start.column):
        text += f" at line {end.line + 1}, column {end.column + 1}"
    if "'\\t'" in problem:
        text += "; YAML indents with spaces, not tabs"
    return (f"{shown_path(mark.name)} is not valid YAML (line {mark.line + 1}, column "
            f"{mark.column + 1}: {text}): fix the file")


def frame_in(traceback: TracebackType | None, module: str) -> FrameType | None:
    """The first frame of `traceback` running code of `module`: where an error a dependency
    raised unwrapped came from (Hydra's file loading, its run-mode check), None when none is."""
    while traceback is not None:
        if traceback.tb_frame.f_globals.get("__name__") == module:
            return traceback.tb_frame
        traceback = traceback.tb_next
    return None


def _file_hydra_was_reading(traceback: TracebackType | None) -> Path | None:
    """The config file Hydra was reading when the error of `traceback` was raised: the local
    `full_path` of its file config source's load_config (audit's UserConfSource for the user's
    ./conf; Hydra 1.3's private hydra/_internal/core_plugins/file_config_source.py, which opens
    the file there, for the shipped folder). A Hydra that renames either leaves None, and the
    file is searched for instead; this retires when Hydra's load errors name their file."""
    frame = (frame_in(traceback, "hydra_plugins.audit_configs")  # the user's ./conf
             or frame_in(traceback, "hydra._internal.core_plugins.file_config_source"))
    path = frame.f_locals.get("full_path") if frame is not None else None
    return Path(path) if isinstance(path, str) else None


def unreadable_config_file(error: UnicodeDecodeError | RecursionError, folders: Iterable[Path]
                           ) -> tuple[Path, BaseException] | None:
    """The config file Hydra could not load with `error`, and that file's own error: the one it
    was reading, else the first under `folders` (the user's ./conf, the shipped folder) that
    fails the same way (Hydra's error names no file). None when neither finds it."""
    path = _file_hydra_was_reading(error.__traceback__)
    if path is not None:
        return path, error
    return unreadable_yaml_file(folders, error)


def unreadable_config_line(error: UnicodeDecodeError | RecursionError, folders: Iterable[Path]
                           ) -> str:
    """A config file Hydra could not load as one line: which file, what is wrong, the fix."""
    path, problem = unreadable_config_file(error, folders) or (None, error)
    fix = SAVE_AS_UTF8 if isinstance(problem, UnicodeDecodeError) else "fix the file"
    shown = "a config file" if path is None else shown_path(str(path))
    return f"{shown} cannot be read: {yaml_load_problem(problem)}; {fix}"
