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

from omegaconf import OmegaConf
from yaml import YAMLError  # PyYAML: what omegaconf and Hydra parse YAML with

# What loading a YAML file can raise, besides OmegaConf's own errors: a file that cannot be
# opened, a syntax error, bytes that are not UTF-8 (UTF-16, as PowerShell's `>` writes; a
# Latin-1 byte) and an alias inside itself (`a: &x [*x]`), which the loader follows until
# RecursionError. Caught around a load alone, so a bug elsewhere keeps its traceback.
YAML_LOAD_ERRORS = (OSError, YAMLError, UnicodeDecodeError, RecursionError)

# The fix for a file that is not UTF-8: how to save it so, from where such files come from.
SAVE_AS_UTF8 = "save it as UTF-8 (PowerShell: `| Out-File -Encoding utf8`)"


def yaml_problem(error: Exception) -> str:
    """A YAML file's syntax error as a phrase, `(line 2): expected the node content, but found
    '<stream end>'`: the parser's `problem` says what it expected, its first line
    (`while parsing a flow node`) does not."""
    first_line = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    problem = getattr(error, "problem", None) or first_line or type(error).__name__
    where = getattr(error, "problem_mark", None)
    return f"{f'(line {where.line + 1})' if where is not None else ''}: {problem}".lstrip()


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
    return f"it is not valid YAML {yaml_problem(error)}"


def unreadable_yaml_file(folders: Iterable[Path], error: UnicodeDecodeError | RecursionError
                         ) -> tuple[Path, Exception] | None:
    """Which YAML file under `folders` a loader that raised `error` without naming its file
    (Hydra composing its config search path) failed on, with that file's own error: the first
    that is not UTF-8, or whose load recurses. None when none is."""
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.yaml")):
            try:
                if isinstance(error, UnicodeDecodeError):
                    path.read_bytes().decode("utf-8")
                else:
                    OmegaConf.load(path)
            except (UnicodeDecodeError, RecursionError) as found:
                return path, found
            except Exception:  # noqa: BLE001 - another problem of another file: not this one
                continue
    return None
