"""Imported answers (formats.read_answers) as the Rasch audit's own tables: prompts, responses and,
for the rows that came with a decision, labels. Pure functions: the stages (stages.py) read and
write the files.

Each row becomes one prompt (a respondent, model x persona, answering an item once) with the
item's question and options from the item bank, so the judge, the fit and the report read it as
they read a generated one. What an imported row cannot say is left visible rather than invented:
its seed is 0, its user prompt is the `prompt` column or empty, and its replicate is its order
among the same respondent's answers to the same item.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math

import polars as pl

from audit.design import prompt_id
from audit.errors import AuditError, rewritten_number
from audit.logs import counted
from audit.personas import check_level_spellings, near_spellings
from audit.methods.rasch.ingest.values import placeholders_as_missing
from audit.methods.rasch.schemas import LABELS
from audit.schemas import PERSONA_KINDS, PromptSchema, ResponseSchema, validate

log = logging.getLogger(__name__)

IMPORTED_REQUEST = "imported"
_LABEL_WORDS = {label: label for label in LABELS} | {
    "needs more information": "needs_more_information", "needs_more_info": "needs_more_information"}


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_items(answers: pl.DataFrame, bank: pl.DataFrame, bank_name: str) -> pl.DataFrame:
    """`item` as the bank's item_id: a value may be an item_id or a source_id. One line naming
    the values the bank lacks and the fix."""
    ids = {value: value for value in bank["item_id"].to_list()}
    if "source_id" in bank.columns:
        ids |= {str(source): item for source, item in
                zip(bank["source_id"].to_list(), bank["item_id"].to_list()) if source is not None}
    unknown = sorted(set(answers["item"].to_list()) - set(ids))
    if unknown:
        rewritten = rewritten_number(unknown, list(ids))
        raise AuditError(f"column 'item' of the answers has {len(unknown)} value(s) not in the "
                         f"item bank {bank_name} (first: {unknown[0]!r})" + (rewritten or (
                             ": choose the bank the answers respond to with items=NAME "
                             "(items=discrim_eval for discrim-eval) or fix the column")))
    return answers.with_columns(pl.col("item").replace_strict(ids).alias("item_id"))


PERSONA_COLUMNS = ("persona_id", "persona_kind", "gender", "race")
ATTRIBUTES = ("gender", "race")
# What one persona is in every row it answers: its attribute levels and its kind.
PERSONA_FACTS = ("gender", "race", "persona_kind")


def blank_as_null(frame: pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    """Cells trimmed of surrounding spaces (" Black" after a comma is the level "Black", not a
    group of its own), and an empty or all-space cell as missing: not a level, a persona id or
    a kind."""
    return frame.with_columns([pl.when(pl.col(column).str.strip_chars() == "").then(None)
                               .otherwise(pl.col(column).str.strip_chars()).alias(column)
                               for column in columns])


def check_agrees_with_table(joined: pl.DataFrame) -> None:
    """Answers that state a persona's gender or race against what the persona table says are
    refused: the table's levels replaced them silently, so an answers file and a table that
    disagree (bw a White man in one, a Black woman in the other) audited whichever the table
    said without a word (bad-input review 2026-12-02)."""
    for column in ("gender", "race"):
        stated, listed = pl.col(column), pl.col(f"table_{column}")
        clash = joined.filter(stated.is_not_null() & listed.is_not_null() & (stated != listed))
        if clash.height:
            first = clash.row(0, named=True)
            raise AuditError(
                f"column '{column}' of the answers says {first[column]!r} for persona "
                f"{first['persona_id']!r} where ingest.personas_file says "
                f"{first[f'table_{column}']!r} ({clash.height} rows): correct one of the two, "
                f"or drop the answers' '{column}' column to take the table's")


def resolve_personas(answers: pl.DataFrame, personas: pl.DataFrame | None) -> pl.DataFrame:
    """persona_id, persona_kind, gender and race for every row: from the persona table when one is
    given (joined on persona_id), else from the row's own columns. A row is the baseline only
    when it says so (persona_kind=baseline), and one persona has one kind and one level of each
    attribute in every row."""
    answers = placeholders_as_missing(blank_as_null(answers, PERSONA_COLUMNS), ATTRIBUTES,
                                      "the answers")
    if personas is not None:
        if answers["persona_id"].null_count() == answers.height:  # the column is absent
            raise AuditError("the answers have no 'persona_id' column (or it is empty in every "
                             "row): with ingest.personas_file every row names its persona by "
                             "the table's persona_id")
        if answers["persona_id"].null_count():
            raise AuditError("column 'persona_id' of the answers is empty in "
                             f"{counted(answers['persona_id'].null_count(), 'row')}: with "
                             f"ingest.personas_file every row names its persona")
        personas = placeholders_as_missing(blank_as_null(personas, ATTRIBUTES), ATTRIBUTES,
                                           "ingest.personas_file")
        check_table_described(personas)
        known = set(personas["persona_id"].to_list())
        unknown = sorted(set(answers["persona_id"].to_list()) - known)
        if unknown:
            raise AuditError(f"column 'persona_id' of the answers has {len(unknown)} value(s) not "
                             f"in ingest.personas_file (first: {unknown[0]!r})"
                             + (rewritten_number(unknown, sorted(known))
                                or ": add them to the persona table or fix the column"))
        table = personas.select("persona_id", pl.col("kind").alias("table_kind"),
                                pl.col("gender").alias("table_gender"),
                                pl.col("race").alias("table_race"))
        answers = answers.join(table, on="persona_id", how="left")
        check_agrees_with_table(answers)
        answers = (answers
                   .with_columns(pl.col("table_kind").alias("persona_kind"),
                                 pl.col("table_gender").alias("gender"),
                                 pl.col("table_race").alias("race"))
                   .drop("table_kind", "table_gender", "table_race"))
    elif answers["persona_id"].null_count() and answers.select(
            pl.col("gender").is_null() & pl.col("race").is_null()).to_series().all():
        raise AuditError("the answers name no personas: add a 'persona_id' column (with "
                         "ingest.personas_file=TABLE) or 'gender'/'race' columns")
    else:
        check_described(answers)
        check_named(answers)
    described = pl.col("gender").is_not_null() | pl.col("race").is_not_null()
    answers = answers.with_columns(
        pl.col("persona_kind").fill_null(pl.when(described).then(pl.lit("explicit"))
                                         .otherwise(pl.lit("baseline"))))
    answers = answers.with_columns(pl.col("persona_id").fill_null(
        pl.when(pl.col("persona_kind") == "baseline").then(pl.lit("baseline"))
        .otherwise(pl.concat_str([pl.col("race").fill_null(""), pl.col("gender").fill_null("")],
                                 separator="_")
                   .str.to_lowercase().str.replace_all(r"[^a-z0-9]+", "_").str.strip_chars("_"))))
    bad = sorted(set(answers["persona_kind"].to_list()) - set(PERSONA_KINDS))
    if bad:
        raise AuditError(f"column 'persona_kind' of the answers has {bad}: use one of "
                         f"{', '.join(PERSONA_KINDS)}")
    check_one_persona_one_value(answers)
    check_level_spellings(answers, "the answers (or ingest.personas_file)")
    for line in near_spellings(answers.unique(subset=["persona_id"]),
                               "the answers (or ingest.personas_file)"):
        log.warning("%s", line)
    return answers


def check_table_described(personas: pl.DataFrame) -> None:
    """An explicit or name persona in ingest.personas_file states its gender or race. Bug
    caught: such a row (empty cells, a short row) was joined in with no attributes, so its
    answers entered no contrast and the audit compared the groups that remained."""
    undescribed = personas.filter(pl.col("kind").is_in(["explicit", "name"])
                                  & pl.col("gender").is_null() & pl.col("race").is_null())
    if undescribed.height:
        raise AuditError(f"ingest.personas_file has {undescribed.height} explicit or name "
                         f"persona(s) that state neither gender nor race (first: "
                         f"{undescribed['persona_id'][0]!r}): fill them in, or mark the row "
                         f"kind=baseline (or null)")


def check_named(answers: pl.DataFrame) -> None:
    """Without a persona table, a row with no persona_id, gender or race is the baseline only
    when its persona_kind says so. Bug caught: such rows (blank cells, a shifted column) were
    read as baseline answers, so a file whose Black women's cells were empty fitted them as the
    baseline."""
    unnamed = answers.with_row_index("file_row", offset=1).filter(
        pl.col("persona_id").is_null() & pl.col("gender").is_null() & pl.col("race").is_null()
        & pl.col("persona_kind").ne_missing(pl.lit("baseline")))
    if unnamed.height:
        first = unnamed.row(0, named=True)
        raise AuditError(
            f"{unnamed.height} answer row(s) name no persona: 'persona_id', 'gender' and 'race' "
            f"are all empty there (first: row {first['file_row']}, item {first['item']}): fill "
            f"them in, mark the baseline's rows persona_kind=baseline, or give a null persona's "
            f"rows their persona_id")


def check_one_persona_one_value(answers: pl.DataFrame) -> None:
    """One persona_id, one kind and one level of each attribute in every row (and for every
    model). Bug caught: a persona with two genders passed the import and stopped the fit, after
    every answer was judged, with a line naming neither the persona nor the column."""
    rows = answers.with_row_index("file_row", offset=1)
    for column in PERSONA_FACTS:
        split = (rows.group_by("persona_id").agg(pl.col(column).n_unique().alias("values"))
                 .filter(pl.col("values") > 1).sort("persona_id"))
        if not split.height:
            continue
        persona = split["persona_id"][0]
        own = rows.filter(pl.col("persona_id") == persona)
        first = own.row(0, named=True)
        other = own.filter(pl.col(column).ne_missing(first[column])).row(0, named=True)
        values = ", ".join("empty" if value is None else repr(value)
                           for value in own[column].unique(maintain_order=True).to_list())
        raise AuditError(
            f"column '{column}' of the answers gives persona {persona!r} {split['values'][0]} "
            f"values ({values}; first at row {first['file_row']}, item {first['item']}, then "
            f"row {other['file_row']}, item {other['item']}): one persona has one {column}; "
            f"fix the column or give each its own persona_id")


def check_described(answers: pl.DataFrame) -> None:
    """Without a persona table, a row that names a persona but gives none of its attributes is
    refused unless it says it is a baseline or null persona: read as a baseline, a file whose
    attribute columns were missing or misspelled (`sex`, `ethnicity`) would fit no contrast and pass
    the verdict on convergence alone."""
    marked = pl.col("persona_kind").is_in(["baseline", "null"]).fill_null(False)
    undescribed = answers.filter(pl.col("persona_id").is_not_null() & pl.col("gender").is_null()
                                 & pl.col("race").is_null() & ~marked)
    if undescribed.height:
        first = undescribed.row(0, named=True)
        raise AuditError(
            f"column 'persona_id' of the answers names {undescribed['persona_id'].n_unique()} "
            f"persona(s) with no attributes in {undescribed.height} rows (first: "
            f"{first['persona_id']!r}, item {first['item']}): the columns 'gender' and 'race' "
            f"are missing or empty there, so no group could be compared; pass "
            f"personas_file=TABLE (persona_id, kind, descriptor, gender, race), name the "
            f"columns 'gender' and 'race' (any case), or mark those rows persona_kind=baseline "
            f"(or null)")


def number_replicates(answers: pl.DataFrame) -> pl.DataFrame:
    """A row without a replicate is numbered by its order among the same respondent's answers to
    the same item; a respondent answering an item twice with one replicate number is refused.
    `repeats_earlier_row` marks a row without a replicate that repeats an earlier one in every
    column: replicates by this rule, but also what a file exported twice looks like (the design
    stage warns)."""
    answers = answers.with_columns(
        (pl.col("replicate").is_null()
         & ~pl.struct([column for column in answers.columns if column != "replicate"])
         .is_first_distinct()).alias("repeats_earlier_row"))
    answers = answers.with_row_index("row").with_columns(
        pl.col("replicate").fill_null(
            pl.int_range(pl.len()).over("model", "persona_id", "item_id")))
    clash = answers.filter(pl.struct("model", "persona_id", "item_id", "replicate").is_duplicated())
    if clash.height:
        # Bug caught (bad-input probe 2026-12-07): a file without persona_id whose two texts of
        # one cell became one persona was told to number replicates it already numbered, with a
        # count of every row involved ("128 rows") rather than of the rows too many.
        first = clash.row(0, named=True)
        extra = clash.height - clash.select("model", "persona_id", "item_id", "replicate") \
            .n_unique()
        raise AuditError(
            f"{counted(extra, 'answer row')} repeat another row's model, persona, item and "
            f"replicate (first: {first['model']}, persona {first['persona_id']}, "
            f"{first['item_id']}, replicate {first['replicate']}), and a prompt has one answer: "
            f"give different personas their own persona_id (without one a persona is its gender "
            f"and race, so two texts of one cell are one persona), number further answers in "
            f"'replicate', or remove copies")
    return answers


def with_prompt_ids(answers: pl.DataFrame) -> pl.DataFrame:
    """Each answer's prompt id: a hash of where it came from, model, persona, item and replicate."""
    return answers.with_columns(
        pl.struct("model", "persona_id", "item_id", "replicate")
        .map_elements(lambda r: prompt_id(IMPORTED_REQUEST, r["model"], r["persona_id"],
                                          r["item_id"], r["replicate"]), return_dtype=pl.Utf8)
        .alias("prompt_id")).sort("row")


