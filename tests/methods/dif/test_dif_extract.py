"""The answer extractor on the shapes replies really take (many copied from SmolLM2's replies)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.methods.dif.score import (
    extract_letter,
    extract_number,
    extract_word,
    grade,
    is_correct,
    parse_number,
)
from audit.methods.dif.score import number_text


@pytest.mark.parametrize(("reply", "value", "method"), [
    ("19", "19", "single_number"),
    ("19.", "19", "single_number"),
    ("19 apples", "19", "single_number"),
    ("The answer is 19.", "19", "answer_phrase"),
    ("Final answer: 1,250", "1250", "answer_phrase"),
    ("The sale price is $136.00.", "136", "single_number"),
    ("$1,234,567.5", "1234567.5", "single_number"),
    ("It travels 157.5 km.", "157.5", "single_number"),
    ("-24", "-24", "single_number"),
    ("The evening temperature was \u221224 \u00b0C.", "-24", "single_number"),
    ("-24 degrees Celsius", "-24", "single_number"),
    ("3/4", "0.75", "single_number"),
    ("Maria has 12 + 7 = 19 apples.", "19", "last_number"),
    ("Maria has 12 + 7 = 19 apples. She has now 19 - 12", "12", "last_number"),  # real SmolLM2
    ("12 - 5 = 7", "7", "last_number"),
    ("The answer is 42, because 6 x 7 = 42 and not 41.", "42", "answer_phrase"),
    ("We get 30. So the answer is 28,870 residents.", "28870", "answer_phrase"),
    ("The correct answer is: 64", "64", "answer_phrase"),
    ("$\\boxed{12}$ since 3 x 4 = 12 and 2 more make 14", "12", "boxed"),
    ("twelve", "12", "number_words"),
    ("The answer is twenty-five.", "25", "answer_phrase"),
    ("one hundred and five", "105", "number_words"),
    ("I don't know.", None, "none"),
    ("", None, "none"),
])
def test_numbers(reply: str, value: str | None, method: str):
    extraction = extract_number(reply)
    assert (extraction.value, extraction.method) == (value, method)


OPTIONS = ["17", "19", "20", "5"]


@pytest.mark.parametrize(("reply", "value", "method"), [
    ("B", "B", "leading_letter"),
    ("B.", "B", "leading_letter"),
    ("(B)", "B", "leading_letter"),
    ("B) 19", "B", "leading_letter"),
    ("B: 19", "B", "leading_letter"),
    ("B 19", "B", "leading_letter"),
    ("**B**", "B", "leading_letter"),
    ("A) 19\nB) 17\nC) 20\nD) 5", "A", "leading_letter"),  # real: it echoes the options
    ("A) 19\n\nThe correct answer is D) 20", "D", "answer_phrase"),  # real: it changes its mind
    ("The answer is C.", "C", "answer_phrase"),
    ("The correct option is (C) 20.", "C", "answer_phrase"),
    ("I would pick option D because 5 is small.", "D", "named_letter"),
    ("19", "B", "option_text"),
    ("There are 19 apples.", "B", "option_text"),
    ("A train leaves the station.", None, "none"),  # the article is not an answer
    ("E", None, "none"),  # not one of the four letters
    ("b", None, "none"),
    ("17 or 19", None, "none"),  # two options stated: no answer
])
def test_letters(reply: str, value: str | None, method: str):
    extraction = extract_letter(reply, OPTIONS)
    assert (extraction.value, extraction.method) == (value, method)


def test_letters_with_word_options():
    options = ["Quinn", "Ben", "Priya", "Vera"]
    assert extract_letter("Ben", options).value == "B"
    assert extract_letter("The second tallest is Vera.", options).value == "D"
    assert extract_letter("A. Quinn", options).value == "A"


NAMES = ["Ana", "Ben", "Cal"]


@pytest.mark.parametrize(("reply", "candidates", "value", "method"), [
    ("Cal.", NAMES, "cal", "leading_word"),
    ("Cal", NAMES, "cal", "leading_word"),
    ("The shortest is Cal.", NAMES, "cal", "single_candidate"),
    ("The answer is Ben.", NAMES, "ben", "answer_phrase"),
    ("Ben is taller than Cal, so Cal is the shortest", NAMES, "cal", "last_candidate"),
    ("No, it does not follow that all blickets are daxes.", ["no", "yes"], "no", "leading_word"),
    ("No.", ["no", "yes"], "no", "leading_word"),
    ("Yes", ["no", "yes"], "yes", "leading_word"),
    ("It will be Friday.", ["Monday", "Friday"], "friday", "single_candidate"),
    ("Today is Tuesday.", ["Tuesday", "Friday"], "tuesday", "single_candidate"),  # real, wrong
    ("The shortest is 1 foot 10 inches.", NAMES, None, "none"),  # real SmolLM2 reply
])
def test_words(reply: str, candidates: list[str], value: str | None, method: str):
    extraction = extract_word(reply, candidates)
    assert (extraction.value, extraction.method) == (value, method)


def test_open_word_answers():
    extraction = extract_word("The answer is Paris, France.", [])
    assert is_correct(extraction.value, "Paris", "word")
    assert not is_correct(extract_word("Lyon", []).value, "Paris", "word")
    assert is_correct(extract_word("Paris\nIt is the capital.", []).value, "paris", "word")


def test_is_correct():
    assert is_correct("19.0", "19", "number")
    assert is_correct("0.75", "0.75", "number")
    assert not is_correct("19.5", "19", "number")
    assert not is_correct(None, "19", "number")
    assert is_correct("b", "B", "letter")
    assert is_correct("cal", "Cal", "word")


def test_grade_reads_an_item_row():
    item = {"answer": "B", "answer_type": "letter", "options": json.dumps(OPTIONS),
            "candidates": "[]"}
    extraction, correct = grade("The answer is B) 19.", item)
    assert extraction.value == "B" and correct


@given(st.one_of(st.integers(-10**7, 10**7),
                 st.decimals(-10**6, 10**6, places=2, allow_nan=False).map(float)))
def test_any_number_in_common_shapes_is_read_back(value: float):
    text = number_text(value)
    with_commas = f"{value:,.2f}".rstrip("0").rstrip(".")
    for reply in (text, f"The answer is {text}.", f"{text} apples", f"Answer: {with_commas}",
                  f"So 1 + 2 = {text}", f"**{text}**"):
        extraction = extract_number(reply)
        assert extraction.value is not None
        assert is_correct(extraction.value, text, "number"), (reply, extraction)


@given(st.lists(st.integers(0, 999), min_size=2, max_size=6, unique=True), st.data())
def test_any_letter_in_common_shapes_is_read_back(values: list[int], data):
    options = [str(value) for value in values]
    index = data.draw(st.integers(0, len(options) - 1))
    letter = "ABCDEF"[index]
    for reply in (letter, f"{letter})", f"({letter})", f"{letter}. {options[index]}",
                  f"The answer is {letter}.", f"Answer: ({letter})", options[index]):
        assert extract_letter(reply, options).value == letter, reply


@given(st.text(max_size=80))
def test_extractors_never_crash(text: str):
    extract_number(text)
    extract_letter(text, OPTIONS)
    extract_word(text, NAMES)
    parse_number(text)


def test_a_text_stating_two_numbers_parses_to_none():
    """Bug caught: a text with several numbers parsed to its first, so an ambiguous answer key
    ("3 or 4") graded a reply of 3 correct and one of 4 wrong."""
    assert parse_number("3 or 4") is None and parse_number("twelve or thirteen") is None
    assert not is_correct("3", "3 or 4", "number")
