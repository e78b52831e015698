"""Operators on a fixture index, with exact expected outputs."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from retrieval_fixture import make_context, node

from bookindex.core.config import RetrievalSettings, load_settings
from bookindex.core.errors import ConfigError, LLMRequestError
from bookindex.core.graph import KnowledgeGraph
from bookindex.core.model import LEAF_TYPES, Entity, Relation, entry_of
from bookindex.operators import (
    Decompose,
    Extract,
    FilterModal,
    FilterRange,
    GraphReasoning,
    Map,
    Reduce,
    SelectByEntity,
    SelectBySection,
    SkylineRanker,
    State,
    TextReasoning,
)
from bookindex.operators.base import LinkedEntity, top_items
from bookindex.operators.context import DerivedViews
from bookindex.operators.formulator import split_question
from bookindex.operators.reasoner import (
    REPEAT_MIN_WORDS,
    SkylineRankerParams,
    adjacency,
    collapse_entries,
    entity_idf,
    graph_adjacency,
    pareto_front,
    pareto_layers,
    personalized_pagerank,
)
from bookindex.operators.selector import leaves_of, parse_page_range
from bookindex.operators.structure import doc_structure, unit_ids
from bookindex.retrieval.executor import execute
from bookindex.retrieval.planner import make_plan, retrieval_steps


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
    pure = {"mode": "weighted", "diversify_pages": False, "keep_ranked": False, "weights": {"graph": 0.3, "text": 0.7}}
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
    params = {"mode": "weighted", "min_pages": 1, "pool_factor": 1, "max_results": 2, "diversify_pages": False,
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
    SkylineRanker(ctx, {"mode": "weighted", "max_results": 3, "diversify_pages": False}).run(st)
    assert [i for i, _ in st.ranked] == leaves[:3]


def test_skyline_page_diversity_keeps_score_order_within_a_page(ctx):
    """One node per page first, then the rest by score — also when every node shares one page
    (Markdown and text documents), where a tie broken by node id used to scramble the ranking."""
    leaves = [n.id for n in ctx.tree.leaves()]
    for i in leaves:
        ctx.tree.nodes[i].page_idx = 0
    scores = {i: (k * 7 % 11 + 1) / 11 for k, i in enumerate(leaves)}
    st = State("q", candidates=leaves, scores={"text": scores})
    SkylineRanker(ctx, {"mode": "weighted", "max_results": 5, "page_decay": 0.0}).run(st)
    assert [i for i, _ in st.ranked] == sorted(leaves, key=lambda i: -scores[i])[:5]


def test_skyline_counts_a_passage_printed_again_on_another_page_once(ctx):
    """A passage a document prints on several pages (a brochure's feature list under every
    model) is one piece of evidence: its repeats rank after every other page's best node. A short
    line repeated on every page (under REPEAT_MIN_WORDS words) still counts for its page."""
    leaves = [n.id for n in ctx.tree.leaves()][:4]
    repeated = " ".join(f"word{k}" for k in range(REPEAT_MIN_WORDS))
    for k, i in enumerate(leaves):
        ctx.tree.nodes[i].page_idx = k
    for i in leaves[:3]:
        ctx.tree.nodes[i].text = repeated.upper() if i == leaves[1] else repeated
    scores = {leaves[0]: 1.0, leaves[1]: 0.9, leaves[2]: 0.8, leaves[3]: 0.5}
    st = State("q", candidates=leaves, scores={"text": dict(scores)})
    SkylineRanker(ctx, {"mode": "weighted", "max_results": 4, "page_decay": 0.0}).run(st)
    assert [i for i, _ in st.ranked] == [leaves[0], leaves[3], leaves[1], leaves[2]]
    short = " ".join(repeated.split()[:-1])
    for i in leaves[:3]:
        ctx.tree.nodes[i].text = short
    st = State("q", candidates=leaves, scores={"text": dict(scores)})
    SkylineRanker(ctx, {"mode": "weighted", "max_results": 4, "page_decay": 0.0}).run(st)
    assert [i for i, _ in st.ranked] == leaves


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x >= y for x, y in zip(a, b)) and a != b


def _random_scores(ctx, rng: random.Random, levels: list[float] | None = None) -> dict[str, dict[str, float]]:
    """Random S_G and S_T over the fixture's leaves; `levels` draws from a few values (ties)."""
    leaves = [n.id for n in ctx.tree.leaves()]
    draw = (lambda: rng.choice(levels)) if levels else (lambda: round(rng.random(), 3))
    return {"graph": {i: draw() for i in leaves if rng.random() < 0.8}, "text": {i: draw() for i in leaves}}