def prompts_table(answers: pl.DataFrame, bank: pl.DataFrame) -> pl.DataFrame:
    """One prompt per answer (with_prompt_ids), with the item's question and options."""
    items = bank.select("item_id", "domain", "question", "favourable_option",
                        "unfavourable_option")
    rows = answers.join(items, on="item_id", how="left").sort("row")
    prompts = rows.select(
        "prompt_id", pl.concat_str(["model", "persona_id"], separator="/").alias("respondent_id"),
        pl.col("model").alias("model_name"), "persona_id", "persona_kind", "gender", "race",
        "item_id", "domain", "replicate", pl.lit(0).alias("seed"), "question",
        "favourable_option", "unfavourable_option", pl.lit("").alias("system_prompt"),
        pl.col("prompt").fill_null("").alias("user_prompt"))
    return validate(prompts, PromptSchema, "imported prompts")


def responses_table(answers: pl.DataFrame) -> pl.DataFrame:
    """The answer text of each prompt (the decision's words when only a decision came, the likeliest
    option when only option log-probabilities came); a row
    with neither is an error row, kept so that nothing vanishes silently."""
    likeliest = pl.col("option_logprobs").map_elements(
        lambda scores: max((value, option) for option, value in json.loads(scores).items())[1],
        return_dtype=pl.Utf8)
    text = pl.coalesce("answer", "decision", likeliest)
    has_outcome = (text.is_not_null() | pl.col("option_logprobs").is_not_null()
                   | pl.col("p_favourable").is_not_null())
    responses = answers.sort("row").select(
        "prompt_id", (pl.lit(IMPORTED_REQUEST + ":") + pl.col("prompt_id")).alias("request_key"),
        pl.when(has_outcome).then(pl.lit("ok")).otherwise(pl.lit("error")).alias("status"),
        text.fill_null("").alias("response_text"),
        pl.when(has_outcome).then(None).otherwise(pl.lit("missing_answer")).alias("error_kind"),
        pl.when(has_outcome).then(None).otherwise(pl.lit("the row has no answer or decision"))
        .alias("error_message"),
        pl.lit(None, pl.Int64).alias("completion_tokens"),
        pl.lit(None, pl.Float64).alias("latency_s"), pl.lit(False).alias("from_cache"))
    return validate(responses, ResponseSchema, "imported responses")


