"""Short-answer scoring of answers made without an LLM (the no-LLM rows of the answer benchmark).

MMLongBench scores an answer after an LLM extracts its short form; judging the no-LLM answers
with an LLM would make the no-LLM figure depend on a model. Here the extraction is a fixed rule,
using only the question and the answer text (never the gold answer):

1. the answer's first statement: the text before its first citation [k], without the
   `From "Section", p. N:` source prefix the extractive answers carry and the mark that says the
   model found no answer and the extractive one replaced it (`grounding.REFUSED_MARK`);
2. when the question asks for a quantity (how many / how much / what percentage / what ratio ...)
   or for a page (which / what page), the first number of that statement with its sign, currency
   and percent sign;
   otherwise the statement itself.

The short answer is then scored by MMLongBench's rules (`mmlongbench.score_answer`), with one
addition for FinanceBench, whose gold answers are strings that hold a number ("$5409.00",
"2.8%", "-3.7"): a gold string that is one number is compared as a Float (1% tolerance, percent
or fraction), so "$5,409 million" or "5409.0" match "$5409.00" as the documents print them.
"""

from __future__ import annotations

import re
from typing import Any

from bookindex.core.quantities import CURRENCY, DIGITS
from bookindex.evaluation.mmlongbench import score_answer
from bookindex.operators.grounding import REFUSED_MARK
from bookindex.retrieval.planner import STRUCT_NOUNS, counted_unit

_CITE = re.compile(r"\s*\[\d+(?:\s*[,\-–]\s*\d+)*\]")
_SOURCE = re.compile(r'^\s*From\s+(?:"[^"]*",\s*)?pp?\.\s*[\d\-–]+(?:\s*\(printed [^)]*\))?:\s*')
_NUMBER = re.compile(rf"[-−–]?\s?[{CURRENCY}]?\s?{DIGITS}\s?%?|[-−]?[{CURRENCY}]?\.\d+%?")
_QUANTITY = re.compile(
    r"\b(?:how many|how much|how long|how old|how far|how large|how big|what percentage|what percent|"
    r"what proportion|what share|what fraction|what (?:is|was|are|were) the (?:\w+ ){0,4}"
    r"(?:number|amount|total|sum|ratio|rate|percentage|value|average|margin|count|score|cost|price|"
    r"revenue|growth|size|age|year))\b", re.I)
# A gold string that is one number as documents print it: "$5409.00", "2.8%", "-3.7", "1,577"
_NUMERIC_GOLD = re.compile(rf"^\s*[-−]?\s?[{CURRENCY}]?\s?{DIGITS}\s?%?\s*$")


MAX_GOLD_CHARS = 60


def short_gold(answer: Any, answer_format: str | None) -> bool:
    """A question whose gold answer is short: Str/Int/Float, answerable, <= 60 characters (the
    questions `scripts/eval_answers.py` and `scripts/fit_reader.py` ask)."""
    gold = str(answer or "").strip()
    return (answer_format in ("Str", "Int", "Float") and bool(gold) and gold.lower() != "not answerable"
            and len(gold) <= MAX_GOLD_CHARS)


def asks_quantity(question: str) -> bool:
    """Whether the question asks for a number (count, amount, percentage, ratio)."""
    return bool(_QUANTITY.search(question))


def first_statement(answer: str) -> str:
    """The answer up to its first citation, without the extractive source prefix."""
    text = " ".join(str(answer).split())
    text = _SOURCE.sub("", text.removeprefix(REFUSED_MARK))
    m = _CITE.search(text)
    if m:
        text = text[:m.start()]
    return text.strip().rstrip(".;:, ")


def short_answer(question: str, answer: str) -> str:
    """The short answer the rule extracts from `answer` (module docstring)."""
    if "not answerable" in str(answer).lower()[:60]:
        return "Not answerable"
    head = first_statement(answer)
    if asks_quantity(question) or _PAGE_ASKED.search(question):
        m = _NUMBER.search(head)
        if m:
            return m.group(0).replace("−", "-").replace("–", "-").replace(" ", "")
    return head


def answer_format_of(gold: Any, answer_format: str | None) -> str:
    """The rule a gold answer is scored by: its own format, Float for a number written as Str."""
    fmt = (answer_format or "Str").strip()
    if fmt == "Str" and _NUMERIC_GOLD.match(str(gold)):
        return "Float"
    return fmt


def score_short(gold: Any, answer_format: str | None, short: str) -> float:
    """MMLongBench's score of the short answer (with numeric Str golds read as numbers)."""
    return score_answer(str(gold).replace("−", "-"), short, answer_format_of(gold, answer_format))


_WHERE = re.compile(rf"\b(?:which|what)\s+(?:page|section|chapter|appendix)\b|\bon (?:which|what) page\b|"
                    rf"\btitle of (?:the )?(?:\w+ )?{STRUCT_NOUNS}\b", re.I)
# "Among all charts in this report, how many compare ...": the parts counted, named before the count
# (the parts themselves, not what a named "Table 2" lists)
_AMONG = re.compile(rf"\bamong\s+(?:all\s+)?(?:the\s+)?(?:\w+\s+)?{STRUCT_NOUNS}\b(?!\s*\d)[^?]*\bhow many\b", re.I)
_PAGE_ASKED = re.compile(r"\b(?:which|what)\s+page\b", re.I)


def question_kind(question: str, gold: Any, answer_format: str | None) -> str:
    """The type a question is reported under: `structure` (counting or listing the document's
    parts — figures, tables, sections, pages, equations, references — or asking which page or
    section), `number`, `date`, `yes-no` or `text`."""
    if counted_unit(question) or _WHERE.search(question) or _AMONG.search(question):
        return "structure"
    fmt = answer_format_of(gold, answer_format)
    if fmt in ("Int", "Float"):
        return "number"
    g = str(gold).strip().lower()
    if g in ("yes", "no"):
        return "yes-no"
    if re.search(r"\b(?:1[89]\d\d|20\d\d)\b", g) or re.match(r"^when\b", question.strip(), re.I):
        return "date"
    return "text"
