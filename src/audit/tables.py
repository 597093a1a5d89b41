"""Tables on disk: the one reader (CSV or parquet, one-line errors) and the one atomic writer.

Every method, command and report reads its inputs and run tables and writes its outputs through
these functions, so a bad file is always reported the same way (one line naming the file, the
problem and the fix) and a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import secrets
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from audit.errors import AuditError, first_line

if TYPE_CHECKING:
    import pandera.polars as pa

NOT_WRITTEN = "run the stage that writes it first (or check the path in the config)"
# The same default where the file is there but cannot be read: "first" sent a user whose run
# table was damaged (a copy cut short, a disk filled) looking for a stage that had already run.
REWRITE = "rerun the stage that writes it (or check the path in the config)"
RUN_UNFINISHED = "the run did not finish (rerun it)"  # a run's table, read by its verdict or report


def damaged_fix(fix: str) -> str:
    """The fix for a file that is there but cannot be read: the default NOT_WRITTEN becomes
    REWRITE; a caller's own fix stands."""
    return REWRITE if fix == NOT_WRITTEN else fix


def missing_file(path: Path, what: str, fix: str) -> str:
    """Why a file to read is not there: a folder given where a file goes is said so, where
    "not found" sent a user looking for a path that exists (bad-input review 2026-12-02)."""
    if Path(path).is_dir():
        return f"{what} at {path} is a folder, not a file: {fix}"
    return f"{what} not found at {path}: {fix}"


