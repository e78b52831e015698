"""Verified citations (operators.grounding) and evidence passages (operators.passages)."""

from __future__ import annotations

from bookindex.core.model import Block, build_tree
from bookindex.operators.grounding import citation_problem, cited_numbers, grounded_answer
from bookindex.operators.passages import build_passages, format_passages
from bookindex.operators.prompts import Grounded, grounded_from_prose
from bookindex.retrieval.api import ask
from tests.fakes import FakeLLM
from tests.retrieval_fixture import make_context, node


def _extractive() -> tuple[str, list[int]]:
    return "the best sentence [1]", [1]


def test_cited_numbers_reads_every_citation_style():
    assert cited_numbers("a [3] b [2][3] c [4, 5]; d [6;7]") == [2, 3, 4, 5, 6, 7]
    assert cited_numbers("no citations (1) here") == []


def test_citation_problem_names_the_broken_rule():
    allowed = range(1, 4)
    assert citation_problem("asn1_der_decoding [1]", allowed) is None
    assert citation_problem("Not answerable from the document.", allowed) is None
    assert citation_problem("asn1_der_decoding", allowed) == "cites no evidence"
    assert "[7]" in (citation_problem("x [1][7]", allowed) or "")


def test_an_answer_that_only_repeats_the_question_breaks_the_rule():
    allowed = range(1, 4)
    for answer in ("mirror [2][3]", "Mirrors [1]", "a mirror. [2]"):
        problem = citation_problem(answer, allowed, "What is a mirror?") or ""
        assert "only repeats the question's words (mirror" in problem, answer
    assert citation_problem("mirror [2]", allowed) is None  # without the question: citations only
    assert citation_problem("a server holding a copy of the archive [2]", allowed, "What is a mirror?") is None
    # a restatement answers a yes/no question; a word of an alternative picks it
    assert citation_problem("the daemon rotates its log [1]", allowed, "Does the daemon rotate its log?") is None
    assert citation_problem("the thick style [2]", allowed,
                            "Which is wider, the thin style or the thick style?") is None
    # a number, a denial, a command named by the question's verb, a name spelled from its words
    kept = [("2 [1]", "How many appendices does part 2 have?"),
            ("not a mirror [1]", "What is a mirror?"),
            ("quit [1]", "How do I quit the shell?"),
            ("save.image [1]", "How do I save an image of the workspace?"),
            ("PURGE [2]", "How do I purge the cache?")]
    for answer, question in kept:
        assert citation_problem(answer, allowed, question) is None, answer


def test_a_repeated_question_word_is_repaired_or_replaced_by_the_extractive_answer():
    q = "What is a mirror?"
    llm = FakeLLM({"answer": {"answer": "mirror [2]"},
                   "answer-repair": {"answer": "a server holding a copy of the archive [2]"}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), _extractive, question=q)
    assert (res.answer, res.check) == ("a server holding a copy of the archive [2]", "repaired")
    assert "only repeats" in llm.calls[1].prompt and "only repeats" in res.notes["citation_problem"]
    llm = FakeLLM({"answer": {"answer": "mirror"}, "answer-repair": {"answer": "mirror [2][3]"}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), _extractive, question=q)
    assert (res.answer, res.check) == ("the best sentence [1]", "fallback")
    assert "only repeats" in res.notes["repair_problem"] and res.notes["discarded_answer"] == "mirror [2][3]"


def test_a_merged_answer_must_keep_each_joined_question_answered():
    parts = [("Which port does the daemon listen on?", [1]), ("where is its log written?", [3])]
    allowed = range(1, 5)
    problem = citation_problem("port 8125 [1]", allowed, "", parts) or ""
    assert "leaves out the answer to 'where is its log written?'" in problem and "[3]" in problem
    assert citation_problem("port 8125 [1]; /var/log/statd.log [3]", allowed, "", parts) is None


def test_a_valid_answer_is_returned_as_it_is():
    llm = FakeLLM({"answer": {"answer": "It is asn1_der_decoding [2]."}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), _extractive)
    assert (res.answer, res.citations, res.check) == ("It is asn1_der_decoding [2].", [2], "valid")
    assert llm.stages == ["answer"]


def test_a_plain_words_answer_with_inline_citations_is_kept_without_a_repair():
    # the 1.5B model often drops the JSON wrapper: "Vision, Bluetooth device [3][4]" is an answer
    llm = FakeLLM({"answer": "Vision, Bluetooth device [3][4]"})
    res = grounded_answer(llm, "PROMPT", range(1, 5), _extractive)
    assert (res.answer, res.citations, res.check) == ("Vision, Bluetooth device [3][4]", [3, 4], "valid")
    assert llm.stages == ["answer"]


