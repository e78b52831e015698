"""Graph extraction: modality rules, the offline extractor on a real PDF, the LLM extractor
(fake client for batching/failure plumbing; a real small model on 127.0.0.1 for structure),
and graph storage."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import ExtractionScript, FakeEmbedder, FakeLLM

from bookindex.core.config import load_settings
from bookindex.core.model import Block, DocumentTree, Node, build_tree
from bookindex.indexing.document_folder import load_entity_vectors, load_graph, save_graph
from bookindex.indexing.graph.extract_llm import LLMExtractor, NodeOut, pack
from bookindex.indexing.graph.extract_offline import OfflineExtractor
from bookindex.indexing.graph.extraction import CONTAINED_IN, NodeExtraction, RawEntity, RawRelation, name_key, table_headers

REPO = Path(__file__).resolve().parents[1]
PDF = REPO / "data" / "libtasn1.pdf"

TABLE_MD = """| Model | Params | Accuracy |
|---|---|---|
| BERT base | 110M | 84.1 |
| RoBERTa large | 355M | 88.9 |
| GPT-2 | 1.5B | 80.2 |"""

TABLE_HTML = ("<table><tr><th>Directory</th><th>Description</th></tr>"
              "<tr><td>/bin</td><td>Essential command binaries</td></tr>"
              "<tr><td>/etc</td><td>Host-specific system configuration</td></tr></table>")


def _tree(blocks: list[Block]) -> DocumentTree:
    return build_tree("doc0000000000000", "fixture.pdf",
                      [Block("title", "1 Results", 0, level=1)] + blocks)


def _rel_pairs(ex: Any) -> set[tuple[str, str, str]]:
    return {(name_key(r.source), name_key(r.target), ",".join(r.keywords)) for r in ex.relations}


def test_table_headers_become_entities_contained_in_the_table() -> None:
    tree = _tree([Block("table", TABLE_MD, 0, extra={"markdown": TABLE_MD, "caption": "Table 2: Model accuracy"}),
                  Block("table", "", 1, extra={"html": TABLE_HTML})])
    t1, t2 = [n for n in tree.walk() if n.type == "table"]
    assert table_headers(t1) == (["Model", "Params", "Accuracy"], ["BERT base", "RoBERTa large", "GPT-2"])
    assert table_headers(t2) == (["Directory", "Description"], ["/bin", "/etc"])
    ex1, ex2 = OfflineExtractor().extract([t1, t2])
    table = ex1.entities[0]
    assert table.type == "table" and table.structural and table.name == "Table 2: Model accuracy"
    names = {name_key(e.name): e for e in ex1.entities}
    for h in ("Model", "Params", "Accuracy", "BERT base", "RoBERTa large", "GPT-2"):
        assert name_key(h) in names, h
        assert (name_key(h), name_key(table.name), CONTAINED_IN) in _rel_pairs(ex1)
    assert any(e.type == "table header" for e in ex1.entities)
    # an uncaptioned table is named by its page; its other entities are linked to it too
    assert ex2.entities[0].name == "Table on page 2"
    assert all(r.target == ex2.entities[0].name for r in ex2.relations if CONTAINED_IN in r.keywords)
    assert {name_key("/bin"), name_key("Directory")} <= {name_key(e.name) for e in ex2.entities}


def test_equation_and_image_nodes_get_typed_entities() -> None:
    tree = _tree([Block("equation", "E = mc^2", 0, extra={"latex": "E = m c^{2}"}),
                  Block("image", "", 0, extra={"caption": "Figure 3: The Transformer encoder architecture",
                                                "ocr_text": "Multi-Head Attention Feed Forward"})])
    eq, img = [n for n in tree.walk() if n.type in ("equation", "image")]
    ex_eq, ex_img = OfflineExtractor().extract([eq, img])
    assert ex_eq.entities[0].type == "formula" and "m c^{2}" in ex_eq.entities[0].description
    assert ex_img.entities[0].type == "image" and ex_img.entities[0].name.startswith("Figure 3")
    others = {name_key(e.name) for e in ex_img.entities[1:]}
    assert any("attention" in n for n in others) and any("transformer" in n for n in others)
    assert all(r.target == ex_img.entities[0].name for r in ex_img.relations if CONTAINED_IN in r.keywords)


def _libtasn1_tree() -> DocumentTree:
    try:
        from bookindex.parsing.pdf import parse_pdf
        from bookindex.parsing.sections import assign_levels
    except ImportError:
        pytest.skip("parsing.pdf not available")
    parsed = parse_pdf(PDF, ocr=False, images=False)
    doc_id = hashlib.sha256(PDF.read_bytes()).hexdigest()[:16]
    return build_tree(doc_id, PDF.name, assign_levels(parsed), {"pages": parsed.page_count})


EMBED_DIM = 64


@pytest.mark.skipif(not PDF.exists(), reason="data/libtasn1.pdf missing")
def test_offline_graph_on_a_real_pdf_and_storage(tmp_path: Path) -> None:
    from bookindex.indexing.graph.build import build_graph
    from bookindex.indexing.graph.stats import graph_stats

    tree = _libtasn1_tree()
    settings = load_settings(overrides={"graph.er": "gradient", "graph.extractor": "auto"})
    kg, report = build_graph(tree, settings=settings, llm=None, embedder=FakeEmbedder.trigrams(EMBED_DIM))
    assert report["extractor"] == "offline" and report["nodes_failed"] == 0
    assert report["nodes_processed"] > 300 and report["er_merges"] > 0
    by_name = {e.name: e for e in kg.entities.values()}
    assert by_name["asn1_parser2tree"].type == "identifier"  # code names from the API chapter
    assert by_name["ASN1_SUCCESS"].type == "identifier" and len(by_name["ASN1_SUCCESS"].node_ids) > 5
    assert any("ASN.1" in n for n in by_name)
    # GT-links point at real tree nodes, both directions agree; relations join known entities
    for e in kg.entities.values():
        assert e.node_ids and all(nid in tree.nodes for nid in e.node_ids)
    some = next(iter(kg.entities.values()))
    assert some in kg.entities_of(some.node_ids[0])
    assert all(r.source in kg.entities and r.target in kg.entities and r.source != r.target for r in kg.relations)
    st = graph_stats(kg)
    assert st["entities"] == len(kg.entities) and 0 < st["density"] < 1 and st["lcc_diameter"] >= 2

    save_graph(kg, tmp_path, embedder=FakeEmbedder.trigrams(EMBED_DIM))
    back = load_graph(tmp_path)
    assert back.to_dict() == kg.to_dict()
    ids, mat = load_entity_vectors(tmp_path)
    assert ids == list(kg.entities) and mat.shape == (len(ids), EMBED_DIM)
    i = ids.index(some.id)
    assert np.allclose(mat[i], FakeEmbedder.trigrams(EMBED_DIM).encode([some.name])[0], atol=1e-6)
    assert len(load_graph(tmp_path / "nowhere")) == 0  # --no-graph documents: an empty graph


# -- the LLM extractor with a scripted client ------------------------------------------------------

def extraction_llm(bad_text: tuple[str, ...] = (), flaky_once: tuple[str, ...] = ()) -> FakeLLM:
    """The shared FakeLLM answering extraction batches (`requests()`: the prompts sent, in order)."""
    return FakeLLM(ExtractionScript(bad_text, flaky_once))


def requests(llm: FakeLLM) -> list[str]:
    return [c.prompt for c in llm.calls]


def _text_nodes(n: int, words: int = 60) -> list[Node]:
    return [Node(id=f"d-{i:05d}", type="text", level=2,
                 text=f"Paragraph {i} mentions Alpha{i} and Beta{i}. " + "filler " * words, page_idx=i)
            for i in range(n)]


def test_llm_extractor_batches_by_token_budget() -> None:
    nodes = _text_nodes(20, words=60)  # ~100 tokens each
    llm = extraction_llm()
    exs = LLMExtractor(llm, batch_tokens=500).extract(nodes)
    assert len(requests(llm)) == 5  # 20 x ~100 tokens / 500-token batches
    assert requests(llm)[0].endswith('exactly 4 entries in "nodes", one per fragment (N1, N2, N3, N4), '
                                    'each with the entities and relations of that fragment.')
    assert all(ex.ok and {"Alpha%d" % i, "Beta%d" % i} <= {e.name for e in ex.entities} for i, ex in enumerate(exs))
    rel = exs[3].relations[0]
    assert rel.keywords == ["a", "b"] and rel.weight == 7.0
    assert [len(b) for b in pack([(n, n.text) for n in nodes], 500)] == [4] * 5


def test_llm_extractor_retries_once_then_records_failure() -> None:
    nodes = _text_nodes(6)
    llm = extraction_llm(bad_text=("Alpha2 ",), flaky_once=("Alpha4 ",))
    ext = LLMExtractor(llm, batch_tokens=400)
    exs = ext.extract(nodes)
    by_id = {e.node_id: e for e in exs}
    assert not by_id["d-00002"].ok and "malformed" in by_id["d-00002"].error
    assert by_id["d-00004"].ok and by_id["d-00004"].entities  # recovered on the retry
    assert set(ext.retried) >= {"d-00002", "d-00004"}
    assert sum(not e.ok for e in exs) == 1 and len(exs) == 6


def test_build_report_lists_failed_nodes_without_aborting() -> None:
    from bookindex.indexing.graph.build import build_graph

    tree = build_tree("d", "x.pdf", [Block("title", "1 Intro", 0, level=1)] +
                      [Block("text", f"Gamma{i} works with Delta{i} in the Epsilon system. " + "more words " * 10, 0)
                       for i in range(4)])
    settings = load_settings(overrides={"graph.er": "exact"})
    llm = extraction_llm(bad_text=("Gamma1 ",))
    kg, rep = build_graph(tree, settings=settings, llm=llm, embedder=None)
    assert rep["extractor"] == "llm" and rep["nodes_failed"] == 1
    assert rep["failed_node_ids"] == ["d-00002"] and rep["llm"] == llm.ledger.snapshot()
    extract = rep["llm"]["stages"]["extract"]  # the report carries the LLM's ledger: every call counted
    assert extract["errors"] >= 1 and extract["calls"] + extract["errors"] == rep["llm_calls"]
    assert any(e.name == "Gamma3" for e in kg.entities.values())
    eps = [e for e in kg.entities.values() if e.name == "Epsilon"]
    assert len(eps) == 1 and len(eps[0].node_ids) == 3  # exact-name merge across nodes


# -- the LLM extractor against a real small model -----------------------------------------------------

@pytest.mark.realmodel
@pytest.mark.timeout(900)
@pytest.mark.skipif(not PDF.exists(), reason="data/libtasn1.pdf missing")
def test_llm_extractor_with_a_real_local_model(llama_server: str, tmp_path: Path) -> None:
    from bookindex.indexing.graph.build import build_graph
    from bookindex.providers.llm import get_llm

    settings = load_settings(overrides={
        "llm.provider": "openai", "llm.base_url": llama_server, "llm.model": "qwen2.5-coder-0.5b",
        "llm.max_tokens": 700, "llm.max_concurrency": 1, "cache.path": str(tmp_path / "cache"),
        "graph.er": "exact", "graph.batch_tokens": 300})
    llm = get_llm(settings)
    tree = _libtasn1_tree()
    nodes = [n for n in tree.walk() if n.type == "text" and 30 <= len(n.text.split()) <= 120][:3]
    assert len(nodes) == 3
    kg, rep = build_graph(tree, settings=settings, llm=llm, embedder=None, nodes=nodes)
    assert rep["extractor"] == "llm" and rep["nodes_processed"] == 3
    assert 1 <= rep["llm_calls"] <= 3 + len(rep["retried_node_ids"])
    assert rep["llm"]["stages"]["extract"]["calls"] >= 1
    wanted = {n.id for n in nodes}
    # what a real model guarantees is the plumbing, not what a 0.5B model extracts: every node is
    # either linked to an entity or recorded as failed, with the reason, and counted
    linked = {nid for e in kg.entities.values() for nid in e.node_ids}
    assert linked | set(rep["failures"]) == wanted
    assert rep["nodes_failed"] == len(rep["failures"]) and set(rep["failed_node_ids"]) == set(rep["failures"])
    assert all(isinstance(why, str) and why for why in rep["failures"].values())
    for e in kg.entities.values():
        assert e.name.strip() and isinstance(e.type, str) and set(e.node_ids) <= wanted
    for r in kg.relations:
        assert r.source in kg.entities and r.target in kg.entities and r.weight > 0
    # every extractor call reached the model through the client and was counted: at most one
    # repair round each, retries bypassing the cache
    extract = rep["llm"]["stages"]["extract"]
    asked = extract["calls"] + extract["cache_hits"] + extract["errors"]
    assert rep["llm_calls"] <= asked <= 2 * rep["llm_calls"], extract


def test_a_node_answer_may_omit_entities_and_relations() -> None:
    """Small models drop empty lists: a bare {"node": ...} is a node with nothing extracted."""
    assert NodeOut.model_validate({"node": "N1"}) == NodeOut(node="N1", entities=[], relations=[])
    with pytest.raises(ValueError):
        NodeOut.model_validate({"entities": []})  # the label is what maps an answer to its node


def test_update_graph_retries_only_the_failed_nodes(tmp_path: Path) -> None:
    from bookindex.indexing.graph.build import build_graph, update_graph

    tree = build_tree("d", "x.pdf", [Block("title", "1 Intro", 0, level=1)] +
                      [Block("text", f"Gamma{i} works with Delta{i} in the Epsilon system. " + "more words " * 10, 0)
                       for i in range(4)])
    settings = load_settings(overrides={"graph.er": "gradient"})
    kg, rep = build_graph(tree, settings=settings, llm=extraction_llm(bad_text=("Gamma1 ",)), embedder=FakeEmbedder.trigrams(EMBED_DIM))
    assert rep["failed_node_ids"] == ["d-00002"]
    save_graph(kg, tmp_path, embedder=FakeEmbedder.trigrams(EMBED_DIM))
    kg = load_graph(tmp_path)
    llm = extraction_llm()
    up = update_graph(kg, tree, rep["failed_node_ids"], settings=settings, llm=llm, embedder=FakeEmbedder.trigrams(EMBED_DIM),
                      vectors=load_entity_vectors(tmp_path))
    assert up["nodes_failed"] == 0 and up["llm_calls"] == 1 and len(requests(llm)) == 1
    assert "Gamma1" in requests(llm)[0] and "Gamma0" not in requests(llm)[0]
    names = {e.name: e for e in kg.entities.values()}
    assert names["Gamma1"].node_ids == ["d-00002"]
    assert names["Epsilon"].node_ids == ["d-00001", "d-00002", "d-00003", "d-00004"]
    assert all(r.source in kg.entities and r.target in kg.entities for r in kg.relations)
    save_graph(kg, tmp_path, embedder=FakeEmbedder.trigrams(EMBED_DIM))
    assert len(load_graph(tmp_path)) == len(kg)


def test_small_nodes_share_a_fragment_and_entities_stay_node_precise() -> None:
    from bookindex.indexing.graph.extract_llm import _distribute, merge_small

    def n(i: int, text: str, page: int = 0, parent: str = "s1") -> Node:
        return Node(id=f"m-{i}", type="text", level=2, text=text, page_idx=page, parent=parent)

    nodes = [n(0, "Alpha runs Beta."), n(1, "Gamma stores data."), n(2, "Delta.", page=1),
             n(3, "Epsilon.", page=1, parent="s2"), n(4, "long " * 400, page=1, parent="s2")]
    groups = merge_small([(x, x.text) for x in nodes], 250)
    assert [[m.id for m, _ in g] for g in groups] == [["m-0", "m-1"], ["m-2"], ["m-3"], ["m-4"]]
    assert [len(g) for g in merge_small([(x, x.text) for x in nodes], 0)] == [1] * 5

    ex = NodeExtraction("m-0", [RawEntity("Alpha"), RawEntity("Gamma"), RawEntity("Zeta")],
                        [RawRelation("Alpha", "Gamma", "uses"), RawRelation("Alpha", "Zeta", "x")])
    per = _distribute(groups[0], ex)
    names = {k: sorted(e.name for e in v.entities) for k, v in per.items()}
    assert names == {"m-0": ["Alpha", "Zeta"], "m-1": ["Gamma", "Zeta"]}  # Zeta: named by neither
    assert [r.description for r in per["m-0"].relations] == ["uses", "x"]
    assert [r.description for r in per["m-1"].relations] == ["uses", "x"]


def test_merged_fragments_cut_calls_and_a_skipped_fragment_is_retried_whole() -> None:
    nodes = [Node(id=f"p-{i}", type="text", level=2, text=f"Item{i} configures Option{i}.", page_idx=0,
                  parent="sec") for i in range(12)]
    llm = extraction_llm(flaky_once=("Item0 ",))
    exs = LLMExtractor(llm, batch_tokens=1500, merge_tokens=250).extract(nodes)
    assert len(requests(llm)) == 2  # one fragment in one call, skipped once, then retried whole
    assert all(ex.ok for ex in exs)
    assert {e.name for e in exs[5].entities} == {"Item5", "Option5"}