def read_frame(path: Path, what: str, fix: str = NOT_WRITTEN, *,
               as_text: bool = False, parquet: bool | None = None) -> pl.DataFrame:
    """Parquet or CSV, or one line naming the file, the problem and the fix.

    `parquet`: which, when the caller knows (a user's `format=`); None: by the suffix.
    `as_text` reads every CSV column as a string (users' input files, whose schemas coerce);
    otherwise a CSV's types are inferred from the whole file, so a column whose first rows are
    empty still reads as numbers.
    """
    path = Path(path)
    if not path.is_file():
        raise AuditError(missing_file(path, what, fix))
    fix = damaged_fix(fix)
    try:
        if path.suffix.lower() in PARQUET_SUFFIXES if parquet is None else parquet:
            return pl.read_parquet(path)
        header, head = file_head(path)
        not_text = not_csv_text(path, header + head, by_name=parquet is None)
        if not_text:
            raise AuditError(f"cannot read {what} at {path}: {not_text}")
        if b"\r" in header.rstrip(b"\r\n"):
            # polars read such a file as one header line ('y\ra', 'i1_duplicated_0', ...).
            raise AuditError(f"cannot read {what} at {path}: its lines end in a carriage return "
                             f"alone (Excel for Mac's 'Macintosh CSV'); {SAVE_AS_CSV_UTF8}")
        separator = csv_separator(header)
        # Strict UTF-8 here too: polars reads a bad byte in the header line without a word (in a
        # data row it stops), and the header's own check raised UnicodeDecodeError as a
        # traceback (bad-input review 2026-12-04).
        repeated = repeated_header(header.decode("utf-8-sig")
                                   + head.decode("utf-8", errors="replace"), separator)
        frame = pl.read_csv(path, separator=separator, infer_schema=False) if as_text \
            else pl.read_csv(path, separator=separator, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as error:
        reason = first_line(error)
        if isinstance(error, UnicodeDecodeError):  # only the header's decoding raises it here
            reason = "invalid utf-8 sequence in its header line"
        if "utf-8" in reason.lower():
            reason += f" ({SAVE_AS_CSV_UTF8})"
        raise AuditError(f"cannot read {what} at {path}: {reason}; {fix}") from error
    if repeated:
        name, count = repeated
        raise AuditError(f"cannot read {what} at {path}: column {name!r} appears {count} times "
                         f"in the header; keep one; {fix}")
    if as_text and frame.height:
        # A user's file: trailing rows with no value at all (Excel saves formatted empty rows as
        # `,,,`) hold nothing to read, and were a "persona_id holds None" naming no row. Only
        # trailing ones, so the rows before keep the numbers the file gives them (ingest's
        # messages name rows by them).
        filled = frame.select(~pl.all_horizontal(pl.all().is_null())).to_series()
        frame = frame.head(int(filled.arg_true().max()) + 1 if filled.any() else 0)
    return frame


SAVE_AS_CSV_UTF8 = "save it as CSV UTF-8 (Excel: File, Save As, 'CSV UTF-8')"
GZIP_MAGIC = b"\x1f\x8b"
GZIPPED = "it is gzip-compressed: decompress it (gunzip FILE) and pass the file that gives"


PARQUET_SUFFIXES = (".parquet", ".pq")  # as audit.ingest names them, in any case


def file_head(path: Path) -> tuple[bytes, bytes]:
    """A file's first line and the 4 KiB after it, read once for every check of a CSV before
    polars reads it (its text, separator and header were three reads of the file's head)."""
    with Path(path).open("rb") as raw:
        header = raw.readline()
        return header, raw.read(4096)


def not_csv_text(path: Path, head: bytes, by_name: bool = True) -> str | None:
    """Why a file read as CSV is not UTF-8 text, with the fix; None when it may be. polars read
    a UTF-16 file (PowerShell's `>`, Excel's 'Unicode Text') of plain ASCII as columns with NUL
    bytes, and one with quotes as "found more fields than defined in 'Schema'"; a workbook read
    as CSV lacked every column. `by_name`: the file's name chose CSV (a user who chose CSV for a
    file named .json is taken at their word)."""
    if by_name and Path(path).suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return f"it is JSON, and this file is read as CSV or parquet; {SAVE_AS_CSV_UTF8}"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return f"it is UTF-16 text, as PowerShell's `>` and Excel's 'Unicode Text' write; " \
               f"{SAVE_AS_CSV_UTF8}"
    if head.startswith(GZIP_MAGIC):
        return GZIPPED
    if head.startswith(b"PAR1"):
        return "it is a parquet file, not CSV: name it .parquet (or choose the parquet format)"
    if head.startswith(b"PK\x03\x04"):
        return f"it is a spreadsheet workbook or another zip file, not CSV; {SAVE_AS_CSV_UTF8}"
    if b"\x00" in head:
        return f"it is not text (it holds NUL bytes: UTF-16 without a byte-order mark, or a " \
               f"binary file); {SAVE_AS_CSV_UTF8}"
    return None


def repeated_header(head: str, separator: str) -> tuple[str, int] | None:
    """The first column a CSV's header names more than once, and how often. polars reads the
    second as `NAME_duplicated_0`, and a reader of NAME silently took the first. `head`: the
    file's start, whose first record is the header (a quoted name may span lines)."""
    header = next(csv.reader(io.StringIO(head, newline=""), delimiter=separator), [])
    counts = Counter(header)
    return next(((name, count) for name, count in counts.items() if count > 1), None)


def csv_separator(header: bytes) -> str:
    """A comma, unless the header line has none and has a semicolon or a tab: Excel saves "CSV"
    with semicolons where the decimal mark is a comma (most of Europe), and such a file read
    with commas is one column named 'respondent;item;y'. `header`: the file's first line."""
    if b"," not in header:
        for candidate in (";", "\t"):
            if candidate.encode() in header:
                return candidate
    return ","


def read_json_lines(path: Path, what: str, fix: str = NOT_WRITTEN) -> list[dict]:
    """A JSON Lines file as its records (blank lines skipped; a UTF-8 byte-order mark allowed),
    or one line naming the file, the line that is not UTF-8 or not a JSON object, and the fix. A
    file holding one JSON array of objects (`json.dump(rows, f)`, pandas' `orient="records"`)
    is read as those records: it was refused as "line 1 is not JSON" (bad-input probe
    2026-12-07)."""
    path = Path(path)
    if not path.is_file():
        raise AuditError(missing_file(path, what, fix))
    fix = damaged_fix(fix)
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    if data.startswith(GZIP_MAGIC):
        raise AuditError(f"cannot read {what} at {path}: {GZIPPED}")
    if data.lstrip().startswith(b"["):
        return _json_array(data, path, what, fix)
    records = []
    # Decoded line by line, so a byte that is not UTF-8 (a file saved as cp1252 or latin-1) is
    # named by its line instead of escaping as a UnicodeDecodeError.
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise AuditError(f"cannot read {what} at {path}: line {number} is not UTF-8 "
                             f"(byte 0x{raw[error.start]:02x} in column {error.start + 1}); "
                             f"save it as UTF-8") from None
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise AuditError(f"cannot read {what} at {path}: line {number} is not JSON "
                             f"({error.msg}); {fix}") from error
        if not isinstance(record, dict):
            raise AuditError(f"cannot read {what} at {path}: line {number} is not a JSON "
                             f"object; {fix}")
        records.append(record)
    return records


def _json_array(data: bytes, path: Path, what: str, fix: str) -> list[dict]:
    """A file that is one JSON array, as its objects; one line naming what is wrong."""
    try:
        records = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise AuditError(f"cannot read {what} at {path}: byte {error.start + 1} is not UTF-8; "
                         f"save it as UTF-8") from None
    except json.JSONDecodeError as error:
        raise AuditError(f"cannot read {what} at {path}: it starts as a JSON array but is not "
                         f"JSON ({error.msg} at line {error.lineno}); {fix}") from None
    bad = next((number for number, record in enumerate(records, start=1)
                if not isinstance(record, dict)), None)
    if bad is not None:
        raise AuditError(f"cannot read {what} at {path}: element {bad} of its JSON array is not "
                         f"an object; {fix}")
    return records


def required_columns(schema: type[pa.DataFrameModel]) -> list[str]:
    """The columns a schema cannot do without (its optional ones left out), in its order."""
    return [name for name, column in schema.to_schema().columns.items()
            if column.required and not column.regex]


def require_columns(frame: pl.DataFrame, columns: list[str], path: Path, what: str,
                    fix: str) -> None:
    """One line naming the file, every missing column and the fix.

    Checked before pandera sees the table: with `coerce=True` pandera 0.35 casts the columns it
    expects before it checks that they exist, so a missing column surfaced as polars'
    ColumnNotFoundError with a 70-line traceback (a misspelt one was already one line).
    """
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise AuditError(f"{what} at {path} lacks the column(s) {', '.join(map(repr, missing))} "
                         f"(its columns: {', '.join(frame.columns) or 'none'}): {fix}")


def column_key(name: str) -> str:
    """A column's name as a user's file may vary it (case, stray spaces): two names with one key
    name one column."""
    return name.strip().lower()


def named_as(frame: pl.DataFrame, columns: list[str], path: Path, what: str) -> pl.DataFrame:
    """A user's file with its columns renamed to `columns` where they differ only in case or in
    stray spaces (a spreadsheet's 'Truth', 'judged '); two that would both take one name are
    refused, naming them, even when one of them is spelt exactly: 'truth' beside 'Truth' is two
    columns for one thing, and which one the file meant is the user's to say."""
    renames: dict[str, str] = {}
    for wanted in columns:
        matches = [column for column in frame.columns
                   if column_key(column) == column_key(wanted)]
        if len(matches) > 1:
            raise AuditError(f"{what} at {path} has the columns {', '.join(map(repr, matches))}, "
                             f"which differ only in case or spaces: keep one, named {wanted!r}")
        renames.update({match: wanted for match in matches if match != wanted})
    return frame.rename(renames)


def read_table(path: Path, schema: type[pa.DataFrameModel], what: str, fix: str = NOT_WRITTEN,
               *, as_text: bool = False, nan_as_null: bool = False,
               columns_fix: str | None = None) -> pl.DataFrame:
    """A table validated by its schema, or one line naming the file, the problem and the fix.

    `nan_as_null` reads a NaN statistic (one that could not be computed, written as `NaN` in a
    CSV) as null, which the run tables' nullable statistics accept: the verdict skips such a row
    as untestable instead of refusing the file. `columns_fix`: the fix for missing columns when
    the table is a run's own (written by an older version), not a file the user wrote.
    """
    path = Path(path)
    frame = read_frame(path, what, fix, as_text=as_text)
    fix = damaged_fix(fix)  # read_frame found the file: what fails below is in it
    require_columns(frame, required_columns(schema), path, what, columns_fix or (
                    f"add the missing columns to the file (see {schema.__name__} in "
                    f"{schema.__module__} and data/README.md for what each holds), or point the "
                    f"config at a file that has them"))
    if nan_as_null:
        frame = frame.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None))
    from audit.schemas import validate  # pandera: see write_table
    try:
        # A user's file (read as text) is filled in; a run's own table is rewritten by `fix`.
        return validate(frame, schema, f"{what} ({path})",
                        "fill it in, or drop those rows" if as_text else fix)
    except pl.exceptions.PolarsError as error:  # pandera's coercion: text where a number belongs
        reason = first_line(error)
        raise AuditError(f"cannot read {what} at {path}: {reason}; {fix}") from error


