"""Scorers against hand-computed cases."""

from __future__ import annotations

import pytest

from bookindex.core.model import Block, Evidence, build_tree
from bookindex.evaluation import (
    anls,
    context_size,
    f1_mmlongbench,
    page_recall_at_k,
    parse_gold_pages,
    qasper_accuracy,
    qasper_gold_answers,
    qasper_token_f1,
    score_answer,
)
from bookindex.evaluation.qasper import evidence_recall_at_k, paragraph_matches
from bookindex.retrieval.baselines import rrf_fuse


# -- MMLongBench answer rules -----------------------------------------------------------
def test_anls_hand_computed():
    # "eifel tower" vs "eiffel tower": 1 edit over 12 chars -> 11/12
    assert anls("Eiffel Tower", "eifel tower") == pytest.approx(11 / 12)
    # "red" vs "blue": distance 4 over 4 chars -> similarity 0 -> 0
    assert anls("red", "blue") == 0.0
    # exactly 0.5 counts (ANLS >= 0.5): "abcd" vs "abxy" distance 2 / 4
    assert anls("abcd", "abxy") == pytest.approx(0.5)
    # case, whitespace and trailing punctuation are normalized away
    assert anls("Wake up the voice assistant. ", "wake up  the voice assistant") == 1.0


def test_str_exact_for_urls_and_dates():
    assert score_answer("2009-07", "2009-07", "Str") == 1.0
    assert score_answer("2009-07", "2009-08", "Str") == 0.0  # ANLS would give 6/7
    url = "http://dx.doi.org/10.1016/j.ejmhg.2015.07.002"
    assert score_answer(url, url + "3", "Str") == 0.0
    assert score_answer("10:08AM", "10:08 am", "Str") == 0.0
    assert score_answer("10:08AM", "10:08am", "Str") == 1.0


def test_int_exact():
    assert score_answer("3", "3", "Int") == 1.0
    assert score_answer("1862", "1,862", "Int") == 1.0
    assert score_answer("538", "There are 538 respondents.", "Int") == 1.0
    assert score_answer("3", "4", "Int") == 0.0
    assert score_answer("3", "3.5", "Int") == 0.0
    assert score_answer("3", "three", "Int") == 0.0


def test_float_within_one_percent():
    assert score_answer("2.92", "2.92", "Float") == 1.0
    assert score_answer("2.92", "2.948", "Float") == 1.0   # +0.96%
    assert score_answer("2.92", "2.95", "Float") == 0.0    # +1.03%
    assert score_answer("72.3%", "72.3", "Float") == 1.0
    assert score_answer("72.3%", "0.723", "Float") == 1.0  # fraction for a percentage
    assert score_answer("0.1", "10%", "Float") == 1.0
    assert score_answer("26%", "27%", "Float") == 0.0
    assert score_answer("0.45", "n/a", "Float") == 0.0


def test_list_matching():
    gold = "['gray', 'red']"
    assert score_answer(gold, ["Red", "gray"], "List") == 1.0  # order-free
    assert score_answer(gold, "['red', 'gray']", "List") == 1.0
    assert score_answer(gold, "red and gray", "List") == 1.0
    assert score_answer(gold, ["red"], "List") == 0.0  # length mismatch
    # numeric elements need an exact match
    assert score_answer("['46', '27', '64']", ["27", "46", "64"], "List") == 1.0
    assert score_answer("['46', '27', '64']", ["27", "46", "65"], "List") == 0.0
    # string elements: minimum element-wise ANLS; "place of brth": 1 edit / 14 chars = 13/14
    s = score_answer("['birth', 'place of birth']", ["birth", "place of brth"], "List")
    assert s == pytest.approx(13 / 14)


