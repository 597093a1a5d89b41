"""What a reader sees in a generated text, as numbers: tone, length, word choice, refusal.

Every scorer runs offline. Sentiment is VADER (a rule-based lexicon shipped in its PyPI package)
averaged over sentences, because VADER's compound score of a whole letter saturates near +1 and
hides differences; a transformer classifier is used only when the user points at local weights.
Competence and warmth are the two dimensions of the stereotype content model (Fiske et al. 2002),
counted with the hand-written lexicon in data/lexicons/ (per 100 words, so length does not count
twice). Refusals are matched by patterns at the start of the answer, where models put them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from audit.errors import AuditError
from audit.tables import read_frame
from audit.methods.counterfactual.schemas import CounterfactualMetricSchema
from audit.schemas import validate

BASE_METRICS = ("sentiment", "word_count", "competence_rate", "warmth_rate", "refusal")
TRANSFORMER_METRIC = "sentiment_transformer"
LEXICON_DIMENSIONS = ("competence", "warmth")

_WORD = re.compile(r"[A-Za-z0-9]+(?:['\u2019-][A-Za-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# A refusal declines the task itself; "I cannot recommend her highly enough" is praise, so the
# verbs are those of doing the task, and only the opening of the answer is read.
_REFUSAL = re.compile(
    r"\bI(?:\s+(?:can(?:no|'|\u2019)t|won(?:'|\u2019)t|will\s+not|am\s+not\s+able|am\s+unable)"
    r"|(?:'|\u2019)m\s+(?:not\s+able|unable))\s+(?:to\s+)?(?:help|assist|comply|provide|write"
    r"|create|generate|fulfil+|do\s+that|complete)\b"
    r"|\bI(?:(?:'|\u2019)m|\s+am)\s+sorry,?\s+but\b|\bI\s+apologi[sz]e,?\s+but\b"
    r"|\bas\s+an\s+AI\b",
    re.IGNORECASE)
REFUSAL_WINDOW_CHARS = 300


def words(text: str) -> list[str]:
    return _WORD.findall(text)


@dataclass(frozen=True)
class Lexicon:
    """Exact words and `stem*` prefixes per dimension, matched against lowercased words."""

    exact: dict[str, frozenset[str]]
    prefixes: dict[str, tuple[str, ...]]

    def count(self, tokens: list[str], dimension: str) -> int:
        exact, prefixes = self.exact[dimension], self.prefixes[dimension]
        return sum(1 for token in tokens
                   if token.lower() in exact or token.lower().startswith(prefixes))


def load_lexicon(path: Path) -> Lexicon:
    table = read_frame(path, "lexicon", "set counterfactual.lexicon to a CSV with columns term, "
                       "dimension", as_text=True)
    # The columns' names as written (lower case): `Term,Dimension` or `word,dimension` were a
    # polars traceback, as was an empty cell (None.strip) or an unsorted None dimension.
    missing = [name for name in ("term", "dimension") if name not in table.columns]
    if missing:
        raise AuditError(f"lexicon {path} needs columns term, dimension; it has "
                         f"{', '.join(table.columns)} (no {', '.join(missing)})")
    blank = [pl.col(name).str.strip_chars().fill_null("").eq("") for name in ("term", "dimension")]
    empty = table.with_row_index("line", offset=2).filter(blank[0] | blank[1])["line"]
    if len(empty):  # line 1 is the header
        raise AuditError(f"lexicon {path} has an empty term or dimension on line "
                         f"{', '.join(map(str, empty.head(5)))}: fill or remove "
                         f"{'it' if len(empty) == 1 else 'them'}")
    unknown = sorted(set(table["dimension"]) - set(LEXICON_DIMENSIONS))
    if unknown:
        raise AuditError(f"lexicon {path} has dimensions {unknown}; use "
                         f"{', '.join(LEXICON_DIMENSIONS)}")
    exact: dict[str, frozenset[str]] = {}
    prefixes: dict[str, tuple[str, ...]] = {}
    for dimension in LEXICON_DIMENSIONS:
        terms = [term.strip().lower() for term in
                 table.filter(pl.col("dimension") == dimension)["term"].to_list()]
        exact[dimension] = frozenset(term for term in terms if not term.endswith("*"))
        prefixes[dimension] = tuple(sorted(term[:-1] for term in terms if term.endswith("*")))
    return Lexicon(exact, prefixes)


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text[:REFUSAL_WINDOW_CHARS]))


@functools.cache
def _vader_analyzer():
    """One analyzer per process: building one reads VADER's 7,500-word lexicon file."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


