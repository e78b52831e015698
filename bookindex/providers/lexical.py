"""The one lexical (BM25) index: Text_Reasoning, library routing and the baselines all use it.

`LexicalIndex` scores a fixed list of passages with bm25s; `tokenize` is the one analyser for
passages and queries alike. `document_lexical_index` indexes a document's leaves by their
"lexical" node text (content with its section titles, `bookindex.core.model.node_text`).
"""

from __future__ import annotations

import re

import bm25s
import numpy as np

from bookindex.core.model import LEAF_TYPES, DocumentTree, node_text

_TOKEN = re.compile(r"(?u)\b\w\w+\b|\b\d\b")
STOPWORDS = frozenset("""a an and are as at be but by for if in into is it no not of on or such that the their
then there these they this to was will with what which who whom whose when where why how does do did
can could would should may might shall has have had been being its our your you we i me my he she his
her them than so very just also about above after again all any both each few more most other some own
same too only from up down out over under further once here those am were please tell give show list
document according""".split())


def light_stem(tok: str) -> str:
    """A tiny suffix stripper (plural, -ing, -ed): enough to match 'tables'/'table', 'plotting'/'plot'."""
    if len(tok) <= 3 or tok.isdigit():
        return tok
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3:
            if suf == "s" and tok.endswith(("ss", "us", "is")):
                return tok
            return tok[: len(tok) - len(suf)] + rep
    return tok


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords, stemmed."""
    return [light_stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class LexicalIndex:
    """BM25 (k1 = 1.2, b = 0.75) over `texts`, row-aligned with `ids`."""

    def __init__(self, ids: list[str], texts: list[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        self._ids = list(ids)
        self._bm25: bm25s.BM25 | None = None
        if self._ids:
            self._bm25 = bm25s.BM25(k1=k1, b=b)
            self._bm25.index([tokenize(t) or ["_empty_"] for t in texts], show_progress=False)

    @property
    def ids(self) -> list[str]:
        return self._ids

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per passage (zeros when the query has no indexable term)."""
        toks = tokenize(query)
        if self._bm25 is None or not toks:
            return np.zeros(len(self._ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(toks), dtype=np.float32)


def document_lexical_index(tree: DocumentTree) -> LexicalIndex:
    """BM25 over a document's non-empty leaves, each with its section context."""
    leaves = [n for n in tree.walk() if n.type in LEAF_TYPES and n.content.strip()]
    return LexicalIndex([n.id for n in leaves], [node_text(tree, n, "lexical") for n in leaves])
