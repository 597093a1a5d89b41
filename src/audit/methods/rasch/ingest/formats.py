"""Answers collected elsewhere, read into one table: one row per answer (docs/ingest.md).

Columns: `model` (or ingest.model for every row); the persona as `persona_id` and/or its
attributes `gender`, `race` (and `persona_kind`: explicit, name, baseline or null); `item` (the
bank's item_id or source_id); the outcome as `answer` (text for the judge), `decision`
(favourable, unfavourable, needs_more_information, refusal, or the item's own option words) or
`option_logprobs` (a JSON object, option -> log-probability) or `p_favourable` (a probability
of the favourable option, 0 to 1); optional `replicate` and `prompt`.
lm-evaluation-harness's `--log_samples` files (`samples_TASK_DATE.jsonl`) are read by
lm_eval.lm_eval_rows.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.logs import counted
from audit.methods.rasch.ingest.lm_eval import lm_eval_rows
from audit.methods.rasch.ingest.tables import blank_as_null
from audit.methods.rasch.ingest.values import check_model_cells
from audit.personas import one_edit_apart
from audit.tables import SAVE_AS_CSV_UTF8, named_as, read_frame, read_json_lines

FORMATS = ("auto", "csv", "parquet", "jsonl", "lm_eval")
COLUMNS = ("model", "persona_id", "persona_kind", "gender", "race", "item", "answer", "decision",
           "option_logprobs", "p_favourable", "replicate", "prompt")
OUTCOME_COLUMNS = ("answer", "decision", "option_logprobs", "p_favourable")
NUMBER_COLUMNS = ("replicate", "p_favourable")


def file_format(path: Path, chosen: str) -> str:
    if chosen not in FORMATS:
        raise AuditError(f"unknown ingest.format '{chosen}': use one of {', '.join(FORMATS)}")
    if chosen != "auto":
        return chosen
    suffix = path.suffix.lower()  # ANSWERS.CSV, as some exports name their files
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "lm_eval" if path.name.startswith("samples_") else "jsonl"
    if suffix in (".csv", ".txt"):
        return "csv"
    if suffix in (".gz", ".gzip", ".zip", ".bz2", ".xz", ".zst"):
        raise AuditError(f"{path} is compressed: decompress it and pass the file that gives as "
                         f"ingest.input")
    if suffix in (".xlsx", ".xls", ".xlsm", ".ods"):  # format=csv would read the workbook's bytes
        raise AuditError(f"{path} is a spreadsheet: {SAVE_AS_CSV_UTF8} and pass that file as "
                         f"ingest.input")
    raise AuditError(f"cannot tell the format of {path} from its name: set ingest.format= one of "
                     f"{', '.join(FORMATS[1:])}")


def read_answers(path: Path, chosen_format: str, model: str | None,
                 attributes: tuple[str, ...] = ()) -> pl.DataFrame:
    """The answers file as the table above (every column present; absent ones null).
    `attributes`: those the fit will contrast, to be read from the file (check_unread_levels)."""
    fmt = file_format(path, chosen_format)
    unread: dict[str, Iterable] = {}
    fix = "check ingest.input (docs/ingest.md lists the formats)"
    if chosen_format != "auto":
        # `format=jsonl` on a CSV ended "check ingest.input", where the slip was the format
        # (bad-input review 2026-12-04).
        fix = (f"check ingest.input, or the format it was read as (ingest.format={chosen_format};"
               f" auto tells it from the file's name; docs/ingest.md lists the formats)")
    if fmt == "lm_eval":
        rows = lm_eval_rows(read_json_lines(path, "answers file", fix), str(path))
        frame = pl.DataFrame(rows, infer_schema_length=None)
        default_model = model or path.parent.name or "imported"
    elif fmt == "jsonl":
        # An option_logprobs object stays the row's own JSON text: as a polars struct it would
        # take every row's option names, and a row mixing an object with a string cannot load.
        # Only the fields this table reads (any case and spacing, as standard_columns
        # matches them): an exported log's other fields (an array of metadata, a nested doc)
        # made polars stop on types it never needed, a traceback.
        read = read_json_lines(path, "answers file", fix)
        records = [{key: (json.dumps(value) if known_column(key) == "option_logprobs"
                          and isinstance(value, (dict, list)) else value)
                    for key, value in record.items() if known_column(key)}
                   for record in read]
        for record in read:
            for key, value in record.items():
                if not known_column(key):
                    unread.setdefault(key, []).append(value)
        try:
            frame = pl.DataFrame(records, infer_schema_length=None)
        except pl.exceptions.PolarsError as error:
            raise AuditError(f"cannot read answers file {path}: a column holds values of "
                             f"different types across rows ({str(error).splitlines()[0]}); "
                             f"give each column one type") from None
        default_model = model or "imported"
    else:
        # As the format says, not the suffix: format=parquet read a .pq file as CSV ("invalid
        # utf-8"), and a CSV given format=parquet was read as CSV and tagged parquet (judge
        # review 2026-12-02).
        frame = read_frame(path, "answers file", fix, as_text=fmt == "csv",
                           parquet=fmt == "parquet")
        default_model = model or "imported"
        unread = {column: frame.get_column(column) for column in frame.columns
                  if not known_column(column)}
    answers = standard_columns(frame, path, default_model, model)
    check_unread_levels(answers, unread, attributes, path)
    return answers


def numbers_only(texts: list[str]) -> bool:
    """Whether every one of `texts` reads as a number (an int or a float, spaces around)."""
    numbers = pl.Series(texts, dtype=pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    return numbers.null_count() == 0


def level_like(values: Iterable) -> list[str] | None:
    """A column's distinct values if they look like a persona attribute's levels (text, 2 to 20
    of them, each on at least two rows: not ids, timestamps or free text), else None."""
    present = [value for value in values if value is not None and value != ""]
    if not present or not all(isinstance(value, str) for value in present):
        return None
    # A CSV is read as text, so its numbers arrive as strings: a 0/1 score is no level.
    if numbers_only(present):
        return None
    counts = Counter(value.strip() for value in present)
    if not 2 <= len(counts) <= 20 or min(counts.values()) < 2:
        return None
    return sorted(counts)


def distinct_texts(values: Iterable) -> list[str]:
    """A column's distinct non-empty values as text, sorted."""
    return sorted({str(value).strip() for value in values if value is not None
                   and str(value).strip()})