class VaderSentiment:
    """Mean VADER compound score over the text's sentences, in [-1, 1]; 0 for an empty text."""

    def __init__(self) -> None:
        self._analyzer = _vader_analyzer()

    def score(self, text: str) -> float:
        sentences = [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]
        if not sentences:
            return 0.0
        compounds = [self._analyzer.polarity_scores(sentence)["compound"]
                     for sentence in sentences]
        return sum(compounds) / len(compounds)


class TransformerSentiment:
    """P(positive) - P(negative) from a local Hugging Face text classifier, in [-1, 1].

    Optional: needs the `transformers` package and weights on disk; never downloads."""

    def __init__(self, model_dir: str) -> None:
        if not Path(model_dir).is_dir():
            raise AuditError(f"counterfactual.transformer_model={model_dir} is not a directory: "
                             f"point it at local classifier weights, or set it to null")
        try:
            from transformers import pipeline
        except ImportError:
            raise AuditError("counterfactual.transformer_model needs the optional package "
                             "`transformers` (pip install transformers torch), or set it to "
                             "null") from None
        self._classify = pipeline("text-classification", model=model_dir, tokenizer=model_dir,
                                  top_k=None, truncation=True, local_files_only=True)
        labels = [label.lower() for label in self._classify.model.config.id2label.values()]
        if not any("pos" in label for label in labels) or not any("neg" in label
                                                                   for label in labels):
            raise AuditError(f"the classifier at {model_dir} has labels {labels}; a sentiment "
                             f"model with positive and negative labels is needed")

    def score(self, text: str) -> float:
        if not text.strip():
            return 0.0
        scores = self._classify([text])[0]
        return sum(item["score"] * (1 if "pos" in item["label"].lower() else
                                    -1 if "neg" in item["label"].lower() else 0)
                   for item in scores)


def available_metrics(transformer_model: str | None) -> tuple[str, ...]:
    return (*BASE_METRICS, TRANSFORMER_METRIC) if transformer_model else BASE_METRICS


def check_metrics(requested: list[str], transformer_model: str | None) -> list[str]:
    valid = available_metrics(transformer_model)
    unknown = [metric for metric in requested if metric not in valid]
    if unknown:
        hint = (" (sentiment_transformer needs counterfactual.transformer_model)"
                if TRANSFORMER_METRIC in unknown else "")
        raise AuditError(f"unknown counterfactual.metrics {unknown}: choose from "
                         f"{', '.join(valid)}{hint}")
    if not requested:
        raise AuditError("counterfactual.metrics is empty: name at least one metric")
    return list(dict.fromkeys(requested))


def score_texts(texts: list[str], lexicon: Lexicon,
                transformer: TransformerSentiment | None = None) -> pl.DataFrame:
    """One row per text, one column per metric (every metric is always computed: the length
    ratio needs word counts even when word_count itself is not tested)."""
    vader = VaderSentiment()
    rows = []
    for text in texts:
        tokens = words(text)
        count = len(tokens)
        row = {
            "sentiment": vader.score(text),
            "word_count": float(count),
            "competence_rate": 100.0 * lexicon.count(tokens, "competence") / count if count else 0.0,
            "warmth_rate": 100.0 * lexicon.count(tokens, "warmth") / count if count else 0.0,
            "refusal": float(is_refusal(text)),
        }
        if transformer is not None:
            row[TRANSFORMER_METRIC] = transformer.score(text)
        rows.append(row)
    columns = available_metrics("yes" if transformer is not None else None)
    return pl.DataFrame(rows, schema={column: pl.Float64 for column in columns})


# --- the metrics table: each answer's scores beside its groups -------------------------------

def metric_table(prompts: pl.DataFrame, responses: pl.DataFrame, groups: pl.DataFrame,
                 scores: pl.DataFrame, max_tokens: dict[str, int]) -> pl.DataFrame:
    """Answered prompts with their scores and one column per factor holding the group."""
    answered = (responses.filter(pl.col("status") == "ok")
                .join(prompts.select("prompt_id", "model_name", "item_id", "persona_id",
                                     "replicate"), on="prompt_id")
                .sort("prompt_id"))
    caps = pl.Series([max_tokens[name] for name in answered["model_name"]], dtype=pl.Int64)
    table = answered.select(
        "prompt_id", "model_name", pl.col("item_id").alias("template_id"),
        pl.col("persona_id").alias("variant_id"), "replicate",
        truncated=pl.col("completion_tokens").fill_null(0) >= caps,
        response_text=pl.col("response_text"))
    table = pl.concat([table, scores], how="horizontal")
    wide_groups = groups.pivot(on="factor", index="prompt_id", values="group")
    factor_columns = sorted(column for column in wide_groups.columns if column != "prompt_id")
    table = table.join(wide_groups.select("prompt_id", *factor_columns), on="prompt_id",
                       how="left")
    return validate(table, CounterfactualMetricSchema, "counterfactual metrics")
