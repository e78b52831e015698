"""Entity types without an LLM: what the document says, spaCy's NER label where the text backs it,
else untyped ("concept", the type every reader already treats as none).

spaCy's small model labels spans from their shape and position, which on a manual misfires: a
title case heading ("Jonas Debhelper Manual") is a person, a sentence-initial verb ("Allow") an
organisation, the first half of a noun phrase ("Lintian User's" of "Lintian User's Manual") an
organisation. A label is kept only where

- the NER span is a whole noun phrase: when the noun chunk around it has its head outside the
  span, the span is a modifier and the chunk is the mention (untyped);
- the parse agrees with it: the span's head is a proper noun (an adjective for a nationality);
  a person's name has no article, possessive or digit;
- the document agrees with it: the name's words are not all words the document also writes in
  lower case (title case over common words is a heading or a defined term: "Port", "Modified
  Version"), nor is the head of a person's or place's name ("Jonas Debhelper Manual");
- the words are shaped like a name: no digit, no code-shaped word (`na.approx`, `fBasics`,
  `/home/smith`), not acronyms alone (NER reads the capitals, which say nothing of the kind);
- most mentions of the name across the document carry it (`TypeVotes`).

A copula definition with an indefinite article, "X is a Y" (spaCy's `attr` dependency, the
article's `Definite=Ind` morphology), types a named or code-like X as Y: what the document says
X is wins over any NER label.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bookindex.indexing.graph.extraction import NodeExtraction, name_key

if TYPE_CHECKING:  # spaCy is imported on first use (bookindex.providers.nlp)
    from spacy.tokens import Span, Token

UNTYPED = "concept"
IDENTIFIER = "identifier"
NER_TYPES = {
    "PERSON": "person", "ORG": "organization", "GPE": "location", "LOC": "location",
    "PRODUCT": "product", "EVENT": "event", "WORK_OF_ART": "work", "LAW": "law",
    "LANGUAGE": "language", "NORP": "group", "FAC": "facility", "DATE": "date", "MONEY": "money",
}
UNNAMED = ("DATE", "MONEY")  # labels of quantities, not names: no proper-noun test
# labels whose head is a name by nature: its lower-case form in the document says it is a word
NAME_HEADED = ("PERSON", "GPE", "LOC", "NORP", "LANGUAGE")
_FUNCTION_POS = ("DET", "PART", "PUNCT", "PRON")  # what a noun chunk may add around a whole name
KEEP_TYPES = (IDENTIFIER, "table", "formula", "image", "table header")  # set by shape or structure
# a word written in lower case in running text (not inside a path, an address or an identifier)
_LOWER_WORD = re.compile(r"(?<![\w/.@-])[a-z][a-z'’-]*[a-z](?![\w/@]|\.\w)")


def lowercase_words(texts: Iterable[str]) -> frozenset[str]:
    """The words the document writes in lower case somewhere (its common words)."""
    out: set[str] = set()
    for t in texts:
        out.update(_LOWER_WORD.findall(t))
    return frozenset(out)


def whole_entity(ent: Span, chunk: Span | None) -> bool:
    """The NER span is the noun phrase itself: the chunk around it has no word of its own
    outside the span but function words ("the", a possessive's case marker)."""
    if chunk is None:
        return True
    outside = [t for t in chunk if not ent.start <= t.i < ent.end]
    return ent.start <= chunk.root.i < ent.end and all(t.pos_ in _FUNCTION_POS for t in outside)


def _code_shaped(word: str) -> bool:
    """A word shaped like code, a path or an address rather than a name: a lower-case start,
    a capital after two lower-case letters (camelCase), a slash, @, _ or a dot between letters."""
    return (word[:1].islower() or bool(re.search(r"[a-z]{2}[A-Z]|[/@_]|[A-Za-z]\.[A-Za-z]{2}", word)))


def name_shaped(ent: Span) -> bool:
    """The words are shaped like a name, which is all NER reads a name from: no digit, no
    code-shaped word, not only acronyms (capitals alone are no evidence of the kind of name)."""
    words = [t for t in ent if not t.is_punct]
    content = [t for t in words if not t.is_stop]
    if not content or any(any(c.isdigit() for c in t.text) for t in words):
        return False
    if any(_code_shaped(t.text) for t in content):
        return False
    return not all(t.text.isupper() and len(t.text) > 1 for t in content if t.is_alpha)


def _date_shaped(ent: Span) -> bool:
    """A date names a day, month or year: a number in it, or a proper noun (a month's name)."""
    return any(t.like_num or re.fullmatch(r"\d+(?:st|nd|rd|th)?", t.text) or t.pos_ == "PROPN" for t in ent)


def label_consistent(ent: Span, lower: frozenset[str]) -> bool:
    """Does the parse, and the document's own use of the words, back the span's NER label?"""
    label = ent.label_
    if label in UNNAMED:
        return _date_shaped(ent) if label == "DATE" else True
    root = ent.root
    if root.pos_ != "PROPN" and not (label == "NORP" and root.pos_ == "ADJ"):
        return False
    if not name_shaped(ent):
        return False
    words = [t for t in ent if t.is_alpha and not t.is_stop and len(t) > 1]
    if words and all(t.lower_ in lower for t in words):  # title case over the document's common words
        return False
    if label in NAME_HEADED and root.lower_ in lower:
        return False
    if label == "PERSON":
        if any(t.tag_ == "POS" or t.pos_ == "DET" for t in ent):
            return False
        if any(c.dep_ == "det" for c in root.children):  # "the Martin Guide": a name takes no article
            return False
    return True


def ner_type(ent: Span, lower: frozenset[str]) -> str:
    """The type of a whole NER entity: its label's type when consistent, else UNTYPED."""
    t = NER_TYPES.get(ent.label_, UNTYPED)
    return t if label_consistent(ent, lower) else UNTYPED


def _named(tok: Token, lower: frozenset[str]) -> bool:
    """A proper noun, a code-like word, or a capitalised word the document never writes in lower
    case (a sentence-initial "Frobtool", which spaCy may tag a common noun)."""
    return (tok.pos_ == "PROPN" or any(c.isdigit() or c == "_" for c in tok.text)
            or (tok.text[:1].isupper() and tok.lower_ not in lower))


def defined_type(subject: Token, lower: frozenset[str] = frozenset()) -> str | None:
    """Y when `subject` heads "X is a Y" (X a name or a code-like word, see _named), else None."""
    head = subject.head
    if subject.dep_ != "nsubj" or head.pos_ != "AUX" or not _named(subject, lower):
        return None
    if any(c.dep_ == "neg" for c in head.children):
        return None
    attr = next((c for c in head.children if c.dep_ == "attr" and c.pos_ == "NOUN"), None)
    if attr is None or not any(c.dep_ == "det" and "Ind" in c.morph.get("Definite", []) for c in attr.children):
        return None
    mods = [c for c in attr.lefts if c.dep_ == "compound" and c.pos_ == "NOUN" and c.i >= attr.i - 2]
    words = [c.lower_ for c in mods] + [attr.lemma_.lower() or attr.lower_]
    return " ".join(words) if all(w.isalpha() for w in words) else None


class TypeVotes:
    """Each mention's type across the whole document, then one type per name (`apply`)."""

    def __init__(self) -> None:
        self.mentions: dict[str, Counter[str]] = defaultdict(Counter)
        self.defined: dict[str, Counter[str]] = defaultdict(Counter)
        self.code_spelling: dict[str, str] = {}  # an identifier's own spelling, by name key

    def add(self, name: str, etype: str) -> None:
        key = name_key(name)
        self.mentions[key][etype] += 1
        if etype == IDENTIFIER:
            self.code_spelling.setdefault(key, name)

    def define(self, name: str, etype: str) -> None:
        self.defined[name_key(name)][etype] += 1

    def settle(self, key: str, current: str) -> str:
        """`identifier` when at least half of the name's mentions are written as code; else what
        the document defines the name as; else the type most of its mentions carry (more than
        half of them), else UNTYPED. Structure types stay."""
        votes = self.mentions.get(key)
        if votes and key in self.code_spelling and 2 * votes[IDENTIFIER] >= sum(votes.values()):
            return IDENTIFIER  # mostly written as code: "asn1 parser2tree" in a heading too
        if current in KEEP_TYPES and current != IDENTIFIER:
            return current
        if self.defined.get(key):
            return self.defined[key].most_common(1)[0][0]
        if not votes:
            return current
        typed = [(n, t) for t, n in votes.items() if t not in (UNTYPED, IDENTIFIER)]
        if not typed:
            return UNTYPED
        n, t = max(typed)
        return t if 2 * n > sum(votes.values()) else UNTYPED

    def apply(self, extractions: list[NodeExtraction]) -> None:
        """Every entity's settled type; an identifier is spelled as the code writes it."""
        for ex in extractions:
            for e in ex.entities:
                if not e.structural:
                    key = name_key(e.name)
                    e.type = self.settle(key, e.type)
                    if e.type == IDENTIFIER:
                        e.name = self.code_spelling.get(key, e.name)
