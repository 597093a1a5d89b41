"""The DIF item bank: math word problems and logic puzzles whose answers are known exactly.

Items are generated from templates by a seeded generator, so a bank is reproducible from its seed
and every answer is computed, never typed. Each (dataset, form, difficulty) cell draws from its
own random stream, so asking for fewer cells or more items in one cell leaves the other cells'
items unchanged. Users can add their own question/answer pairs from a CSV (`load_custom_items`).

Forms: `free` (the model writes the answer) and `choice` (lettered options, the model writes a
letter). Answer types: `number` (compared numerically), `word` (one of a closed set of
`candidates`: names, yes/no, weekdays) and `letter` (a multiple-choice option).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from audit.errors import AuditError, did_you_mean
# The bank writes answers with the extractor's own number reading and writing, so they compare equal.
from audit.methods.dif.schemas import FORMS
from audit.methods.dif.score import number_text, parse_number

DATASETS: tuple[str, ...] = ("math", "logic")
DIFFICULTIES: tuple[int, ...] = (1, 2, 3)
LETTERS = "ABCDEFGH"
ITEM_COLUMNS = ["item_id", "dataset", "form", "difficulty", "template", "question", "answer",
                "answer_type", "answer_text", "options", "candidates"]

NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivan", "Jade", "Kofi",
         "Lena", "Mateo", "Nia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tariq", "Uma", "Vera")
OBJECTS = ("apples", "pencils", "stickers", "marbles", "books", "cookies", "stamps", "shells")
NONSENSE = ("blickets", "wugs", "daxes", "feps", "toves", "zorbs", "glims", "snarps")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Problem:
    """One generated problem before it is put in a form: its stem, answer and plausible slips."""

    template: str
    stem: str
    answer: str
    answer_type: str  # number | word
    distractors: tuple[str, ...]  # wrong answers a careless solver might give, for choice form
    candidates: tuple[str, ...] = field(default=())  # the closed answer set of a word answer


def _numeric(template: str, stem: str, answer: float, slips: Sequence[float]) -> Problem:
    wrong = []
    for slip in [*slips, answer + 1, answer - 1, answer + 2, answer + 10, answer - 10, answer * 2]:
        text = number_text(slip)
        if slip != answer and text not in wrong:
            wrong.append(text)
    return Problem(template, stem, number_text(answer), "number", tuple(wrong))


# --- math ----------------------------------------------------------------------------------------

def _math_1(rng: random.Random) -> Problem:
    name, things = rng.choice(NAMES), rng.choice(OBJECTS)
    kind = rng.choice(("add", "subtract", "multiply"))
    if kind == "add":
        a, b = rng.randint(3, 20), rng.randint(2, 15)
        return _numeric("math_add", f"{name} has {a} {things}. {name} gets {b} more. How many "
                        f"{things} does {name} have now?", a + b, [a - b, a * b])
    if kind == "subtract":
        a = rng.randint(10, 30)
        b = rng.randint(2, a - 2)
        return _numeric("math_subtract", f"{name} had {a} {things} and gave {b} of them to a "
                        f"friend. How many {things} does {name} have left?", a - b, [a + b])
    a, b = rng.randint(2, 9), rng.randint(2, 9)
    return _numeric("math_multiply", f"There are {a} boxes with {b} {things} in each box. How many "
                    f"{things} are there in total?", a * b, [a + b])


def _math_2(rng: random.Random) -> Problem:
    name, things = rng.choice(NAMES), rng.choice(OBJECTS)
    kind = rng.choice(("packs", "wages", "share"))
    if kind == "packs":
        a, b = rng.randint(3, 9), rng.randint(4, 12)
        c = rng.randint(2, a * b - 1)
        return _numeric("math_packs", f"{name} buys {a} packs of {things} with {b} {things} in "
                        f"each pack, then uses {c} of them. How many {things} are left?",
                        a * b - c, [a * b, a + b - c, a * b + c])
    if kind == "wages":
        a, b, c = rng.randint(8, 25), rng.randint(2, 8), rng.randint(2, 8)
        return _numeric("math_wages", f"{name} earns {a} dollars an hour and works {b} hours on "
                        f"Monday and {c} hours on Tuesday. How many dollars does {name} earn in "
                        f"the two days?", a * (b + c), [a * b + c, a * b, a + b + c])
    b, share, c = rng.randint(2, 6), rng.randint(3, 9), rng.randint(1, 5)
    a = b * share
    return _numeric("math_share", f"{a} {things} are shared equally among {b} children. Then "
                    f"each child gets {c} more. How many {things} does each child have now?",
                    share + c, [a + c, share, a // b - c])


def _math_3(rng: random.Random) -> Problem:
    kind = rng.choice(("discount", "distance", "temperature", "population"))
    if kind == "discount":
        price, percent = 20 * rng.randint(2, 15), rng.choice((10, 15, 20, 25, 30, 40))
        sale = price - price * percent / 100
        return _numeric("math_discount", f"A jacket costs ${price}. It is sold at a {percent}% "
                        f"discount. What is the sale price in dollars?", sale,
                        [price * percent / 100, price - percent, price + price * percent / 100])
    if kind == "distance":
        speed, hours = 10 * rng.randint(4, 9), rng.choice((1.5, 2.5, 3.5, 4.5))
        return _numeric("math_distance", f"A car travels at {speed} km per hour for {hours} "
                        f"hours. How many kilometres does it travel?", speed * hours,
                        [speed * int(hours), speed + hours, speed * (hours + 1)])
    if kind == "temperature":
        start, rise, fall = -rng.randint(3, 15), rng.randint(4, 12), rng.randint(5, 20)
        return _numeric("math_temperature", f"At midnight the temperature was {start} degrees "
                        f"Celsius. By noon it had risen by {rise} degrees, and by evening it had "
                        f"fallen by {fall} degrees from noon. What was the temperature in the "
                        f"evening, in degrees Celsius?", start + rise - fall,
                        [-start + rise - fall, start + rise + fall, start - rise + fall])
    residents = rng.randint(8, 60) * 1000 + rng.randint(1, 999)
    left, arrived = rng.randint(500, 3000), rng.randint(500, 3000)
    return _numeric("math_population", f"A town had {residents:,} residents. During the year "
                    f"{left:,} people moved away and {arrived:,} people moved in. How many "
                    f"residents does the town have now?", residents - left + arrived,
                    [residents + left - arrived, residents - left, residents + arrived])


# --- logic ---------------------------------------------------------------------------------------

def _word(template: str, stem: str, answer: str, candidates: Sequence[str]) -> Problem:
    others = tuple(candidate for candidate in candidates if candidate != answer)
    return Problem(template, stem, answer, "word", others, tuple(candidates))


def _ordering(rng: random.Random, size: int) -> Problem:
    people = rng.sample(NAMES, size)  # tallest first
    trait, more, most, least = rng.choice((("taller", "taller than", "tallest", "shortest"),
                                           ("older", "older than", "oldest", "youngest")))
    facts = [f"{people[i]} is {more} {people[i + 1]}." for i in range(size - 1)]
    rng.shuffle(facts)
    if size == 3:
        asked, answer = rng.choice(((most, people[0]), (least, people[-1])))
        question = f"Who is the {asked}?"
    else:
        asked, answer = rng.choice(((f"second {most}", people[1]),
                                    (f"second {least}", people[-2])))
        question = f"Who is the {asked}?"
    return _word(f"logic_order_{size}", " ".join([*facts, question]), answer, sorted(people))


def _sequence(rng: random.Random, kind: str) -> Problem:
    if kind == "arithmetic":
        start, step = rng.randint(1, 20), rng.randint(2, 9)
        terms = [start + step * i for i in range(5)]
        slips = [terms[-2] + step + 1, terms[-2] + step - 1, terms[-2] + 2 * step]
    elif kind == "geometric":
        start, ratio = rng.randint(1, 5), rng.randint(2, 4)
        terms = [start * ratio ** i for i in range(5)]
        slips = [terms[-2] + (terms[-2] - terms[-3]), terms[-2] * (ratio + 1), terms[-2] + ratio]
    else:  # growing differences: 1, 2, 3, ... added in turn
        start, first = rng.randint(1, 10), rng.randint(1, 4)
        terms = [start]
        for i in range(4):
            terms.append(terms[-1] + first + i)
        slips = [terms[-2] + first + 2, terms[-2] + first + 4, terms[-2] + (terms[-2] - terms[-3])]
    shown = ", ".join(str(term) for term in terms[:-1])
    return _numeric(f"logic_sequence_{kind}", f"What number comes next in the sequence {shown}?",
                    terms[-1], slips)


# (premise 1, premise 2, conclusion, valid?) with A, B, C standing for three nonsense words.
SYLLOGISMS = (
    ("All {A} are {B}.", "All {B} are {C}.", "all {A} are {C}", True),
    ("All {A} are {B}.", "Some {B} are {C}.", "some {A} are {C}", False),
    ("No {A} are {B}.", "All {C} are {A}.", "no {C} are {B}", True),
    ("All {A} are {B}.", "No {C} are {B}.", "no {A} are {C}", True),
    ("Some {A} are {B}.", "Some {B} are {C}.", "some {A} are {C}", False),
    ("All {A} are {B}.", "All {C} are {B}.", "all {A} are {C}", False),
)


def _syllogism(rng: random.Random) -> Problem:
    first, second, conclusion, valid = rng.choice(SYLLOGISMS)
    words = dict(zip("ABC", rng.sample(NONSENSE, 3)))
    stem = (f"{first.format(**words)} {second.format(**words)} Does it follow that "
            f"{conclusion.format(**words)}? Answer yes or no.")
    return _word("logic_syllogism", stem, "yes" if valid else "no", ("no", "yes"))


def _membership(rng: random.Random) -> Problem:
    name = rng.choice(NAMES)
    kind, group = rng.sample(NONSENSE, 2)
    if rng.random() < 0.5:
        stem = (f"All {kind} are {group}. {name}'s pet is one of the {kind}. Is {name}'s pet one "
                f"of the {group}? Answer yes or no.")
        return _word("logic_membership", stem, "yes", ("no", "yes"))
    stem = (f"All {kind} are {group}. {name}'s pet is one of the {group}. Must {name}'s pet be one "
            f"of the {kind}? Answer yes or no.")
    return _word("logic_membership", stem, "no", ("no", "yes"))


def _weekday(rng: random.Random) -> Problem:
    today, days = rng.randrange(7), rng.randint(3, 24)
    answer = WEEKDAYS[(today + days) % 7]
    stem = f"Today is {WEEKDAYS[today]}. What day of the week will it be in {days} days?"
    return _word("logic_weekday", stem, answer, WEEKDAYS)


def _logic_1(rng: random.Random) -> Problem:
    kind = rng.choice(("order", "membership", "sequence"))
    if kind == "order":
        return _ordering(rng, 3)
    return _membership(rng) if kind == "membership" else _sequence(rng, "arithmetic")


def _logic_2(rng: random.Random) -> Problem:
    kind = rng.choice(("syllogism", "weekday", "sequence"))
    if kind == "syllogism":
        return _syllogism(rng)
    return _weekday(rng) if kind == "weekday" else _sequence(rng, "geometric")


def _logic_3(rng: random.Random) -> Problem:
    return _ordering(rng, 4) if rng.random() < 0.5 else _sequence(rng, "growing")


GENERATORS: dict[tuple[str, int], Callable[[random.Random], Problem]] = {
    ("math", 1): _math_1, ("math", 2): _math_2, ("math", 3): _math_3,
    ("logic", 1): _logic_1, ("logic", 2): _logic_2, ("logic", 3): _logic_3,
}


# --- forms and the bank --------------------------------------------------------------------------

def choice_question(stem: str, options: Sequence[str]) -> str:
    lines = [f"{LETTERS[index]}) {option}" for index, option in enumerate(options)]
    return "\n".join([stem, *lines])


def _as_item(problem: Problem, item_id: str, dataset: str, form: str, difficulty: int,
             rng: random.Random) -> dict[str, object]:
    row = {"item_id": item_id, "dataset": dataset, "form": form, "difficulty": difficulty,
           "template": problem.template}
    if form == "free":
        return {**row, "question": problem.stem, "answer": problem.answer,
                "answer_type": problem.answer_type, "answer_text": problem.answer,
                "options": "[]", "candidates": json.dumps(list(problem.candidates))}
    wrong = list(problem.distractors)
    rng.shuffle(wrong)
    options = [problem.answer, *wrong[:3]]
    rng.shuffle(options)
    letter = LETTERS[options.index(problem.answer)]
    return {**row, "question": choice_question(problem.stem, options), "answer": letter,
            "answer_type": "letter", "answer_text": problem.answer,
            "options": json.dumps(options), "candidates": "[]"}


def check_selection(datasets: Sequence[str], forms: Sequence[str], difficulties: Sequence[int],
                    bank: pl.DataFrame | None = None) -> None:
    """Refuse a dataset, form or difficulty that no cell has, naming it: of `bank` (a DIF item
    bank, the shipped one or a user's, whose datasets may be others), else of the generator."""
    cells = ((DATASETS, FORMS, DIFFICULTIES) if bank is None else
             tuple(sorted(bank[column].unique().to_list())
                   for column in ("dataset", "form", "difficulty")))
    for value, valid, what in zip((datasets, forms, difficulties), cells,
                                  ("dif.datasets", "dif.forms", "dif.difficulties")):
        unknown = sorted(set(value) - set(valid), key=str)
        if unknown:
            near = did_you_mean(str(unknown[0]), [str(option) for option in valid])
            raise AuditError(f"unknown {what} {unknown}{near}: choose from {list(valid)}")


def generate_items(seed: int, per_cell: int, datasets: Sequence[str] = DATASETS,
                   forms: Sequence[str] = FORMS,
                   difficulties: Sequence[int] = DIFFICULTIES) -> pl.DataFrame:
    """`per_cell` distinct problems for every (dataset, form, difficulty), sorted by item_id."""
    check_selection(datasets, forms, difficulties)
    if per_cell < 1:
        raise AuditError(f"dif.per_cell must be at least 1, got {per_cell}")
    rows = []
    for dataset in datasets:
        for form in forms:
            for difficulty in difficulties:
                rng = random.Random(f"dif-items:{seed}:{dataset}:{form}:{difficulty}")
                seen: set[str] = set()
                attempts = 0
                while len(seen) < per_cell:
                    attempts += 1
                    if attempts > 200 * per_cell:  # templates ran out of distinct problems
                        raise AuditError(f"cannot generate {per_cell} distinct {dataset} items "
                                         f"of difficulty {difficulty}: lower dif.per_cell")
                    problem = GENERATORS[(dataset, difficulty)](rng)
                    if problem.stem in seen:
                        continue
                    seen.add(problem.stem)
                    item_id = f"{dataset}_{form}_d{difficulty}_{len(seen):03d}"
                    rows.append(_as_item(problem, item_id, dataset, form, difficulty, rng))
    return pl.DataFrame(rows, schema=ITEM_SCHEMA).sort("item_id")


ITEM_SCHEMA = {"item_id": pl.Utf8, "dataset": pl.Utf8, "form": pl.Utf8, "difficulty": pl.Int64,
               "template": pl.Utf8, "question": pl.Utf8, "answer": pl.Utf8,
               "answer_type": pl.Utf8, "answer_text": pl.Utf8, "options": pl.Utf8,
               "candidates": pl.Utf8}


def select_items(bank: pl.DataFrame, datasets: Sequence[str], forms: Sequence[str],
                 difficulties: Sequence[int], per_cell: int | None) -> pl.DataFrame:
    """The shipped bank cut to the configured cells, keeping the first `per_cell` of each."""
    if per_cell is not None and per_cell < 1:
        raise AuditError(f"dif.per_cell must be at least 1 (or null for all), got {per_cell}")
    # A value no cell has selected nothing from the bank, and the rest ran without a word:
    # dif.datasets=[math,logik] audited half the items (bad-input review 2026-12-04).
    check_selection(datasets, forms, difficulties, bank)
    chosen = bank.filter(pl.col("dataset").is_in(list(datasets)) & pl.col("form").is_in(list(forms))
                         & pl.col("difficulty").is_in(list(difficulties))).sort("item_id")
    if per_cell is not None:
        chosen = chosen.group_by(["dataset", "form", "difficulty"], maintain_order=True).head(
            per_cell).sort("item_id")
    if chosen.is_empty():
        raise AuditError("no DIF items left after selecting dif.datasets, dif.forms and "
                         "dif.difficulties: widen the selection")
    return chosen


# --- user items ----------------------------------------------------------------------------------

def _difficulty(value: object, index: int, source: Path) -> int:
    """A custom item's difficulty: a whole number, `1.0` as a spreadsheet or pandas writes it
    too, 0 when empty. int() of the cell gave a traceback on "1.0" and "hard"."""
    text = str(value or "").strip()
    try:
        number = float(text) if text else 0.0
    except ValueError:
        number = math.nan
    if not number.is_integer():
        raise AuditError(f"{source}: row {index + 1}: difficulty '{text}' is not a whole number: "
                         f"give one (1, 2, 3), or leave it empty")
    return int(number)


def _custom_row(index: int, row: dict[str, object], source: Path) -> dict[str, object]:
    question = str(row.get("question") or "").strip()
    answer = str(row.get("answer") or "").strip()
    if not question or not answer:
        raise AuditError(f"{source}: row {index + 1} has an empty question or answer; every row "
                         f"needs both")
    options = [part.strip() for part in str(row.get("options") or "").split("|") if part.strip()]
    if len(options) > len(LETTERS):  # choice_question letters them A to H
        raise AuditError(f"{source}: row {index + 1} has {len(options)} options, more than the "
                         f"{len(LETTERS)} a choice question letters (A to {LETTERS[-1]}): drop "
                         f"some, or the options column for a free answer")
    base = {"item_id": str(row.get("item_id") or f"custom_{index + 1:04d}"),
            "dataset": str(row.get("dataset") or "custom"),
            "difficulty": _difficulty(row.get("difficulty"), index, source), "template": "custom"}
    if options:
        letter = answer.upper()
        if letter not in LETTERS[:len(options)]:
            if answer not in options:
                raise AuditError(f"{source}: row {index + 1}: answer '{answer}' is neither an "
                                 f"option letter nor one of the options {options}")
            letter = LETTERS[options.index(answer)]
        return {**base, "form": "choice", "question": choice_question(question, options),
                "answer": letter, "answer_type": "letter",
                "answer_text": options[LETTERS.index(letter)], "options": json.dumps(options),
                "candidates": "[]"}
    number = parse_number(answer)
    answer_type, canonical = (("number", number_text(number)) if number is not None
                              else ("word", answer))
    return {**base, "form": "free", "question": question, "answer": canonical,
            "answer_type": answer_type, "answer_text": canonical, "options": "[]",
            "candidates": "[]"}


def load_custom_items(frame: pl.DataFrame, source: Path) -> pl.DataFrame:
    """A user CSV: `question` and `answer` columns; optional `item_id`, `dataset` (default
    custom), `difficulty` and `options` (choices separated by `|`; the answer is then a letter or
    the text of one option). An answer that reads as a number is compared numerically."""
    missing = sorted({"question", "answer"} - set(frame.columns))
    if missing:
        raise AuditError(f"{source} lacks the column(s) {missing}: a DIF item CSV needs "
                         f"'question' and 'answer' (optional: item_id, dataset, difficulty, "
                         f"options)")
    rows = [_custom_row(index, row, source)
            for index, row in enumerate(frame.cast(pl.Utf8).iter_rows(named=True))]
    items = pl.DataFrame(rows, schema=ITEM_SCHEMA)
    duplicated = items.filter(pl.col("item_id").is_duplicated())["item_id"].unique().to_list()
    if duplicated:
        raise AuditError(f"{source}: duplicated item_id {sorted(duplicated)}; make them unique")
    return items.sort("item_id")
