"""Reading the answer out of a model's reply, and checking it against the item's answer.

Replies rarely obey "answer only": they say "The answer is $1,250.", "B) 19", "19 apples",
"12 + 7 = 19", "Cal is the shortest." The extractor tries the most explicit signal first (an
"answer is ..." phrase, a boxed answer, a leading option letter) and falls back to weaker ones
(the only or the last number; the only or the last answer word mentioned), and says which rule
fired, so the share of answers read by a fallback is visible in the results. A reply with no
readable answer is scored incorrect, as benchmark accuracy does, and counted as unparsed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from audit.errors import AuditError
from audit.methods.dif.schemas import DIFAnswerSchema
from audit.schemas import validate

# A number: optional sign (ASCII or Unicode minus, not after a digit or letter, so "3-5" is not
# -5), optional currency, thousands with commas, decimals, and an optional /denominator.
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<sign>[-\u2212])?[$\u20ac\u00a3]?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?P<frac>\.\d+)?"
    r"(?:\s*/\s*(?P<den>\d+))?")
_ANSWER_PHRASE = re.compile(
    r"(?:final\s+answer|correct\s+answer|correct\s+option|answer)\s*(?:is|would\s+be|will\s+be|"
    r"should\s+be|[:=])\s*:?\s*", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
# Where an open answer ends: a line break, a semicolon, or a sentence end (., ! or ? after a
# word of three or more letters whose last three are lower case, then a capital), so "St. Louis",
# "Mr. Smith", "Mrs. Dalloway", "Washington, D.C. It" and "3.5" do not end it.
_CLAUSE_END = re.compile(r"[;\n]|(?<=[a-z]{3}[.!?])\s+(?=[A-Z])")
_NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "none"})
_SMALL_NUMBERS = {word: value for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {word: 10 * (value + 2) for value, word in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}


@dataclass(frozen=True)
class Extraction:
    """The answer read from a reply (canonical text, or None) and the rule that read it."""

    value: str | None
    method: str


NONE = Extraction(None, "none")


def _numbers(text: str) -> list[float]:
    values = []
    for match in _NUMBER.finditer(text):
        integer, fraction = match.group("int"), match.group("frac")
        if integer is None and fraction is None:
            continue
        value = float((integer or "0").replace(",", "") + (fraction or ""))
        if match.group("den"):
            denominator = float(match.group("den"))
            if denominator == 0:
                continue
            value /= denominator
        values.append(-value if match.group("sign") else value)
    return values


def _number_words(text: str) -> list[float]:
    """Numbers written in words ("twenty-five", "one hundred and five"), up to the thousands."""
    values: list[float] = []
    current: float | None = None
    total = 0.0
    for token in re.findall(r"[a-z]+", text.lower().replace("-", " ")):
        if token in _SMALL_NUMBERS or token in _TENS:
            current = (current or 0) + _SMALL_NUMBERS.get(token, _TENS.get(token, 0))
        elif token == "hundred" and current is not None:
            current *= 100
        elif token == "thousand" and current is not None:
            total, current = total + current * 1000, 0
        elif token == "and" and current is not None:
            continue
        elif current is not None:
            values.append(total + current)
            current, total = None, 0.0
    if current is not None:
        values.append(total + current)
    return values


def parse_number(text: str) -> float | None:
    """The number a short text states ("$1,250.00", "-3", "3/4", "twelve"), or None."""
    found = _numbers(text) or _number_words(text)
    return found[0] if len(found) == 1 else None


def _after_answer_phrase(text: str) -> str | None:
    matches = list(_ANSWER_PHRASE.finditer(text))
    return text[matches[-1].end():] if matches else None


def number_text(value: float) -> str:
    """Canonical text of a number: no trailing .0, no exponent. The bank writes its answers with
    it and the extractor its readings, so the two always compare equal."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def extract_number(text: str) -> Extraction:
    tail = _after_answer_phrase(text)
    if tail is not None:
        found = _numbers(tail) or _number_words(tail[:40])
        if found:
            return Extraction(number_text(found[0]), "answer_phrase")
    boxed = _BOXED.findall(text)
    if boxed and _numbers(boxed[-1]):
        return Extraction(number_text(_numbers(boxed[-1])[0]), "boxed")
    found = _numbers(text)
    if len(found) == 1:
        return Extraction(number_text(found[0]), "single_number")
    if found:
        return Extraction(number_text(found[-1]), "last_number")
    words = _number_words(text)
    if words:
        return Extraction(number_text(words[-1]), "number_words")
    return NONE


