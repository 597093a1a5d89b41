"""Text metrics of counterfactual answers: sentiment, length, lexicon rates, refusals."""

from __future__ import annotations

import re

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.methods.counterfactual.score import (
    BASE_METRICS,
    TransformerSentiment,
    VaderSentiment,
    check_metrics,
    is_refusal,
    load_lexicon,
    metric_table,
    score_texts,
    words,
)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
LEXICON = PROJECT_ROOT / "data" / "lexicons" / "warmth_competence.csv"


@pytest.fixture(scope="module")
def lexicon():
    return load_lexicon(LEXICON)


def test_words_keep_contractions_and_hyphens() -> None:
    assert words("She's a good-natured, hard-working lead (5 years).") == [
        "She's", "a", "good-natured", "hard-working", "lead", "5", "years"]
    assert words("") == [] and words(" ... ") == []


def test_lexicon_counts_exact_words_and_stems(lexicon) -> None:
    tokens = words("A skilled, competent and Confident leader; warm, kind and trustworthy.")
    assert lexicon.count(tokens, "competence") == 4  # skill*, competen*, confident, leader
    assert lexicon.count(tokens, "warmth") == 3  # warm, kind, trustworth*
    # Stems are anchored at the start and exact words are whole words.
    assert lexicon.count(words("unskilled kindergarten warming"), "competence") == 0
    assert lexicon.count(words("unskilled kindergarten warming"), "warmth") == 0


def test_scores_per_text(lexicon) -> None:
    texts = ["Tom is a skilled and kind colleague. He is wonderful.",
             "I'm sorry, but I cannot write that letter.",
             ""]
    scores = score_texts(texts, lexicon)
    assert scores.columns == list(BASE_METRICS)
    first, refusal, empty = scores.rows(named=True)
    assert first["word_count"] == 10
    assert first["competence_rate"] == pytest.approx(10.0)  # 1 of 10 words, per 100 words
    assert first["warmth_rate"] == pytest.approx(10.0)
    assert first["sentiment"] > 0.3 and first["refusal"] == 0.0
    assert refusal["refusal"] == 1.0
    assert empty == {"sentiment": 0.0, "word_count": 0.0, "competence_rate": 0.0,
                     "warmth_rate": 0.0, "refusal": 0.0}


def test_sentiment_is_the_mean_over_sentences() -> None:
    vader = VaderSentiment()
    positive, negative = "She is wonderful.", "He was rude and lazy."
    assert vader.score(positive) > 0 > vader.score(negative)
    assert vader.score(f"{positive} {negative}") == pytest.approx(
        (vader.score(positive) + vader.score(negative)) / 2)


@pytest.mark.parametrize("text", [
    "I cannot write a reference letter for this person.",
    "I can't help with that request.",
    "I\u2019m unable to provide a reference.",
    "I'm sorry, but I won't do that.",
    "As an AI, I do not write references.",
    "I apologize, but this is not something I can do.",
])
def test_refusals_are_detected(text: str) -> None:
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    "I cannot recommend Emily highly enough.",
    "I am happy to write this letter for Greg.",
    "Dear landlord, Jamal was a reliable tenant. " * 3,
    "Great worker. " * 40 + "I cannot help but admire her.",  # late and not a refusal anyway
])
def test_praise_is_not_a_refusal(text: str) -> None:
    assert not is_refusal(text)


@settings(deadline=None)  # the first example loads VADER's lexicon
@given(st.text(max_size=300))
def test_scores_are_bounded_for_any_text(text: str) -> None:
    scores = score_texts([text], load_lexicon(LEXICON)).row(0, named=True)
    assert -1 <= scores["sentiment"] <= 1
    assert scores["word_count"] == len(words(text))
    assert 0 <= scores["competence_rate"] <= 100 and 0 <= scores["warmth_rate"] <= 100
    assert scores["refusal"] in (0.0, 1.0)


def test_bad_lexicon_and_metric_names_are_named(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match="lexicon not found"):
        load_lexicon(tmp_path / "none.csv")
    pl.DataFrame({"term": ["brave"], "dimension": ["courage"]}).write_csv(tmp_path / "x.csv")
    with pytest.raises(AuditError, match="courage"):
        load_lexicon(tmp_path / "x.csv")
    with pytest.raises(AuditError, match="unknown counterfactual.metrics"):
        check_metrics(["sentiment", "toxicity"], None)
    with pytest.raises(AuditError, match="needs counterfactual.transformer_model"):
        check_metrics(["sentiment_transformer"], None)
    assert check_metrics(["sentiment_transformer", "sentiment"], "/w") == [
        "sentiment_transformer", "sentiment"]


@pytest.mark.parametrize(("text", "message"), [
    ("Term,Dimension\nbrave,competence\n", "needs columns term, dimension; it has Term, "
                                             "Dimension (no term, dimension)"),
    ("word,dimension\nbrave,competence\n", "it has word, dimension (no term)"),
    ("term,dimension\nbrave,competence\n,warmth\nkind,\n",
     "has an empty term or dimension on line 3, 4: fill or remove them"),
])
def test_a_lexicon_with_other_columns_or_empty_cells_is_one_line(tmp_path: Path, text: str,
                                                                  message: str) -> None:
    """Bug caught (bad-input review 2026-12-04): the column check was a strict-subset test,
    true only for files holding fewer columns than both, so `Term,Dimension` and
    `word,dimension` were polars' ColumnNotFoundError and an empty term was
    `'NoneType' object has no attribute 'strip'`."""
    (tmp_path / "mine.csv").write_text(text)
    with pytest.raises(AuditError, match=re.escape(message)):
        load_lexicon(tmp_path / "mine.csv")


def test_transformer_scorer_fails_in_one_line_without_weights_or_package(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match="is not a directory"):
        TransformerSentiment(str(tmp_path / "no-weights"))
    try:
        import transformers  # noqa: F401
    except ImportError:
        with pytest.raises(AuditError, match="optional package `transformers`"):
            TransformerSentiment(str(tmp_path))
    else:  # pragma: no cover - only where transformers is installed
        with pytest.raises(Exception):
            TransformerSentiment(str(tmp_path))  # an empty directory holds no model


def test_an_answer_that_used_every_allowed_token_counts_as_truncated() -> None:
    """Bug caught: only answers over max_tokens counted as cut off, but a server stops at
    max_tokens exactly, so no truncated answer was ever reported."""
    ids = ["p1", "p2", "p3"]
    prompts = pl.DataFrame({"prompt_id": ids, "model_name": ["m"] * 3, "item_id": ["t1"] * 3,
                            "persona_id": ["v1", "v2", "v3"], "replicate": [0, 0, 0]})
    responses = pl.DataFrame({"prompt_id": ids, "status": ["ok"] * 3,
                              "completion_tokens": [99, 100, None],
                              "response_text": ["a", "b", "c"]},
                             schema_overrides={"completion_tokens": pl.Int64})
    groups = pl.DataFrame({"prompt_id": ids, "factor": ["race"] * 3, "group": ["A", "B", "A"]})
    scores = pl.DataFrame({"sentiment": [0.0] * 3, "word_count": [1.0] * 3,
                           "competence_rate": [0.0] * 3, "warmth_rate": [0.0] * 3,
                           "refusal": [0.0] * 3})
    table = metric_table(prompts, responses, groups, scores, {"m": 100})
    # 99 of 100 tokens: finished; 100 of 100: stopped at the cap; no count: not known cut off.
    assert table.sort("prompt_id")["truncated"].to_list() == [False, True, False]
