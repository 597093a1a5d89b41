"""Pandera schemas for the tables every method shares (items, personas, prompts, responses).

A stage validates what it writes and what it reads, so a malformed file (a hand-edited CSV, a
table from an older version) fails at the boundary with the column named, not deep in a fit. A
method's own tables have their schemas in its package (methods/NAME/schemas.py).
"""

from __future__ import annotations

from typing import Optional

import pandera.polars as pa
import polars as pl

from audit.errors import AuditError

PERSONA_KINDS: tuple[str, ...] = ("baseline", "explicit", "null", "name")
# The persona columns a design carries into its prompts, and so the ones fit.attributes can name.
PERSONA_ATTRIBUTES: tuple[str, ...] = ("gender", "race")
RESPONSE_STATUSES: tuple[str, ...] = ("ok", "error")


class ItemSchema(pa.DataFrameModel):
    """A decision scenario. `scenario` holds a `{persona}` slot for the persona sentence, or (a
    filled item, discrim-eval's templates) a `{race} {gender}` slot and pronoun slots, with the
    demographic-free text in `baseline_scenario`. `source_id`: the item's id in the benchmark it
    came from (discrim-eval's decision_question_id), which imported answers may name it by."""

    item_id: str = pa.Field(unique=True, str_matches=r"^[a-z0-9_]+$")
    domain: str
    role: str
    scenario: str
    question: str
    favourable_option: str
    unfavourable_option: str
    # Optional: a column the bank may leave out (pandera reads Optional, not `str | None`).
    baseline_scenario: Optional[str] = pa.Field(nullable=True)  # noqa: UP045
    source_id: Optional[str] = pa.Field(nullable=True)  # noqa: UP045

    @pa.check("scenario", error="the slot rule: a scenario holds {persona}, spelt so, where the "
                                "persona sentence goes (a filled item: {race} {gender})")
    def persona_slot(cls, data: pa.PolarsData) -> pl.LazyFrame:
        # A custom check for the line it gives: the field's str_contains named its regex.
        return data.lazyframe.select(
            pl.col(data.key).str.contains(r"\{persona\}|\{race\} \{gender\}"))

    class Config:
        strict = "filter"
        coerce = True


class PersonaSchema(pa.DataFrameModel):
    """A persona. `descriptor` fills "The {role} is {descriptor}."; empty for the baseline."""

    persona_id: str = pa.Field(unique=True, str_matches=r"^[a-z0-9_]+$")
    kind: str = pa.Field(isin=list(PERSONA_KINDS))
    descriptor: str
    gender: str = pa.Field(nullable=True)
    race: str = pa.Field(nullable=True)

    class Config:
        strict = "filter"
        coerce = True


class PersonaFileSchema(PersonaSchema):
    """A user's explicit or name persona file (personas.explicit_file, personas.names_file). The
    `kind` column may be left out: the generator that reads the file gives each row its own kind,
    and refuses a row that names another one (audit.personas)."""

    kind: Optional[str] = pa.Field(nullable=True)  # noqa: UP045


class PersonaTableSchema(PersonaSchema):
    """ingest.personas_file: the personas of imported answers. Nothing fills a prompt with their
    descriptor, so it may be empty (a baseline or null row usually has none)."""

    descriptor: Optional[str] = pa.Field(nullable=True)  # noqa: UP045


class PromptSchema(pa.DataFrameModel):
    """One independent request: a respondent (model x persona) answering an item once."""

    prompt_id: str = pa.Field(unique=True)
    respondent_id: str
    model_name: str
    persona_id: str
    persona_kind: str = pa.Field(isin=list(PERSONA_KINDS))
    gender: str = pa.Field(nullable=True)
    race: str = pa.Field(nullable=True)
    item_id: str
    domain: str
    replicate: int = pa.Field(ge=0)
    seed: int = pa.Field(ge=0)
    question: str
    favourable_option: str
    unfavourable_option: str
    system_prompt: str
    user_prompt: str

    class Config:
        strict = True
        coerce = True


class ResponseSchema(pa.DataFrameModel):
    """What came back for each prompt. Errors are rows too, so nothing silently vanishes."""

    prompt_id: str = pa.Field(unique=True)
    request_key: str
    status: str = pa.Field(isin=list(RESPONSE_STATUSES))
    response_text: str = pa.Field(nullable=True)
    error_kind: str = pa.Field(nullable=True)
    error_message: str = pa.Field(nullable=True)
    completion_tokens: int = pa.Field(nullable=True)
    latency_s: float = pa.Field(nullable=True)
    from_cache: bool

    class Config:
        strict = True
        coerce = True


def validate(frame: pl.DataFrame, schema: type[pa.DataFrameModel], what: str,
             empty_fix: str | None = None) -> pl.DataFrame:
    """Validate with a one-line error that names the table, so users know which file is bad.
    `empty_fix`: what to do about a required cell left empty (a user's file: fill it in; a
    run's own table: rerun it)."""
    try:
        return schema.validate(frame, lazy=False)
    except (pa.errors.SchemaError, pa.errors.SchemaErrors) as error:
        raise AuditError(f"{what} does not match {schema.__name__}: "
                         f"{schema_problem(error, frame, empty_fix)}") from error


