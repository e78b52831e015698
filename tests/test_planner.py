"""Planner: classification rules, the paper's plan shapes (eqs. 9–12), plans as editable JSON."""

from __future__ import annotations

import json

import pytest
from retrieval_fixture import make_context, node

from bookindex.core.config import load_settings
from bookindex.core.errors import InputError
from bookindex.operators import prompts
from bookindex.retrieval import Plan, plan, run_plan
from bookindex.retrieval.planner import classify_rules

SINGLE = ["Extract", "Select_by_Entity", "[Select_by_Section]", "Parallel", "Graph_Reasoning",
          "Text_Reasoning", "Skyline_Ranker", "Reduce"]


@pytest.mark.parametrize("q,expected", [
    ("What is the default linewidth?", "single-hop"),
    ("How many people use the png terminal?", "single-hop"),
    ("How many tables are in pages 3-10?", "global"),
    ("How many charts are shown in the first 10 pages of the document?", "global"),
    ("List all figures in section 2", "global"),
    ("Count the tables in the document", "global"),
    ("What is the difference between the png terminal and the pdf terminal?", "multi-hop"),
    ("How does the png terminal compare to the pdf terminal?", "multi-hop"),
    ("Which is larger, the width of thin lines or the width of thick lines?", "multi-hop"),
])
def test_classify_rules(q, expected):
    assert classify_rules(q)[0] == expected


def test_two_linked_entities_in_separate_sections_is_multi_hop():
    ctx = make_context()
    assert classify_rules("What do the linewidth and the png terminal have in common?", ctx)[0] == "multi-hop"


def test_single_hop_plan_shape():
    p = plan(make_context(), "What is the default linewidth?")
    assert p.query_type == "single-hop" and p.shape() == SINGLE


def test_multi_hop_plan_shape():
    p = plan(make_context(), "What is the difference between the png terminal and the pdf terminal?")
    assert p.query_type == "multi-hop"
    assert p.shape() == ["Decompose", "ForEach"] + SINGLE[:-1] + ["Map", "Reduce"]
    assert p.steps[0].params["sub_questions"] == ["What is the png terminal?", "What is the pdf terminal?"]


def test_global_plan_shape_nests_filters():
    p = plan(make_context(), "How many tables are in pages 3-12?")
    assert p.query_type == "global"
    assert p.shape() == ["Filter_Range", "Filter_Modal", "Map", "Reduce"]
    assert p.steps[0].params == {"range_type": "page", "value": "3-12"}
    # the part counted and the range, so Reduce can count the tables the document labels there
    assert p.steps[-1].params == {"operation": "COUNT", "unit": "tables",
                                  "scope": {"range_type": "page", "value": "3-12"}}


def test_json_round_trip_is_exact():
    ctx = make_context()
    for q in ["What is the default linewidth?", "How many figures are in section 2?",
              "What is the difference between the png terminal and the pdf terminal?"]:
        p = plan(ctx, q)
        text = p.to_json()
        again = Plan.from_json(text)
        assert again == p and again.to_json() == text
        assert json.loads(text)["steps"]


def test_edited_plan_runs(tmp_path):
    ctx = make_context()
    p = plan(ctx, "How many tables are in pages 4-12?")
    assert run_plan(ctx, p).structural["count"] == 2  # tables on pages 3, 7, 12
    d = p.to_dict()
    d["steps"][1]["params"]["modal_types"] = ["image"]  # count figures instead
    d["steps"][0]["params"]["value"] = "1-12"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    ans = run_plan(ctx, Plan.load(path))
    assert ans.structural["count"] == 3 and ans.answer.startswith("3")
    # an edited single-hop plan: pin the entity and skip straight to reasoning
    sp = plan(ctx, "What is the default size?").to_dict()
    sp["steps"][0]["params"] = {"mentions": ["png terminal"]}
    ans = run_plan(ctx, sp)
    assert ans.evidence[0].node_id == node(ctx.tree, "The png terminal writes")


def test_invalid_plans_are_clear_errors():
    with pytest.raises(InputError, match="unknown operator"):
        Plan.from_dict({"question": "q", "query_type": "single-hop", "steps": [{"op": "Teleport"}]})
    with pytest.raises(InputError, match="Filter_Range parameter"):
        Plan.from_dict({"question": "q", "query_type": "global",
                        "steps": [{"op": "Filter_Range", "params": {"range_type": "chapter"}}]})
    with pytest.raises(InputError, match="malformed JSON"):
        Plan.from_json("{nope")
    with pytest.raises(InputError, match="version"):
        Plan.from_dict({"version": 0, "question": "q", "query_type": "single-hop", "steps": []})


