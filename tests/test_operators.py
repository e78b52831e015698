"""Operators on a fixture index, with exact expected outputs."""

from __future__ import annotations

import networkx as nx
import pytest

from bookindex.core.errors import LLMRequestError
from operators import (Decompose, Extract, FilterModal, FilterRange, GraphReasoning, Map, Reduce,
                       SelectByEntity, SelectBySection, SkylineRanker, State, TextReasoning)
from operators.reasoner import pareto_front, personalized_pagerank
from operators.selector import parse_page_range
from operators.formulator import split_question
from operators.context import DerivedViews
from retrieval_fixture import make_context, node


@pytest.fixture()
def ctx():
    return make_context()


def ids(ctx, *needles):
    return [node(ctx.tree, n) for n in needles]


def test_filter_range_pages_returns_exactly_those_pages(ctx):
    st = FilterRange(ctx, {"range_type": "page", "value": "3-5"}).run(State("q"))
    # pages 3..5 (1-based) = page_idx 2..4: table 1; sections 2 and 2.1; plot text; figure 1; splot text
    assert st.candidates == ids(ctx, "Table 1", "2 Plotting", "2.1 The plot command", "The plot command draws",
                                "Figure 1", "The splot command")
    assert {ctx.tree.nodes[i].page_idx for i in st.candidates} == {2, 3, 4}


def test_filter_range_section_returns_its_descendants(ctx):
    st = FilterRange(ctx, {"range_type": "section", "value": "2.2"}).run(State("q"))
    assert st.candidates == ids(ctx, "The linewidth option", "Table 2", "Figure 2")
    st = FilterRange(ctx, {"range_type": "section", "value": "Colors"}).run(State("q"))
    assert st.candidates == ids(ctx, "Colors are given")


def test_filters_nest(ctx):
    st = State("q")
    FilterModal(ctx, {"modal_types": ["table"]}).run(st)
    assert st.candidates == ids(ctx, "Table 1", "Table 2", "Table 3")
    FilterRange(ctx, {"range_type": "page", "value": "1-7"}).run(st)
    assert st.candidates == ids(ctx, "Table 1", "Table 2")
    st2 = FilterModal(ctx, {"modal_types": ["figure"]}).run(State("q"))
    assert st2.candidates == ids(ctx, "Figure 1", "Figure 2", "Figure 3")
    chapters = FilterModal(ctx, {"modal_types": ["section"], "section_level": 1}).run(State("q"))
    assert [ctx.tree.nodes[i].title for i in chapters.candidates] == ["1 Introduction", "2 Plotting", "3 Output terminals"]


def test_parse_page_range():
    assert parse_page_range("3-10") == (2, 9)
    assert parse_page_range("5") == (4, 4)
    assert parse_page_range("first 10") == (0, 9)
    assert parse_page_range("last 2", 12) == (10, 11)
    with pytest.raises(ValueError):
        parse_page_range("somewhere")


def test_skyline_returns_pareto_set_of_hand_made_scores(ctx):
    a, b, c, d, e = ids(ctx, "The plot command draws", "The linewidth option", "Colors are given",
                        "The png terminal writes", "The pdf terminal writes")
    st = State("q", candidates=[a, b, c, d, e])
    st.scores = {"graph": {a: 1.0, b: 0.8, c: 0.2, d: 0.5, e: 0.1},
                 "text": {a: 0.2, b: 0.8, c: 1.0, d: 0.5, e: 0.1}}
    pure = {"diversify_pages": False, "keep_ranked": False, "weights": {"graph": 0.3, "text": 0.7}}
    SkylineRanker(ctx, {"min_pages": 0, **pure}).run(st)
    # d=(0.5,0.5) is dominated by b, e by everything; order by 0.3*S_G + 0.7*S_T: b .8, c .76, a .44
    assert [i for i, _ in st.ranked] == [b, c, a]
    assert pareto_front({"x": (1, 0), "y": (0, 1), "z": (1, 0), "w": (0.5, 0.5), "v": (0.4, 0.4)}) == ["x", "y", "z", "w"]
    # peeling layers until 4 pages are covered adds the second layer (d), not e
    st2 = State("q", candidates=[a, b, c, d, e], scores=st.scores)
    SkylineRanker(ctx, {"min_pages": 4, **pure}).run(st2)
    assert [i for i, _ in st2.ranked] == [b, c, d, a]
    assert st2.trace[-1]["layers"] == [3, 1]


