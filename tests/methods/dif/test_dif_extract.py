"""The answer extractor on the shapes replies really take (many copied from SmolLM2's replies)."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from audit.errors import AuditError
from audit.methods.dif.score import (
    extract,
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


@pytest.mark.parametrize(("reply", "key"), [
    ("The answer is St. Louis.", "St. Louis"), ("Mr. Smith. Nobody else fits.", "Mr. Smith"),
    ("It is Mrs. Dalloway.", "Mrs. Dalloway"),
    ("Washington, D.C. Nowhere else.", "Washington D.C."),
])
def test_an_abbreviation_does_not_end_an_open_answer(reply: str, key: str):
    """Would fail if every full stop ended the answer: "St. Louis" would be read as "st"."""
    assert is_correct(extract_word(reply, []).value, key, "word")


@pytest.mark.parametrize(("reply", "correct"), [
    ("The answer is not Paris.", False), ("Lyon, not Paris.", False), ("Paris or Lyon", False),
    ("Either Lyon or Paris.", False), ("Paris isn\u2019t it.", False),
    ("Paris is not the answer.", False),
    ("It's not Lyon, it's Paris.", True), ("Paris, not Lyon.", True),
    ("The answer is Paris, France.", True), ("No doubt: Paris.", True),
    # Bug caught: the answer phrase ran to the reply's end, so a key named after the answer
    # in another clause was read as the answer.
    ("The answer is Lyon; Paris is the capital.", False), ("Lyon; Paris is the capital.", False),
    ("The answer is Paris; Lyon is wrong.", True),
    # Bug caught: a full stop did not end the answer, so "Lyon. Paris is the capital." named
    # Paris; an abbreviation still does not end it.
    ("The answer is Lyon. Paris is the capital.", False), ("Lyon! Paris is wrong.", False),
    ("The answer is Paris. Lyon is wrong.", True), ("Paris. Not Lyon.", True),
])
def test_an_open_answer_that_denies_the_key_or_sets_another_beside_it_is_wrong(reply, correct):
    """Bug caught (mutation review 2026-12-06): an open answer (a custom item's word answer, no
    candidates) was correct whenever the key appeared in it as a whole word, so a reply that
    rejected the key or named two answers was graded correct."""
    assert is_correct(extract_word(reply, []).value, "Paris", "word") is correct


@given(st.lists(st.from_regex(r"[a-z]{2,8}", fullmatch=True), min_size=1, max_size=3))
def test_an_open_key_stated_alone_is_correct_and_denied_or_hedged_is_not(key_words):
    assume("answer" not in key_words)  # "answer is" would open an answer phrase
    key = " ".join(key_words)
    assert is_correct(extract_word(f"{key.title()}.", []).value, key, "word")
    assert is_correct(extract_word(f"The answer is {key}, I think.", []).value, key, "word")
    assert not is_correct(extract_word(f"Not {key}.", []).value, key, "word")
    assert not is_correct(extract_word(f"{key} or maybe something else", []).value, key, "word")


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


@pytest.mark.parametrize(("reply", "value", "method"), [
    ("The answer is 12. No wait, the final answer is 14.", "14", "answer_phrase"),
    ("$\\boxed{12}$, no: 3 x 4 + 2 is $\\boxed{14}$", "14", "boxed"),
    ("First two, then three", "3", "number_words"),
    ("1/0 is undefined, so 7", "7", "single_number"),
    ("The answer is 0.125", "0.125", "answer_phrase"),
    ("The answer is not obvious, so think about it carefully: one plus two makes three",
     "3", "number_words"),
])
def test_a_number_reply_reads_the_last_phrase_box_or_word_and_skips_a_zero_denominator(
        reply: str, value: str, method: str):
    """Mutation review 2026-12-06: the later of two answer phrases or boxes, the last number
    word, a /0 that is no number, six decimals kept, and words far after "answer is" are not
    the phrase's answer."""
    extraction = extract_number(reply)
    assert (extraction.value, extraction.method) == (value, method)


def test_a_number_in_words_counts_thousands():
    """Mutation review 2026-12-06: "thousand" multiplies by 1000."""
    assert parse_number("two thousand and five") == 2005


@pytest.mark.parametrize(("reply", "options", "value", "method"), [
    ("About 19.4 apples", OPTIONS, None, "none"),
    ("The 2 blue ones.", ["2 red", "2 blue"], "B", "option_text"),
    ("B which is Priya", ["Quinn", "Priya"], "B", "leading_letter"),
    ("I pick (C) since it is largest.", OPTIONS, "C", "named_letter"),
    ("B", [], None, "none"),
])
def test_a_letter_reply_matches_options_exactly_and_reads_a_bracketed_letter(
        reply: str, options: list[str], value: str | None, method: str):
    """Mutation review 2026-12-06: a number near an option is not that option, an option with
    words is matched as text, the stated option may follow the letter by a few words, "(C)"
    names a letter, and no options means no letter."""
    extraction = extract_letter(reply, options)
    assert (extraction.value, extraction.method) == (value, method)


@pytest.mark.parametrize(("reply", "candidates", "value", "method"), [
    ("The answer is Ben, not Cal.", NAMES, "ben", "answer_phrase"),
    ("The shortest is Cal; yes, Cal.", NAMES, "cal", "single_candidate"),
    ("Paris\nIt is the capital.", [], "paris", "first_line"),
])
def test_a_word_reply_reads_the_first_word_after_the_phrase_and_names_its_rule(
        reply: str, candidates: list[str], value: str, method: str):
    """Mutation review 2026-12-06: the word right after "answer is", one candidate named twice
    is a single candidate, and an open answer without a phrase is read from its first line."""
    extraction = extract_word(reply, candidates)
    assert (extraction.value, extraction.method) == (value, method)


def test_an_unknown_answer_type_is_an_error():
    """Mutation review 2026-12-06."""
    with pytest.raises(AuditError, match="unknown answer_type 'essay'"):
        extract("42", "essay")


def test_is_correct_is_strict_about_numbers_and_whole_words():
    """Mutation review 2026-12-06: 19.01 is not 19, an answer key with no word matches nothing,
    and a word matches only as a whole word."""
    assert not is_correct("19.01", "19", "number")
    assert not is_correct("It is Paris.", "123", "word")
    assert not is_correct("calvin", "cal", "word")