def test_grounded_from_prose_declines_json_attempts_and_empty_replies():
    assert grounded_from_prose('{"answer": "x", "cit') is None and grounded_from_prose("  ") is None
    assert grounded_from_prose(" png [1] ") == Grounded(answer="png [1]")


def test_an_answer_without_citations_gets_one_repair_round_with_the_rule():
    llm = FakeLLM({"answer": {"answer": "asn1_der_decoding"},
                   "answer-repair": {"answer": "asn1_der_decoding [1]"}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), _extractive)
    assert (res.answer, res.citations, res.check) == ("asn1_der_decoding [1]", [1], "repaired")
    repair = llm.calls[1].prompt
    assert repair.startswith("PROMPT") and "cites no evidence" in repair and "1 to 3" in repair
    assert res.notes["citation_problem"] == "cites no evidence"


def test_a_second_bad_answer_falls_back_to_the_extractive_one_and_says_so():
    llm = FakeLLM({"answer": {"answer": "see [9]"}, "answer-repair": {"answer": "still [9]"}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), _extractive)
    assert (res.answer, res.citations, res.check) == ("the best sentence [1]", [1], "fallback")
    assert res.notes["discarded_answer"] == "still [9]" and "[9]" in res.notes["repair_problem"]


def test_not_answerable_needs_no_citation_and_a_failing_llm_is_recorded():
    res = grounded_answer(FakeLLM({"answer": {"answer": "not answerable from the document"}}),
                          "P", range(1, 3), _extractive)
    assert res.check == "not-answerable" and res.citations == []
    from bookindex.core.errors import LLMUnavailable

    res = grounded_answer(FakeLLM({"answer": LLMUnavailable("down")}), "P", range(1, 3), _extractive)
    assert res.check == "extractive" and "LLMUnavailable" in res.notes["fallback"]
    assert grounded_answer(None, "P", range(1, 3), _extractive).check == "extractive"


def test_ask_records_the_citation_check_in_the_answer_and_the_trace():
    ctx = make_context(llm=FakeLLM({"answer": {"answer": "png"}, "answer-repair": {"answer": "the png terminal [42]"}},
                                   default={"category": "single-hop"}))
    ans = ask(ctx, "Which terminal writes bitmap images?")
    assert ans.citation_check == "fallback"
    assert ans.citations and all(1 <= c <= len(ans.evidence) for c in ans.citations)
    reduce = [t for t in ans.trace if t.op == "Reduce"][0]
    assert reduce.model_extra["citations"] == "fallback"
    no_llm = ask(make_context(), "Which terminal writes bitmap images?")
    assert no_llm.citation_check == "extractive" and no_llm.citations


def test_baseline_answers_are_verified_too():
    ctx = make_context(llm=FakeLLM({"answer": {"answer": "The png terminal [1]."}}))
    ans = ask(ctx, "Which terminal writes bitmap images?", method="bm25", k=3)
    assert ans.citation_check == "valid" and ans.citations == [1]


# -- passages ---------------------------------------------------------------------------------

def _entry_tree():
    B = Block
    blocks = [
        B("title", "4.3 DER functions", 0, (50, 40, 300, 60), level=1),
        B("title", "asn1_der_coding", 0, (50, 70, 300, 85), level=2),
        B("text", "int asn1_der_coding (asn1_node element, const char * name, void * ider, int * len)", 0, (50, 90, 500, 110)),
        B("text", "element: pointer to an ASN1 element. name: the name of the structure.", 0, (50, 120, 500, 140)),
        B("text", "Creates the DER encoding for the NAME structure.", 0, (50, 150, 500, 170)),
        B("title", "asn1_der_decoding", 1, (50, 40, 300, 60), level=2),
        B("text", "int asn1_der_decoding (asn1_node * element, const void * ider, int ider_len, char * err)", 1, (50, 70, 500, 90)),
        B("text", "element: pointer to an ASN1 structure. ider: vector that contains the DER encoding.", 1, (50, 100, 500, 120)),
        B("text", "Fill the structure element with values of a DER encoding string.", 1, (50, 130, 500, 150)),
    ]
    return build_tree("entries000000000", "manual.pdf", blocks, {"pages": 2})


def test_a_passage_shows_the_whole_entry_with_its_title_path():
    tree = _entry_tree()
    params = node(tree, "ider: vector that contains")
    [p] = build_passages(tree, [params])
    assert p.node_id == params and p.name == "asn1_der_decoding"
    assert p.title_path == ("4.3 DER functions", "asn1_der_decoding")
    assert "int asn1_der_decoding" in p.text and "Fill the structure" in p.text
    assert (p.first_page, p.last_page) == (2, 2) and len(p.node_ids) == 3
    text = format_passages([p])
    assert text.startswith("[1] (p. 2 · 4.3 DER functions > asn1_der_decoding)\n")


