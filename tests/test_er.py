"""Gradient-based entity resolution (BookRAG Algorithm 1) with scripted reranker scores."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fakes import VocabEmbedder

from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import Entity, Relation
from bookindex.indexing.graph.er import (
    GradientResolver,
    compatible,
    decide,
    gradient_selection,
    merge_entities,
    sharpen_cosine,
)

G = 0.6


def test_gradient_walk_reads_the_paper_as_a_gentle_drop_test() -> None:
    # keep while S >= g * previous: 0.9 -> 0.85 gentle, 0.85 -> 0.3 sharp
    assert gradient_selection([0.9, 0.85, 0.3, 0.29], G) == 2
    assert gradient_selection([0.5, 0.45, 0.44, 0.4], G) == 4
    assert gradient_selection([0.9, 0.1], G) == 1
    assert gradient_selection([], G) == 0


@pytest.mark.parametrize("scores,expected", [
    ([0.31, 0.30, 0.29, 0.28, 0.27], ("new", 0)),            # Case A: flat, no gradient
    ([0.95, 0.20, 0.19, 0.18, 0.17], ("merge", 1)),          # Case B: one, then a cliff
    ([0.95, 0.93, 0.90, 0.20, 0.18], ("select", 3)),         # Case B: several aliases
])
def test_decide_cases(scores: list[float], expected: tuple[str, int]) -> None:
    assert decide(scores, G) == expected


class ScriptedScores:
    """A reranker stand-in: the score of each candidate is looked up by candidate name."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, new: Entity, cands: list[Entity], cos: np.ndarray) -> np.ndarray:
        self.calls.append((new.name, [c.name for c in cands]))
        return np.array([self.table.get(c.name, 0.01) for c in cands])


def _resolver(names: list[str], score_fn, select_fn=None, top_k: int = 10) -> tuple[GradientResolver, list[Entity]]:
    rng = np.random.default_rng(0)
    r = GradientResolver(8, g=G, top_k=top_k, score_fn=score_fn, select_fn=select_fn)
    ents = []
    for i, n in enumerate(names):
        e = Entity(id=f"e{i}", name=n, node_ids=[f"n{i}"], description=f"about {n}")
        v = rng.normal(size=8).astype(np.float32)
        r.resolve(e, v / np.linalg.norm(v))
        ents.append(e)
    return r, ents


EXISTING = ["Large Language Model", "Transformer", "Attention", "Tokenizer", "Embedding", "Decoder"]


def test_case_a_flat_scores_add_a_new_entity() -> None:
    flat = {n: 0.30 - 0.01 * i for i, n in enumerate(EXISTING)}
    r, _ = _resolver(EXISTING, ScriptedScores({}))
    r.score_fn = ScriptedScores(flat)
    new = Entity(id="new", name="Reinforcement Learning", node_ids=["n9"])
    assert r.resolve(new, np.ones(8, np.float32) / np.sqrt(8)) == "new"
    assert "new" in r.entities and r.stats.case_a >= 1 and r.stats.gradient_merges == 0


def test_case_b_single_sharp_drop_merges_into_the_top_candidate() -> None:
    r, ents = _resolver(EXISTING, ScriptedScores({}))
    scripted = {n: 0.2 for n in EXISTING} | {"Large Language Model": 0.97}
    r.score_fn = ScriptedScores(scripted)
    new = Entity(id="new", name="LLM", description="an LLM", node_ids=["n42"])
    assert r.resolve(new, np.ones(8, np.float32) / np.sqrt(8)) == "e0"
    llm_e = r.entities["e0"]
    assert "LLM" in llm_e.aliases and "n42" in llm_e.node_ids and "an LLM" in llm_e.description
    assert "new" not in r.entities and r.stats.case_b_single == 1


def test_case_b_several_asks_the_llm_to_select() -> None:
    asked: list[list[str]] = []

    def select(new: Entity, cands: list[Entity]) -> int:
        asked.append([c.name for c in cands])
        return [c.name for c in cands].index("Transformer")

    r, _ = _resolver(EXISTING, ScriptedScores({}), select_fn=select)
    r.score_fn = ScriptedScores({n: 0.1 for n in EXISTING} | {"Transformer": 0.90, "Attention": 0.92})
    new = Entity(id="new", name="Transformer architecture", node_ids=["n7"])
    assert r.resolve(new, np.ones(8, np.float32) / np.sqrt(8)) == "e1"
    assert asked == [["Attention", "Transformer"]]  # the high-relevance set, sorted by score
    assert r.stats.case_b_several == 1 and r.stats.llm_selects == 1