def test_pareto_layers_match_repeated_fronts():
    """The one-sweep layering (two criteria), the score levels (one) and the repeated fronts
    (three) agree with peeling `pareto_front` by hand, ties included."""
    rng = random.Random(7)
    for _ in range(300):
        dims = rng.choice([1, 2, 3])
        levels = [0.0, 0.1, 0.5, 1.0] if rng.random() < 0.5 else None
        pts = {f"n{k}": tuple(rng.choice(levels) if levels else round(rng.random(), 3) for _ in range(dims))
               for k in range(rng.randint(1, 30))}
        rest, expected = dict(pts), []
        while rest:
            front = [i for i in rest if not any(_dominates(rest[j], rest[i]) for j in rest)]
            expected.append(front)
            for i in front:
                rest.pop(i)
        assert list(pareto_layers(pts)) == expected


def test_pareto_mode_returns_whole_frontier_layers_up_to_the_budget(ctx):
    a, b, c, d, e = ids(ctx, "The plot command draws", "The linewidth option", "Colors are given",
                        "The png terminal writes", "The pdf terminal writes")
    scores = {"graph": {a: 1.0, b: 0.8, c: 0.2, d: 0.5, e: 0.1},
              "text": {a: 0.2, b: 0.8, c: 1.0, d: 0.5, e: 0.1}}
    base = {"mode": "pareto", "weights": {"graph": 0.3, "text": 0.7}, "budget_pages": 0}
    got = {}
    for nodes in (1, 3, 4, 5, 10):
        st = State("q", candidates=[a, b, c, d, e], scores={k: dict(v) for k, v in scores.items()})
        SkylineRanker(ctx, {**base, "budget_nodes": nodes}).run(st)
        got[nodes] = ([i for i, _ in st.ranked], st.trace[-1])
    # layer 0 = {a, b, c} (read by 0.3*S_G + 0.7*S_T: b .8, c .76, a .44), layer 1 = {d}, layer 2 = {e}
    assert got[1][0] == got[3][0] == [b, c, a]  # a whole layer, never a part of it
    assert got[4][0] == [b, c, a, d]
    assert got[5][0] == got[10][0] == [b, c, a, d, e]  # the pool ran out before the budget
    rec = got[4][1]
    assert rec["mode"] == "pareto" and rec["layers"] == [3, 1] and rec["returned"] == 4
    # the page budget peels on too: a, b, c, d are on 4 distinct pages
    st = State("q", candidates=[a, b, c, d, e], scores={k: dict(v) for k, v in scores.items()})
    SkylineRanker(ctx, {**base, "budget_nodes": 1, "budget_pages": 4}).run(st)
    assert [i for i, _ in st.ranked] == [b, c, a, d]
    # the hard cap cuts the last layer by combined score
    st = State("q", candidates=[a, b, c, d, e], scores={k: dict(v) for k, v in scores.items()})
    SkylineRanker(ctx, {**base, "budget_nodes": 5, "max_results": 2}).run(st)
    assert [i for i, _ in st.ranked] == [b, c] and st.trace[-1]["cut_layer"] == {"layer": 0, "size": 3, "kept": 2}