def check_unread_levels(answers: pl.DataFrame, unread: dict[str, Iterable],
                        attributes: tuple[str, ...], path: Path) -> None:
    """Refuse a file that gives none of an attribute the fit contrasts while a column it does not
    read holds values like levels: a race column named `ethnicity` beside a `gender` column
    passed check_described (the rows had a gender) and the run went on without race, its
    contrasts gone behind one warning (bad-input review 2026-12-02). A file that means to
    compare fewer attributes says so with fit.attributes."""
    asked = list(dict.fromkeys(attributes))
    missing = [attribute for attribute in asked if attribute in answers.columns
               and answers[attribute].null_count() == answers.height]
    if not missing:  # the usual file: no unread column is looked at
        return
    # A column named one letter off an attribute (`gendr`) is that attribute whatever its values
    # look like: on a file of two rows no value repeats, so level_like passed it by and the run
    # went on without gender behind one warning (bad-input review 2026-12-05). Unless every
    # value is a number: `rate` is one edit from `race`, and a column of rates is no race.
    misspelt = {column: attribute for column, values in unread.items() for attribute in missing
                if one_edit_apart(str(column).strip(), attribute)
                and not numbers_only(distinct_texts(values))}
    candidates = {column: levels for column, values in unread.items()
                  if (levels := level_like(values) or (column in misspelt
                                                       and distinct_texts(values)))}
    if not candidates:
        return
    attribute = next((misspelt[column] for column in candidates if column in misspelt), missing[0])
    named = "; ".join(f"'{column}' ({', '.join(levels[:4])}{', ...' if len(levels) > 4 else ''})"
                      for column, levels in sorted(candidates.items()))
    others = [other for other in asked if other != attribute]
    raise AuditError(f"answers file {path} gives no '{attribute}', which fit.attributes "
                     f"contrasts, and does not read its column(s) {named}: name the column "
                     f"that holds it '{attribute}' (any case), or set "
                     f"fit.attributes=[{','.join(others)}] to compare without it")