def test_not_answerable_and_f1():
    assert score_answer("Not answerable", "Not answerable.", "None") == 1.0
    assert score_answer("Not answerable", "42", "None") == 0.0
    golds = ["3", "red", "Not answerable", "Not answerable"]
    preds = ["3", "blue", "Not answerable", "7"]
    scores = [1.0, 0.0, 1.0, 0.0]
    m = f1_mmlongbench(golds, preds, scores)
    assert m["accuracy"] == pytest.approx(0.5)
    # recall over answerable golds: 1/2; precision: 1 / 3 answered predictions
    assert m["recall"] == pytest.approx(0.5)
    assert m["precision"] == pytest.approx(1 / 3)
    assert m["f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


# -- page recall with section nodes ---------------------------------------------------------
def _tree():
    blocks = [
        Block("title", "1 Intro", 0, level=1),                       # 00000 section, page 1
        Block("text", "intro text", 0),                               # 00001 page 1
        Block("text", "more intro", 1),                               # 00002 page 2
        Block("title", "2 Methods", 2, level=1),                      # 00003 section, page 3
        Block("text", "methods", 3),                                  # 00004 page 4
        Block("table", "a table across pages", 4, extra={"page_end_idx": 5}),  # 00005 pages 5-6
    ]
    return build_tree("d", "doc", blocks)


def _ev(tree, nid, rank):
    return Evidence.from_node(tree, tree.nodes[nid], rank=rank)


def test_parse_gold_pages():
    assert parse_gold_pages("[5, 7]") == [5, 7]
    assert parse_gold_pages("[]") == []
    assert parse_gold_pages([3, 3, 1]) == [1, 3]


def test_section_node_contributes_only_heading_page():
    t = _tree()
    # the Methods section spans pages 3-6, but only its heading page (3) counts
    ev = [_ev(t, "d-00003", 1)]
    r = page_recall_at_k(ev, [3, 4, 5], [1], tree=t)
    assert r[1].recall == pytest.approx(1 / 3)
    assert r[1].hit == 1.0
    r = page_recall_at_k(ev, [4], [1], tree=t)
    assert r[1].recall == 0.0 and r[1].hit == 0.0
    # the root contributes nothing
    assert page_recall_at_k([_ev(t, "d-root", 1)], [1], [1], tree=t)[1].recall == 0.0


def test_recall_counts_nodes_in_rank_order_and_multi_page_leaves():
    t = _tree()
    ev = [_ev(t, "d-00001", 1), _ev(t, "d-00001", 2), _ev(t, "d-00005", 3), _ev(t, "d-00004", 4)]
    r = page_recall_at_k(ev, [1, 4, 6], [1, 2, 3], tree=t)
    assert r[1].recall == pytest.approx(1 / 3)
    # the duplicate is dropped: k=2 reaches the table, which covers pages 5 and 6
    assert r[2].recall == pytest.approx(2 / 3)
    assert r[3].recall == pytest.approx(1.0)
    with pytest.raises(ValueError):
        page_recall_at_k(ev, [], [1], tree=t)


def test_context_size_counts_unique_nodes_and_chars():
    t = _tree()
    ev = [_ev(t, "d-00001", 1), _ev(t, "d-00001", 2), _ev(t, "d-00004", 3)]
    assert context_size(ev, t) == (2, len("intro text") + len("methods"))
    chunk = Evidence(doc_id="d", node_id="d-00001", type="text", page_idx=0,
                     scores={"chunk_index": 0.0, "chunk_chars": 1234.0})
    assert context_size([chunk], t) == (1, 1234)


# -- RRF ordering -----------------------------------------------------------------------------
def test_rrf_ordering_hand_computed():
    # a: 1/61 + 1/63; b: 1/62 + 1/61; c: 1/63; d: 1/62
    fused = rrf_fuse([["a", "b", "c"], ["b", "d", "a"]], k=60)
    assert [x for x, _ in fused] == ["b", "a", "d", "c"]
    assert dict(fused)["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert dict(fused)["b"] == pytest.approx(1 / 62 + 1 / 61)
    # ties keep first appearance: x (rank 1 in list 0) before y (rank 1 in list 1)
    assert [x for x, _ in rrf_fuse([["x"], ["y"]])] == ["x", "y"]


# -- Qasper ---------------------------------------------------------------------------------
def test_qasper_answers_f1_and_accuracy():
    answers = [
        {"answer": {"unanswerable": False, "extractive_spans": ["BERT", "ELMo"], "yes_no": None,
                    "free_form_answer": "", "evidence": []}},
        {"answer": {"unanswerable": False, "extractive_spans": [], "yes_no": None,
                    "free_form_answer": "a BERT model", "evidence": []}},
        {"answer": {"unanswerable": False, "extractive_spans": [], "yes_no": True,
                    "free_form_answer": "", "evidence": []}},
    ]
    golds = qasper_gold_answers(answers)
    assert golds == ["BERT, ELMo", "a BERT model", "Yes"]
    # pred "they use BERT": vs "bert elmo" P=1/3 R=1/2 -> 0.4; vs "bert model" P=1/3 R=1/2 -> 0.4
    assert qasper_token_f1(golds, "They use BERT.") == pytest.approx(0.4)
    assert qasper_token_f1(["bert model"], "the BERT model") == 1.0
    assert qasper_accuracy(golds, "Yes, they do.") == 1.0
    assert qasper_accuracy(golds, "They use ELMo.") == 0.0
    # whole-token containment: "no" is not inside "not answerable"; that maps to "Unanswerable"
    assert qasper_accuracy(["No"], "Not answerable.") == 0.0
    assert qasper_accuracy(["Unanswerable"], "Not answerable.") == 1.0
    assert qasper_token_f1(["Unanswerable"], "Not answerable") == 1.0


def test_qasper_paragraph_recall():
    p1 = "Our full dataset consists of all subreddits on Reddit from January 2013."
    p2 = "FLOAT SELECTED: Table 2: Results on the test set for all models."
    assert paragraph_matches(p2, "Table 2: Results on the test set for all models.")
    assert not paragraph_matches(p1, "Reddit")  # too short to count as containment
    retrieved = ["unrelated paragraph text that matches nothing at all", p1.upper(), "Table 2: Results on the test set for all models."]
    r = evidence_recall_at_k([[p1, p2], []], retrieved, [1, 2, 3])
    assert r == {1: 0.0, 2: 0.5, 3: 1.0}
    assert evidence_recall_at_k([[], []], retrieved, [1]) is None
