"""The evidence chosen unit by unit with fitted weights (operators.evidence_units, evidence_select)
and the fit behind it (bookindex.evaluation.evidence_fit, scripts/fit_evidence.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.core.model import Block, DocumentTree, build_tree
from bookindex.evaluation import evidence_fit as ef
from bookindex.operators.evidence_select import (
    EvidenceWeights,
    load_weights,
    packed_passages,
    select_passages,
    shipped_weights,
)
from bookindex.operators.evidence_units import FEATURES, candidate_units, unit_features
from bookindex.operators.passages import OMITTED, estimate_tokens, format_passages, pack_passages, question_terms

FIXTURE = Path(__file__).parent / "data" / "evidence_fit"


def _tree() -> DocumentTree:
    return build_tree("doc", "Annual report", [
        Block(type="title", content="Survey design", page_idx=0, level=1),
        Block(type="text", content="The survey ran in spring. Interviews were held by phone. The sample held 812 adults "
              "in all regions. Weights correct for age and region. Results follow in the next section.", page_idx=0),
        Block(type="text", content="Fieldwork was done by a contractor.", page_idx=0),
        Block(type="title", content="Financial summary", page_idx=1, level=1),
        Block(type="text", content="The table below gives the main figures of the year.", page_idx=1),
        Block(type="table", content="| item | 2021 | 2020 |\n|---|---|---|\n| Revenue | 4,210 | 3,990 |\n"
              "| Operating costs | 3,100 | 3,050 |\n| Net income | 733 | 512 |\n| Total assets | 9,800 | 9,100 |",
              page_idx=1),
        Block(type="title", content="Outlook", page_idx=2, level=1),
        Block(type="text", content="Management expects growth to continue. New stores open in the autumn.", page_idx=2),
    ])


def _id(tree: DocumentTree, start: str) -> str:
    return next(n.id for n in tree.nodes.values() if n.type != "section" and n.content.startswith(start))


def _overlap_weights() -> EvidenceWeights:
    """A test double: units scored by their share of the question's words alone."""
    coef = np.zeros(len(FEATURES))
    coef[FEATURES.index("idf_overlap")] = 1.0
    return EvidenceWeights(FEATURES, np.zeros(len(FEATURES)), np.ones(len(FEATURES)), coef, 0.0, {})


def test_the_shipped_weights_load_and_say_what_they_were_fitted_on():
    w = shipped_weights()
    assert w.features == FEATURES and w.coef.shape == (len(FEATURES),) and np.all(w.scale > 0)
    assert len(w.meta["commit"]) == 40 and w.meta["fitted_on"] and "LogisticRegression" in w.meta["model"]
    assert load_weights(None) is w


def test_weights_fitted_on_other_features_are_refused_with_the_file_named(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({**shipped_weights().to_json(), "features": ["idf_overlap"]}))
    with pytest.raises(InputError, match="w.json.*refit"):
        load_weights(path)


def test_a_ranked_block_is_cut_in_sentences_a_table_in_rows_and_the_nodes_around_it_come_along():
    tree = _tree()
    units = candidate_units(tree, [_id(tree, "The table below")])
    rows = [u for u in units if u.kind == "row"]
    assert [u.text.split("|")[1].strip() for u in rows] == ["Revenue", "Operating costs", "Net income", "Total assets"]
    assert all(u.head.startswith("| item | 2021") and u.block.relation == "section" for u in rows)
    assert {u.block.relation for u in units if u.kind == "text"} == {"owner"}
    x = unit_features(units, question_terms("What was the net income in 2021?"))
    assert x.shape == (len(units), len(FEATURES))
    best = max(range(len(units)), key=lambda i: x[i, FEATURES.index("idf_overlap")])
    assert units[best].text.startswith("| Net income")


def test_the_best_units_fill_the_budget_in_the_packed_format():
    tree = _tree()
    ids = [_id(tree, "The survey ran"), _id(tree, "The table below")]
    passages = select_passages(tree, ids, 30, question="How many adults did the sample hold?", weights=_overlap_weights())
    assert passages[0].node_id == ids[0] and passages[0].where.startswith("p. 1 · Survey design")
    assert "812 adults" in passages[0].text and "Interviews were held" not in passages[0].text
    assert passages[0].text.startswith("… ")  # the block's first sentences are left out
    assert sum(estimate_tokens(p.render()) + 4 for p in passages) <= 30
    table = select_passages(tree, ids, 45, question="Net income 2021", weights=_overlap_weights())
    text = format_passages(table)
    assert "| item | 2021 | 2020 |\n|---|---|---|\n" + OMITTED + "\n| Net income | 733 | 512 |" in text