def _option_matches(text: str, options: Sequence[str]) -> list[int]:
    """Options whose text the reply states: numerically for numbers, as whole words otherwise."""
    numbers = set(_numbers(text))
    lowered = text.lower()
    hits = []
    for index, option in enumerate(options):
        value = parse_number(option)
        if value is not None and re.fullmatch(r"[-\u2212$\d.,/\s]+", option.strip()):
            if any(math.isclose(value, number, rel_tol=1e-9, abs_tol=1e-9) for number in numbers):
                hits.append(index)
        elif re.search(rf"(?<!\w){re.escape(option.lower())}(?!\w)", lowered):
            hits.append(index)
    return hits


def extract_letter(text: str, options: Sequence[str]) -> Extraction:
    letters = "ABCDEFGH"[:len(options)]
    if not letters:
        return NONE
    valid = f"[{letters}]"
    tail = _after_answer_phrase(text)
    if tail is not None:
        match = re.match(rf"\W*(?:[Oo]ption\s+|[Cc]hoice\s+)?\(?({valid})\)?(?![A-Za-z])", tail)
        if match:
            return Extraction(match.group(1).upper(), "answer_phrase")
    # A leading letter: "B", "B.", "(B)", "B) 19", "B: 19"; not the article in "A train ...".
    match = re.match(rf"\W*\(?({valid})(?:(?=[^\w\s])|\s*$|\s+-)", text)
    if match is None:
        match = re.match(rf"\W*({valid})\s+(.+)", text)
        stated = options[letters.index(match.group(1))] if match else ""
        if match and not _option_matches(match.group(2)[:60], [stated]):
            match = None
    if match:
        return Extraction(match.group(1).upper(), "leading_letter")
    match = re.search(rf"(?:\b[Oo]ption\s+|\b[Cc]hoice\s+|\()({valid})\b", text)
    if match:
        return Extraction(match.group(1).upper(), "named_letter")
    hits = _option_matches(text, options)
    if len(hits) == 1:
        return Extraction(letters[hits[0]], "option_text")
    return NONE


def _mentions(text: str, candidates: Sequence[str]) -> list[str]:
    """Candidates in the order the reply mentions them (case-insensitive whole words)."""
    lowered = {candidate.lower(): candidate for candidate in candidates}
    return [lowered[word.lower()] for word in _WORD.findall(text) if word.lower() in lowered]


def extract_word(text: str, candidates: Sequence[str]) -> Extraction:
    if not candidates:  # an open answer: the phrase after "answer is", else the first line,
        tail = _after_answer_phrase(text)  # each to its first line break or semicolon
        segment = tail if tail is not None else text.strip()
        # "The answer is Lyon; Paris is the capital" (or "Lyon. Paris is ...") read "lyon paris
        # is the capital", which named Paris and was correct against it.
        cleaned = " ".join(_words(_CLAUSE_END.split(segment, maxsplit=1)[0]))
        return Extraction(cleaned, "answer_phrase" if tail is not None else "first_line") \
            if cleaned else NONE
    tail = _after_answer_phrase(text)
    if tail is not None:
        mentioned = _mentions(tail, candidates)
        if mentioned:
            return Extraction(mentioned[0].lower(), "answer_phrase")
    mentioned = _mentions(text, candidates)
    if not mentioned:
        return NONE
    # A leading answer word counts when it stands alone ("Cal.", "No, it does not follow"),
    # not when it opens a sentence about the puzzle ("Ben is taller than Cal, so ...").
    leading = re.match(r"\W*([A-Za-z]+)\s*(?:[.,!;:]|$)", text)
    if leading and leading.group(1).lower() == mentioned[0].lower():
        return Extraction(mentioned[0].lower(), "leading_word")
    if len(set(mentioned)) == 1:
        return Extraction(mentioned[0].lower(), "single_candidate")
    return Extraction(mentioned[-1].lower(), "last_candidate")


