"""The shape of a question, read from spaCy's parse: the questions it joins, whether it asks yes or
no, and the alternatives it offers.

A user asks two things at once ("Which flag turns the cache off, and where is the log written?").
Retrieval and answering for one of them leave the other unanswered, so the planner asks each as
its own sub-question (`coordinated_questions`). What marks such a question is its structure, not
its words: two clauses, each with its own question opener (a wh-word before its own finite verb,
or an auxiliary before its subject) and its own head, joined by a coordinating conjunction or a
semicolon. A conjunction inside one clause ("What does the tool check and fix?", "the width of
thin and thick lines") leaves one side without an opener or without a head of its own, and is
not a split.

The citation check (`operators.grounding`) reads the two other facts: an answer that only
repeats the question's words answers a yes/no question (a restatement affirms it) or picks one
of the things the question offers ("A or B?"), and otherwise says nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from itertools import combinations
from typing import Any

from bookindex.providers.nlp import parsed_question

WH_TAGS = frozenset({"WDT", "WP", "WP$", "WRB"})
FINITE_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD"})
SUBJECTS = frozenset({"nsubj", "nsubjpass", "expl", "csubj", "csubjpass"})
# how a second clause's head may hang on the first's: coordinated with it, or (a parse of the
# small model) as its clausal complement; a relative clause ("the day when ...") is part of a phrase
CLAUSE_LINKS = frozenset({"conj", "ccomp", "parataxis", "advcl", "ROOT"})
MAX_PARTS = 4


def _finite(t: Any) -> bool:
    return t.tag_ in FINITE_TAGS or (t.pos_ == "AUX" and t.tag_ not in ("VBN", "VBG", "VB", "TO"))


def _words(doc: Any, start: int, end: int) -> list[Any]:
    return [t for t in doc[start:end] if not t.is_punct]


def _opens_question(words: list[Any]) -> bool:
    """A wh-word before the clause's first finite verb, or a clause opening with its auxiliary
    followed by a subject (an inverted yes/no question)."""
    finite = next((t for t in words if _finite(t)), None)
    if finite is None:
        return False
    if any(t.tag_ in WH_TAGS and t.i < finite.i for t in words):
        return True
    return words[0] is finite and words[0].pos_ == "AUX" and any(t.dep_ in SUBJECTS and t.i > finite.i for t in words)


def _head_of(words: list[Any], start: int, end: int) -> Any | None:
    """The one word of doc[start:end] whose head lies outside it (or the root), None when the
    parse hangs the span's words on more than one outside word (the span is no clause)."""
    tops = [t for t in words if t.head.i == t.i or not start <= t.head.i < end]
    return tops[0] if len(tops) == 1 else None


def _boundaries(sent: Any) -> list[int]:
    """Tokens that may join two clauses: coordinating conjunctions and semicolons."""
    return [t.i for t in sent if (t.dep_ == "cc" and t.pos_ == "CCONJ") or t.text == ";"]


def _linked(a: Any, b: Any) -> bool:
    """Whether clause head `b` (later) hangs on clause head `a` as a clause, or `a` on `b`, or
    `b` on a clause `a` governs directly (the small model parses "Where is X stored" with
    "stored" under "is")."""
    if b.head.i == a.i or a.head.i == b.i:
        return (b.dep_ if b.head.i == a.i else a.dep_) in CLAUSE_LINKS
    h = b.head
    return h.head.i == a.i and h.pos_ in ("VERB", "AUX") and h.dep_ in CLAUSE_LINKS and b.dep_ in CLAUSE_LINKS


def _clauses(doc: Any, sent: Any, cuts: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """The spans of sentence `sent` between `cuts` when each is a question clause of its own and
    each clause's head hangs on the one before it as a clause where a conjunction joins them (a
    semicolon joins clauses only, however the parser hangs them); else None."""
    edges = [sent.start - 1, *cuts, sent.end]
    spans = [(edges[k] + 1, edges[k + 1]) for k in range(len(edges) - 1)]
    heads = []
    for start, end in spans:
        words = _words(doc, start, end)
        if not words or not _opens_question(words):
            return None
        head = _head_of(words, start, end)
        if head is None:
            return None
        heads.append(head)
    if not all(doc[cut].text == ";" or _linked(a, b) for cut, a, b in zip(cuts, heads, heads[1:])):
        return None
    return spans


def _candidate_cuts(bounds: list[int]) -> Iterator[tuple[int, ...]]:
    """Sets of boundaries, the most parts first."""
    for n in range(min(len(bounds), MAX_PARTS - 1), 0, -1):
        yield from combinations(bounds, n)


@functools.lru_cache(maxsize=1024)
def coordinated_questions(question: str) -> tuple[str, ...]:
    """The questions `question` joins with "and", "or", "but" or ";", each as its own question
    ("Which flag turns the cache off?", "where is the log written?"); () when it is one question,
    or without spaCy. Sentences before the last one are context ("In the 2019 survey, one group
    grew most. Which group is it, and by how much did it grow?"): each part keeps them. Kept per
    text: the planner and Decompose ask for the same question."""
    doc = parsed_question(question)
    if doc is None or not len(doc):
        return ()
    sent = list(doc.sents)[-1]
    context = doc[:sent.start].text.strip()
    for cuts in _candidate_cuts(_boundaries(sent)):
        spans = _clauses(doc, sent, cuts)
        if spans is not None:
            parts = [doc[start:end].text.strip(" ,;:?") + "?" for start, end in spans]
            return tuple(f"{context} {p}" if context else p for p in parts)
    return ()


def asks_yes_or_no(question: str) -> bool:
    """Whether the question opens with its auxiliary before a subject ("Does X run Y?", "Is A or
    B the default?"): an answer restating it affirms it."""
    doc = parsed_question(question)
    if doc is None:
        return False
    words = [t for t in doc if not t.is_punct]
    return bool(words) and not any(t.tag_ in WH_TAGS for t in words) and _opens_question(words)


def offered_words(question: str) -> set[str]:
    """The lower-cased words of the things the question coordinates, not its clauses ("thin lines
    or thick lines", "the png terminal and the pdf terminal"): an answer holding one of them picks
    among what the question offers."""
    doc = parsed_question(question)
    if doc is None:
        return set()
    out: set[str] = set()
    for t in doc:
        if t.dep_ != "conj" or t.head.i == t.i or t.pos_ in ("VERB", "AUX") or t.head.pos_ in ("VERB", "AUX"):
            continue
        out.update(w.lower_ for w in t.subtree if not w.is_punct)
        out.update(w.lower_ for w in t.head.subtree if not w.is_punct and w.i < t.left_edge.i)
    return out
