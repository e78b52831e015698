"""Text relevance of tree nodes to a query: BM25 + dense, both over content with section context.

This is the S_T signal of Text_Reasoning and the no-LLM scent of Select_by_Section. Each leaf is
indexed with the titles of its enclosing sections (a paragraph under "4.2 Tree Construction" is
about tree construction even when it never says so), and its score may be blended with the best
score on its page (off by default; docs/benchmarks.md, "Tuning history of Text_Reasoning").
The index is built once per document and cached on the context.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from bookindex.core.model import DocumentTree, entry_of, is_entry, name_words, node_text
from bookindex.core.protocols import LexicalIndex
from bookindex.core.quantities import ORDINALS
from bookindex.operators.context import IndexContext
from bookindex.operators.glossary import expansion, statement_titles
from bookindex.providers.lexical import ANALYSER, Analyser, stem_words, table_titles, word_stems
from bookindex.providers.lexical import LexicalIndex as BM25Index


@dataclass
class TextIndex:
    """BM25 over leaves (with section context) plus row alignment to the stored node vectors."""

    ids: list[str]
    pos: dict[str, int]
    pages: np.ndarray
    lexical_index: LexicalIndex
    vec_rows: np.ndarray | None  # for each leaf, its row in the node matrix (-1 when missing)
    vectors: np.ndarray | None
    # reading-order neighbours on the same page (-1 when none): layout parsers split one passage
    # into several blocks (a label and its value, a caption and its cells), so a block next to a
    # relevant block is more likely relevant itself
    prev_idx: np.ndarray | None = None
    next_idx: np.ndarray | None = None
    # reference entries (parsing.entries) are also matched with stemmed terms: a query describes
    # what a function does ("decodes a DER encoded buffer") in other forms of the words its name
    # and description use ("asn1_der_decoding", "DER encoding"). Only entries: on prose, stemming
    # cost recall (docs/benchmarks.md, "One BM25 analyser from libraries").
    entry_mask: np.ndarray | None = None
    stemmed: BM25Index | None = None
    # an entry's name words (stemmed; words most names share, such as a library prefix, left out):
    # a query that says what the entry does usually says it with the words of its name
    name_terms: dict[int, frozenset[str]] | None = None
    # a table's rows as passages of their own (providers.lexical.table_row_passages; `row_table`:
    # the leaf each belongs to)
    rows: LexicalIndex | None = None
    row_table: np.ndarray | None = None
    # the words of the tables' section titles by their stem (`title_forms`)
    table_titles: dict[str, tuple[str, ...]] | None = None
    # each leaf's enclosing section titles, each as a set of stemmed words (`under_heading`),
    # built on first use
    heading_stems: list[tuple[frozenset[str], ...]] | None = None

    @classmethod
    def build(cls, ctx: IndexContext) -> "TextIndex":
        tree = ctx.tree
        lexical = ctx.index.lexical_index()
        ids = list(lexical.ids)
        vids, mat = ctx.node_matrix()
        rows = None
        if mat is not None and len(vids):
            where = {v: r for r, v in enumerate(vids)}
            rows = np.array([where.get(i, -1) for i in ids], dtype=np.int64)
        pages = np.array([tree.nodes[i].page_idx for i in ids], dtype=np.int64)
        n = len(ids)
        prev_idx = np.arange(-1, n - 1, dtype=np.int64)
        next_idx = np.arange(1, n + 1, dtype=np.int64)
        if n:
            prev_idx[1:][pages[1:] != pages[:-1]] = -1
            next_idx[:-1][pages[:-1] != pages[1:]] = -1
            next_idx[-1] = -1
        mask = np.array([entry_of(tree, i) is not None for i in ids], dtype=bool)
        stemmed = None
        names: dict[int, frozenset[str]] | None = None
        if mask.any():
            stem = Analyser(stemmer="english", stopwords=frozenset())
            stemmed = BM25Index(ids, [node_text(tree, tree.nodes[i], "lexical") for i in ids], analyser=stem)
            raw = {k: frozenset(stem(name_words(tree.nodes[i].title)))
                   for k, i in enumerate(ids) if is_entry(tree.nodes[i])}
            df: dict[str, int] = {}
            for terms in raw.values():
                for t in terms:
                    df[t] = df.get(t, 0) + 1
            common = {t for t, n in df.items() if n > max(2, len(raw) // 2)}
            names = {k: terms - common for k, terms in raw.items() if terms - common}
        pos = {i: k for k, i in enumerate(ids)}
        table_rows = ctx.index.table_row_index()
        row_table = None
        if table_rows is not None:
            row_table = np.array([pos.get(i, -1) for i in table_rows.ids], dtype=np.int64)
            if (row_table < 0).any():  # rows of a table the leaves' index lacks: not scored
                table_rows = None
        return cls(ids=ids, pos=pos, pages=pages,
                   lexical_index=lexical, vec_rows=rows, vectors=mat, prev_idx=prev_idx, next_idx=next_idx,
                   entry_mask=mask if mask.any() else None, stemmed=stemmed, name_terms=names,
                   rows=table_rows, row_table=row_table if table_rows is not None else None,
                   table_titles=table_title_words(tree) if table_rows is not None else None)

    def under_heading(self, tree: DocumentTree, titles: list[str]) -> np.ndarray:
        """1 for each leaf of `tree` (the tree this index was built from) inside a section whose
        own title holds every word (by stem) of one of `titles`, else 0: the leaves a document
        itself heads with a name the query gives. One title must hold them all: a note on
        "Non-operating income" under "Notes to Consolidated Financial Statements" is not a
        statement of income."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        if not titles:
            return out
        if self.heading_stems is None:
            stems = {n.id: word_stems(n.title) for n in tree.walk() if n.type == "section" and n.title}
            self.heading_stems = [tuple(stems[p.id] for p in tree.parent_path(tree.nodes[i]) if p.id in stems)
                                  for i in self.ids]
        wanted = [w for w in map(word_stems, titles) if w]
        for k, heads in enumerate(self.heading_stems):
            if any(w <= h for h in heads for w in wanted):
                out[k] = 1.0
        return out

    def table_row_lexical(self, query: str) -> np.ndarray | None:
        """For each leaf, the BM25 score of its best-matching table row (0 for other leaves)."""
        if self.rows is None or self.row_table is None:
            return None
        best = np.zeros(len(self.ids), dtype=np.float32)
        forms = title_forms(query, self.table_titles) if self.table_titles else ""
        # a row carries its table's section titles, which a question names in other forms of
        # their words ("the cash flow statement" for "Statements of Cash Flows")
        np.maximum.at(best, self.row_table, self.rows.scores(f"{query} {forms}" if forms else query))
        return best

    def name_match(self, query: str) -> np.ndarray:
        """For each entry, the share of its name words the query uses (0 for other nodes)."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        if not self.name_terms or self.stemmed is None:
            return out
        q = set(self.stemmed.analyser(query))
        for k, terms in self.name_terms.items():
            out[k] = len(terms & q) / len(terms)
        return out

    def neighbour_mean(self, s: np.ndarray) -> np.ndarray:
        """Mean score of each leaf's same-page reading-order neighbours (0 when it has none)."""
        if self.prev_idx is None or self.next_idx is None or not s.size:
            return np.zeros_like(s)
        total = np.zeros_like(s)
        count = np.zeros_like(s)
        for nb in (self.prev_idx, self.next_idx):
            ok = nb >= 0
            total[ok] += s[nb[ok]]
            count[ok] += 1
        return np.divide(total, count, out=np.zeros_like(s), where=count > 0)

    def lexical(self, query: str) -> np.ndarray:
        return self.lexical_index.scores(query)

    def dense(self, qvec: np.ndarray | None) -> np.ndarray | None:
        if qvec is None or self.vectors is None or self.vec_rows is None:
            return None
        sims = self.vectors @ np.asarray(qvec, dtype=np.float32).reshape(-1)
        out = np.where(self.vec_rows >= 0, sims[np.clip(self.vec_rows, 0, None)], 0.0)
        return out.astype(np.float32)