def test_passages_do_not_repeat_context_and_keep_to_the_budget():
    tree = _entry_tree()
    a, b = node(tree, "Fill the structure"), node(tree, "ider: vector that contains")
    first, second = build_passages(tree, [a, b])
    assert b in first.node_ids  # shown as context of the first item
    assert second.node_ids == (b,)  # the ranked node is still shown; its context is not repeated
    long_text = "word " * 2000
    tree2 = build_tree("long000000000000", "long.pdf", [Block("text", long_text, 0, (0, 0, 10, 10))], {"pages": 1})
    [p] = build_passages(tree2, [tree2.leaves()[0].id], budget_chars=1000)
    assert len(p.text) <= 1000


def test_a_paragraph_passage_adds_its_neighbours_within_the_budget():
    ctx = make_context()
    tree = ctx.tree
    nid = node(tree, "The splot command draws")
    [p] = build_passages(tree, [nid])
    assert p.name == "2.1 The plot command"
    assert "The plot command draws functions" in p.text  # the block before it in the same section
    assert nid in p.node_ids


def test_numbers_listed_in_the_citations_field_cite_an_answer_without_inline_citations():
    llm = FakeLLM({"answer": {"answer": "asn1_der_decoding", "citations": [2, 1]}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), _extractive)
    assert (res.answer, res.citations, res.check) == ("asn1_der_decoding [1][2]", [1, 2], "valid")
    bad = FakeLLM({"answer": {"answer": "x", "citations": [7]}, "answer-repair": {"answer": "x", "citations": [3]}})
    res = grounded_answer(bad, "PROMPT", range(1, 4), _extractive)
    assert (res.answer, res.check) == ("x [3]", "repaired")


def test_citations_of_items_that_share_no_word_with_the_answer_are_dropped():
    from bookindex.operators.grounding import drop_unsupported

    sources = {1: "asn1_der_decoding: Fill the structure", 2: "asn1_length_der: length", 3: "see asn1_der_decoding()"}
    assert drop_unsupported("asn1_der_decoding [1][2][3]", sources) == ("asn1_der_decoding [1][3]", [2])
    assert drop_unsupported("a paraphrase [2]", sources) == ("a paraphrase [2]", [])  # cannot judge: kept
    llm = FakeLLM({"answer": {"answer": "asn1_der_decoding", "citations": [1, 2, 3]}})
    res = grounded_answer(llm, "P", range(1, 4), _extractive, sources=sources)
    assert (res.answer, res.citations, res.notes["unsupported_citations_dropped"]) == ("asn1_der_decoding [1][3]", [1, 3], [2])


def test_reports_count_valid_citations_over_substantive_llm_answers():
    from bookindex.evaluation.report import summarize

    def rec(check, score=1.0):
        return {"method": "bookindex", "recall": None, "nodes": 1, "chars": 1, "seconds": 0.1,
                "score": score, "citation_check": check}

    records = [rec("valid"), rec("repaired"), rec("fallback"), rec("not-answerable"), rec("extractive")]
    s = summarize(records, ["bookindex"], [5], lambda rs: {"accuracy": 1.0})["bookindex"]["answers"]
    assert s["valid_citations"] == 2 / 3 and s["repaired"] == 1 / 3 and s["refused"] == 1 / 4


# -- a refusal and the extractive answer -------------------------------------------------------

_REFUSAL = {"answer": {"answer": "Not answerable from the document."}}


def test_a_refusal_gives_way_to_the_extractive_answer_marked_when_asked():
    from bookindex.operators.grounding import REFUSED_MARK

    events: list[tuple[str, str]] = []
    res = grounded_answer(FakeLLM(_REFUSAL), "P", range(1, 3), _extractive, refusal_fallback=True,
                          on_event=lambda kind, data: events.append((kind, data)))
    assert res.check == "refused-extractive" and res.citations == [1]
    assert res.answer == REFUSED_MARK + "the best sentence [1]"
    assert res.answer.startswith("The model found no answer")
    assert res.notes["model_answer"] == "Not answerable from the document."
    assert ("reset", "the model found no answer: the extractive answer replaces it, marked") in events
    # off (the default): the refusal is returned as it is
    kept = grounded_answer(FakeLLM(_REFUSAL), "P", range(1, 3), _extractive)
    assert (kept.answer, kept.check, kept.citations) == ("Not answerable from the document.", "not-answerable", [])


