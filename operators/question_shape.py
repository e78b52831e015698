"""The shape of a question, read from spaCy's parse: the questions it joins, whether it asks yes or
no, and the things it offers to choose from.

A user asks two things at once ("Which flag turns the cache off, and where is the log written?").
Retrieval and answering for one of them leave the other unanswered, so the planner asks each as
its own sub-question (`coordinated_questions`). What marks such a question is its structure, not
its words: two clauses, each with its own question opener (a wh-word before its own finite verb,
or an auxiliary before its subject) and its own head, joined by a coordinating conjunction or a
semicolon. A conjunction inside one clause ("What does the tool check and fix?", "the width of
thin and thick lines") leaves one side without an opener or without a head of its own, and is
not a split.

The citation check (`operators.grounding`) reads the other facts: an answer that only repeats
the question's words answers a yes/no question (a restatement affirms it), picks one of the
things the question offers ("A or B?") or names a command by the question's verb ("quit"), and
otherwise says nothing.
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
# clauses that modify a noun: a clause coordinated inside one ("the day when ...") is part of a phrase
NOUN_CLAUSES = frozenset({"relcl", "acl"})
MAX_PARTS = 4


def _finite(t: Any) -> bool:
    return t.tag_ in FINITE_TAGS or (t.pos_ == "AUX" and t.tag_ not in ("VBN", "VBG", "VB", "TO"))


def _words(doc: Any, start: int, end: int) -> list[Any]:
    return [t for t in doc[start:end] if not t.is_punct]


def _own_finite(words: list[Any], head: Any) -> Any | None:
    """The clause's first finite verb of its own (not one of a relative clause in it)."""
    return next((t for t in words if _finite(t) and _hangs_on(t, head)), None)


def _inverted(words: list[Any], head: Any) -> bool:
    """Whether the clause opens with its own auxiliary before a subject (a yes/no question)."""
    finite = _own_finite(words, head)
    return finite is not None and finite.i == words[0].i and finite.pos_ == "AUX" and \
        any(t.dep_ in SUBJECTS and t.i > finite.i for t in words)


def _opens_question(words: list[Any], head: Any) -> bool:
    """Whether the clause of `words`, headed by `head`, asks: a wh-word of its own before its own
    first finite verb (neither inside a relative clause: "the group that disapproves" asks
    nothing), or an auxiliary opening it before a subject (`_inverted`)."""
    finite = _own_finite(words, head)
    if finite is None:
        return False
    return any(t.tag_ in WH_TAGS and t.i < finite.i and _hangs_on(t, head) for t in words) or _inverted(words, head)


def _head_of(words: list[Any], start: int, end: int) -> Any | None:
    """The one word of doc[start:end] whose head lies outside it (or the root), None when the
    parse hangs the span's words on more than one outside word (the span is no clause)."""
    tops = [t for t in words if t.head.i == t.i or not start <= t.head.i < end]
    return tops[0] if len(tops) == 1 else None


def _boundaries(sent: Any) -> list[int]:
    """Tokens that may join two clauses: coordinating conjunctions and semicolons."""
    return [t.i for t in sent if (t.dep_ == "cc" and t.pos_ == "CCONJ") or t.text == ";"]


def _hangs_on(t: Any, top: Any) -> bool:
    """Whether `t` hangs on `top` through clauses only: not through a relative clause or another
    clause that modifies a noun ("the day when the store opens and when it closes" is one question)."""
    while t.i != top.i:
        if t.dep_ in NOUN_CLAUSES or t.head.i == t.i:
            return False
        t = t.head
    return True


def _linked(a: Any, b: Any) -> bool:
    """Whether clause head `b` (later) hangs on clause head `a`, or `a` on `b` (the small model
    hangs a first clause on a second one now and then)."""
    return _hangs_on(b, a) or _hangs_on(a, b)