def write_frame(frame: pl.DataFrame, path: Path, metadata: dict[str, str] | None = None) -> Path:
    """Parquet or CSV by the file's suffix, atomically: a crash never leaves half a table.

    `metadata`: key-value pairs stored in a parquet file's footer (read_metadata), facts about
    the table as a whole that no column should repeat on every row; a CSV cannot hold them.
    """
    path = Path(path)
    if path.suffix != ".parquet":
        if metadata:
            raise ValueError(f"{path}: only a parquet table holds metadata")
        return write_atomically(path, frame.write_csv)
    return write_atomically(path, lambda partial: frame.write_parquet(partial, metadata=metadata))


def write_table(frame: pl.DataFrame, path: Path, schema: type[pa.DataFrameModel],
                what: str, metadata: dict[str, str] | None = None) -> Path:
    """A table checked against its schema, then written atomically (parquet or CSV by suffix),
    with `metadata` in a parquet file's footer (write_frame)."""
    # Imported here, not with the module: pandera (and the pandas it loads) took 1.0 s of the
    # 2.3 s that `python -m audit` spent refusing a mistyped key (`-X importtime`, 2026-12-07),
    # and every command imports this module for its file checks before it reads a table.
    from audit.schemas import validate
    validate(frame, schema, what)
    return write_frame(frame, path, metadata)