def test_pareto_mode_never_returns_a_node_dominated_by_one_left_out(ctx):
    """Over random scores (ties included), budgets and caps: every returned node is undominated
    by every node left out, the order is by layer then combined score, and the size varies."""
    rng = random.Random(11)
    sizes = set()
    for trial in range(200):
        scores = _random_scores(ctx, rng, [0.0, 0.2, 0.5, 0.8, 1.0] if trial % 2 else None)
        params = {"mode": "pareto", "budget_nodes": rng.randint(1, 6), "budget_pages": rng.randint(0, 5),
                  "max_results": rng.randint(2, 12), "weights": {"graph": 0.05, "text": 1.0}}
        st = State("q", scores={k: dict(v) for k, v in scores.items()})
        SkylineRanker(ctx, params).run(st)
        kept = [i for i, _ in st.ranked]
        point = {i: (scores["graph"].get(i, 0.0), scores["text"].get(i, 0.0)) for i in scores["text"]}
        pool = [i for i, v in point.items() if max(v) > 0]
        left_out = [i for i in pool if i not in kept]
        assert not any(_dominates(point[x], point[r]) for x in left_out for r in kept)
        assert 0 < len(kept) <= params["max_results"]
        layer = {i: k for k, layer in enumerate(pareto_layers({i: point[i] for i in sorted(pool)})) for i in layer}
        comb = dict(st.ranked)
        assert kept == sorted(kept, key=lambda i: (layer[i], -comb[i], i))
        pages = {ctx.tree.nodes[i].page_idx for i in kept}
        budget_met = len(kept) >= params["budget_nodes"] and len(pages) >= params["budget_pages"]
        assert budget_met or len(kept) == min(len(pool), params["max_results"])
        sizes.add(len(kept))
    assert len(sizes) >= 5


def test_pareto_mode_size_follows_the_frontier(ctx):
    """Same budget, different inputs: a dominant node alone, or a frontier of three."""
    a, b, c, d = ids(ctx, "The plot command draws", "The linewidth option", "Colors are given", "The png terminal writes")
    params = {"mode": "pareto", "budget_nodes": 1, "budget_pages": 0}
    st = State("q", scores={"graph": {a: 1.0, b: 0.5, c: 0.4, d: 0.1}, "text": {a: 1.0, b: 0.5, c: 0.3, d: 0.2}})
    SkylineRanker(ctx, params).run(st)
    assert [i for i, _ in st.ranked] == [a]
    st = State("q", scores={"graph": {a: 1.0, b: 0.5, c: 0.1, d: 0.1}, "text": {a: 0.1, b: 0.5, c: 1.0, d: 0.05}})
    SkylineRanker(ctx, params).run(st)
    assert sorted(i for i, _ in st.ranked) == sorted([a, b, c]) and st.trace[-1]["returned"] == 3
    # one criterion (a reasoner ablated): layers are score levels, cut by the same budget
    st = State("q", scores={"text": {a: 1.0, b: 1.0, c: 0.5, d: 0.2}})
    SkylineRanker(ctx, {**params, "budget_nodes": 3}).run(st)
    assert [i for i, _ in st.ranked] == sorted([a, b]) + [c] and st.trace[-1]["layers"] == [2, 1]


def _weighted_reference(ctx, state: State, p: dict) -> list[tuple[str, float]]:
    """SkylineRanker.apply as it was before the modes (commit 1e304e6), kept to pin `weighted`."""
    tree = ctx.tree
    P = SkylineRankerParams(**p)
    dims = [c for c in P.criteria if state.scores.get(c)]
    pool: set[str] = set()
    for c in dims:
        pool.update(state.scores[c])
    if state.candidates is not None:
        pool &= set(state.candidates)
    if P.leaves_only:
        pool = {i for i in pool if tree.nodes[i].type in LEAF_TYPES}
    pool = {i for i in pool if any(state.scores[c].get(i, 0.0) > 0 for c in dims)}
    wsum = sum(P.weights.get(c, 1.0) for c in dims) or 1.0
    combined = {i: sum(P.weights.get(c, 1.0) * state.scores[c].get(i, 0.0) for c in dims) / wsum for i in pool}
    by_combined = sorted(pool, key=lambda i: (-combined[i], i))
    kept: list[str] = []
    if len(dims) >= 2:
        shortlist: set[str] = set(by_combined[:300])
        for c in dims:
            shortlist.update(sorted(pool, key=lambda i: (-state.scores[c].get(i, 0.0), i))[:100])
        rest = {i: tuple(state.scores[c].get(i, 0.0) for c in dims) for i in shortlist}
        while rest and len(kept) < P.pool_factor * P.max_results:
            front = sorted(pareto_front(rest), key=lambda i: (-combined[i], i))
            kept.extend(front)
            for i in front:
                rest.pop(i)
            if len({tree.nodes[i].page_idx for i in kept}) >= P.min_pages:
                break
        if P.keep_ranked:
            kept = list(dict.fromkeys(kept + by_combined[: P.pool_factor * P.max_results]))
        kept = sorted(kept, key=lambda i: (-combined[i], i))
    else:
        kept = by_combined[: P.max_results * 4]
    if P.diversify_pages:
        seen: dict[int, int] = {}
        adj: dict[str, float] = {}
        for i in kept:
            pg = tree.nodes[i].page_idx
            adj[i] = combined[i] * (P.page_decay ** seen.get(pg, 0))
            seen[pg] = seen.get(pg, 0) + 1
        kept = sorted(kept, key=lambda i: (-adj[i], -combined[i], i))
    kept = kept[: P.max_results]
    return [(i, combined[i]) for i in kept]


