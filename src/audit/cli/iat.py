"""`python -m audit.iat import_dir=DIR output=OUT`: score word-association answers collected
elsewhere, without sending a single request.

DIR holds one CSV per model, dataset and prompt variation, named `<model>_<dataset>_<variation>.csv`
(as Bai et al.'s published GPT-4o answers are), each with one answer per row in a response
column. OUT receives `iat_scores.parquet` (one row per answer: its parse and D) and
`iat_stats.csv` (per model x category x dataset: n, the answers each scoring mode leaves out,
the answers giving every word to one group, parse rate, mean D with a bootstrap interval,
the sign-flip permutation p-value and the Benjamini-Hochberg adjusted one), plus the same per
variation and two plots. Arguments are `key=value` pairs checked against a structured config.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf

from audit.methods.configs import AuditConfig
from audit.errors import AuditError
from audit.methods.iat.config import IATConfig
from audit.logs import configure_cli_logging, counted
from audit.methods.iat.design import VARIATIONS, IATError, Stimuli, resolve_dataset
from audit.methods.iat.score import score_answers
from audit.methods.iat.analyse import check_statistics_config
from audit.methods.iat.method import IATMethod, analyse, read_stimuli
from audit.tables import read_frame
from audit.outputs import check_output
from audit.methods.iat.report import print_iat_table
from audit.methods.run import keep_earlier_run, write_config
from audit.cli import printed_help, refused_arguments

log = logging.getLogger("audit.iat")

# `0` is the header pandas gives an unnamed column, which is how Bai et al. saved the answers.
RESPONSE_COLUMNS = ("response", "0")
# The IATConfig fields that shape an import; the design fields (iterations, ...) do not apply.
ANALYSIS_KEYS = ("stimuli_file", "synonym_file", "aliases_file", "seed", "bootstrap_resamples",
                 "permutation_resamples", "confidence_level", "ci_method", "alpha",
                 "scoring")
STRING_KEYS = frozenset({"import_dir", "output", "response_column", "stimuli_file",
                         "synonym_file", "aliases_file", "ci_method", "scoring"})
# The one option whose empty value means something: no aliases.
MAY_BE_EMPTY = frozenset({"aliases_file"})
USAGE = ("usage: python -m audit.iat import_dir=DIR output=OUT [response_column=NAME "
         + " ".join(f"{key}=..." for key in ANALYSIS_KEYS) + "]")
NAMING = "name each file <model>_<dataset>_<variation>.csv"


@dataclass
class ImportCommand:
    import_dir: str = "???"
    output: str = "???"
    response_column: str | None = None  # None: the first of RESPONSE_COLUMNS the file has
    analysis: IATConfig = field(default_factory=IATConfig)


def parse_arguments(arguments: list[str]) -> ImportCommand:
    malformed = [argument for argument in arguments if "=" not in argument]
    if malformed:
        raise IATError(f"argument {malformed[0]!r} is not key=value; {USAGE}")
    design_keys = {f.name for f in fields(IATConfig)} - set(ANALYSIS_KEYS)
    for argument in arguments:
        key = argument.split("=", 1)[0]
        if key in design_keys or key.startswith("analysis."):
            raise IATError(f"{key!r} is not an option of the import (nothing is sent); {USAGE}")
    overrides = OmegaConf.create({})
    with refused_arguments(arguments, ImportCommand, IATError, USAGE,
                           {"analysis": ANALYSIS_KEYS}, MAY_BE_EMPTY):
        for argument in arguments:
            key, value = argument.split("=", 1)
            # Paths and names stay the text typed (`response_column=0`, `output=007`).
            parsed = (value if key in STRING_KEYS
                      else OmegaConf.from_dotlist([f"value={value}"])["value"])
            OmegaConf.update(overrides, f"analysis.{key}" if key in ANALYSIS_KEYS else key,
                             parsed, force_add=True)
        merged = OmegaConf.merge(OmegaConf.structured(ImportCommand), overrides)
        return OmegaConf.to_object(merged)  # type: ignore[return-value]


def parse_file_name(path: Path, datasets: list[str]) -> tuple[str, str, str]:
    """`gpt4o_mentalill_synonym.csv` -> ("gpt4o", "mental illness", "synonym"). The shortest
    model name for which the rest names a dataset wins, so model names may hold underscores."""
    parts = path.stem.split("_")
    if len(parts) < 3 or not all(parts):
        raise IATError(f"{path}: cannot read model, dataset and variation from the file name; "
                       f"{NAMING}")
    if parts[-1] not in VARIATIONS:
        raise IATError(f"{path}: unknown variation '{parts[-1]}' (known: "
                       f"{', '.join(VARIATIONS)}); {NAMING}")
    for split in range(1, len(parts) - 1):
        dataset = resolve_dataset("_".join(parts[split:-1]), datasets)
        if dataset is not None:
            return "_".join(parts[:split]), dataset, parts[-1]
    raise IATError(f"{path}: no dataset named '{'_'.join(parts[1:-1])}' (known: "
                   f"{', '.join(sorted(datasets))}); {NAMING}")


def read_answers(directory: Path, stimuli: Stimuli, response_column: str | None) -> pl.DataFrame:
    """Every CSV in the directory -> one row per answer, with the names its file carries."""
    if not directory.is_dir():
        raise IATError(f"import_dir {directory} is not a directory; pass import_dir=DIR, a folder "
                       f"of CSV files ({NAMING})")
    # Any case of the suffix (exports write NAME.CSV; audit.ingest reads them too), and no hidden
    # file (an editor's or a Mac's `.NAME.csv` copy is not a dataset's answers).
    paths = sorted(path for path in directory.iterdir() if path.suffix.lower() == ".csv"
                   and not path.name.startswith(".") and path.is_file())
    if not paths:
        raise IATError(f"no CSV file in {directory}; {NAMING}, one answer per row")
    frames = []
    candidates = (response_column,) if response_column else RESPONSE_COLUMNS
    for path in paths:
        model, dataset, variation = parse_file_name(path, list(stimuli.original))
        table = read_frame(path, "answers file", "save it as a CSV with a header row and one "
                           "answer per row in a response column", as_text=True)
        column = next((name for name in candidates if name in table.columns), None)
        if column is None:
            raise IATError(f"{path} has no response column (looked for "
                           f"{', '.join(repr(name) for name in candidates)}; its columns are "
                           f"{', '.join(repr(name) for name in table.columns)}): pass "
                           "response_column=NAME")
        if table.is_empty():
            log.warning("%s holds no answers; skipped", path)
            continue
        frames.append(pl.DataFrame({
            "model": model, "dataset": dataset, "variation": variation,
            "response_id": [f"{path.name}:{row}" for row in range(table.height)],
            "iteration": list(range(table.height)),
            "response_text": table[column],
        }, schema={"model": pl.String, "dataset": pl.String, "variation": pl.String,
                   "response_id": pl.String, "iteration": pl.Int64, "response_text": pl.String}))
    if not frames:
        raise IATError(f"the CSV files in {directory} hold no answers")
    log.info("read %s from %s in %s", counted(sum(f.height for f in frames), "answer"),
             counted(len(frames), "file"), directory)
    return pl.concat(frames)


def run(command: ImportCommand) -> pl.DataFrame:
    # OUT and the analysis settings are checked before the answers are read and scored, not by
    # a traceback (or a refusal that left iat_scores.parquet behind) after scoring.
    check_output(Path(command.output), "output=", folder=True, error=IATError)
    if Path(command.output).resolve() == Path(command.import_dir).resolve():
        # Its iat_stats.csv would be read as a dataset's answers by the next import.
        raise IATError(f"output={command.output} is import_dir: the tables written there would "
                       "be read as answers by the next import; pass output= another folder")
    check_statistics_config(command.analysis)
    stimuli = read_stimuli(command.analysis)
    answers = read_answers(Path(command.import_dir), stimuli, command.response_column)
    scores = score_answers(answers, stimuli)
    if not scores["d_score"].is_not_null().any():
        # Every table of a run would be empty or nan and the command exited 0 (the verdict said
        # NOT TESTED later): a wrong response_column reads so (bad-input review 2026-12-02).
        raise IATError(f"none of the {scores.height} answers in {command.import_dir} could be "
                       "scored (no word given a group): check that response_column names the "
                       "column holding the model's answers, and that the files are the datasets "
                       "their names say")
    # An import into a folder that holds an earlier one's tables moves them to earlier/TIME/,
    # as a run does: overwritten, they were lost without a word, and an import whose statistics
    # drew no plot left the earlier plots beside its tables.
    keep_earlier_run(IATMethod.stages, Path(command.output))
    analysis = analyse(scores, command.analysis, Path(command.output))
    # Recorded like a run's, so `python -m audit.verdict run_dir=OUT` knows it judges an IAT.
    write_config(AuditConfig(method="iat", iat=command.analysis), Path(command.output))
    print_iat_table(analysis.stats, command.analysis.confidence_level, command.analysis.alpha)
    unparsed = scores.filter(~pl.col("parsed")).height
    log.info("%d of %d answers parsed completely (%d partly or not at all); wrote %s",
             scores.height - unparsed, scores.height, unparsed,
             ", ".join(str(path) for path in analysis.files.values()))
    return analysis.stats


def main(arguments: list[str] | None = None) -> int:
    configure_cli_logging()
    arguments = sys.argv[1:] if arguments is None else arguments
    if printed_help(arguments, __doc__, USAGE):
        return 0
    try:
        run(parse_arguments(arguments))
    except AuditError as error:  # IATError, a missing data file, the schemas
        log.error("%s", str(error).splitlines()[0])
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