def test_the_setting_chooses_rules_or_fitted_units(monkeypatch):
    tree = _tree()
    ids = [_id(tree, "The survey ran"), _id(tree, "The table below")]
    q = "How many adults did the sample hold?"

    class Ctx:
        def __init__(self, selection: str) -> None:
            self.tree = tree
            self.settings = Settings().with_overrides({"retrieval.evidence_selection": selection})

    rules = packed_passages(Ctx("rules"), ids, 60, q)  # type: ignore[arg-type]
    assert rules == pack_passages(tree, ids, 60, question=q)
    fitted = packed_passages(Ctx("fitted"), ids, 60, q)  # type: ignore[arg-type]
    assert fitted == select_passages(tree, ids, 60, question=q, weights=shipped_weights())
    assert packed_passages(Ctx("rules"), ids, 60, q, _overlap_weights()) == \
        select_passages(tree, ids, 60, question=q, weights=_overlap_weights())  # type: ignore[arg-type]


def _fixture_cases(tree: DocumentTree) -> list[ef.Case]:
    spec = json.loads((FIXTURE / "cases.json").read_text())
    return [ef.Case(set="fixture", qid=str(k), doc="report.pdf", doc_id="doc", question=c["question"], answer=c["answer"],
                    text_answerable=True, gold_pages=[c["page"]], ids=[_id(tree, s) for s in c["ranked"]])
            for k, c in enumerate(spec)]


def test_the_fit_reproduces_the_weights_fitted_on_a_tiny_fixture():
    tree = _tree()
    cases = _fixture_cases(tree)
    data = [ef.labelled_units(tree, c) for c in cases]
    assert all(y.sum() >= 1 for _, y in data)  # every fixture answer is in one of its units
    w = ef.fit_weights(np.vstack([x for x, _ in data]), np.concatenate([y for _, y in data]))
    expected = EvidenceWeights.from_json(json.loads((FIXTURE / "expected_weights.json").read_text()))
    for a, b in ((w.mean, expected.mean), (w.scale, expected.scale), (w.coef, expected.coef)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert w.intercept == pytest.approx(expected.intercept, rel=1e-4, abs=1e-6)
    assert w.coef[FEATURES.index("idf_overlap")] > 0  # the words of the question mark the answer


def test_cross_validation_packs_each_question_by_rules_and_by_weights_not_fitted_on_its_document():
    tree = _tree()
    cases = _fixture_cases(tree)
    cases = [replace(c, doc=f"doc{k % 2}.pdf") for k, c in enumerate(cases)]

    class Ctx:
        def __init__(self) -> None:
            self.tree = tree
            self.settings = Settings()
            self.llm = None

    outcomes = ef.cross_validate(cases, lambda c: Ctx(), folds=2)  # type: ignore[arg-type, return-value]
    assert set(outcomes) == {"rules", "fitted (out of fold)", "fitted (in sample)"}
    table = ef.summary(cases, outcomes)
    assert table["fixture"]["rules"]["n"] == len(cases)
    assert "| fixture | fitted (out of fold) |" in ef.markdown(table)


def test_a_model_reads_the_fitted_units_and_its_citations_name_the_nodes_they_came_with():
    from fakes import FakeLLM

    from bookindex.core.config import load_settings
    from bookindex.core.graph import KnowledgeGraph
    from bookindex.operators.context import IndexContext, MemoryIndex
    from bookindex.retrieval import ask, search

    tree = _tree()
    llm = FakeLLM(default='{"answer": "812 adults [1]", "citations": [1]}')
    settings = load_settings(overrides={"retrieval.evidence_selection": "fitted", "retrieval.evidence_tokens": 100})
    ctx = IndexContext(index=MemoryIndex(tree=tree, graph=KnowledgeGraph()), settings=settings, llm=llm)
    q = "How many adults did the survey sample hold?"
    ids = [e.node_id for e in search(ctx, q)]
    passages = select_passages(tree, ids, 100, question=q, weights=shipped_weights())
    a = ask(ctx, q)
    prompt = str(llm.calls[-1].messages[-1]["content"])
    assert format_passages(passages) in prompt
    assert a.evidence and a.evidence[0].node_id == passages[0].node_id
