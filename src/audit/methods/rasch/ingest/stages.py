"""The Rasch audit's first three stages for answers collected elsewhere (`ingest.input` set).

design reads the answers file into the prompts table, respond into the responses table, and score
labels them: a row that came with a decision (or option log-probabilities) keeps it, a row with
answer text goes to the configured judge like a generated answer. The analyse and report stages
are the Rasch method's own, so an imported audit has the same fit, report, MLflow run and verdict.
The Rasch method (method.py) switches to these stages when `ingest.input` is set, so
`python -m audit.ingest` and `dvc repro` run the same code.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import polars as pl

from audit.config import ModelConfig
from audit.data_files import read_users_table
from audit.errors import AuditError
from audit.logs import counted
from audit.methods.configs import AuditConfig
from audit.methods.rasch.ingest.formats import file_format, read_answers
from audit.methods.rasch.ingest.tables import (
    blank_as_null,
    decided_labels,
    file_digest,
    number_replicates,
    prompts_table,
    resolve_items,
    resolve_personas,
    responses_table,
    with_prompt_ids,
)
from audit.methods.rasch.ingest.values import check_decisions_agree
from audit.methods.rasch.schemas import (IMPORTED_DECISIONS_FIX, GoldResultSchema,
                                         LabelSchema, VoteSchema)
from audit.methods.rasch.score import check_judge_failures, empty_gold, judge_stage
from audit.schemas import ItemSchema, PersonaTableSchema, PromptSchema, ResponseSchema, validate
from audit.tables import (
    missing_file,
    read_frame,
    read_metadata,
    read_table,
    require_columns,
    required_columns,
    write_table,
)

log = logging.getLogger(__name__)

IMPORTED_BACKEND = "imported"
# The key under which the design and respond stages record, in their tables' parquet metadata,
# the sha256 of the answers file they read: the score and report stages re-read the file and
# check it is the same one (check_answers_unchanged).
ANSWERS_DIGEST = "answers.sha256"


def answers_path(cfg: AuditConfig) -> Path:
    path = Path(cfg.ingest.input or "")
    if not path.is_file():
        raise AuditError(missing_file(path, "answers file", "check ingest.input (a path from "
                                      "the folder you run in)"))
    return path


def persona_table(path: Path) -> pl.DataFrame:
    """ingest.personas_file, its cells trimmed and blank cells missing before the schema reads
    them, as persona files and answers are ("bw, explicit" after a comma was a raw schema error)."""
    frame = read_frame(path, "persona table", "check ingest.personas_file", as_text=True)
    # Before the schema: pandera casts the columns it expects before it checks they exist, so a
    # missing one was polars' ColumnNotFoundError and a 90-line traceback (as for persona files).
    require_columns(frame, required_columns(PersonaTableSchema), path, "persona table",
                    "add the missing columns (a personas_file has persona_id, kind, descriptor, "
                    "gender and race; descriptor may be left out; see docs/ingest.md), or point "
                    "ingest.personas_file at another file")
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return validate(blank_as_null(frame, tuple(text)), PersonaTableSchema,
                    f"persona table ({path})")


def item_bank(cfg: AuditConfig) -> pl.DataFrame:
    """items.bank as text, as the answers are: an id such as "001" stays "001" on both sides of
    the join (inferred as a number, the schema would make it "1" and refuse the answers' "001")."""
    return read_users_table(cfg.items.bank, ItemSchema, "item bank", "items.bank")


def imported_answers(cfg: AuditConfig, bank: pl.DataFrame | None = None) -> pl.DataFrame:
    """The answers file with items, personas, replicates and prompt ids resolved. `bank`: the
    item bank when the caller has read it already."""
    bank = item_bank(cfg) if bank is None else bank
    personas = (persona_table(Path(cfg.ingest.personas_file))
                if cfg.ingest.personas_file else None)
    # With a persona table the attributes come from it, not from the answers' columns.
    answers = read_answers(answers_path(cfg), cfg.ingest.format, cfg.ingest.model,
                           () if personas is not None else tuple(cfg.fit.attributes))
    answers = resolve_personas(resolve_items(answers, bank, cfg.items.bank), personas)
    return with_prompt_ids(number_replicates(answers))


def with_imported_models(cfg: AuditConfig) -> AuditConfig:
    """`cfg` whose audited models are the models the answers name, each with the imported
    backend (which identifies it and asks it nothing), so that the report, the run's name and its
    tags name them as they name generated runs' models. The answers are resolved in full here, so
    a file the stages would refuse (an unknown item, a persona without attributes, a malformed
    value) is refused before the run begins."""
    models = sorted(set(imported_answers(cfg)["model"].to_list()))
    return replace(cfg, model={name: ModelConfig(backend=IMPORTED_BACKEND, model=name)
                               for name in models})


def answers_digest(cfg: AuditConfig) -> str:
    return file_digest(answers_path(cfg).read_bytes())


def check_answers_unchanged(cfg: AuditConfig, prompts_path: Path, responses_path: Path) -> str:
    """The sha256 of the answers file the design stage read, after checking that the respond
    stage read the same file and that it is unchanged now; one line naming the change and the
    fix. The score stage re-reads the file for its decisions, so a file edited, re-exported or
    re-ordered between stages (`python -m audit.stages`) would otherwise label the design's
    prompts with other answers, and the report would name the new file's digest."""
    current = answers_digest(cfg)
    check_read_by(cfg, prompts_path, "prompts", "design", current)
    check_read_by(cfg, responses_path, "responses", "respond", current)
    return current


def check_read_by(cfg: AuditConfig, path: Path, what: str, stage: str, current: str) -> None:
    """That the table ``what`` at ``path`` records the answers file whose sha256 is ``current``
    (the file as it is now); one line naming the change and the fix."""
    recorded = read_metadata(path, what).get(ANSWERS_DIGEST)
    if recorded is None:
        raise AuditError(f"the {what} table at {path} records no answers file (written "
                         f"without ingest.input, or by an earlier version): rerun from the "
                         f"design stage")
    if recorded != current:
        raise AuditError(f"the answers file {cfg.ingest.input} changed since the {stage} "
                         f"stage read it (sha256 {recorded[:12]} -> {current[:12]}): rerun "
                         f"from the design stage")


def source_tags(cfg: AuditConfig, prompts_path: Path, responses_path: Path) -> dict[str, str]:
    """Where an imported run's answers came from, the file the design stage read (checked
    unchanged since): the MLflow tags and the report's provenance."""
    if not cfg.ingest.input:
        return {}
    path = answers_path(cfg)
    return {"answers.source": str(path),
            "answers.sha256": check_answers_unchanged(cfg, prompts_path, responses_path),
            "answers.format": file_format(path, cfg.ingest.format)}


def source_caveat(cfg: AuditConfig, prompts: pl.DataFrame, tags: dict[str, str]) -> list[str]:
    """What the report cannot know about answers it did not generate (docs/ingest.md); `tags`
    are source_tags'."""
    if not cfg.ingest.input:
        return []
    repeated = int(prompts["replicate"].max() or 0) > 0
    digest = tags["answers.sha256"]
    return [f"The answers were imported from {cfg.ingest.input} (sha256 {digest[:12]}), not "
            f"generated here: their "
            f"sampling settings (temperature, seed, system prompt) are unknown to this report"
            + ("" if repeated else ", and each respondent answered each item once, so the "
               "fit cannot tell a respondent's consistency from chance") + "."]


def design(cfg: AuditConfig, prompts_path: Path) -> None:
    digest = answers_digest(cfg)
    bank = item_bank(cfg)  # read once: the answers' items and the prompts both need it
    answers = imported_answers(cfg, bank)
    prompts = prompts_table(answers, bank)
    check_decisions_agree(decided_labels(answers, prompts), f"answers file {cfg.ingest.input}")
    check_judge_error_applies(cfg, answers, prompts)
    write_table(prompts, prompts_path, PromptSchema, "prompts", {ANSWERS_DIGEST: digest})
    log.info("ingest: %d answers from %s (%d respondents x %d items)", prompts.height,
             cfg.ingest.input, prompts["respondent_id"].n_unique(), prompts["item_id"].n_unique())
    warn_repeated_rows(answers)


def check_judge_error_applies(cfg: AuditConfig, answers: pl.DataFrame,
                              prompts: pl.DataFrame) -> None:
    """fit.judge_error=true on a file whose every answer came with its decision: no judge reads
    them, so no gold answer measures them, and the fit refused only at the analyse stage, naming
    judge settings that were already set (judge review 2026-12-02)."""
    if cfg.fit.judge_error is not True:
        return
    decided = set(decided_labels(answers, prompts)["prompt_id"].to_list())
    texts = responses_table(answers).filter((pl.col("status") == "ok")
                                            & ~pl.col("prompt_id").is_in(decided))
    if texts.is_empty():
        raise AuditError(f"fit.judge_error=true reads a judge's error rates from its gold "
                         f"answers, and no answer in {cfg.ingest.input} is text for a judge to "
                         "read (each came with its decision), so the decisions are read as "
                         f"given: leave fit.judge_error unset, or, {IMPORTED_DECISIONS_FIX}")


def warn_repeated_rows(answers: pl.DataFrame) -> None:
    """Said once a run, at the design stage: rows without a replicate number that repeat an
    earlier row in every column are read as replicates, which would double the evidence of a
    file exported twice by accident."""
    repeated = answers.filter(pl.col("repeats_earlier_row"))
    if repeated.height:
        first = repeated.row(0, named=True)
        log.warning("ingest: %d of %d answer rows repeat an earlier row in every column (first: "
                    "%s, %s, %s) and have no replicate number, so they are read as further "
                    "replicates; if the file holds the same answers twice (exported twice), "
                    "remove the copies, or number real replicates in a 'replicate' column",
                    repeated.height, answers.height, first["model"], first["persona_id"],
                    first["item_id"])


def respond(cfg: AuditConfig, prompts_path: Path, responses_path: Path) -> None:
    """The imported answers as the responses table; the answers file must be the one the
    design stage read (a file changed between the two would pair the design's prompts with
    other rows, caught only at the score stage, after a responses table was written)."""
    digest = answers_digest(cfg)
    check_read_by(cfg, prompts_path, "prompts", "design", digest)
    responses = responses_table(imported_answers(cfg))
    failed = responses.filter(pl.col("status") == "error").height
    if failed:
        log.warning("ingest: %s no answer and no decision: %s and %s no fit",
                    counted(failed, "row", ("has", "have")),
                    "it is kept as an error row" if failed == 1 else "they are kept as error rows",
                    "enters" if failed == 1 else "enter")
    write_table(responses, responses_path, ResponseSchema, "responses", {ANSWERS_DIGEST: digest})


def score(cfg: AuditConfig, prompts_path: Path, responses_path: Path, labels_path: Path,
          votes_path: Path, gold_path: Path) -> None:
    """Imported decisions as labels; answer texts through the configured judge (and the judge on
    its gold set, as in a generated audit); nothing to judge, no gold-set evaluation."""
    check_answers_unchanged(cfg, prompts_path, responses_path)
    prompts = read_table(prompts_path, PromptSchema, "prompts")
    responses = read_table(responses_path, ResponseSchema, "responses")
    decided = decided_labels(imported_answers(cfg), prompts)
    to_judge = responses.filter((pl.col("status") == "ok")
                                & ~pl.col("prompt_id").is_in(decided["prompt_id"].to_list()))
    if to_judge.height:
        judged = judge_stage(cfg, prompts.filter(pl.col("prompt_id").is_in(
            to_judge["prompt_id"].to_list())), to_judge)
        labels, votes, gold = (pl.concat([judged.labels, decided], how="vertical_relaxed"),
                               judged.votes, judged.gold)
    else:
        labels = decided
        votes = pl.DataFrame(schema={"answer_id": pl.Utf8, "judge": pl.Utf8, "label": pl.Utf8,
                                     "rationale": pl.Utf8})
        gold = empty_gold()
    log.info("ingest: %d decisions imported, %d answers judged", decided.height, to_judge.height)
    write_table(labels, labels_path, LabelSchema, "labels")
    write_table(votes, votes_path, VoteSchema, "judge votes")
    write_table(gold, gold_path, GoldResultSchema, "judge gold-set results")
    if to_judge.height:
        check_judge_failures(cfg, judged)