def read_metadata(path: Path, what: str, fix: str = NOT_WRITTEN) -> dict[str, str]:
    """The key-value metadata write_table stored in a parquet table (empty when it stored none),
    or one line naming the file, the problem and the fix."""
    path = Path(path)
    if not path.is_file():
        raise AuditError(missing_file(path, what, fix))
    fix = damaged_fix(fix)
    try:
        return pl.read_parquet_metadata(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        reason = first_line(error)
        raise AuditError(f"cannot read {what} at {path}: {reason}; {fix}") from error


def write_atomically(path: Path, write: Callable[[Path], object]) -> Path:
    """`write(partial)` then one rename onto `path`: readers see the old file or the whole new one.

    The one place files are made atomic (tables, the JUnit verdict, figures' companions, the
    packaged models' verification markers), so every writer gets the same guarantee the same way.
    Each writer has its own partial file (process id and a random tag; the name still ends in
    `.partial`), so two processes writing one file at once (two sweep jobs marking the same
    model) never rename each other's half-written file: the last whole file wins.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
    try:
        write(partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def finite_json(value: object) -> object:
    """`value` with every float that is not finite made None (JSON null), through dicts, lists
    and tuples. Python's json writes NaN and Infinity bare, which is not JSON: jq, JavaScript's
    JSON.parse and most dashboards refuse the whole file. A run writes NaN where a figure has no
    value (a judge accuracy over no answers, an R-hat a fit could not compute)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(item) for item in value]
    return value


def write_json(value: object, path: Path, *, sort_keys: bool = False) -> Path:
    """`value` as strict JSON (finite_json: NaN and infinities are null), indented, ending in a
    newline, written atomically."""
    text = json.dumps(finite_json(value), indent=2, sort_keys=sort_keys, allow_nan=False) + "\n"
    return write_atomically(Path(path), lambda partial: Path(partial).write_text(text))


def save_figure(figure, path: Path, dpi: int = 110) -> Path:
    """A matplotlib figure saved atomically (format by suffix) and closed, so a long run of
    plots does not keep every figure's memory."""
    import matplotlib.pyplot as plt  # here: tables are read by commands that never plot

    path = Path(path)
    try:
        return write_atomically(path, lambda partial: figure.savefig(
            partial, dpi=dpi, format=path.suffix.lstrip(".")))
    finally:
        plt.close(figure)
