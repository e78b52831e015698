"""Baselines over an in-memory tree with a deterministic fake embedder."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import FakeEmbedder

from bookindex.core.errors import InputError
from bookindex.core.model import Block, build_tree
from bookindex.operators.context import DerivedViews, IndexContext, MemoryIndex
from bookindex.retrieval.baselines import METHODS
from bookindex.retrieval.baselines import run_baseline as _run_baseline
from bookindex.retrieval.baselines.index import build_chunks, get_index


class FakeDoc(MemoryIndex):
    """A MemoryIndex that counts how often its stored vectors are read; its contexts share one
    `DerivedViews`, as the Engine's contexts of one opened document do."""

    def __init__(self, tree, vectors=None):
        ids, mat = vectors if vectors is not None else ([], None)
        super().__init__(tree=tree, node_ids=list(ids), node_matrix=mat)
        self.vector_calls = 0
        self.views = DerivedViews()

    def node_vectors(self):
        self.vector_calls += 1
        return super().node_vectors()


def run_baseline(method, doc, question, k=10, embedder=None, llm=None):
    return _run_baseline(method, IndexContext(index=doc, embedder=embedder, llm=llm, views=doc.views), question, k)


def _tree():
    blocks = [
        Block("title", "1 Installation", 0, level=1, bbox=(10, 10, 100, 20)),
        Block("text", "Install the package with pip on Linux and macOS.", 0, bbox=(10, 30, 200, 50)),
        Block("text", "Windows users run the installer wizard.", 1),
        Block("title", "2 Configuration", 2, level=1),
        Block("title", "2.1 Colors", 2, level=2),
        Block("text", "Set the palette colors for plots: red green blue.", 2),
        Block("table", "| option | default |\n| color | red |", 3),
        Block("title", "2.2 Fonts", 4, level=2),
        Block("text", "Fonts are configured with the font option and a size.", 4),
        Block("image", "", 5),  # no content: never a candidate
        Block("text", "Zebra crossings appear nowhere else in this manual.", 6),
    ]
    return build_tree("t", "manual", blocks)


def test_bm25_finds_the_matching_block_with_page_and_bbox():
    doc = FakeDoc(_tree())
    ev = run_baseline("bm25", doc, "How do I install with pip?", k=3)
    assert ev[0].node_id == "t-00001"
    assert ev[0].page == 1 and ev[0].bbox == (10, 30, 200, 50)
    assert ev[0].section == "1 Installation"
    assert [e.rank for e in ev] == list(range(1, len(ev) + 1))
    assert all(e.scores["bm25"] > 0 for e in ev)  # only matching blocks
    assert run_baseline("bm25", doc, "the of and", k=3) == []  # stopwords only: nothing


def test_dense_uses_stored_vectors_and_encodes_only_missing():
    tree = _tree()
    emb = FakeEmbedder.words()
    leaves = [n for n in tree.leaves() if n.content.strip()]
    stored_ids = [n.id for n in leaves[:-1]]
    stored = emb.encode([tree.nodes[i].content for i in stored_ids])
    emb.calls = 0
    doc = FakeDoc(tree, (stored_ids + [tree.root_id], np.vstack([stored, np.ones((1, 64), np.float32)])))
    ev = run_baseline("dense", doc, "palette colors for plots", k=2, embedder=emb)
    assert ev[0].node_id == "t-00005"
    # one encode for the missing leaf, one for the question
    assert emb.calls == 2
    run_baseline("dense", doc, "fonts size", k=2, embedder=emb)
    assert doc.vector_calls == 1 and emb.calls == 3  # cached: only the question is encoded


def test_hybrid_fuses_both_rankings():
    doc = FakeDoc(_tree())
    ev = run_baseline("hybrid", doc, "font option size", k=4, embedder=FakeEmbedder.words())
    assert ev[0].node_id == "t-00008"
    for e in ev:  # every fused score is the RRF sum of the ranks it came with
        want = sum(1 / (60 + e.scores[r]) for r in ("bm25_rank", "dense_rank") if r in e.scores)
        assert e.scores["rrf"] == pytest.approx(want)
    assert [e.scores["rrf"] for e in ev] == sorted((e.scores["rrf"] for e in ev), reverse=True)
    assert ev[0].scores["bm25_rank"] == 1
    assert len(ev) == 4 and len({e.node_id for e in ev}) == 4