def _decided_label(decision: str, favourable: str, unfavourable: str) -> str | None:
    word = " ".join(decision.strip().lower().replace("_", " ").split())
    if word in _LABEL_WORDS or word.replace(" ", "_") in _LABEL_WORDS:
        return _LABEL_WORDS.get(word) or _LABEL_WORDS[word.replace(" ", "_")]
    if word == favourable.strip().lower():
        return "favourable"
    if word == unfavourable.strip().lower():
        return "unfavourable"
    return None


def _option_probability(logprobs: dict[str, float], favourable: str,
                        unfavourable: str) -> tuple[float, float] | None:
    """P(favourable) among the two options and the probability mass on them, summed over the
    options' spellings ("yes", "Yes"), as discrim-eval's own analysis does."""
    mass = {"favourable": 0.0, "unfavourable": 0.0}
    # The bank's cells are read as written ("HIRE, REJECT" keeps " REJECT"), so its options are
    # trimmed here as _decided_label trims them.
    favourable, unfavourable = favourable.strip().lower(), unfavourable.strip().lower()
    for option, logprob in logprobs.items():
        word = option.strip().strip("\"'\u201c\u201d").lower()
        side = ("favourable" if word == favourable
                else "unfavourable" if word == unfavourable else None)
        if side:
            mass[side] += math.exp(logprob)
    total = mass["favourable"] + mass["unfavourable"]
    return (mass["favourable"] / total, min(total, 1.0)) if total > 0 else None