def known_column(name: str) -> str | None:
    """The table's column a file's column name means, in any case and with stray spaces (an
    export's "Race" or "item "), else None."""
    normal = str(name).strip().lower()
    return normal if normal in COLUMNS else None


def _text_values(frame: pl.DataFrame, path: Path) -> None:
    """A text column holding lists or objects (an answer exported as ["HIRE ..."]) is one line,
    not a cast error from polars."""
    for column in COLUMNS:
        if column == "option_logprobs" or column not in frame.columns:
            continue
        if isinstance(frame.schema[column], (pl.List, pl.Array, pl.Struct)):
            raise AuditError(f"answers file {path}: column '{column}' holds lists or objects; "
                             "give one text (or number) a row")


def standard_columns(frame: pl.DataFrame, path: Path, default_model: str,
                     named_model: str | None = None) -> pl.DataFrame:
    """The file's columns as the table's; `named_model`: ingest.model, when the user set it."""
    # Read exactly, a "Race" column was left out: the run went on without race, its contrasts
    # gone, behind a warning about unlabelled levels (bad-input review 2026-12-02).
    frame = named_as(frame, list(COLUMNS), path, "answers file")
    if frame.is_empty():  # it went through judging to "no labelled responses: check the judge"
        raise AuditError(f"answers file {path} has no rows: it needs one row per answer")
    _text_values(frame, path)
    check_model_cells(frame, path, named_model)
    if "item" not in frame.columns:
        raise AuditError(f"answers file {path} has no 'item' column: name each answer's item by "
                         f"the bank's item_id or source_id")
    if not set(OUTCOME_COLUMNS) & set(frame.columns):
        raise AuditError(f"answers file {path} has none of the columns 'answer', 'decision', "
                         f"'option_logprobs', 'p_favourable': add the answer text or the "
                         f"decision of each row")
    frame = frame.with_columns(option_logprobs_column(frame, path))
    text_columns = [c for c in COLUMNS if c not in NUMBER_COLUMNS]
    frame = frame.with_columns([pl.col(c).cast(pl.Utf8) for c in text_columns
                                if c in frame.columns])
    frame = frame.with_columns([pl.lit(None, pl.Utf8).alias(c) for c in text_columns
                                if c not in frame.columns])
    frame = frame.with_columns(replicate_column(frame, path))
    frame = frame.with_columns(probability_column(frame, path))
    # Names trimmed, blank as missing: "gpt-4o " after a comma was a second model of its own,
    # and " hiring_01" an item "not in the bank" (bad-input review 2026-12-06).
    frame = blank_as_null(frame, ("model", "item"))
    frame = frame.with_columns(pl.col("model").fill_null(default_model))
    if empty := frame["item"].null_count():
        raise AuditError(f"answers file {path}: column 'item' is empty in "
                         f"{counted(empty, 'row')}: every answer needs its item")
    return frame.select(COLUMNS)