def test_weighted_mode_is_the_ranking_before_the_modes(ctx):
    rng = random.Random(3)
    for trial in range(150):
        scores = _random_scores(ctx, rng, [0.0, 0.3, 0.6, 1.0] if trial % 3 == 0 else None)
        if trial % 5 == 0:
            scores.pop("graph")
        p = {"max_results": rng.randint(1, 10), "min_pages": rng.randint(0, 8), "pool_factor": rng.randint(1, 4),
             "keep_ranked": rng.random() < 0.7, "diversify_pages": rng.random() < 0.7,
             "page_decay": rng.choice([0.0, 0.3]), "weights": {"graph": rng.choice([0.0, 0.05, 0.2]), "text": 1.0}}
        st = State("q", scores={k: dict(v) for k, v in scores.items()})
        SkylineRanker(ctx, {**p, "mode": "weighted"}).run(st)
        assert st.ranked == _weighted_reference(ctx, State("q", scores=scores), p)
        assert st.trace[-1]["mode"] == "weighted" and st.trace[-1]["returned"] == len(st.ranked)


def test_skyline_mode_comes_from_the_settings():

    assert RetrievalSettings().skyline == SkylineRankerParams().mode  # one default, in both places
    q = "What is the default linewidth?"
    for mode in ("pareto", "weighted"):
        for s in (load_settings(overrides={"retrieval.skyline": mode}, env={}),
                  load_settings(env={"BOOKINDEX_RETRIEVAL__SKYLINE": mode})):
            c = make_context(settings=s)
            sky = [st for st in retrieval_steps(c) if st.op == "Skyline_Ranker"][0]
            assert sky.params["mode"] == mode
            plan = make_plan(q, c)
            rec = [r for r in execute(plan, c).trace if r["op"] == "Skyline_Ranker"][0]
            assert rec["mode"] == mode and rec["params"]["mode"] == mode
        multi = make_plan("What is the difference between the png terminal and the pdf terminal?", c)
        inner = [st for st in multi.steps if st.op == "ForEach"][0].steps or []
        assert [st.params["mode"] for st in inner if st.op == "Skyline_Ranker"] == [mode]
    with pytest.raises(ConfigError):
        load_settings(overrides={"retrieval.skyline": "top-k"}, env={})


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
    assert subs == ["Which is larger, the width of thin lines?", "Which is larger, the width of thick lines?"]
    assert synth.startswith("Which is larger")
    assert split_question("What is the default linewidth?")[0] == ["What is the default linewidth?"]


def test_a_bare_noun_phrase_stands_in_for_its_parallel_in_the_first_part():
    subs, _ = split_question("How much lower is the accuracy of GPT-4 on SituatedQA compared to MMLU Chemistry?")
    assert subs == ["How much lower is the accuracy of GPT-4 on SituatedQA?",
                    "How much lower is the accuracy of GPT-4 on MMLU Chemistry?"]
    subs, _ = split_question("How many people are in the Executive Leadership and the Prosecution Services Staff?")
    assert subs[1] == "How many people are in the Prosecution Services Staff?"
    # a part that is a question or a clause of its own is asked as it is
    subs, _ = split_question("What is the revenue in 2019 and how many stores were opened?")
    assert subs == ["What is the revenue in 2019?", "how many stores were opened?"]


