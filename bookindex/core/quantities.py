"""Quantities as documents and questions write them: scale words, number words, years.

One lexicon for every module that reads an amount or a period: the extractive reader (a value's
own scale, a statement's declared one), the arithmetic a question asks (`operators.formula`),
the tables it is read from (`operators.statements`), a cover's fiscal year (`parsing.identity`),
a question's (`routing.identity_match`), the planner's page ranges and the answer matcher's
number words, and the digits and currency signs of an amount. Each of them wrote its own copy
of these lists, and the copies disagreed: one knew "trillion", another did not; one read
"FY'2019", another not; one valued number words up to five, one to six, another to twenty, and
one split "twenty-one" into "20-1". Here each is written once, so what one module reads as a
quantity every other reads the same.

Number words are valued by `text2num` (`scripts/bench_lexicon.py`: 35 of 35 cases against 31 for
the hand-written table it replaces, which could not read "one hundred", "two hundred and five"
or "three thousand", and 26 for `word2number`, which reads "Two-thirds" as 2, "one of them" as 1
and "twenty twenty" as 40).
"""

from __future__ import annotations

import re

from text_to_num import text2num

# a number as documents print it: digits with thousands commas and decimals ("1,234.5"); each
# module adds the signs, brackets and units its own text puts around it
DIGITS = r"\d[\d,]*(?:\.\d+)?"
# the currency signs an amount may carry, or a parser leave in a table cell of its own
CURRENCY = "$€£"

# -- scale words ---------------------------------------------------------------------------

SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
# what a table's unit head abbreviates a scale to: "$000", "$ in mm", "$m"
SCALE_ABBREVIATIONS = {"000": 1e3, "mm": 1e6, "m": 1e6}
# one scale word (singular; a pattern adds "s?" where the plural is meant), for building patterns
SCALE_WORD = "(?:" + "|".join(SCALES) + ")"


def scale_factor(word: str) -> float | None:
    """The factor a scale word or abbreviation stands for ("millions" → 1e6, "000" → 1e3),
    None for any other word."""
    w = word.strip().lower()
    if w in SCALE_ABBREVIATIONS:
        return SCALE_ABBREVIATIONS[w]
    return SCALES.get(w.removesuffix("s"))


def scale_name(factor: float) -> str:
    """The word of a scale factor (1e6 → "million"); "" for units or a factor with no word."""
    return next((w for w, f in SCALES.items() if f == factor), "")


# -- years ---------------------------------------------------------------------------------

YEAR = r"(?:19|20)\d\d"
# how a fiscal year is written before its number: "FY2019", "FY 2019", "FY'2019", "fiscal 2019",
# "fiscal year 2019"
FISCAL_PREFIX = r"(?:FY\s?'?|fiscal\s+(?:year\s+)?)"
# a year with a fiscal prefix, the year as group 1
FISCAL_YEAR = re.compile(rf"\b{FISCAL_PREFIX}({YEAR})\b", re.I)
# a year with or without one ("2019", "FY2019"), the year as group 1
YEAR_MAYBE_FISCAL = re.compile(rf"\b{FISCAL_PREFIX}?({YEAR})\b", re.I)
# the year a cover spells out as fiscal: "fiscal 2019", "fiscal year 2019" (not "FY2019", which a
# report's first pages also print for the years it compares)
FISCAL_SPELLED = re.compile(rf"\bfiscal\s+(?:year\s+)?({YEAR})\b", re.I)


# -- number words --------------------------------------------------------------------------

UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
            "eighth": 8, "ninth": 9, "tenth": 10}
# a cardinal below a hundred in words: "nine", "twenty", "twenty-one", "Twenty One"
_BELOW_HUNDRED = re.compile(rf"\b(?:(?:{'|'.join(TENS)})(?:[\s-](?:{'|'.join(UNITS[1:10])}))?|{'|'.join(UNITS)})\b",
                            re.I)


def word_number(text: str) -> int | None:
    """The whole number `text` spells ("nine" → 9, "twenty-one" → 21, "two hundred and five" →
    205), None when it is not one ("Two-thirds", "one of them", "twenty twenty", a bare
    "million")."""
    words = text.strip().lower()
    if not words or scale_factor(re.split(r"[\s-]+", words)[0]) is not None:
        return None  # "million" alone names a scale, it counts nothing
    try:
        value = text2num(words, "en")
    except ValueError:
        return None
    return value if isinstance(value, int) else None


def spelled_number(text: str) -> str:
    """A number written in words as digits ("nine" → "9", "twenty-one" → "21", "Two-thirds" →
    ""); "" when `text` is not one. A count is answered in digits, as it is asked for."""
    value = word_number(text)
    return "" if value is None else str(value)


def number_word(n: int) -> str:
    """The word of a whole number below a hundred (7 → "seven", 42 → "forty-two"); "" otherwise."""
    if not 0 <= n < 100:
        return ""
    if n < 20:
        return UNITS[n]
    tens, units = divmod(n, 10)
    return TENS[tens - 2] + (f"-{UNITS[units]}" if units else "")


def digits_for_words(text: str) -> str:
    """`text` with each cardinal below a hundred written in digits ("page three" → "page 3",
    "twenty-one pages" → "21 pages"); ordinals stay words ("the first ten pages" → "the first 10
    pages"), so a pattern can still tell "first" from a count."""
    return _BELOW_HUNDRED.sub(lambda m: spelled_number(m.group(0)) or m.group(0), text)