def table_title_words(tree: DocumentTree) -> dict[str, tuple[str, ...]]:
    """The words of the section titles a table's rows carry (its two nearest, as
    `table_row_passages` writes them), grouped by their Snowball stem."""
    words: set[str] = set()
    for n in tree.walk():
        if n.type == "table":
            for title in table_titles(tree, n):
                words.update(ANALYSER(title))
    vocab = sorted(words)
    by_stem: dict[str, list[str]] = {}
    for w, st in zip(vocab, stem_words(vocab)):
        by_stem.setdefault(st, []).append(w)
    return {st: tuple(ws) for st, ws in by_stem.items()}


def title_forms(query: str, by_stem: dict[str, tuple[str, ...]]) -> str:
    """The other forms of the query's words that the tables' titles print ("flow" → "flows",
    "statement" → "statements", "sheet" → "sheets"), space-separated; empty when none."""
    terms = ANALYSER(query)
    have = set(terms)
    extra = [w for st in stem_words(terms) for w in by_stem.get(st, ()) if w not in have]
    return " ".join(dict.fromkeys(extra))


def get_text_index(ctx: IndexContext) -> TextIndex:
    if ctx.views.text_index is None:
        ctx.views.text_index = TextIndex.build(ctx)
    return ctx.views.text_index