def test_skyline_keeps_the_best_combined_nodes_the_frontier_would_drop(ctx):
    """The frontier adds what one criterion favours but never removes the combined ranking's best:
    with a graph weight of 0, the second-best text node, dominated by the first, still ranks second,
    as it would without the graph."""
    a, b, c = ids(ctx, "The plot command draws", "The linewidth option", "Colors are given")
    scores = {"graph": {a: 1.0, b: 0.1, c: 0.9}, "text": {a: 1.0, b: 0.9, c: 0.2}}
    params = {"min_pages": 1, "pool_factor": 1, "max_results": 2, "diversify_pages": False,
              "weights": {"graph": 0.0, "text": 1.0}}
    st = State("q", candidates=[a, b, c], scores={k: dict(v) for k, v in scores.items()})
    SkylineRanker(ctx, {**params, "keep_ranked": False}).run(st)
    assert [i for i, _ in st.ranked] == [a]  # a dominates b and c; its layer covers min_pages
    st = State("q", candidates=[a, b, c], scores={k: dict(v) for k, v in scores.items()})
    SkylineRanker(ctx, params).run(st)
    assert [i for i, _ in st.ranked] == [a, b]


def test_skyline_single_criterion_is_a_ranking_with_cap(ctx):
    leaves = [n.id for n in ctx.tree.leaves()]
    st = State("q", candidates=leaves, scores={"text": {i: 1.0 / (k + 1) for k, i in enumerate(leaves)}})
    SkylineRanker(ctx, {"max_results": 3, "diversify_pages": False}).run(st)
    assert [i for i, _ in st.ranked] == leaves[:3]


def test_skyline_page_diversity_keeps_score_order_within_a_page(ctx):
    """One node per page first, then the rest by score — also when every node shares one page
    (Markdown and text documents), where a tie broken by node id used to scramble the ranking."""
    leaves = [n.id for n in ctx.tree.leaves()]
    for i in leaves:
        ctx.tree.nodes[i].page_idx = 0
    scores = {i: (k * 7 % 11 + 1) / 11 for k, i in enumerate(leaves)}
    st = State("q", candidates=leaves, scores={"text": scores})
    SkylineRanker(ctx, {"max_results": 5, "page_decay": 0.0}).run(st)
    assert [i for i, _ in st.ranked] == sorted(leaves, key=lambda i: -scores[i])[:5]


def test_ppr_mass_concentrates_near_seed():
    g = nx.path_graph(8)
    g.add_edges_from([(3, 10), (10, 11), (11, 12)])
    pr = personalized_pagerank(g, {3: 1.0})
    dist = nx.single_source_shortest_path_length(g, 3)
    by_d = {}
    for n, d in dist.items():
        by_d.setdefault(d, []).append(pr[n])
    means = [sum(v) / len(v) for _, v in sorted(by_d.items())]
    assert means == sorted(means, reverse=True)
    assert sum(pr[n] for n, d in dist.items() if d <= 1) > 0.6
    ref = nx.pagerank(g, alpha=0.85, personalization={3: 1.0}, tol=1e-10, max_iter=1000)
    assert all(abs(pr[n] - ref[n]) < 1e-6 for n in g)


def test_graph_reasoning_scores_nodes_linked_near_seed(ctx):
    st = State("q", entities=[])
    from operators.base import LinkedEntity
    st.entities = [LinkedEntity("png", ["e_png"], [1.0], "name")]
    GraphReasoning(ctx).run(st)
    sg = st.scores["graph"]
    top = max(sg, key=sg.get)
    assert top in ids(ctx, "The png terminal writes", "Table 3")  # linked to e_png and its neighbours
    assert sg[node(ctx.tree, "The png terminal writes")] > sg.get(node(ctx.tree, "The plot command draws"), 0.0)


def test_select_by_entity_returns_linked_sections_subtrees(ctx):
    st = State("What is the default linewidth?")
    Extract(ctx).run(st)
    assert st.entity_ids == ["e_linewidth"]
    op = SelectByEntity(ctx, {"depth": 2, "text_guard": 0})
    op.run(st)
    assert not op.fallback_needed
    assert st.candidates == ids(ctx, "2.2 Line styles", "The linewidth option", "Table 2", "Figure 2")


def test_select_by_entity_without_entities_requests_fallback(ctx):
    st = State("What is the meaning of life?")
    op = SelectByEntity(ctx)
    op.run(st)
    assert op.fallback_needed and st.candidates is None


def test_select_by_section_no_llm_uses_similarity(ctx):
    st = State("What is the default size of png output?")
    SelectBySection(ctx, {"max_sections": 1, "text_guard": 0}).run(st)
    assert st.candidates == ids(ctx, "3.1 The png terminal", "The png terminal writes", "Figure 3")