def test_case_b_several_without_llm_takes_the_highest_and_llm_may_refuse() -> None:
    r, _ = _resolver(EXISTING, ScriptedScores({}))
    r.score_fn = ScriptedScores({n: 0.1 for n in EXISTING} | {"Transformer": 0.90, "Attention": 0.92})
    assert r.resolve(Entity(id="x", name="Self attention"), np.ones(8, np.float32)) == "e2"
    r.select_fn = lambda new, cands: -1
    assert r.resolve(Entity(id="y", name="Cross attention"), np.ones(8, np.float32)) == "y"
    assert r.stats.llm_rejects == 1


def test_numbers_guard_vetoes_a_merge() -> None:
    assert not compatible("Chapter 1", "Chapter 2") and compatible("ASN.1", "ASN.1 syntax")
    r, _ = _resolver(["Chapter 1"] + EXISTING, ScriptedScores({}))
    r.score_fn = ScriptedScores({"Chapter 1": 0.99})
    assert r.resolve(Entity(id="c2", name="Chapter 2"), np.ones(8, np.float32)) == "c2"
    assert r.stats.number_guard == 1
    assert r.resolve(Entity(id="c1", name="chapter 1"), np.ones(8, np.float32)) == "e0"


def test_default_cosine_scores_find_a_near_duplicate_and_keep_a_stranger() -> None:
    """The default scorer (sharpened embedding cosine) on hand-made vectors."""
    base = np.eye(6, dtype=np.float32)
    r = GradientResolver(6, g=G, top_k=4)
    for i in range(4):
        r.resolve(Entity(id=f"e{i}", name=f"thing {chr(97 + i)}"), base[i])
    near = base[1] * 0.98 + base[4] * 0.2
    near /= np.linalg.norm(near)
    assert r.resolve(Entity(id="dup", name="thing b alias"), near) == "e1"
    stranger = base[5]
    assert r.resolve(Entity(id="s", name="other"), stranger) == "s"
    # one candidate only: the floor-padded list still shows the cliff after a near-duplicate
    r2 = GradientResolver(6, g=G, top_k=4)
    r2.resolve(Entity(id="a", name="alpha"), base[0])
    assert r2.resolve(Entity(id="b", name="alpha beta"), base[0]) == "a"
    assert sharpen_cosine(np.array([0.5]), 0.8, 0.1)[0] == pytest.approx(np.exp(-2.0))


