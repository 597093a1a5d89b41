"""The DIF item generator: every answer is recomputed here from the question text alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.methods.dif.items import (
    GENERATORS,
    LETTERS,
    WEEKDAYS,
    Problem,
    generate_items,
    load_custom_items,
    select_items,
)
from audit.methods.dif.schemas import DIFItemSchema
from audit.schemas import validate

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SHIPPED = PROJECT_ROOT / "data" / "dif" / "items.csv"
SHIPPED_SEED, SHIPPED_PER_CELL = 20251123, 10


def _ints(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


def _solve_order(stem: str) -> str:
    """Rebuild the ranking from the "X is taller/older than Y." facts and answer the question."""
    facts = re.findall(r"(\w+) is (?:taller|older) than (\w+)\.", stem)
    people = {name for pair in facts for name in pair}
    above = {name: {a for a, b in facts if b == name} for name in people}
    ranking = []
    while above:  # topological sort: the one nobody is above comes first
        top = next(name for name, over in above.items() if not over - set(ranking))
        ranking.append(top)
        del above[top]
    question = re.search(r"Who is the (second )?(\w+)\?", stem)
    second, word = question.group(1) is not None, question.group(2)
    ordered = ranking if word in ("tallest", "oldest") else ranking[::-1]
    return ordered[1] if second else ordered[0]


def _solve_syllogism(stem: str) -> str:
    """Brute force: does the conclusion hold in every assignment of three sets over a small
    universe consistent with the premises? (Eight kinds of element cover every case.)"""
    from itertools import product

    statements = re.findall(r"\b(All|Some|No) (\w+) are (\w+)", stem, re.IGNORECASE)
    *premises, conclusion = [(q.lower(), a, b) for q, a, b in statements]
    names = sorted({n for _, a, b in statements for n in (a, b)})

    def holds(quantifier, a, b, world):
        members_a = [e for e in world if e[names.index(a)]]
        if quantifier == "all":
            return all(e[names.index(b)] for e in members_a)
        if quantifier == "some":
            return any(e[names.index(b)] for e in members_a)
        return not any(e[names.index(b)] for e in members_a)

    kinds = list(product([False, True], repeat=3))
    for mask in product([False, True], repeat=len(kinds)):
        world = [kind for kind, present in zip(kinds, mask) if present]
        if all(holds(*premise, world) for premise in premises) and not holds(*conclusion, world):
            return "no"
    return "yes"


def solve(template: str, stem: str) -> str:
    """An independent solver for each template, reading the numbers from the text."""
    n = _ints(stem)
    if template == "math_add":
        return str(n[0] + n[1])
    if template == "math_subtract":
        return str(n[0] - n[1])
    if template == "math_multiply":
        return str(n[0] * n[1])
    if template == "math_packs":
        return str(n[0] * n[1] - n[2])
    if template == "math_wages":
        return str(n[0] * (n[1] + n[2]))
    if template == "math_share":
        return str(n[0] / n[1] + n[2])
    if template == "math_discount":
        return str(n[0] * (100 - n[1]) / 100)
    if template == "math_distance":
        return str(n[0] * n[1])
    if template == "math_temperature":
        return str(n[0] + n[1] - n[2])
    if template == "math_population":
        return str(n[0] - n[1] + n[2])
    if template.startswith("logic_sequence"):
        terms = [int(t) for t in n]
        diffs = [b - a for a, b in zip(terms, terms[1:])]
        if len(set(diffs)) == 1:
            return str(float(terms[-1] + diffs[0]))
        if all(b == a * (terms[1] // terms[0]) for a, b in zip(terms, terms[1:])):
            return str(float(terms[-1] * (terms[1] // terms[0])))
        second = [b - a for a, b in zip(diffs, diffs[1:])]
        assert len(set(second)) == 1
        return str(float(terms[-1] + diffs[-1] + second[0]))
    if template.startswith("logic_order"):
        return _solve_order(stem)
    if template == "logic_syllogism":
        return _solve_syllogism(stem)
    if template == "logic_membership":
        return "yes" if stem.split("?")[0].split(". ")[-1].startswith("Is") else "no"
    if template == "logic_weekday":
        today = next(d for d in WEEKDAYS if f"Today is {d}" in stem)
        return WEEKDAYS[(WEEKDAYS.index(today) + int(n[0])) % 7]
    raise AssertionError(f"no solver for {template}")


def _same(expected: str, answer_text: str) -> bool:
    try:
        return abs(float(expected) - float(answer_text)) < 1e-9
    except ValueError:
        return expected == answer_text


def _check_bank(items: pl.DataFrame) -> None:
    validate(items, DIFItemSchema, "generated items")
    for row in items.iter_rows(named=True):
        stem = row["question"].split("\nA) ")[0]
        assert _same(solve(row["template"], stem), row["answer_text"]), row
        if row["form"] == "choice":
            options = json.loads(row["options"])
            assert len(options) == len(set(options)) >= 2
            assert row["question"].count("\n") == len(options)
            assert options[LETTERS.index(row["answer"])] == row["answer_text"]
            assert sum(_same(row["answer_text"], option) for option in options) == 1
        else:
            assert row["answer"] == row["answer_text"]
            if row["answer_type"] == "word":
                assert row["answer"] in json.loads(row["candidates"])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_generated_answer_is_right(seed: int):
    _check_bank(generate_items(seed, per_cell=3))


def test_the_shipped_bank_is_right_and_regenerates_byte_for_byte(tmp_path: Path):
    items = generate_items(SHIPPED_SEED, SHIPPED_PER_CELL)
    _check_bank(items)
    items.write_csv(tmp_path / "items.csv")
    assert (tmp_path / "items.csv").read_bytes() == SHIPPED.read_bytes()
    assert items.height == 2 * 2 * 3 * SHIPPED_PER_CELL


def test_cells_are_independent_streams():
    full = generate_items(5, per_cell=3)
    math_free = generate_items(5, per_cell=3, datasets=["math"], forms=["free"])
    assert math_free.equals(full.filter((pl.col("dataset") == "math") & (pl.col("form") == "free")))
    assert not generate_items(6, per_cell=3).equals(full)


def test_select_items_takes_the_first_per_cell():
    bank = generate_items(5, per_cell=4)
    chosen = select_items(bank, ["logic"], ["choice"], [1, 3], per_cell=2)
    assert chosen["item_id"].to_list() == ["logic_choice_d1_001", "logic_choice_d1_002",
                                           "logic_choice_d3_001", "logic_choice_d3_002"]
    # every value is in some cell, but no cell has all three
    two_cells = pl.concat([generate_items(5, 2, ["math"], ["free"], [1]),
                           generate_items(5, 2, ["logic"], ["choice"], [1])])
    with pytest.raises(AuditError, match="no DIF items left"):
        select_items(two_cells, ["math"], ["choice"], [1], None)
    with pytest.raises(AuditError, match="dif.per_cell must be at least 1"):
        select_items(bank, ["math"], ["free"], [2], per_cell=0)


def test_unknown_selection_is_one_clear_error():
    with pytest.raises(AuditError, match=r"unknown dif.datasets \['chess'\]"):
        generate_items(1, 2, datasets=["chess"])


def test_custom_items_from_a_csv():
    frame = pl.DataFrame({
        "question": ["What is 6 x 7?", "Capital of France?", "Pick the prime.", "Pick 2."],
        "answer": ["42", "Paris", "B", "2"],
        "options": [None, None, "4|7|9", "1|2|3"],
    })
    items = validate(load_custom_items(frame, Path("mine.csv")), DIFItemSchema, "custom")
    rows = {row["item_id"]: row for row in items.iter_rows(named=True)}
    assert rows["custom_0001"]["answer_type"] == "number"
    assert rows["custom_0002"]["answer_type"] == "word"
    assert rows["custom_0003"]["answer"] == "B" and rows["custom_0003"]["answer_text"] == "7"
    assert rows["custom_0004"]["answer"] == "B"  # the option text "2" maps to its letter
    assert rows["custom_0003"]["question"].endswith("A) 4\nB) 7\nC) 9")


@pytest.mark.parametrize(("frame", "message"), [
    (pl.DataFrame({"question": ["x"]}), r"lacks the column\(s\) \['answer'\]"),
    (pl.DataFrame({"question": ["x"], "answer": [""]}), "row 1 has an empty question or answer"),
    (pl.DataFrame({"question": ["x"], "answer": ["E"], "options": ["a|b"]}), "neither an option"),
    (pl.DataFrame({"question": ["x", "y"], "answer": ["1", "2"], "item_id": ["q", "q"]}),
     "duplicated item_id"),
])
def test_bad_custom_csv_is_one_clear_error(frame: pl.DataFrame, message: str):
    with pytest.raises(AuditError, match=message):
        load_custom_items(frame, Path("mine.csv"))


def test_a_value_no_cell_has_is_refused_from_the_shipped_bank_too():
    """Bug caught (bad-input review 2026-12-04): cut from the shipped bank, a misspelt dataset or
    form selected nothing and the rest ran without a word: dif.datasets=[math,logik] audited
    the 12 math items of 24."""
    bank = generate_items(5, per_cell=2)
    with pytest.raises(AuditError, match=r"^unknown dif.datasets \['logik'\] \(did you mean "
                                         r"'logic'\?\): choose from \['logic', 'math'\]$"):
        select_items(bank, ["math", "logik"], ["free"], [1], None)
    with pytest.raises(AuditError, match=r"^unknown dif.forms \['choise'\]"):
        select_items(bank, ["math"], ["free", "choise"], [1], None)
    with pytest.raises(AuditError, match=r"^unknown dif.difficulties \[4\]"):
        select_items(bank, ["math"], ["free"], [1, 2, 4], None)
    with pytest.raises(AuditError, match=r"^unknown dif.difficulties \[2\]: choose from \[1\]$"):
        select_items(generate_items(5, 2, difficulties=[1]), ["math"], ["free"], [2], None)
    # A user's bank of its own datasets is cut by them.
    geometry = bank.with_columns(pl.lit("geometry").alias("dataset"))
    assert select_items(geometry, ["geometry"], ["free"], [1], None).height == 4


def test_per_cell_below_one_is_refused_by_the_generator_too():
    """Catches `per_cell < 1` weakened to `< 0` in generate_items: per_cell 0 returned an empty
    bank and the run went on with no items from the generator."""
    with pytest.raises(AuditError, match="dif.per_cell must be at least 1, got 0"):
        generate_items(1, 0)


def test_a_template_that_runs_out_of_problems_is_one_clear_error(monkeypatch):
    """Catches the "cannot generate" guard being skipped (a `break`): a cell whose template
    repeats itself then held fewer items than dif.per_cell, without a word."""
    same = Problem("math_add", "What is 1 + 1?", "2", "number", ("3", "4", "1"))
    monkeypatch.setitem(GENERATORS, ("math", 1), lambda rng: same)
    with pytest.raises(AuditError, match="cannot generate 2 distinct math items of difficulty 1"):
        generate_items(1, 2, ["math"], ["free"], [1])
    assert generate_items(1, 1, ["math"], ["free"], [1]).height == 1


def test_did_you_mean_is_about_the_first_unknown_value():
    """Catches the suggestion being made for another unknown value than the first one named."""
    with pytest.raises(AuditError, match=r"^unknown dif.datasets \['logik', 'mathz'\] \(did you "
                                         r"mean 'logic'\?\)"):
        generate_items(1, 2, datasets=["mathz", "logik"])


def test_custom_items_are_read_as_people_write_them():
    """Catches dropping the `.strip()` of question or answer, the `.upper()` of an answer letter,
    the cast of every column to text (an integer answer 0 read as empty), the default
    difficulty 0 and the sort by item_id."""
    frame = pl.DataFrame({
        "item_id": ["q3", "q1", "q2", "q4"],
        "question": ["Pick the prime.", "What is 0 x 7?", "Capital of France?", "2 + 2?"],
        "answer": ["b", "0", " Paris ", "4"],
        "options": ["4|7|9", None, None, None],
    })
    items = load_custom_items(frame, Path("mine.csv"))
    assert items["item_id"].to_list() == ["q1", "q2", "q3", "q4"]
    rows = {row["item_id"]: row for row in items.iter_rows(named=True)}
    assert rows["q3"]["answer"] == "B" and rows["q3"]["answer_text"] == "7"
    assert rows["q2"]["answer"] == "Paris"
    assert set(items["difficulty"].to_list()) == {0}  # never mistaken for a generated cell
    numbers = load_custom_items(pl.DataFrame({"question": ["0 x 7?", "6 x 7?"], "answer": [0, 42]}),
                                Path("mine.csv"))
    assert numbers["answer"].to_list() == ["0", "42"]
    with pytest.raises(AuditError, match="row 2 has an empty question or answer"):
        load_custom_items(pl.DataFrame({"question": ["x", "   "], "answer": ["1", "2"]}),
                          Path("mine.csv"))


@pytest.mark.parametrize(("difficulty", "read"), [("2", 2), (" 1.0 ", 1), ("", 0)])
def test_a_custom_difficulty_is_a_whole_number_as_spreadsheets_write_it(difficulty, read):
    """Bug caught (mutation review 2026-12-06): int() of the cell gave a traceback on "1.0",
    which a spreadsheet or pandas writes for a column with blanks."""
    frame = pl.DataFrame({"question": ["q"], "answer": ["1"], "difficulty": [difficulty]})
    assert load_custom_items(frame, Path("mine.csv"))["difficulty"].to_list() == [read]


@pytest.mark.parametrize("difficulty", ["hard", "1.5", "inf"])
def test_a_custom_difficulty_that_is_no_whole_number_is_one_line(difficulty):
    """Bug caught (mutation review 2026-12-06): a difficulty such as "hard" ended the DIF
    design stage in a ValueError traceback."""
    frame = pl.DataFrame({"question": ["q"], "answer": ["1"], "difficulty": [difficulty]})
    with pytest.raises(AuditError, match=rf"^mine.csv: row 1: difficulty '{difficulty}' is not "
                                         r"a whole number: give one \(1, 2, 3\), or leave it "
                                         r"empty$"):
        load_custom_items(frame, Path("mine.csv"))


def test_more_options_than_letters_is_one_line():
    """Bug caught (mutation review 2026-12-06): a row with nine options (the letters go A to H)
    ended in an IndexError traceback from choice_question; eight still pass."""
    eight = pl.DataFrame({"question": ["q"], "answer": ["H"], "options": ["1|2|3|4|5|6|7|8"]})
    assert load_custom_items(eight, Path("mine.csv"))["answer_text"].to_list() == ["8"]
    nine = eight.with_columns(options=pl.lit("1|2|3|4|5|6|7|8|9"))
    with pytest.raises(AuditError, match=r"^mine.csv: row 1 has 9 options, more than the 8 a "
                                         r"choice question letters \(A to H\)"):
        load_custom_items(nine, Path("mine.csv"))