def prefetch_vectors(ctx: IndexContext, texts: list[str]) -> None:
    """Encode the uncached texts in one call (one model call costs about as much as one text)."""
    ctx.query_vectors(texts)


def query_vector(ctx: IndexContext, query: str) -> np.ndarray | None:
    return ctx.query_vectors([query])[0]


_SCOPE: ContextVar[dict[tuple[Any, ...], dict[str, float]] | None] = ContextVar("bookindex_text_scores", default=None)


def _norm_max(x: np.ndarray) -> np.ndarray:
    m = float(x.max()) if x.size else 0.0
    return x / m if m > 0 else np.zeros_like(x)


def _rows_on_leaf_scale(row: np.ndarray, leaf: np.ndarray) -> np.ndarray:
    """Table-row BM25 scores divided by the best leaf's (both the same analyser and parameters),
    at most 1: a row counts as much as a passage matching as well, and no more. Scaled to their
    own best instead, the best row of any table reached 1 for every question, and on MMLongBench
    dev tables outranked the prose that answered (R@5 0.780 to 0.748)."""
    m = float(leaf.max()) if leaf.size else 0.0
    return np.minimum(row / m, 1.0) if m > 0 else _norm_max(row)


def _norm_dense(x: np.ndarray) -> np.ndarray:
    """Cosine clipped to [0, 1], not rescaled: stretching each document's best match to 1 made
    weak dense matches outvote exact terms."""
    return np.clip(x, 0.0, 1.0)


def hybrid_scores(ctx: IndexContext, query: str, *, lexical_weight: float = 0.6, page_weight: float = 0.0,
                  neighbour_weight: float = 0.2, name_weight: float = 0.3) -> dict[str, float]:
    """S_T for every non-empty leaf: BM25 (max-normalized) blended with the dense cosine,
    optionally smoothed by the best score on the node's page.

    Scores are computed over the whole document (so a score means the same thing whatever the
    selection) and lie in [0, 1]. Without an embedder the dense half is dropped. How the weights
    were chosen: docs/benchmarks.md, "Tuning history of Text_Reasoning".

    Inside `question_scope()` a question's scores are computed once (the returned dict is then
    shared, so callers must not modify it).
    """
    idx = get_text_index(ctx)
    if not idx.ids:
        return {}
    glossary = ctx.settings.retrieval.glossary
    glossary_weight = ctx.settings.retrieval.glossary_weight
    key = (id(ctx), query, lexical_weight, page_weight, neighbour_weight, name_weight, glossary, glossary_weight)
    scope = _SCOPE.get()
    if scope is not None and key in scope:
        return scope[key]
    scores = _hybrid(ctx, idx, query, lexical_weight, page_weight, neighbour_weight, name_weight,
                     glossary, glossary_weight)
    if scope is not None:
        scope[key] = scores
    return scores