def test_ablations_are_configuration():
    s = load_settings(overrides={"retrieval.planning": False}, env={})
    ctx = make_context(settings=s)
    p = plan(ctx, "How many tables are in pages 3-12?")
    assert p.query_type == "single-hop" and p.shape() == SINGLE
    s = load_settings(overrides={"retrieval.graph_reasoning": False, "retrieval.selector": False}, env={})
    ctx = make_context(settings=s)
    p = plan(ctx, "What is the default linewidth?")
    assert p.shape() == ["Extract", "Text_Reasoning", "Skyline_Ranker", "Reduce"]
    ans = run_plan(ctx, p)
    assert ans.evidence[0].node_id == node(ctx.tree, "The linewidth option")
    s = load_settings(overrides={"retrieval.text_reasoning": False}, env={})
    assert "Text_Reasoning" not in plan(make_context(settings=s), "What is the default linewidth?").shape()


def test_llm_planning_uses_paper_prompts_and_filters(fake_llm):
    llm = fake_llm({"classify": {"category": "global"},
                    "filters": {"filters": [{"filter_type": "section", "filter_value": "2"},
                                            {"filter_type": "image"}], "operation": "COUNT"}})
    ctx = make_context(llm=llm, settings=load_settings(overrides={"retrieval.classifier": "llm"}, env={}))
    p = plan(ctx, "How many figures are in the plotting chapter?")
    assert llm.stages == ["classify", "filters"]
    assert p.planner["classifier"] == "llm" and p.shape() == ["Filter_Range", "Filter_Modal", "Map", "Reduce"]
    assert run_plan(ctx, p).structural["count"] == 2


def test_a_count_of_the_documents_parts_is_planned_by_rules_whatever_the_model_says(fake_llm):
    """rules-first: "how many figures ..." counts the tree's figures; a small model's filters
    (a SUMMARIZE of everything) are not asked for. With retrieval.classifier = llm they are (above)."""
    llm = fake_llm({"filters": {"filters": [], "operation": "SUMMARIZE"}}, default={"category": "global"})
    ctx = make_context(llm=llm)
    p = plan(ctx, "How many figures does the handbook have?")
    assert "filters" not in llm.stages and p.planner["filters"] == "rules" and p.operation() == "COUNT"
    assert run_plan(ctx, p).structural["count"] == 3


def test_a_global_plan_whose_only_filter_names_no_section_becomes_single_hop(fake_llm):
    # MMLongBench mml-0067: the 1.5B model read "According to author's definition on conscious
    # incompetence, when can ..." as LIST over a section "Definition of Conscious Incompetence"
    # the paper does not have; the filtered plan answered "none"
    llm = fake_llm({"classify": {"category": "global"},
                    "filters": {"filters": [{"filter_type": "section", "filter_value": "A Made-Up Section"}],
                                "operation": "LIST"}})
    ctx = make_context(llm=llm, settings=load_settings(overrides={"retrieval.classifier": "llm"}, env={}))
    p = plan(ctx, "When does the default linewidth apply to a list of terminals?")  # "list": a global cue
    assert p.query_type == "single-hop" and p.shape() == SINGLE
    assert p.planner["unmatched_sections"] == ["A Made-Up Section"] and "single-hop" in p.planner["note"]
    # a missing section next to a real constraint only drops the missing one
    llm = fake_llm({"classify": {"category": "global"},
                    "filters": {"filters": [{"filter_type": "section", "filter_value": "A Made-Up Section"},
                                            {"filter_type": "image"}], "operation": "COUNT"}})
    ctx = make_context(llm=llm, settings=load_settings(overrides={"retrieval.classifier": "llm"}, env={}))
    p = plan(ctx, "How many figures are in the made-up section?")
    assert p.query_type == "global" and p.shape() == ["Filter_Modal", "Map", "Reduce"]


@pytest.mark.parametrize("question,operation", [("How many tables are in pages 3-12?", "COUNT"),
                                                 ("List all figures in section 2", "LIST")])