def empty_cells(frame: pl.DataFrame, column: str) -> str:
    """Where `column` is empty, as a user finds it: "row 2 (persona_id 'x') and 1 more", rows
    counted from the first under a CSV's header, named by the table's first column when that is
    another one and filled in. "holds None, which fails not_nullable" named no row (bad-input
    review 2026-12-04)."""
    empty = frame[column].is_null().arg_true()  # an index, not a column a file may also have
    if not len(empty):
        return ""
    first, named_by = int(empty[0]), frame.columns[0]
    value = frame[named_by][first]
    name = f" ({named_by} {value!r})" if named_by != column and value is not None else ""
    more = f" and {len(empty) - 1} more" if len(empty) > 1 else ""
    return f"row {first + 1}{name}{more}"


def schema_problem(error: Exception, frame: pl.DataFrame | None = None,
                   empty_fix: str | None = None) -> str:
    """pandera's failure in one phrase with the values that failed. Its own first line stopped
    at "column 'persona_id' not unique:" (the repeated id was in a table on the next lines) and
    named a failed check as "validator number 0: <Check isin: ...>". `frame`: the table
    validated, to name the rows where a required column is empty."""
    text = str(error).strip()
    first_line = text.splitlines()[0] if text else repr(error)
    column = getattr(error, "column_name", None)
    reason = getattr(error, "reason_code", None)
    if column and frame is not None and column in frame.columns \
            and reason == pa.errors.SchemaErrorReason.SERIES_CONTAINS_NULLS:
        where = empty_cells(frame, column)
        if where:
            return f"column '{column}' is empty in {where}" + (f": {empty_fix}" if empty_fix
                                                                 else "")
    cases = getattr(error, "failure_cases", None)
    if reason == pa.errors.SchemaErrorReason.DUPLICATES and isinstance(cases, pl.DataFrame):
        repeated = _repeated_key(error, cases)
        if repeated:
            return repeated
    if reason == pa.errors.SchemaErrorReason.DATATYPE_COERCION and not column \
            and isinstance(cases, pl.DataFrame) and cases.width:
        # pandera names the column only in a one-line dump of the whole frame's schema
        # ("Could not coerce 'accuracy' in LazyFrame with schema Schema({...})"), and the values
        # only in failure_cases (bad-input review 2026-12-07).
        column = cases.columns[0]
        values = cases.get_column(column).unique(maintain_order=True).to_list()
        shown = _first_three([repr(value) for value in values], ", ")
        return f"column '{column}' holds {shown}, which is not {_kind(error, column)}"
    if not column or not isinstance(cases, pl.DataFrame) or not cases.width:
        return first_line
    values = cases.get_column(cases.columns[0]).unique(maintain_order=True).to_list()
    # A scenario runs to hundreds of characters: its start finds the row.
    shown = _first_three([repr(value if not isinstance(value, str) or len(value) <= 60 else
                               f"{value[:57]}...") for value in values], ", ")
    if reason == pa.errors.SchemaErrorReason.SERIES_CONTAINS_DUPLICATES:
        return f"column '{column}' repeats {shown}: give each row its own {column}"
    check = getattr(error, "check", None)
    rule = getattr(check, "error", None) or getattr(check, "name", None) or str(check)
    return f"column '{column}' holds {shown}, which fails {rule}"


def _kind(error: Exception, column: str) -> str:
    """What a column's cells must be, in words: "a number", "a whole number", "true or false",
    else its pandera type."""
    columns = getattr(getattr(error, "schema", None), "columns", None) or {}
    dtype = getattr(columns.get(column), "dtype", None)
    kind = getattr(dtype, "type", None)
    if kind is None:
        return "of the column's type"
    if kind.is_float():
        return "a number"
    if kind.is_integer():
        return "a whole number"
    return "true or false" if kind == pl.Boolean else f"of type {kind}"


def _repeated_key(error: Exception, cases: pl.DataFrame) -> str | None:
    """A key of several columns (a schema's `unique`) repeated, with the repeated values: pandera
    names no column for it and its first line ended "columns '(...)' not unique:", the rows in a
    table on the lines after (mutation review 2026-12-06)."""
    key = [name for name in getattr(getattr(error, "schema", None), "unique", None) or []
           if name in cases.columns]
    if not key or not cases.height:
        return None
    values = cases.select(key).unique(maintain_order=True).rows()
    shown = _first_three([", ".join(map(repr, row)) for row in values], "; ")
    return (f"columns {', '.join(map(repr, key))} repeat ({shown}): give each row its own "
            f"combination of them")


def _first_three(shown: list[str], separator: str) -> str:
    """The first three of the values a refusal names, and "..." when there are more."""
    return separator.join(shown[:3]) + (f"{separator}..." if len(shown) > 3 else "")
