"""What a parsed sentence says about its mentions, for the no-LLM graph (extract_offline).

Three readings of spaCy's parse, each from the document's own words rather than a list of
expected names:
- a *term shape*: a name with unbalanced brackets or escape characters, or one cut out of a
  longer word (a piece of a path), is a fragment the layout left (``source/}lintian-override``,
  ``Run lintian(1``, ``staff`` of ``/home/staff``), not a term of the document;
- a *type the document gives*: "X is a Y" and "X, a Y," with an indefinite article state that X
  belongs to the class Y (a definite one, "X is the Y", states identity, not a class), and
  "X is a kind of Y" names Y as the class;
- a *verb relation*: a verb's subject and its object (direct, or through a preposition: "files
  are stored in /etc") are related by that verb ("store in").
The statistical NER labels are kept only where the document is consistent about them
(`settle_types`): a small model's PERSON for a manual's title, seen once, is more often wrong
than right, and an untyped entity is better than a wrongly typed one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bookindex.indexing.graph.extraction import NodeExtraction, name_key

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

UNTYPED = "concept"
FORMAT_TYPES = ("date", "money")   # NER labels read from the form of the text: one mention suffices
MIN_NER_NODES = 2                  # another NER label needs this many nodes agreeing ...
MIN_NER_SHARE = 2 / 3              # ... and this share of the nodes that mention the name
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))
_MARKUP = set("\\")               # TeX and escape debris (angle brackets are manuals' placeholders)
_IN_WORD = set("/_\\")             # besides letters and digits: characters a word continues with
_INDEFINITE = {"a", "an"}
_KIND_WORDS = {"kind", "type", "sort", "form", "variant"}   # "a kind of Y": the class is Y
_SUBJECTS = {"nsubj", "nsubjpass"}


@dataclass
class TypeVotes:
    """Per name key, over a document's nodes: the classes its definitions give, its NER labels."""

    defined: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    ner: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))


def term_shape_ok(name: str) -> bool:
    """False for a fragment: unbalanced brackets, or markup characters inside the name."""
    if any(c in _MARKUP for c in name):
        return False
    return all(name.count(a) == name.count(b) for a, b in _PAIRS)


def cut_from_word(text: str, start: int, end: int) -> bool:
    """True when text[start:end] begins or ends inside a longer word of `text`: a piece of a path
    ("staff" of /home/staff) or of a glued token is no term of its own."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return any(c.isalnum() or c in _IN_WORD for c in (before, after))


def _class_name(head: Token) -> str:
    """The class a noun names: its compound modifiers and its lemma ("configuration file")."""
    if head.lemma_.lower() in _KIND_WORDS:
        for prep in head.children:
            if prep.dep_ == "prep" and prep.lower_ == "of":
                obj = next((c for c in prep.children if c.dep_ == "pobj" and c.pos_ == "NOUN"), None)
                if obj is not None:
                    return _class_name(obj)
        return ""
    words = [c.lemma_.lower() for c in head.children if c.dep_ == "compound" and c.i < head.i and c.is_alpha]
    word = head.lemma_.lower()
    if not head.is_alpha or head.is_stop or len(word) < 3:
        return ""
    return " ".join([*words, word])


def _indefinite(noun: Token) -> bool:
    return noun.pos_ == "NOUN" and any(c.dep_ == "det" and c.lower_ in _INDEFINITE for c in noun.children)


def definitions(doc: Doc) -> list[tuple[int, str]]:
    """(character offset of the defined word, class) for each "X is a Y" / "X, a Y," in `doc`."""
    found: list[tuple[int, str]] = []
    for tok in doc:
        if tok.dep_ == "attr" and tok.head.lemma_ == "be" and _indefinite(tok):
            subject = next((c for c in tok.head.children if c.dep_ == "nsubj"), None)
        elif tok.dep_ == "appos" and _indefinite(tok):
            subject = tok.head
        else:
            continue
        cls = _class_name(tok)
        if subject is not None and cls:
            found.append((subject.idx, cls))
    return found


def verb_links(doc: Doc) -> list[tuple[int, int, str]]:
    """(subject offset, object offset, verb phrase) for each verb with a subject and an object."""
    found: list[tuple[int, int, str]] = []
    for verb in doc:
        if verb.pos_ != "VERB":
            continue
        subjects = [c for c in verb.children if c.dep_ in _SUBJECTS]
        if not subjects:
            continue
        objects: list[tuple[Token, str]] = []
        for c in verb.children:
            if c.dep_ == "dobj":
                objects.append((c, verb.lemma_.lower()))
            elif c.dep_ == "prep":
                objects += [(p, f"{verb.lemma_.lower()} {c.lower_}") for p in c.children if p.dep_ == "pobj"]
        found += [(s.idx, o.idx, phrase) for s in subjects for o, phrase in objects]
    return found


def settle_types(extractions: list[NodeExtraction], votes: TypeVotes, model_types: set[str]) -> None:
    """Give each name one type across the document, in place: the class its definitions give
    (the most frequent), else a NER label the document is consistent about, else untyped.

    Only entities whose type came from the model (`model_types`: the NER labels and untyped)
    are settled; identifiers and table headers are typed by their shape."""
    nodes: dict[str, int] = defaultdict(int)
    for ex in extractions:
        for e in ex.entities:
            if e.type in model_types:
                nodes[name_key(e.name)] += 1
    chosen: dict[str, str] = {}
    for key, n in nodes.items():
        if votes.defined.get(key):
            chosen[key] = votes.defined[key].most_common(1)[0][0]
        elif votes.ner.get(key):
            label, agree = votes.ner[key].most_common(1)[0]
            enough = agree >= (1 if label in FORMAT_TYPES else MIN_NER_NODES)
            chosen[key] = label if enough and agree >= MIN_NER_SHARE * n else UNTYPED
    for ex in extractions:
        for e in ex.entities:
            if e.type in model_types:
                e.type = chosen.get(name_key(e.name), UNTYPED)