def test_count_and_list_plans_make_no_map_llm_call(fake_llm, question, operation):
    """COUNT/LIST answers are counted from the tree: Map must not ask the LLM for partial answers
    that Reduce throws away (it did: only Reduce set the operation, after Map had run)."""
    p = plan(make_context(), question)  # planned by rules: the LLM below sees only execution
    assert p.shape()[-2:] == ["Map", "Reduce"] and p.operation() == operation
    llm = fake_llm(default={"answer": "a partial answer"})
    ans = run_plan(make_context(llm=llm), p)
    assert llm.stages == []  # no "map" call (and Reduce counts from the tree)
    assert ans.structural is not None and ans.structural["operation"] == operation
    map_rec = next(r for r in ans.trace if r.op == "Map")
    assert map_rec.llm == {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    assert (map_rec.model_extra or {})["skipped_llm"].startswith(operation)
    # the control: a SUMMARIZE plan of the same shape does ask the LLM per group
    p2 = plan(make_context(), "Summarize section 2")
    assert p2.steps[-1].params["operation"] == "SUMMARIZE"
    llm2 = fake_llm(default={"answer": "a partial answer"})
    run_plan(make_context(llm=llm2), p2)
    assert "map" in llm2.stages
    assert Plan(question="q", query_type="single-hop", steps=[]).operation() == ""
    assert plan(make_context(), "What is the default linewidth?").operation() == "ANSWER"


def test_llm_classification_failure_falls_back_to_rules(fake_llm):
    from bookindex.core.errors import LLMOutputError
    llm = fake_llm({"classify": LLMOutputError("bad json"), "decompose": LLMOutputError("bad json")})
    s = load_settings(overrides={"retrieval.classifier": "llm"}, env={})
    p = plan(make_context(llm=llm, settings=s), "What is the difference between the png terminal and the pdf terminal?")
    assert p.query_type == "multi-hop" and "fallback" in p.planner and p.planner["decomposer"] == "rules"


def test_prompts_carry_the_question():
    assert "What is X?" in prompts.CLASSIFY.format(query="What is X?")
    assert "sub_questions" in prompts.DECOMPOSE.format(query="q")
    assert '"filters"' in prompts.FILTERS.format(query="q")


def test_a_decomposed_question_answers_with_its_trace_typed():
    """Decompose records its sub-questions as text, ForEach as nested traces: both validate."""
    ctx = make_context()
    p = plan(ctx, "What is the difference between the png terminal and the pdf terminal?")
    assert p.query_type == "multi-hop"
    ans = run_plan(ctx, p)
    dec = next(r for r in ans.trace if r.op == "Decompose")
    assert dec.sub_questions and all(isinstance(q, str) for q in dec.sub_questions)
    loop = next(r for r in ans.trace if r.op == "ForEach")
    assert loop.sub_questions and all(q.trace for q in loop.sub_questions if not isinstance(q, str))
    assert ans.evidence


# -- questions joined in one (issue 63) -------------------------------------------------------

@pytest.mark.parametrize("q,parts", [
    # "its": the port's or the daemon's? an ambiguous pronoun stays
    ("Which port does the daemon listen on, and where is its log written?",
     ["Which port does the daemon listen on?", "where is its log written?"]),
    # a pronoun for the one thing of its number the first question names is that thing
    ("Who maintains the archive and how often is it rebuilt?",
     ["Who maintains the archive?", "how often is the archive rebuilt?"]),
    ("Is the cache shared between users, or does each user keep a copy?",
     ["Is the cache shared between users?", "does each user keep a copy?"]),
    ("What does the first pass compute; which files does the second pass check?",
     ["What does the first pass compute?", "which files does the second pass check?"]),
    # a sentence before the question is context each part keeps
    ("The tool has two modes. Which mode is the default and how is the other one chosen?",
     ["The tool has two modes. Which mode is the default?", "The tool has two modes. how is the other one chosen?"]),
])
def test_two_questions_joined_in_one_are_multi_hop_split_where_the_parse_joins_them(q, parts):
    qtype, why = classify_rules(q)
    assert qtype == "multi-hop" and "joined" in why
    p = plan(make_context(), q)
    assert p.query_type == "multi-hop"
    assert p.steps[0].params["sub_questions"] == parts and p.steps[0].params["synthesis"] == q
    assert p.steps[-1].params["each_part"] is True  # Reduce must answer each of them
    assert p.steps[-2].params["read_ranking"] is True  # and each partial reads the merged ranking


@pytest.mark.parametrize("one,two", [
    # one subject with two verbs, and two clauses each asking
    ("What does the installer download and verify?",
     "What does the installer download, and how does it verify the download?"),
    # the second verb has no opener of its own, and has one
    ("Who wrote the guide and maintained it until 2010?", "Who wrote the guide and who maintained it until 2010?"),
    ("What is the width of thin and thick lines?", "What is the width of thin lines and what is the width of thick lines?"),
    # a statement before the one question, and a question before another
    ("My cache is full; how do I empty it?", "Is my cache full; how do I empty it?"),
    # a relative clause coordinated inside a noun phrase, and two clauses
    ("What is the day when the store opens and when it closes?", "On which day does the store open, and when does it close?"),
])
def test_only_two_clauses_that_each_ask_are_split(one, two):
    assert classify_rules(one)[0] == "single-hop"
    assert classify_rules(two)[0] == "multi-hop"


def test_rules_first_plans_joined_questions_without_asking_the_model(fake_llm):
    llm = fake_llm(default={"category": "simple"})
    q = "Which port does the daemon listen on, and where is its log written?"
    p = plan(make_context(llm=llm), q)
    assert p.query_type == "multi-hop" and "classify" not in llm.stages and "decompose" not in llm.stages
    assert p.planner["decomposer"].startswith("rules")


def test_a_model_that_calls_joined_questions_simple_is_overruled(fake_llm):
    llm = fake_llm({"classify": {"category": "simple"}})
    s = load_settings(overrides={"retrieval.classifier": "llm"}, env={})
    p = plan(make_context(llm=llm, settings=s), "What is the default linewidth, and how are colors given?")
    assert llm.stages == ["classify"]
    assert p.query_type == "multi-hop" and "single-hop" in p.planner["override"]
    assert p.steps[0].params["sub_questions"] == ["What is the default linewidth?", "how are colors given?"]