def extract(text: str, answer_type: str, options: Sequence[str] = (),
            candidates: Sequence[str] = ()) -> Extraction:
    if answer_type == "number":
        return extract_number(text)
    if answer_type == "letter":
        return extract_letter(text, options)
    if answer_type == "word":
        return extract_word(text, candidates)
    raise AuditError(f"unknown answer_type '{answer_type}': use number, word or letter")


def is_correct(extracted: str | None, answer: str, answer_type: str) -> bool:
    if extracted is None:
        return False
    if answer_type == "number":
        value, expected = parse_number(extracted), parse_number(answer)
        return (value is not None and expected is not None
                and math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-9))
    if answer_type == "letter":
        return extracted.upper() == answer.upper()
    return _asserts(_words(extracted), _words(answer))


def _words(text: str) -> list[str]:
    return _WORD.findall(text.replace("\u2019", "'").lower())


def _asserts(words: list[str], key: list[str]) -> bool:
    """Whether an open answer's words name the key without denying it or setting another answer
    beside it: "Lyon, not Paris", "Paris isn't it" and "Paris or Lyon" named Paris and were
    graded correct against it. Negation and "or" are read next to the key only, so "It's not
    Lyon, it's Paris" and "Paris, not Lyon" still name Paris."""
    if not key:
        return False
    size = len(key)
    for start in range(len(words) - size + 1):
        if words[start:start + size] != key:
            continue
        before = words[start - 1] if start else ""
        after, then = (words[start + size:start + size + 2] + ["", ""])[:2]
        denied = _negates(before) or after.endswith("n't") or (after in ("is", "was")
                                                               and _negates(then))
        beside = before in ("or", "either") or after == "or"
        if not (denied or beside):
            return True
    return False


def _negates(word: str) -> bool:
    return word in _NEGATORS or word.endswith("n't")


def grade(text: str, item: dict[str, object]) -> tuple[Extraction, bool]:
    """Extract and check one reply against one item row of the bank."""
    extraction = extract(text, str(item["answer_type"]), json.loads(str(item["options"])),
                         json.loads(str(item["candidates"])))
    return extraction, is_correct(extraction.value, str(item["answer"]), str(item["answer_type"]))


def grade_answers(prompts: pl.DataFrame, responses: pl.DataFrame,
                  items: pl.DataFrame) -> pl.DataFrame:
    """Extract and check every answer; errors stay as rows with null correctness."""
    by_item = {row["item_id"]: row for row in items.iter_rows(named=True)}
    joined = prompts.join(responses.select("prompt_id", "status", "response_text", "from_cache"),
                          on="prompt_id", how="left")
    rows = []
    for row in joined.sort("prompt_id").iter_rows(named=True):
        item = by_item[row["item_id"]]
        extracted = method = correct = None
        if row["status"] == "ok":
            extraction, correct = grade(row["response_text"] or "", item)
            extracted, method = extraction.value, extraction.method
        rows.append({key: row[key] for key in ("prompt_id", "model_name", "persona_id",
                                               "persona_kind", "persona_category", "item_id",
                                               "dataset", "form", "difficulty")}
                    | {"status": row["status"] or "error", "response_text": row["response_text"],
                       "answer": item["answer"], "extracted": extracted, "extract_method": method,
                       "correct": correct, "from_cache": bool(row["from_cache"])})
    answers = pl.DataFrame(rows, schema_overrides={"extracted": pl.Utf8, "extract_method": pl.Utf8,
                                                   "correct": pl.Boolean,
                                                   "response_text": pl.Utf8})
    return validate(answers, DIFAnswerSchema, "DIF answers")
