"""The answer-in-evidence matcher: numbers in the forms documents print them, whole tokens only."""

from __future__ import annotations

import pytest

from bookindex.evaluation.answer_match import answer_in_text, canonical_number, is_short_answer, tokens


@pytest.mark.parametrize("gold, text", [
    ("1577", "Net revenue was $1,577 million."),
    ("1577.0", "| Revenue | 1,577 |"),
    ("$1,577", "total of 1577.00"),
    ("12.5%", "margins rose 12.5 percent"),
    ("12.5%", "| Margin (%) | 12.5 |"),
    ("12.5", "a rise of 12.5%"),
    ("0.5", "ratio 0.50"),
    ("3", "three of the plants"),
    ("state-of-the-art", "a State of the Art method"),
    ("Café Nero", "the cafe nero chain"),
    ("Democrats", "Democrats, 48%"),
])
def test_printed_forms_match(gold: str, text: str) -> None:
    assert answer_in_text(gold, text)


@pytest.mark.parametrize("gold, text", [
    ("12", "in 125 cases"),          # a number is a whole token
    ("1577", "1,578"),
    ("12.5%", "12.55%"),
    ("art", "the party"),             # a word is a whole token
    ("New York", "York, New Jersey"),  # the tokens in order, contiguous
    ("7", "seventy"),
    ("", "anything"),
])
def test_other_text_does_not_match(gold: str, text: str) -> None:
    assert not answer_in_text(gold, text)


def test_canonical_numbers() -> None:
    assert [canonical_number(s) for s in ("1,577", "1577.00", "0.0", "0.50", "007", "12.50")] == \
        ["1577", "1577", "0", "0.5", "7", "12.5"]
    assert tokens("Up 3.0 per cent, to $2,019,000") == ["up", "3", "%", "to", "2019000"]


def test_short_answer_selection() -> None:
    assert is_short_answer("1577", "Int")
    assert is_short_answer("Democrats", "Str")
    assert not is_short_answer("Not answerable", "Str")
    assert not is_short_answer("['a', 'b']", "List")
    assert not is_short_answer("x" * 61, "Str")
    assert not is_short_answer("12", "Int", answerable=False)
    assert not is_short_answer(None, "Str")
    assert not is_short_answer("--", "Str")  # nothing to match