def replicate_column(frame: pl.DataFrame, path: Path) -> pl.Series:
    """`replicate` as whole numbers from 0 (null where a row has none, and in every row when the
    column is absent); one line naming the first value that is not one. "1.0" is 1: pandas writes
    a column with a missing cell as floats, and a CSV's "1.0" was refused as no whole number
    where the same value in JSONL was read (bad-input probe 2026-12-07)."""
    if "replicate" not in frame.columns:
        return pl.Series("replicate", [None] * frame.height, dtype=pl.Int64)
    values = frame["replicate"]
    texts = values.cast(pl.Utf8).str.strip_chars().replace("", None)
    numbers = texts.cast(pl.Float64, strict=False)
    # A float column (parquet, JSONL) cast by truncation: 0.5 became replicate 0.
    bad = frame.with_row_index("file_row", offset=1).filter(
        texts.is_not_null() & (numbers.is_null() | ~numbers.is_finite() | (numbers % 1 != 0)
                               | (numbers < 0) | (numbers >= 2 ** 53)))
    if bad.height:
        # A negative one failed later, naming PromptSchema, a table the user never wrote.
        first = bad.row(0, named=True)
        raise AuditError(f"answers file {path}: column 'replicate' holds {first['replicate']!r} "
                         f"in row {first['file_row']} (item {first['item']}): replicates are "
                         f"whole numbers from 0 (or leave the column out to number them in file "
                         f"order)")
    return numbers.cast(pl.Int64).alias("replicate")


def probability_column(frame: pl.DataFrame, path: Path) -> pl.Series:
    """`p_favourable` as numbers from 0 to 1 (null where a row has none); one line naming the
    first value that is not one."""
    if "p_favourable" not in frame.columns:
        return pl.Series("p_favourable", [None] * frame.height, dtype=pl.Float64)
    values = frame["p_favourable"]
    numbers = values.cast(pl.Utf8).str.strip_chars().replace("", None).cast(pl.Float64,
                                                                            strict=False)
    bad = frame.filter(values.is_not_null() & (values.cast(pl.Utf8).str.strip_chars() != "")
                       & (numbers.is_null() | numbers.is_nan() | (numbers < 0) | (numbers > 1)))
    if bad.height:
        raise AuditError(f"answers file {path}: column 'p_favourable' holds "
                         f"{bad['p_favourable'][0]!r} for item {bad['item'][0]}: each value is the "
                         f"probability of the favourable option, from 0 to 1, or empty")
    return numbers.alias("p_favourable")


def _option_scores(value: object) -> dict | None:
    """One row's option_logprobs as {option: log-probability}; None where the row has none.
    A parquet struct gives every row all the file's option names (null where the row lacks one);
    a parquet map, a JSONL object (read_answers) or JSON text give the row's own. ValueError for
    anything that is not such an object of numbers <= 0 (a log-probability is at most log 1)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("not JSON") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    scores = {option: score for option, score in value.items() if score is not None}
    if not scores:
        return None
    if not all(isinstance(score, (int, float)) and not isinstance(score, bool)
               and math.isfinite(score) and score <= 0 for score in scores.values()):
        raise ValueError("a value is not a log-probability")
    return scores


def option_logprobs_column(frame: pl.DataFrame, path: Path) -> pl.Series:
    """`option_logprobs` as JSON text, one object of option -> log-probability per row (null
    where a row has none), whether the file gave JSON text or (JSONL, parquet) an object; one
    line naming the first row that holds anything else, its item and the form expected."""
    if "option_logprobs" not in frame.columns:
        return pl.Series("option_logprobs", [None] * frame.height, dtype=pl.Utf8)
    texts = []
    for row, (value, item) in enumerate(zip(frame["option_logprobs"].to_list(),
                                            frame["item"].to_list()), start=1):
        try:
            scores = _option_scores(value)
        except ValueError as problem:
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            raise AuditError(
                f"answers file {path}: column 'option_logprobs' holds {shown[:80]!r} in row "
                f"{row} (item {item}), {problem}: each value is a JSON object of option -> "
                f"log-probability (a number <= 0), e.g. "
                f"{{\"yes\": -0.1, \"no\": -2.4}}, or empty") from None
        texts.append(json.dumps(scores) if scores is not None else None)
    return pl.Series("option_logprobs", texts, dtype=pl.Utf8)