def test_text_reasoning_ranks_answer_first(ctx):
    st = TextReasoning(ctx).run(State("Which library does the build need?"))
    best = max(st.scores["text"], key=st.scores["text"].get)
    assert best == node(ctx.tree, "Install Plotter")


def test_llm_failure_falls_back_and_trace_says_so(fake_llm):
    llm = fake_llm(default=LLMRequestError("endpoint down"))
    ctx = make_context(llm=llm)
    st = Extract(ctx).run(State("What is the default linewidth?"))
    assert st.entity_ids == ["e_linewidth"]
    assert "LLM failed" in st.trace[-1]["fallback"]
    st = Decompose(ctx).run(State("What is the difference between the png terminal and the pdf terminal?"))
    assert st.sub_questions == ["What is the png terminal?", "What is the pdf terminal?"]
    assert st.trace[-1]["source"] == "rules" and "LLM failed" in st.trace[-1]["fallback"]
    assert llm.stages == ["extract", "decompose"]  # each operator asked the LLM before falling back


def test_split_question_rules():
    subs, synth = split_question("Which is larger, the width of thin lines or the width of thick lines?")
    assert len(subs) == 2 and synth.startswith("Which is larger")
    assert split_question("What is the default linewidth?")[0] == ["What is the default linewidth?"]


def test_reduce_count_and_list_are_exact(ctx):
    st = State("How many tables?")
    FilterModal(ctx, {"modal_types": ["table"]}).run(st)
    Map(ctx).run(st)
    Reduce(ctx, {"operation": "COUNT"}).run(st)
    assert st.structural["count"] == 3 and st.answer.startswith("3")
    st = State("List the figures")
    FilterModal(ctx, {"modal_types": ["image"]}).run(st)
    Reduce(ctx, {"operation": "LIST"}).run(st)
    assert [x["page"] for x in st.structural["items"]] == [5, 7, 11]


def test_trace_records_inputs_outputs_and_time(ctx):
    st = TextReasoning(ctx).run(State("png terminal size"))
    rec = st.trace[-1]
    assert rec["op"] == "Text_Reasoning" and rec["ms"] >= 0 and rec["outputs"][0][0] in ctx.tree.nodes
    assert rec["inputs"]["candidates"] == "all"


def test_graph_reasoning_discounts_entities_linked_everywhere(ctx):
    """A hub entity (linked to every leaf, like a company name in its own report) holds much
    PageRank mass; weighted by inverse node frequency it no longer outranks the specific one."""
    from bookindex.core.graph import KnowledgeGraph
    from bookindex.core.model import Entity, Relation
    from operators.base import LinkedEntity
    from operators.reasoner import entity_idf

    leaves = [n.id for n in ctx.tree.leaves()]
    png = node(ctx.tree, "The png terminal writes")
    ctx.index.graph = KnowledgeGraph({
        "e_hub": Entity("e_hub", "Plotter", "product", "", [], leaves),
        "e_png": Entity("e_png", "png terminal", "terminal", "", [], [png]),
    }, [Relation("e_hub", "e_png", "has")])
    ctx.views = DerivedViews()
    results = {}
    for idf in (False, True):
        st = State("How does Plotter write png files?")
        st.entities = [LinkedEntity("Plotter", ["e_hub"], [1.0], "name"),
                       LinkedEntity("png", ["e_png"], [1.0], "name")]
        GraphReasoning(ctx, {"entity_idf": idf}).run(st)
        results[idf] = st.scores["graph"]
    others = [i for i in leaves if i != png]
    # without IDF every other leaf gets half the png node's score (0.51) from the hub alone
    assert results[False][png] == 1.0 and max(results[False][i] for i in others) > 0.5
    # with IDF the specific node stands out (0.24)
    assert results[True][png] == 1.0 and max(results[True][i] for i in others) < 0.25
    assert entity_idf(len(leaves), len(ctx.tree.nodes)) < entity_idf(1, len(ctx.tree.nodes))


def test_offline_graph_weight_comes_from_the_settings():
    from bookindex.core.config import load_settings
    from retrieval.planner import retrieval_steps

    for w in (0.05, 0.3):
        c = make_context(settings=load_settings(overrides={"llm.provider": "none",
                                                           "retrieval.offline_graph_weight": w}, env={}))
        sky = [s for s in retrieval_steps(c) if s.op == "Skyline_Ranker"][0]
        assert sky.params["weights"] == {"graph": w, "text": 1.0}
