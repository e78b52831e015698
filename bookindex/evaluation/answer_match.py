"""Does a short gold answer occur in a text? The matcher behind answer-in-evidence.

A reader can only answer from the text it is shown, so whether that text holds the gold answer
bounds what any reader can answer, whatever the model. The test must not depend on how the
document happens to print the answer: documents write 1,577 or $1,577 or 1577.0, 12.5% or
12.5 percent, "State-of-the-art" or "state of the art". Both sides are therefore reduced to the
same token sequence (lower case, accents and punctuation dropped, numbers in one canonical form)
and the answer must occur as a contiguous run of whole tokens: "12" does not match "125", nor
"art" "party".

A gold answer that is a number alone (with at most a currency or percent sign) matches that
number wherever it is printed, with or without its sign: a table with "%" in its header prints
the bare value. Small whole numbers also match the words documents spell them with ("three").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from bookindex.core.quantities import number_word

# a number as documents print it: thousands groups (1,577,000) or plain digits, with decimals
_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?|[^\W\d_]+|%")
_PERCENT_WORD = re.compile(r"\bper\s?cent\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")

SPELLED_UP_TO = 20  # a gold count this small may be answered in words ("seven")

# what `is_short_answer` admits (MMLongBench answer formats and the length bound of the yardstick)
SHORT_FORMATS = ("Str", "Int", "Float")
SHORT_CHARS = 60
NOT_ANSWERABLE = "not answerable"


def canonical_number(text: str) -> str:
    """One form per value: separators dropped, trailing decimal zeros dropped (1,577.00 -> 1577,
    12.50 -> 12.5, 0.0 -> 0)."""
    s = text.replace(",", "")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    s = s.lstrip("0")
    return "0" + s if not s or s.startswith(".") else s


def tokens(text: str) -> list[str]:
    """`text` as matchable tokens: words in lower case without accents, numbers canonical, "%"
    (also for the word "percent"); every other character separates tokens."""
    t = unicodedata.normalize("NFKD", text)
    t = "".join(c for c in t if not unicodedata.combining(c)).lower()
    t = _PERCENT_WORD.sub("%", t)
    return [canonical_number(m) if m[0].isdigit() else m for m in _TOKEN.findall(t)]


def _occurs(needle: Sequence[str], hay: Sequence[str]) -> bool:
    if not needle:
        return False
    joined = " " + " ".join(hay) + " "
    return (" " + " ".join(needle) + " ") in joined


def answer_forms(answer: str) -> list[list[str]]:
    """The token sequences any of which counts as the answer being shown."""
    toks = tokens(answer)
    forms = [toks] if toks else []
    bare = [t for t in toks if t != "%"]
    if len(bare) == 1 and _NUMBER.fullmatch(bare[0]) and bare != toks:
        forms.append(bare)  # 12.5% shown as 12.5 under a "%" header
    if len(bare) == 1 and bare[0].isdigit() and int(bare[0]) <= SPELLED_UP_TO:
        forms.append([number_word(int(bare[0]))])
    return forms


def answer_in_text(answer: str, text: str) -> bool:
    """Whether the normalised `answer` occurs in the normalised `text` as whole tokens."""
    hay = tokens(text)
    return any(_occurs(form, hay) for form in answer_forms(answer))


def is_short_answer(answer: str | None, answer_format: str | None, answerable: bool = True) -> bool:
    """A question the yardstick applies to: an answerable Str/Int/Float answer of at most
    SHORT_CHARS characters that is not "Not answerable" and has something to match."""
    if not answerable or answer is None or answer_format not in SHORT_FORMATS:
        return False
    a = str(answer).strip()
    return 0 < len(a) <= SHORT_CHARS and a.lower() != NOT_ANSWERABLE and bool(tokens(a))