def test_a_refusal_stands_when_the_extractive_reader_finds_nothing_either():
    res = grounded_answer(FakeLLM(_REFUSAL), "P", range(1, 3), lambda: ("not answerable from the document", []),
                          refusal_fallback=True)
    assert (res.answer, res.check, res.citations) == ("Not answerable from the document.", "not-answerable", [])
    assert "model_answer" not in res.notes


def test_a_valid_answer_is_unchanged_by_the_refusal_fallback():
    llm = FakeLLM({"answer": {"answer": "It is asn1_der_decoding [2]."}})
    res = grounded_answer(llm, "PROMPT", range(1, 4), lambda: ("something else [1]", [1]), refusal_fallback=True)
    assert (res.answer, res.citations, res.check) == ("It is asn1_der_decoding [2].", [2], "valid")


def test_the_refusal_fallback_setting_defaults_to_the_in_process_model_only():
    from bookindex.core.config import load_settings
    from bookindex.operators.grounding import refusal_fallback_on

    def on(**overrides: str) -> bool:
        return refusal_fallback_on(load_settings(overrides=overrides, env={}))

    assert on(**{"llm.provider": "llamacpp"}) and not on(**{"llm.provider": "openai"})
    assert on(**{"llm.provider": "openai", "answer.refusal_fallback": "always"})
    assert not on(**{"llm.provider": "llamacpp", "answer.refusal_fallback": "never"})


def test_ask_marks_an_answer_that_replaced_a_refusal_in_the_answer_and_the_trace():
    from bookindex.core.config import load_settings

    settings = load_settings(overrides={"answer.refusal_fallback": "always"}, env={})
    ctx = make_context(llm=FakeLLM(_REFUSAL, default={"category": "single-hop"}), settings=settings)
    ans = ask(ctx, "Which terminal writes bitmap images?")
    assert ans.citation_check == "refused-extractive" and ans.answer.startswith("The model found no answer")
    assert ans.citations and all(1 <= c <= len(ans.evidence) for c in ans.citations)
    reduce = [t for t in ans.trace if t.op == "Reduce"][0]
    assert reduce.model_extra["citations"] == "refused-extractive"
    assert reduce.model_extra["model_answer"].startswith("Not answerable")
    base = ask(make_context(llm=FakeLLM(_REFUSAL), settings=settings), "Which terminal writes bitmap images?",
               method="bm25", k=3)
    assert base.citation_check == "refused-extractive" and base.citations


def test_reports_count_a_replaced_refusal_as_a_refusal():
    from bookindex.evaluation.report import summarize

    records = [{"method": "m", "recall": None, "nodes": 1, "chars": 1, "seconds": 0.1, "score": 0.0,
                "citation_check": c} for c in ("valid", "refused-extractive", "not-answerable", "fallback")]
    s = summarize(records, ["m"], [5], lambda rs: {"accuracy": 0.0})["m"]["answers"]
    assert s["refused"] == 2 / 4 and s["valid_citations"] == 1 / 2


def test_a_refusal_gives_way_to_the_readers_answer_not_to_joined_partial_answers():
    res = grounded_answer(FakeLLM(_REFUSAL), "P", range(1, 3), lambda: ("not found in this evidence", []),
                          refusal_fallback=True, reader=lambda: ("the reader's span [2]", [2]))
    assert (res.check, res.citations) == ("refused-extractive", [2]) and res.answer.endswith("the reader's span [2]")


def test_the_in_process_model_is_not_asked_a_quantity_the_reader_finds():
    """A quantity question whose reader finds a number of the kind asked is answered with it and
    the embedded model is not called (`answer.extractive_quantities`); a question of another kind,
    or a model you bring, is asked as before."""
    from bookindex.core.config import load_settings
    from bookindex.operators.grounding import extractive_quantities_on

    reply = {"answer": {"answer": "It is 2 points [1]."}}
    embedded = load_settings(overrides={"llm.provider": "llamacpp"}, env={})
    llm = FakeLLM(reply, default={"category": "single-hop"})
    ans = ask(make_context(llm=llm, settings=embedded), "How many pixels wide is the default png image?")
    assert ans.citation_check == "extractive" and ans.answer.split(" ")[0] in ("640", "480") and ans.citations
    assert not [c for c in llm.calls if c.stage == "answer"]
    llm = FakeLLM(reply, default={"category": "single-hop"})
    ask(make_context(llm=llm, settings=embedded), "Which library does the png terminal write images through?")
    assert [c for c in llm.calls if c.stage == "answer"]
    remote = load_settings(overrides={"llm.provider": "openai"}, env={})
    assert not extractive_quantities_on(remote) and extractive_quantities_on(embedded)
    assert extractive_quantities_on(load_settings(overrides={"llm.provider": "openai",
                                                             "answer.extractive_quantities": "always"}, env={}))
