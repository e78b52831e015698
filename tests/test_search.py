"""Search returns ranked evidence without answering: the plan made and run without a model, cut
before Map and Reduce, so it makes no LLM call, while `ask` over the same document does."""

from __future__ import annotations

import pytest
from retrieval_fixture import make_context

from bookindex.core.config import load_settings
from bookindex.retrieval import api as retrieval_api

QUESTIONS = ["What is the default linewidth?",
             "What is the difference between the png terminal and the pdf terminal?",
             "Summarize section 2",
             "How many tables are in pages 3-12?"]


def _llm_settings():
    # the LLM classifies every question: `ask` calls it at least once, whatever the question
    return load_settings(overrides={"retrieval.classifier": "llm"}, env={})


@pytest.mark.parametrize("question", QUESTIONS)
def test_search_makes_no_llm_call_where_ask_does(fake_llm, question):
    searched = fake_llm(default={"answer": "an answer [1]", "query_type": "single-hop", "sub_questions": []})
    evidence = retrieval_api.search(make_context(llm=searched, settings=_llm_settings()), question)
    assert evidence, "search found nothing"
    assert searched.calls == []
    assert searched.ledger.snapshot()["total"].get("calls", 0) == 0
    # the control: the same question asked makes the calls search avoids
    asked = fake_llm(default={"answer": "an answer [1]", "query_type": "single-hop", "sub_questions": []})
    retrieval_api.ask(make_context(llm=asked, settings=_llm_settings()), question)
    assert asked.calls


@pytest.mark.parametrize("question", QUESTIONS)
def test_search_ranks_what_ask_ranks_without_a_model(question):
    """Without an LLM, `ask` plans and retrieves as search does: the same evidence, in the same
    order, with the same scores, for single-hop, multi-hop and global questions alike."""
    asked = retrieval_api.ask(make_context(), question)
    searched = retrieval_api.search(make_context(), question)
    assert searched
    assert [(e.node_id, e.scores) for e in searched] == [(e.node_id, e.scores) for e in asked.evidence]


def test_the_search_plan_has_no_map_or_reduce():
    types = {q: retrieval_api.retrieval_plan(make_context(), q) for q in QUESTIONS}
    assert {p.query_type for p in types.values()} == {"single-hop", "multi-hop", "global"}
    for p in types.values():
        assert "Map" not in p.shape() and "Reduce" not in p.shape()


def test_search_k_caps_the_list():
    q = "What is the default linewidth?"
    full = retrieval_api.search(make_context(), q)
    assert len(full) > 2
    assert [e.node_id for e in retrieval_api.search(make_context(), q, k=2)] == [e.node_id for e in full[:2]]
    assert [e.rank for e in full] == list(range(1, len(full) + 1))