@contextmanager
def question_scope() -> Iterator[None]:
    """While one question's plan runs, the hybrid scores it computes are kept and reused (the
    selectors, Text_Reasoning and Map ask for the same ones up to three times); they are dropped
    when it ends, so no question is answered from another's work. Per thread (a ContextVar)."""
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _hybrid(ctx: IndexContext, idx: TextIndex, query: str, lexical_weight: float, page_weight: float,
            neighbour_weight: float, name_weight: float, glossary: bool, glossary_weight: float) -> dict[str, float]:
    raw = idx.lexical(query)
    lex = _norm_max(raw)
    extra = expansion(query) if glossary else ""
    statements = statement_titles(query) if glossary else []
    if extra or statements:
        # glossary terms: the line items a named ratio is computed from (see glossary.py); a leaf
        # under the heading of a statement the question names, or that prints the term, matches
        # in full whatever its words (a statement's rows are many, its line items a few of them)
        w = glossary_weight
        extra_lex = _norm_max(idx.lexical(extra)) if extra else np.zeros_like(lex)
        lex = (1 - w) * lex + w * np.maximum(extra_lex, idx.under_heading(ctx.tree, statements))
    if idx.stemmed is not None and idx.entry_mask is not None:
        lex = np.where(idx.entry_mask, np.maximum(lex, _norm_max(idx.stemmed.scores(query))), lex)
    row = idx.table_row_lexical(query)
    if row is not None:
        lex = np.maximum(lex, _rows_on_leaf_scale(row, raw))
    den = idx.dense(query_vector(ctx, query))
    if den is None:
        s = lex
    else:
        s = lexical_weight * lex + (1 - lexical_weight) * _norm_dense(den)
    if neighbour_weight > 0:
        # + w × the mean of the same-page reading-order neighbours: layout parsers split one
        # passage into several blocks
        s = s + neighbour_weight * idx.neighbour_mean(s)
    if name_weight > 0 and idx.name_terms:  # reference entries the query names by its words
        s = s + name_weight * idx.name_match(query)
    if page_weight > 0 and idx.pages.size:
        best = np.zeros(int(idx.pages.max()) + 1, dtype=np.float32)
        np.maximum.at(best, idx.pages, s)
        s = (1 - page_weight) * s + page_weight * best[idx.pages]
    return {i: float(v) for i, v in zip(idx.ids, s)}


_PAGE_SPAN = re.compile(r"\bpages?\s+(\d+)(?:\s*(?:-|–|to|and|through)\s*(\d+))?", re.I)
_NTH_PAGE = re.compile(r"\b(\d+)(?:st|nd|rd|th)\s+page\b", re.I)
_WORD_PAGE = re.compile(rf"\b({'|'.join(ORDINALS)})\s+page\b", re.I)
_COVER = re.compile(r"\b(?:front\s+)?cover(?:\s+page)?\b", re.I)
_LAST_PAGE = re.compile(r"\b(?:last|final)\s+page\b", re.I)


def page_references(question: str, page_count: int, labels: list[str] | None = None) -> set[int]:
    """0-based pages a question points at: "page 5", "pages 10 and 11", "the 6th page", "the
    second page", "the cover", "the last page". Used as a soft boost, not a filter: printed page
    numbers can differ from the PDF's.

    With the PDF's page labels (`labels[i]` is what page i prints, e.g. "iii", "17") a number also
    names the pages labelled with it: readers quote the printed number, which in a document with
    front matter is not the physical one."""
    out: set[int] = set()
    for m in _PAGE_SPAN.finditer(question):
        a = int(m.group(1))
        b = int(m.group(2) or a)
        if 0 <= b - a <= 5:
            out.update(range(a, b + 1))
    out.update(int(m.group(1)) for m in _NTH_PAGE.finditer(question))
    numbered = set(out)  # "the second page" counts sheets, not printed numbers
    out.update(ORDINALS[m.group(1).lower()] for m in _WORD_PAGE.finditer(question))
    if _COVER.search(question):
        out.add(1)
    if _LAST_PAGE.search(question):
        out.add(page_count)
    pages = {p - 1 for p in out if 1 <= p <= page_count}
    if labels:
        by_label: dict[str, list[int]] = {}
        for i, lab in enumerate(labels[:page_count]):
            by_label.setdefault(lab.strip().lower(), []).append(i)
        for n in numbered:
            pages.update(by_label.get(str(n), ()))
    return pages
