"""Index builds: each distinct text embedded (and parsed by spaCy) once, batches by length, same
vectors and the same extraction per node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import FakeEmbedder

from bookindex.core.config import load_settings
from bookindex.core.model import Node, node_text
from bookindex.indexing.graph.extraction import NodeExtraction
from bookindex.indexing.library import DocumentLibrary


class CountingEmbedder(FakeEmbedder):
    """FakeEmbedder that records every text it was asked to encode, and each batch."""

    def __init__(self) -> None:
        super().__init__(dim=32, word=r"\w+")
        self.seen: list[str] = []
        self.batches: list[list[str]] = []

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        self.seen.extend(texts)
        self.batches.append(list(texts))
        return super().encode(texts, progress)


def _one_by_one(texts: list[str]) -> np.ndarray:
    plain = FakeEmbedder(dim=32, word=r"\w+")
    return np.vstack([plain.encode([t]) for t in texts])


def test_distinct_keeps_first_seen_order_and_maps_every_input() -> None:
    from bookindex.providers.embedding_batches import distinct  # new module: imported per test

    uniq, rows = distinct(["b", "a", "b", "c", "a"])
    assert uniq == ["b", "a", "c"]
    assert rows.tolist() == [0, 1, 0, 2, 1]


def test_encode_distinct_encodes_each_text_once_with_one_by_one_vectors() -> None:
    texts = ["page 3 of 9", "a long paragraph about valves and pumps", "page 3 of 9", "x",
             "a long paragraph about valves and pumps", "totals 12 14", "x"]
    from bookindex.providers.embedding_batches import encode_distinct

    emb = CountingEmbedder()
    done: list[int] = []
    vecs = encode_distinct(emb, texts, batch=2, on_batch=done.append)
    assert sorted(emb.seen) == sorted(set(texts))  # every distinct text, once
    assert sum(done) == len(texts)  # progress counts the copies too
    np.testing.assert_allclose(vecs, _one_by_one(texts), atol=1e-6)
    lengths = [len(t) for b in emb.batches for t in b]
    assert lengths == sorted(lengths)  # batches cut from the texts sorted by length


def test_encode_distinct_of_nothing_has_the_embedder_width() -> None:
    from bookindex.providers.embedding_batches import encode_distinct

    assert encode_distinct(CountingEmbedder(), []).shape == (0, 32)


def test_index_build_embeds_a_repeated_text_once(tmp_path: Path) -> None:
    md = tmp_path / "manual.md"
    footer = "Acme pump manual, revision 4. All rights reserved."
    parts = ["# Manual", "## Install", "Bolt the pump to the floor.", footer,
             "## Service", "Drain the pump before opening it.", footer, "## Parts", footer]
    md.write_text("\n\n".join(parts) + "\n")
    emb = CountingEmbedder()
    lib = DocumentLibrary.open(tmp_path / "lib", load_settings(env={}, overrides={"cache.enabled": False}),
                               embedder=emb)
    doc = lib.add(md, graph=False)
    ids, vecs = doc.node_vectors()
    texts = [node_text(doc.tree, doc.tree.nodes[i]) for i in ids]
    assert texts.count(footer) == 3  # the tree keeps every copy and each gets its vector
    assert emb.seen.count(footer) == 1
    assert len(emb.seen) == len(set(texts))
    assert vecs is not None
    np.testing.assert_allclose(vecs, _one_by_one(texts), atol=1e-6)


def test_onnx_session_threads_do_not_spin() -> None:
    """Idle ONNX Runtime threads sleep, so a build does not burn shared cores between batches."""
    pytest.importorskip("onnxruntime")
    from bookindex.providers.embedding import get_embedder
    from bookindex.providers.embedding_onnx import OnnxEmbedder

    emb = get_embedder(load_settings(env={}, overrides={"cache.enabled": False}))
    if not isinstance(emb, OnnxEmbedder):
        pytest.skip("the ONNX backend is not available here")
    opts = emb.session.get_session_options()
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"


class CountingPipeline:
    """Stands in for a spaCy pipeline: records the texts `pipe` parsed, and returns for each
    a fresh stand-in doc (the text's words), so a reused doc can be told apart from a re-parse."""

    def __init__(self) -> None:
        self.parsed: list[str] = []

    def pipe(self, texts: list[str], batch_size: int = 64) -> Iterator[list[str]]:
        for t in texts:
            self.parsed.append(t)
            yield t.split()


def test_offline_extractor_parses_each_distinct_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from bookindex.indexing.graph import extract_offline

    seen: list[tuple[str, Any]] = []
    pipeline = CountingPipeline()
    monkeypatch.setattr(extract_offline, "load_nlp", lambda: pipeline)
    monkeypatch.setattr(extract_offline, "extract_doc",
                        lambda node, doc, *_: (seen.append((node.id, doc)), NodeExtraction(node.id, [], []))[1])
    texts = ["Confidential draft", "Valves open slowly.", "Confidential draft", "Pumps", "Confidential draft"]
    nodes = [Node(id=f"d-{i}", type="text", level=1, text=t) for i, t in enumerate(texts)]
    out = extract_offline.OfflineExtractor(batch_size=2).extract(nodes)
    assert [ex.node_id for ex in out] == [n.id for n in nodes]
    assert sorted(pipeline.parsed) == sorted(set(texts))  # each distinct text parsed once
    assert [d for _, d in seen] == [t.split() for t in texts]  # every node still gets its text's doc


def test_memo_serves_a_text_encoded_for_an_earlier_document() -> None:
    from bookindex.providers.embedding_batches import VectorMemo, encode_distinct

    emb = CountingEmbedder()
    memo = VectorMemo(entries=3, max_chars=20)
    long_text = "a paragraph longer than twenty characters"
    first = encode_distinct(emb, ["net sales", "fiscal year", long_text], memo=memo)
    emb.seen.clear()
    done: list[int] = []
    again = encode_distinct(emb, ["fiscal year", "net sales", "net sales", long_text, "cash"], memo=memo,
                            on_batch=done.append)
    assert sorted(emb.seen) == [long_text, "cash"]  # memo hits are not encoded; long texts not kept
    assert sum(done) == 5
    np.testing.assert_allclose(again, _one_by_one(["fiscal year", "net sales", "net sales", long_text, "cash"]),
                               atol=1e-6)
    np.testing.assert_allclose(again[1], first[0], atol=0)
    assert len(memo) == 3  # bounded: "cash" pushed nothing out yet; one more would
    encode_distinct(emb, ["fixed assets"], memo=memo)
    assert len(memo) == 3 and memo.get("fiscal year") is None  # least recently used dropped


def test_entity_names_recurring_across_documents_are_embedded_once(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    lib = DocumentLibrary.open(tmp_path / "lib", load_settings(env={}, overrides={"cache.enabled": False}),
                               embedder=emb)
    for year in (2021, 2022):
        md = tmp_path / f"report-{year}.md"
        md.write_text(f"# Annual report {year}\n\nThe pump division raised net sales in Springfield.\n")
        lib.add(md)
    assert emb.seen.count("pump division") == 1