def check_same_prompts(answers: pl.DataFrame, prompts: pl.DataFrame) -> None:
    """The answers as read now give the prompts the design stage wrote, no more and no fewer; one
    line naming the first difference and the fix. (The answers file's digest is checked before
    this, stages.check_answers_unchanged; a changed item bank or persona table changes the ids
    too.)"""
    answered, asked = set(answers["prompt_id"].to_list()), set(prompts["prompt_id"].to_list())
    if answered == asked:
        return
    unasked = answers.filter(~pl.col("prompt_id").is_in(list(asked)))
    first = (f"first answer without one: {unasked['model'][0]}, {unasked['persona_id'][0]}, "
             f"{unasked['item_id'][0]}, replicate {unasked['replicate'][0]}" if unasked.height
             else f"first prompt without one: {sorted(asked - answered)[0]}")
    raise AuditError(f"the answers no longer match the prompts table the design stage wrote "
                     f"({len(answered - asked)} answer(s) have no prompt there, "
                     f"{len(asked - answered)} prompt(s) no answer; {first}): the answers file, "
                     f"items.bank or ingest.personas_file changed since; rerun from the design "
                     f"stage")


def decided_labels(answers: pl.DataFrame, prompts: pl.DataFrame) -> pl.DataFrame:
    """Labels of the rows that came with a decision, option log-probabilities or P(favourable)
    (the rest go to the judge); a decision beside a `p_favourable` keeps both. An unreadable
    decision is refused with the column named."""
    check_same_prompts(answers, prompts)
    rows = []
    options = prompts.select("prompt_id", "item_id", "favourable_option", "unfavourable_option")
    # Joined on the prompt id, never paired by position: the score stage re-reads the answers
    # file, and a file whose rows came back in another order would label each prompt with
    # another prompt's answer.
    paired = answers.select("row", "prompt_id", "decision", "option_logprobs",
                            "p_favourable").join(options, on="prompt_id").sort("row")
    for answer in paired.iter_rows(named=True):
        favourable, unfavourable = answer["favourable_option"], answer["unfavourable_option"]
        if answer["decision"] is not None:
            label = _decided_label(answer["decision"], favourable, unfavourable)
            if label is None:
                raise AuditError(
                    f"column 'decision' of the answers holds {answer['decision']!r} for item "
                    f"{answer['item_id']}: use favourable, unfavourable, needs_more_information, "
                    f"refusal or the item's options ({favourable}/{unfavourable})")
            rows.append({"prompt_id": answer["prompt_id"], "label": label,
                         "label_source": "imported", "rationale": "decision imported",
                         "agreement": None, "p_favourable": answer["p_favourable"],
                         "decision_mass": None})
        elif answer["option_logprobs"] is not None:
            scored = _option_probability(json.loads(answer["option_logprobs"]), favourable,
                                         unfavourable)
            if scored is None:
                raise AuditError(
                    f"column 'option_logprobs' of the answers scores neither option of item "
                    f"{answer['item_id']} ({favourable}/{unfavourable}): import the scores of "
                    f"the item's own options")
            p_favourable, mass = scored
            rows.append({"prompt_id": answer["prompt_id"],
                         "label": "favourable" if p_favourable > 0.5 else "unfavourable",
                         "label_source": "logprob",
                         "rationale": f"imported option log-probabilities: P({favourable}) "
                                      f"{p_favourable:.3f}",
                         "agreement": None, "p_favourable": p_favourable, "decision_mass": mass})
        elif answer["p_favourable"] is not None:  # a probability alone: its likelier option
            p_favourable = answer["p_favourable"]
            rows.append({"prompt_id": answer["prompt_id"],
                         "label": "favourable" if p_favourable > 0.5 else "unfavourable",
                         "label_source": "imported",
                         "rationale": f"imported P({favourable}) {p_favourable:.3f}",
                         "agreement": None, "p_favourable": p_favourable, "decision_mass": None})
    schema = {"prompt_id": pl.Utf8, "label": pl.Utf8, "label_source": pl.Utf8,
              "rationale": pl.Utf8, "agreement": pl.Float64, "p_favourable": pl.Float64,
              "decision_mass": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