def _clauses(doc: Any, sent: Any, cuts: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """The spans of sentence `sent` between `cuts` when each is a question clause of its own and
    each clause's head hangs on the one before it as a clause where a conjunction joins them (a
    semicolon joins clauses only, however the parser hangs them); else None."""
    edges = [sent.start - 1, *cuts, sent.end]
    spans = [(edges[k] + 1, edges[k + 1]) for k in range(len(edges) - 1)]
    heads = []
    for start, end in spans:
        words = _words(doc, start, end)
        head = _head_of(words, start, end) if words else None
        if head is None or not _opens_question(words, head):
            return None
        heads.append(head)
    if not all(doc[cut].text == ";" or _linked(a, b) for cut, a, b in zip(cuts, heads, heads[1:])):
        return None
    return spans


def _candidate_cuts(bounds: list[int]) -> Iterator[tuple[int, ...]]:
    """Sets of boundaries, the most parts first."""
    for n in range(min(len(bounds), MAX_PARTS - 1), 0, -1):
        yield from combinations(bounds, n)


# third-person pronouns a later question uses for a thing the first one names: (plural, possessive)
PRONOUNS = {"it": (False, False), "its": (False, True), "they": (True, False), "them": (True, False),
            "their": (True, True)}


def _antecedents(doc: Any, start: int, end: int) -> dict[bool, list[str]]:
    """The things doc[start:end] names, by number (plural or not): its noun phrases, without a
    wh-word ("which packages" -> "packages")."""
    out: dict[bool, list[str]] = {False: [], True: []}
    for chunk in doc.noun_chunks:
        if start <= chunk.start and chunk.end <= end and chunk.root.pos_ in ("NOUN", "PROPN"):
            words = [t for t in chunk if t.tag_ not in WH_TAGS]
            if words:
                out[chunk.root.tag_ in ("NNS", "NNPS")].append(doc[words[0].i:words[-1].i + 1].text)
    return out


def _part_text(doc: Any, span: tuple[int, int], named: dict[bool, list[str]]) -> str:
    """A later question as its own question: a pronoun for the one thing of its number the first
    question names is that thing ("when was it published?" -> "when was the report published?");
    an ambiguous or unmatched pronoun stays."""
    out = []
    for t in doc[span[0]:span[1]]:
        plural, possessive = PRONOUNS.get(t.lower_, (False, False))
        things = named[plural] if t.lower_ in PRONOUNS and t.tag_ in ("PRP", "PRP$") else []
        if len(things) == 1:
            thing = things[0] + ("'" if plural and things[0].endswith("s") else "'s") * possessive
            out.append(thing + t.whitespace_)
        else:
            out.append(t.text_with_ws)
    return "".join(out).strip(" ,;:?") + "?"


@functools.lru_cache(maxsize=1024)
def coordinated_questions(question: str) -> tuple[str, ...]:
    """The questions `question` joins with "and", "or", "but" or ";", each as its own question
    ("Which flag turns the cache off?", "where is the log written?"), a pronoun of a later one
    in place of the one thing of its number the first names (`_part_text`); () when it is one
    question, or without spaCy. Sentences before the last one are context ("In the 2019 survey, one group
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
            named = _antecedents(doc, *spans[0])
            parts = [doc[start:end].text.strip(" ,;:?") + "?" for start, end in spans[:1]]
            parts += [_part_text(doc, span, named) for span in spans[1:]]
            return tuple(f"{context} {p}" if context else p for p in parts)
    return ()


def asks_yes_or_no(question: str) -> bool:
    """Whether a sentence of the question opens with its auxiliary before a subject ("Does X run
    Y?", "Is A or B the default?"): an answer restating it affirms it."""
    doc = parsed_question(question)
    if doc is None or not len(doc):
        return False
    for sent in doc.sents:  # "Does X cite more than Y? Answer yes or no."
        words = [t for t in sent if not t.is_punct]
        if words and _inverted(words, sent.root):
            return True
    return False


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


def question_verbs(question: str) -> set[str]:
    """The question's verbs, as written and as lemmas, lower-cased ("quit" of "How do I quit the
    shell?"): a command or option is often named by the action it performs."""
    doc = parsed_question(question)
    if doc is None:
        return set()
    return {form for t in doc if t.pos_ == "VERB" for form in (t.lower_, t.lemma_.lower())}