def test_a_conjunct_replaces_the_word_the_parser_coordinates_it_with():
    # the last noun chunk is "U.S. adults"; the parser coordinates Non-Hispanic with Hispanic
    subs, _ = split_question("What is the share of U.S. adults with Hispanic ancestry who self-identify as "
                             "Hispanic or Non-Hispanic?")
    assert subs == ["What is the share of U.S. adults with Hispanic ancestry who self-identify as Hispanic?",
                    "What is the share of U.S. adults with Hispanic ancestry who self-identify as Non-Hispanic?"]


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

    for w in (0.05, 0.3):
        c = make_context(settings=load_settings(overrides={"llm.provider": "none",
                                                           "retrieval.offline_graph_weight": w}, env={}))
        sky = [s for s in retrieval_steps(c) if s.op == "Skyline_Ranker"][0]
        assert sky.params["weights"] == {"graph": w, "text": 1.0}


def test_structure_views_match_the_per_node_functions(ctx):
    """operators.structure answers what the per-question walks did: the units, the entries,
    the subtrees, and the (score desc, id) order, ties included."""

    import numpy as np

    tree = ctx.tree
    s = doc_structure(ctx)
    assert doc_structure(ctx) is s  # once per document
    ids = list(tree.nodes)
    assert unit_ids(ctx, None) == leaves_of(tree, None)
    assert unit_ids(ctx, ids[::-1]) == leaves_of(tree, ids[::-1])
    assert s.entry == {i: e for i in ids if (e := entry_of(tree, i)) is not None and e != i}
    for sec in tree.sections():
        assert s.subtree(tree, sec.id) == [n.id for n in tree.walk(sec.id)]
    rng = random.Random(7)
    for _ in range(20):
        pick = rng.sample(ids, rng.randint(1, len(ids)))
        scores = [rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]) for _ in pick]  # many ties
        want = sorted(pick, key=lambda i: (-scores[pick.index(i)], i))
        assert s.ranked(pick, np.array(scores)) == want
        assert s.ranked(pick, np.array(scores), 3) == want[:3]
        by_id = dict(zip(pick, scores))
        assert top_items(by_id, 2) == [[i, round(by_id[i], 4)] for i in want[:2]]
        dims = {"text": dict(by_id)}, {"text": dict(by_id)}
        pool = set(pick)
        assert (collapse_entries(tree, dims[0], ["text"], set(pool), s.entry)
                == collapse_entries(tree, dims[1], ["text"], set(pool)))
        assert dims[0] == dims[1]
    assert s.ranked(["not-a-node", ids[0]], np.array([0.5, 0.5])) == sorted(["not-a-node", ids[0]])


def test_entity_links_are_kept_per_mention_and_handed_out_as_copies(ctx):
    first = Extract(ctx, {"use_llm": False}).link("default linewidth")
    assert first.entity_ids  # the fixture links it (by a name inside the mention)
    first.entity_ids.append("mutated")  # a caller's change does not reach the cache
    again = Extract(ctx, {"use_llm": False}).link("default linewidth")
    assert "mutated" not in again.entity_ids and again.how == first.how
    assert len(ctx.views.links) == 1
    strict = Extract(ctx, {"use_llm": False, "links_per_mention": 1}).link("default linewidth")
    assert len(strict.entity_ids) <= 1 and len(ctx.views.links) == 2  # other parameters: linked anew


def test_graph_adjacency_is_the_networkx_views_adjacency() -> None:
    """Built from the relations without networkx: same entity order, parallel relations (either
    direction) adding their weights, self-relations and relations to unknown entities dropped."""
    ents = {e: Entity(e, e.upper()) for e in ("a", "b", "c", "d")}
    rels = [Relation("a", "b", weight=1.0), Relation("b", "a", weight=2.5), Relation("b", "c", weight=0.5),
            Relation("c", "c", weight=9.0), Relation("a", "zz", weight=4.0)]
    g = KnowledgeGraph(ents, rels)
    nodes, index, a = graph_adjacency(g)
    nx_nodes, nx_index, nx_a = adjacency(g.nx)
    assert nodes == nx_nodes == ["a", "b", "c", "d"] and index == nx_index
    assert (a != nx_a).nnz == 0
    assert a[index["a"], index["b"]] == a[index["b"], index["a"]] == 3.5
    assert a[index["c"], index["c"]] == 0 and a[index["d"]].nnz == 0
    empty = graph_adjacency(KnowledgeGraph({"a": Entity("a", "A")}, []))
    assert empty[2].shape == (1, 1) and empty[2].nnz == 0