def test_chunks_map_to_first_node_and_page():
    tree = _tree()
    idx = get_index(IndexContext(index=FakeDoc(tree)))
    chunks = build_chunks(idx, size=12)
    assert len(chunks) > 2
    # every chunk starts in the leaf it names, and consecutive chunks cover the text in order
    for ch in chunks:
        first = tree.nodes[ch.node_id]
        assert ch.text.split()[0].strip("|") in first.content or ch.text[:5] in first.content
        assert ch.node_ids[0] == ch.node_id
    assert sum(len(c.node_ids) for c in chunks) >= len(idx.leaves)
    ev = run_baseline("chunks", FakeDoc(tree), "zebra crossings", k=2, embedder=FakeEmbedder.words())
    assert ev[0].scores["chunk_chars"] > 0 and "chunk_index" in ev[0].scores
    assert ev[0].page_idx == tree.nodes[ev[0].node_id].page_idx


def test_chunk_spanning_pages_contributes_first_node_page():
    tree = _tree()
    idx = get_index(IndexContext(index=FakeDoc(tree)))
    big = build_chunks(idx, size=500)
    assert len(big) == 1 and big[0].node_id == "t-00001"
    ev = run_baseline("chunks", FakeDoc(tree), "anything", k=3, embedder=FakeEmbedder.words())
    assert len(ev) == 1 and ev[0].page == 1


def test_tree_greedy_descends_to_the_matching_section(fake_llm):
    ev = run_baseline("tree", FakeDoc(_tree()), "fonts font option size", k=2, embedder=FakeEmbedder.words(),
                      llm=fake_llm(available=False))
    assert ev[0].node_id == "t-00008"
    assert ev[0].scores["tree_depth"] == 2  # Configuration > Fonts
    # Fonts holds one leaf; the second comes from widening to Configuration
    assert ev[1].section.startswith("2.")


def test_tree_follows_the_llm_choice(fake_llm):
    llm = fake_llm([{"choice": 2}, {"choice": 1}])  # "2 Configuration", then "2.1 Colors"
    ev = run_baseline("tree", FakeDoc(_tree()), "fonts", k=1, embedder=FakeEmbedder.words(), llm=llm)
    assert ev[0].section == "2.1 Colors"
    assert "1. 1 Installation (pages 1-2)" in llm.calls[0].prompt
    assert len(llm.calls) == 2


def test_errors_and_method_list():
    assert set(METHODS) == {"bm25", "dense", "hybrid", "chunks", "tree"}  # bm25-pages is calibration only
    with pytest.raises(InputError):
        run_baseline("magic", FakeDoc(_tree()), "q", k=3)
    with pytest.raises(InputError):
        run_baseline("dense", FakeDoc(_tree()), "q", k=3)  # no embedder


def test_bm25_pages_ranks_whole_pages_and_scores_exactly_that_page():
    from bookindex.evaluation import page_recall_at_k

    tree = _tree()
    ev = run_baseline("bm25-pages", FakeDoc(tree), "palette colors for plots, red default", k=2)
    # page 3 holds the palette text and its heading; page 4 the table (color, red, default)
    assert [e.page for e in ev] == [3, 4]
    assert all(e.scores["page_unit"] == 1.0 for e in ev)
    assert page_recall_at_k(ev, [3, 4], [1, 2], tree=tree)[2].recall == 1.0


def test_the_baseline_index_lives_on_the_opened_document():
    doc = FakeDoc(_tree())
    ctx = IndexContext(index=doc)
    assert get_index(ctx) is get_index(ctx) is ctx.views.baseline
    other = IndexContext(index=FakeDoc(_tree()))  # another opened copy: its own index
    assert get_index(other) is not get_index(ctx)
    run_baseline("bm25", doc, "install pip", k=1)
    bm25 = doc.views.baseline.bm25
    run_baseline("bm25", doc, "fonts", k=1)
    assert doc.views.baseline.bm25 is bm25  # built once per opened document


def test_bm25_uses_the_shared_analyser():
    """The baselines analyse with the one shared analyser: whole words, library stopwords."""
    doc = FakeDoc(_tree())
    assert run_baseline("bm25", doc, "install", k=1)[0].node_id == "t-00001"
    assert run_baseline("bm25", doc, "palette", k=1)[0].node_id == "t-00005"
    assert run_baseline("bm25", doc, "installing", k=1) == []  # no stemming by default