def test_resolve_all_equals_one_at_a_time() -> None:
    rng = np.random.default_rng(3)
    centers = rng.normal(size=(20, 16))
    vecs = []
    for i in range(120):
        v = centers[i % 20] + rng.normal(scale=0.15 if i % 3 else 2.0, size=16)
        vecs.append(v / np.linalg.norm(v))
    V = np.asarray(vecs, np.float32)
    mk = lambda: [Entity(id=f"e{i}", name="n" + chr(65 + i % 26) * (1 + i // 26)) for i in range(len(V))]  # noqa: E731
    a = GradientResolver(16, top_k=5, capacity=4)
    one = [a.resolve(e, v) for e, v in zip(mk(), V)]
    b = GradientResolver(16, top_k=5, capacity=4)
    batch = b.resolve_all(mk(), V, block=7)
    assert one == batch and len(set(one)) < len(V)


def test_merge_moves_gt_links_and_relation_ends() -> None:
    ents = {
        "a": Entity("a", "LLM", "model", "a large model", ["x"], ["n1"]),
        "b": Entity("b", "Large Language Model", "model", "trained on text", [], ["n2", "n1"]),
        "c": Entity("c", "GPU", "hardware", "", [], ["n3"]),
    }
    rels = [Relation("a", "c", "runs on", ["hardware"], 2.0, ["n1"]),
            Relation("c", "b", "accelerates", ["speed"], 1.0, ["n3"]),
            Relation("a", "b", "same thing", [], 1.0, ["n2"])]
    kg = KnowledgeGraph(ents, rels)
    assert kg.entities_of("n2")[0].id == "b"
    merge_entities(kg, "b", "a")
    assert set(kg.entities) == {"b", "c"}
    b = kg.entities["b"]
    assert b.node_ids == ["n2", "n1"] and set(b.aliases) == {"LLM", "x"}
    assert "a large model" in b.description and "trained on text" in b.description
    # relation ends moved, the self-loop dropped, parallel relations combined
    assert len(kg.relations) == 1
    r = kg.relations[0]
    assert {r.source, r.target} == {"b", "c"} and r.weight == 3.0 and set(r.node_ids) == {"n1", "n3"}
    assert [e.id for e in kg.entities_of("n1")] == ["b"]
    assert kg.nx.number_of_edges() == 1


def test_build_graph_er_modes_with_fake_embedder() -> None:
    """exact merges equal names; gradient also merges a near-duplicate name; none merges nothing."""
    from bookindex.core.config import load_settings
    from bookindex.indexing.graph.build import graph_from_extractions
    from bookindex.indexing.graph.extraction import NodeExtraction, RawEntity, RawRelation

    vocab = {"neural network": [1, 0, 0, 0], "neural networks model": [0.99, 0.14, 0, 0],
             "gpu": [0, 0, 1, 0], "dataset": [0, 0, 0, 1]}

    exs = [NodeExtraction("n1", [RawEntity("Neural network"), RawEntity("GPU")],
                          [RawRelation("Neural network", "GPU", "trained on")]),
           NodeExtraction("n2", [RawEntity("neural networks model"), RawEntity("Dataset")],
                          [RawRelation("neural networks model", "Dataset", "learns from")]),
           NodeExtraction("n3", [RawEntity("Neural Network"), RawEntity("Dataset")],
                          [RawRelation("Neural Network", "Dataset", "needs")])]
    tree = SimpleNamespace(doc_id="d")
    counts = {}
    for er in ("none", "exact", "gradient"):
        s = load_settings(overrides={"graph.er": er})
        kg, rep = graph_from_extractions(tree, exs, settings=s, embedder=VocabEmbedder(vocab))
        counts[er] = len(kg.entities)
        if er == "gradient":
            nn = next(e for e in kg.entities.values() if e.name == "Neural network")
            assert nn.node_ids == ["n1", "n2", "n3"] and "neural networks model" in nn.aliases
            assert rep["er_stats"]["gradient_merges"] == 1 and rep["er_merges"] == 3
            assert kg.meta["vectors"][1].shape == (3, 4)
    assert counts == {"none": 6, "exact": 4, "gradient": 3}


def test_graph_stats_and_stats_command_helpers(tmp_path) -> None:
    import json

    from bookindex.core.model import Block, build_tree
    from bookindex.engine import doc_stats, library_stats
    from bookindex.indexing.graph.stats import approx_diameter, graph_stats

    ents = {c: Entity(c, c.upper(), node_ids=["n"]) for c in "abcdefg"}
    rels = [Relation("a", "b"), Relation("b", "c"), Relation("c", "d"), Relation("e", "f")]
    kg = KnowledgeGraph(ents, rels)
    st = graph_stats(kg)
    assert (st["entities"], st["relations"], st["components"], st["lcc_size"], st["lcc_diameter"]) == (7, 4, 3, 4, 3)
    assert st["density"] == pytest.approx(2 * 4 / (7 * 6))
    import networkx as nx
    assert approx_diameter(nx.path_graph(1500)) == 1499  # double sweep is exact on a path

    tree = build_tree("d", "x.pdf", [Block("title", "1 A", 0, level=1), Block("text", "t", 0),
                                     Block("table", "| a |", 1)])
    (tmp_path / "build.json").write_text(json.dumps({"pages": 2, "graph": {"built": True, "er": "gradient",
                                                     "er_merges": 5, "nodes_failed": 1},
                                                     "llm": {"stages": {"extract": {"calls": 3}}, "total": {"calls": 3}}}))
    build = json.loads((tmp_path / "build.json").read_text())
    doc = SimpleNamespace(doc_id="d", name="x.pdf", dir=tmp_path, tree=tree, graph=kg, manifest={},
                          build_report=build)
    s = doc_stats(doc)
    for key in ("nodes", "entities", "relations", "density", "components", "lcc_diameter", "er_merges", "llm"):
        assert key in s
    assert s["nodes"] == {"document": 1, "section": 1, "text": 1, "table": 1} and s["er_merges"] == 5
    lib = library_stats([s, s])
    assert lib["entities"] == 14 and lib["components"] == 6 and lib["llm"]["total"]["calls"] == 6
    assert lib["nodes"]["text"] == 2 and lib["er_merges"] == 10
