"""Output paths, checked before the work that fills them: one line naming the path and the fix,
instead of a traceback (or a file lost) once the work is done."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from audit.errors import AuditError


def why_unwritable(path: Path, folder: bool = False) -> str | None:
    """Why ``path`` cannot be written, or None. ``folder``: a folder files go into (new or
    existing); otherwise a file (an existing one is replaced). The nearest part of the path that
    exists must be a folder a file can be created in: tried with a file made and removed at once,
    since permission bits do not tell (root may write anywhere, yet nothing under /proc)."""
    path = Path(path)
    kind = "folder" if folder else "file"
    if path.exists() and path.is_dir() != folder:
        return f"{path} is a {'file' if folder else 'folder'}, not a {kind}"
    existing = next(part for part in ((path,) if folder else ()) + tuple(path.parents)
                    if part.exists())
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".audit-write-check-"):
            pass
    except OSError as problem:
        return f"cannot write in {existing} ({problem.strerror or type(problem).__name__})"
    return None


def check_output(path: Path, option: str, *, folder: bool = False,
                 error: type[AuditError] = AuditError) -> Path:
    """An output path a command will write, checked before the work that fills it: one line
    (``error``) naming it and the fix, instead of a traceback once the work is done and lost.
    ``option``: the path's option as it is typed, value excluded (`output=`, `--csv `);
    ``folder`` as in why_unwritable."""
    path = Path(path)
    reason = why_unwritable(path, folder)
    if reason is None:
        return path
    fix = (f"pass {option}DIR naming a new or existing folder where you can write" if folder
           else f"pass {option}PATH naming a file in a folder you can write")
    where = (f"{option}{reason}" if reason.startswith(f"{path} ")
             else f"{option}{path}: {reason}")
    raise error(f"{where}: {fix}")


def is_text(head: bytes) -> bool:
    """Whether a file's first bytes are text (no NUL byte): a CSV, YAML or XML file, not a
    database, parquet or a picture."""
    return b"\x00" not in head


def is_xml(head: bytes) -> bool:
    """Whether a file's first bytes open an XML document (a JUnit report)."""
    return head.lstrip().startswith(b"<")


def check_replaces_only(path: Path, option: str, kind: str, looks_like: Callable[[bytes], bool],
                        error: type[AuditError] = AuditError) -> Path:
    """An output file that exists is replaced only when its first bytes look like ``kind``, the
    file this output writes. A path typed wrong lost the file there: the MLflow store given as
    --csv (and with it every run), the run's config.yaml as junit= (bad-input review
    2026-12-07)."""
    path = Path(path)
    if not path.is_file():
        return path
    with path.open("rb") as file:
        head = file.read(512)
    if head and not looks_like(head):
        raise error(f"{option}{path} is an existing file that is not {kind}, and this would "
                    f"replace it: pass {option}PATH naming a new file, or {kind} to replace")
    return path


def check_junit_output(path: Path, error: type[AuditError] = AuditError) -> Path:
    """junit= of audit.verdict and audit.compare: a file that can be written and, where one is
    there already, a JUnit report, never another file (a run's config.yaml was replaced)."""
    check_output(path, "junit=", error=error)
    return check_replaces_only(path, "junit=", "a JUnit XML file", is_xml, error=error)
