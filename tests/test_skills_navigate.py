"""The Corpus2Skill navigators over a hand-built skill folder (tests/skills_helpers.py): the two
tools, the beam search, the flat baselines, the LLM agent (JSON actions with FakeLLM, native
tool calls through the real client), the Engine and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import FakeEmbedder, FakeLLM, ScriptedProvider
from skills_helpers import build_skill_folder
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.core.config import LLMSettings, Settings
from bookindex.core.errors import InputError, LLMUnavailable
from bookindex.engine import Engine
from bookindex.providers.llm import LLMClient
from bookindex.services.providers import ProviderSet
from bookindex.skills.navigator.agent import RESERVE_TOKENS, STAGE, NavAction, navigate, next_step, shortcuts
from bookindex.skills.navigator.answer import SkillsAskRequest
from bookindex.skills.navigator.beam import auto_beam, beam_search, cluster_score, fused_scores, pool_order
from bookindex.skills.navigator.context_fit import CHARS_PER_TOKEN, fit
from bookindex.skills.navigator.flat import flat_search
from bookindex.skills.navigator.guide import Guide, guide_for
from bookindex.skills.navigator.opened import OpenedSkills
from bookindex.skills.navigator.tool_result import ToolError

EMB = FakeEmbedder(dim=64, word=r"\w+")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return build_skill_folder(tmp_path / "skills", EMB)


@pytest.fixture
def opened(folder: Path) -> OpenedSkills:
    return OpenedSkills(folder)


# -- tools ------------------------------------------------------------------------------------

def test_view_lists_folders_and_reads_navigation_files(opened: OpenedSkills) -> None:
    root = opened.tools.view("").text
    assert "skill-01-cooking/" in root and "skill-02-space/" in root
    assert "skills.json" not in root and "documents.json" not in root
    listing = opened.tools.view("skill-01-cooking").text
    assert "SKILL.md" in listing and "group-00-baking/" in listing
    text = opened.tools.view("./skill-01-cooking/group-00-baking/INDEX.md").text
    assert "`d1`: Sourdough bread" in text


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "skill-01-cooking/../../etc", "documents.json",
                                 "skills.json", "nowhere/INDEX.md"])
def test_view_refuses_traversal_data_files_and_missing_paths(opened: OpenedSkills, bad: str) -> None:
    with pytest.raises(ToolError):
        opened.tools.view(bad)


def test_view_refuses_a_link_out_of_the_root(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    (folder / "link.md").symlink_to(outside)
    with pytest.raises(ToolError, match="outside"):
        OpenedSkills(folder).tools.view("link.md")


def test_get_document_reads_the_store_and_names_an_unknown_id(opened: OpenedSkills) -> None:
    assert "tofu" in opened.tools.get_document("d4").text
    with pytest.raises(ToolError, match="'nope'"):
        opened.tools.get_document("nope")


# -- beam search and flat methods -------------------------------------------------------------

def test_beam_descends_to_the_right_leaf_and_records_every_file(opened: OpenedSkills) -> None:
    ans = beam_search(opened, EMB, "which rocket engine lands its booster", k=2, beam=1)
    assert [d.doc_id for d in ans.documents][0] == "d6"
    assert {d.path for d in ans.documents} == {"skill-02-space/group-00-rockets"}
    viewed = [s.target for s in ans.steps if s.tool == "view"]
    assert viewed == ["", "skill-02-space/SKILL.md", "skill-02-space/group-00-rockets/INDEX.md"]
    assert ans.usage.documents_fetched == 2 and ans.usage.navigation_tokens > 0 and ans.usage.document_tokens > 0


def test_wider_beam_reaches_more_leaves(opened: OpenedSkills) -> None:
    narrow = beam_search(opened, EMB, "red planet storm", k=8, beam=1)
    wide = beam_search(opened, EMB, "red planet storm", k=8, beam=4)
    assert len(narrow.documents) == 2 and len(wide.documents) == 8
    assert wide.documents[0].doc_id in ("d7", "d8")
    assert auto_beam(opened, 10) >= auto_beam(opened, 2) >= 1


@pytest.mark.parametrize("route", ["summary", "centroid", "both"])
def test_beam_routes(opened: OpenedSkills, route: str) -> None:
    ans = beam_search(opened, EMB, "simmer miso soup with tofu", k=1, beam=1, route=route)  # type: ignore[arg-type]
    assert ans.documents[0].doc_id == "d4"


def test_the_beam_ranks_what_it_reached_by_embedding_and_bm25(opened: OpenedSkills) -> None:
    """Dense order d3, d4, d1; the question's rare words are d4's alone: fused, d4 comes first."""
    ids, sims = ["d3", "d4", "d1"], np.array([0.9, 0.85, 0.1], dtype=np.float32)
    question = "tofu seaweed dashi"
    assert [ids[i] for i in pool_order(ids, sims, opened, question, "dense")] == ["d3", "d4", "d1"]
    assert [ids[i] for i in pool_order(ids, sims, opened, question, "hybrid")] == ["d4", "d3", "d1"]
    ans = beam_search(opened, EMB, "miso soup with tofu seaweed dashi", k=2, beam=1)
    assert ans.documents[0].doc_id == "d4" and "ranked hybrid" in ans.notes[0]


def test_the_hybrid_members_route_fuses_embedding_and_bm25_ranks(opened: OpenedSkills) -> None:
    qvec = opened.query_vector(EMB, "seaweed dashi")
    fused = fused_scores(opened, qvec, "seaweed dashi")
    assert set(fused) == set(opened.vectors.doc_ids)
    best = max(fused, key=lambda d: fused[d])
    assert best == "d4" and fused[best] == pytest.approx(2 / 61)  # first in both orders
    ans = beam_search(opened, EMB, "seaweed dashi", k=2, beam=1)
    assert ans.documents[0].doc_id == "d4" and ans.documents[0].path.endswith("group-01-soups")


def test_beam_refuses_a_tree_without_clusters(tmp_path: Path, opened: OpenedSkills) -> None:
    opened.tree.roots = []
    with pytest.raises(InputError, match="no clusters"):
        beam_search(opened, EMB, "x")


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid", "raptor"])
def test_flat_methods_rank_documents(opened: OpenedSkills, method: str) -> None:
    ans = flat_search(opened, EMB, "bake sourdough bread with a starter", method, k=3)
    assert ans.documents[0].doc_id == "d1" and len(ans.documents) == 3
    assert ans.usage.documents_fetched == 3


def test_raptor_expands_a_summary_hit_into_its_members(opened: OpenedSkills) -> None:
    # the query is a leaf summary's words: that cluster outranks every document
    ans = flat_search(opened, EMB, "simmer soup pot tomato miso", "raptor", k=2)
    assert {d.doc_id for d in ans.documents} == {"d3", "d4"}


def test_an_embedder_other_than_the_builds_is_refused(opened: OpenedSkills) -> None:
    with pytest.raises(InputError, match="built with embedder"):
        flat_search(opened, FakeEmbedder(dim=64, name="other"), "x", "dense")


# -- the LLM navigator ------------------------------------------------------------------------

WALK = [
    {"action": "view", "path": "skill-01-cooking/SKILL.md"},
    {"action": "view", "path": "skill-01-cooking/group-01-soups/INDEX.md"},
    {"action": "get_document", "doc_id": "d4"},
    {"action": "answer", "answer": "Miso soup is simmered with tofu, seaweed and dashi.", "cited": ["d4", "d3"]},
]


def test_agent_walks_view_view_get_document_answer(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: list(WALK)})
    ans = navigate(opened, llm, "What goes in miso soup?")
    assert ans.stopped == "answered" and ans.answer.startswith("Miso soup")
    assert ans.cited == ["d4"]  # d3 was never read: dropped, with a note
    assert any("dropped citation d3" in n for n in ans.notes)
    assert [(s.tool, s.target) for s in ans.steps] == [
        ("view", "skill-01-cooking/SKILL.md"), ("view", "skill-01-cooking/group-01-soups/INDEX.md"),
        ("get_document", "d4"), ("answer", "")]
    assert ans.usage.llm_calls == 4 and ans.usage.documents_fetched == 1
    # read first; then what it only saw listed in the leaf it opened
    assert [(d.doc_id, d.via) for d in ans.documents] == [("d4", "read"), ("d3", "listed")]
    assert ans.usage.documents_listed == 1
    first = llm.calls[0]
    assert "skill-01-cooking/" in first.prompt and "skill-02-space/" in first.prompt  # progressive disclosure
    assert "group-01-soups" not in first.prompt
    assert first.schema is NavAction


def test_agent_stops_at_max_rounds(opened: OpenedSkills) -> None:
    llm = FakeLLM(default={"action": "view", "path": ""})
    ans = navigate(opened, llm, "anything", max_rounds=3)
    assert ans.stopped == "max_rounds" and ans.answer == "" and len(llm.calls) == 3
    assert "last turn" in llm.calls[-1].prompt


def test_agent_out_of_rounds_returns_the_documents_it_saw_listed(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: [{"action": "view", "path": "skill-02-space/SKILL.md"},
                           {"action": "view", "path": "skill-02-space/group-01-planets/INDEX.md"},
                           {"action": "view", "path": "skill-02-space/group-00-rockets/INDEX.md"}]})
    ans = navigate(opened, llm, "the falcon rocket booster lands after launch", max_rounds=3, embedder=EMB, guided=False)
    assert ans.stopped == "max_rounds" and ans.answer == "" and ans.cited == []
    assert {d.via for d in ans.documents} == {"listed"} and ans.usage.documents_fetched == 0
    # every document of the two leaves it opened, the closest to the question first
    assert ans.documents[0].doc_id == "d6" and {d.doc_id for d in ans.documents} == {"d5", "d6", "d7", "d8"}
    unranked = navigate(opened, FakeLLM({STAGE: [{"action": "view", "path": "skill-02-space/group-01-planets/INDEX.md"}]}),
                        "x", max_rounds=1)
    assert [d.doc_id for d in unranked.documents] == ["d7", "d8"]  # no embedder: listing order


def test_the_guided_agent_ranks_what_it_cited_with_the_beams_documents(opened: OpenedSkills) -> None:
    """It cites d3 (tomato soup) for a question about rockets: d3 joins the width-1 beam's
    documents (the rockets leaf) and is ranked with them by the beam's hybrid order, so it comes
    after them; then what it only saw listed. Unguided, no beam: what it cited comes first."""
    walk = [{"action": "view", "path": "skill-01-cooking/group-01-soups/INDEX.md"},
            {"action": "get_document", "doc_id": "d3"},
            {"action": "answer", "answer": "Soup [d3].", "cited": ["d3"]}]
    question = "the falcon rocket booster lands after launch"
    ans = navigate(opened, FakeLLM({STAGE: list(walk)}), question, embedder=EMB)
    beam = [d.doc_id for d in beam_search(opened, EMB, question, k=10, beam=1).documents]
    assert beam[0] == "d6" and "d3" not in beam
    order = [beam[i] if i < len(beam) else "d3"
             for i in pool_order(beam + ["d3"], opened.doc_scores(opened.query_vector(EMB, question), beam + ["d3"]),
                                 opened, question, "hybrid")]
    assert order[-1] == "d3"
    assert [(d.doc_id, d.via) for d in ans.documents] == (
        [(d, "read" if d == "d3" else "beam") for d in order] + [("d4", "listed")])
    assert any("width-1 beam" in n for n in ans.notes)
    # a cited document the beam ranked too keeps the beam's place, marked as read
    onto = navigate(opened, FakeLLM({STAGE: [{"action": "get_document", "doc_id": beam[-1]},
                                             {"action": "answer", "answer": "x", "cited": [beam[-1]]}]}),
                    question, embedder=EMB)
    assert [(d.doc_id, d.via) for d in onto.documents][:len(beam)] == (
        [(d, "beam") for d in beam[:-1]] + [(beam[-1], "read")])
    plain = navigate(opened, FakeLLM({STAGE: list(walk)}), question, embedder=EMB, guided=False)
    assert [(d.doc_id, d.via) for d in plain.documents] == [("d3", "read"), ("d4", "listed")]


def test_agent_keeps_the_conversation_inside_the_context_window(opened: OpenedSkills) -> None:
    """Old tool results are cut, oldest first, so the prompt fits the model's window; the
    newest result and the model's own actions stay whole."""
    steps = [{"action": "get_document", "doc_id": d} for d in ("d1", "d2", "d3", "d4", "d5")]
    for d in opened.documents.values():
        d.text = d.text + " filler" * 700   # about 5 KB a document
    roomy = FakeLLM({STAGE: list(steps)})
    navigate(opened, roomy, "x", max_rounds=5)
    assert all("cut to save context" not in c.prompt for c in roomy.calls)
    tight = FakeLLM({STAGE: list(steps)}, context_size=6500)
    ans = navigate(opened, tight, "x", max_rounds=5)
    assert ans.usage.trimmed >= 1 and any("cut to fit" in n for n in ans.notes)
    budget = (6500 - RESERVE_TOKENS) * CHARS_PER_TOKEN
    for call in tight.calls:
        assert sum(len(str(m.get("content") or "")) for m in call.messages) <= budget
    last = tight.calls[-1].messages
    assert "Result of get_document('d4')" in last[-1]["content"] and "filler" in last[-1]["content"]
    assert "cut to save context" in last[3]["content"]                        # d1's text went first
    assert [m["content"] for m in last if m["role"] == "assistant"][0].startswith('{"action":"get_document"')


def test_a_view_says_where_to_go_next_in_full_paths(opened: OpenedSkills) -> None:
    assert "skill-01-cooking/SKILL.md (4 documents)" in next_step(opened, "")
    down = next_step(opened, "skill-01-cooking/SKILL.md")
    assert "skill-01-cooking/group-00-baking/INDEX.md (2 documents)" in down and "group-01-soups/INDEX.md" in down
    assert next_step(opened, "skill-01-cooking") == down
    assert "get_document" in next_step(opened, "skill-01-cooking/group-01-soups/INDEX.md")
    assert next_step(opened, "not/a/cluster") == ""


def test_the_guide_offers_what_is_nearest_the_question_first(opened: OpenedSkills) -> None:
    """Guided, the opening turn, the "Next:" paths and a leaf's suggested documents come
    nearest the question first, with scores; the files themselves are unchanged."""
    guide = Guide.for_question(opened, EMB, "which planet has a great red storm and many moons")
    roots = next_step(opened, "", guide)
    assert roots.index("skill-02-space/SKILL.md") < roots.index("skill-01-cooking/SKILL.md") and "similarity" in roots
    assert next_step(opened, "").index("skill-01-cooking") < next_step(opened, "").index("skill-02-space")  # tree order
    down = next_step(opened, "skill-02-space/SKILL.md", guide)
    assert down.index("group-01-planets/INDEX.md") < down.index("group-00-rockets/INDEX.md")
    leaf = next_step(opened, "skill-02-space/group-01-planets/INDEX.md", guide)
    assert leaf.index("`d8` Jupiter planet") < leaf.index("`d7` Mars planet")
    assert "Nearest the question" not in next_step(opened, "skill-02-space/group-01-planets/INDEX.md")
    before = opened.tools.view("skill-02-space/SKILL.md").text
    llm = FakeLLM({STAGE: [{"action": "view", "path": "skill-02-space/SKILL.md"},
                           {"action": "get_document", "doc_id": "d8"},
                           {"action": "answer", "answer": "Jupiter.", "cited": ["d8"]}]})
    ans = navigate(opened, llm, "which planet has a great red storm and many moons", embedder=EMB)
    first = llm.calls[0].prompt
    assert "nearest the question" in first and first.index("skill-02-space/") < first.index("skill-01-cooking/")
    # the first turn says where to go too: the nearest leaf groups, which a view reaches at once
    assert "skill-02-space/group-01-planets/INDEX.md (2 documents, similarity" in first
    assert first.index("group-01-planets/INDEX.md") < first.index("Or view a skill's SKILL.md")
    assert "group-01-planets/INDEX.md (2 documents, similarity" in str(llm.calls[1].messages[-1]["content"])
    assert ans.cited == ["d8"] and opened.tools.view("skill-02-space/SKILL.md").text == before
    plain = FakeLLM({STAGE: [{"action": "answer", "answer": "x"}]})
    navigate(opened, plain, "which planet has a great red storm", embedder=EMB, guided=False, max_rounds=1)
    assert "nearest the question" not in plain.calls[0].prompt


def test_the_guided_opening_offers_the_nearest_leaves_to_view_at_once(opened: OpenedSkills) -> None:
    """Guided, the agent can view the nearest leaf straight from the opening turn: three
    requests (leaf, document, answer) where the walk from the top takes four."""
    question = "the falcon rocket booster lands after launch"
    guide = Guide.for_question(opened, EMB, question)
    nearest = guide.nearest_leaves()
    assert len(nearest) == 3 and nearest[0].path == "skill-02-space/group-00-rockets"
    assert all(guide.score(a) >= guide.score(b) for a, b in zip(nearest, nearest[1:]))
    offer = shortcuts(opened, guide)
    assert offer.index("skill-02-space/group-00-rockets/INDEX.md (2 documents, similarity") < offer.index(nearest[1].path)
    assert "SKILL.md" in offer   # browsing from a skill stays open
    llm = FakeLLM({STAGE: [{"action": "view", "path": "skill-02-space/group-00-rockets/INDEX.md"},
                           {"action": "get_document", "doc_id": "d6"},
                           {"action": "answer", "answer": "It lands on a barge [d6].", "cited": ["d6"]}]})
    ans = navigate(opened, llm, question, embedder=EMB)
    assert ans.stopped == "answered" and ans.cited == ["d6"] and ans.usage.llm_calls == 3
    assert ans.documents[0].doc_id == "d6" and ans.documents[0].via == "read"
    # with the skills as the leaves there is nothing to skip: the opening lists the skills' files
    for c in opened.tree.clusters.values():
        c.parent = None
    assert shortcuts(opened, guide) == ""


def test_the_guide_steps_aside_for_an_embedder_the_tree_was_not_built_with(opened: OpenedSkills) -> None:
    guide, why = guide_for(opened, FakeEmbedder(dim=64, name="other"), "x")
    assert guide is None and "built with embedder" in why
    assert guide_for(opened, None, "x") == (None, "")
    llm = FakeLLM({STAGE: [{"action": "answer", "answer": "x"}]})
    ans = navigate(opened, llm, "x", embedder=FakeEmbedder(dim=64, name="other"), max_rounds=1)
    assert any("navigated unguided" in n for n in ans.notes)


def test_a_repeated_view_is_not_shown_again(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: [{"action": "view", "path": "skill-01-cooking/SKILL.md"},
                           {"action": "view", "path": "skill-01-cooking/SKILL.md"},
                           {"action": "view", "path": "skill-01-cooking/group-00-baking/INDEX.md"}]})
    ans = navigate(opened, llm, "bread?", max_rounds=3)
    first, again = (str(llm.calls[i].messages[-1]["content"]) for i in (1, 2))
    assert "## Contents" in first and "Next: view the most relevant" in first
    assert "already viewed skill-01-cooking/SKILL.md (round 1)" in again and "## Contents" not in again
    assert "skill-01-cooking/group-00-baking/INDEX.md" in again     # the way on is repeated
    assert ans.steps[1].tokens < ans.steps[0].tokens


def test_agent_tool_errors_go_back_to_the_model(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: [{"action": "view", "path": "../../etc"}, {"action": "get_document", "doc_id": "zz"},
                           {"action": "get_document", "doc_id": "d7"},
                           {"action": "answer", "answer": "Mars is red.", "cited": ["d7"]}]})
    ans = navigate(opened, llm, "Why is Mars red?")
    assert [bool(s.error) for s in ans.steps[:3]] == [True, True, False]
    assert "Error:" in llm.calls[1].prompt and ans.cited == ["d7"]


def test_agent_repairs_a_malformed_action(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: ["view skill-02-space please", {"action": "get_document", "doc_id": "d8"},
                           {"action": "answer", "answer": "Jupiter has a great red storm (d8).", "cited": []}]})
    ans = navigate(opened, llm, "Which planet has a great red storm?")
    assert llm.calls[1].attempt == 1  # the repair round
    assert ans.stopped == "answered" and ans.cited == ["d8"]  # cited inline


def test_agent_reports_an_action_it_cannot_repair(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: ["no json here", '{"action": "fly"}']})
    ans = navigate(opened, llm, "x")
    assert ans.stopped == "invalid_action" and "invalid action" in ans.notes[0]


def test_agent_must_read_a_document_before_answering(opened: OpenedSkills) -> None:
    llm = FakeLLM({STAGE: [{"action": "answer", "answer": "From the summary: bread.", "cited": []},
                           {"action": "get_document", "doc_id": "d1"},
                           {"action": "answer", "answer": "Sourdough needs a starter.", "cited": ["d1"]}]})
    ans = navigate(opened, llm, "What does sourdough need?")
    assert ans.steps[0].error.startswith("refused") and "not read any document" in llm.calls[1].prompt
    assert ans.cited == ["d1"]


def test_native_tool_calls_through_the_client(opened: OpenedSkills) -> None:
    provider = ScriptedProvider(tool_turns=[([("view", {"path": "skill-02-space/group-00-rockets/INDEX.md"})], ""),
                             ([("get_document", {"doc_id": "d5"})], ""),
                             ([], "The Saturn V burned kerosene. Sources: d5")])
    client = LLMClient(provider, LLMSettings())
    ans = navigate(opened, client, "What did the Saturn V burn?")
    assert ans.stopped == "answered" and ans.cited == ["d5"]
    assert ans.usage.llm_calls == 3 and ans.usage.prompt_tokens == 300
    msgs, tools = provider.tool_requests[-1]
    assert {t["function"]["name"] for t in tools} == {"view", "get_document"}
    assert [m["role"] for m in msgs][-2:] == ["assistant", "tool"]
    assert client.ledger.snapshot()["stages"][STAGE]["calls"] == 3


def test_native_tool_calls_are_cached_by_the_client(opened: OpenedSkills, tmp_path: Path) -> None:
    from bookindex.providers.llm import DiskCache

    cache = DiskCache(tmp_path / "c.sqlite")
    turns = [([("get_document", {"doc_id": "d5"})], ""), ([], "Kerosene. Sources: d5")]
    navigate(opened, LLMClient(ScriptedProvider(tool_turns=turns), LLMSettings(), cache=cache), "fuel?")
    again = LLMClient(ScriptedProvider(tool_turns=[]), LLMSettings(), cache=cache)  # an empty script: all from cache
    ans = navigate(opened, again, "fuel?")
    assert ans.cited == ["d5"] and again.ledger.snapshot()["stages"][STAGE]["cache_hits"] == 2


def test_the_json_protocol_is_used_without_native_tools(opened: OpenedSkills) -> None:
    client = LLMClient(ScriptedProvider([json.dumps(WALK[2]), json.dumps(WALK[3])]), LLMSettings())
    assert not client.supports_tools
    ans = navigate(opened, client, "miso?")
    assert ans.cited == ["d4"]


# -- Engine and CLI ---------------------------------------------------------------------------

def test_engine_skills_ask_both_navigators(folder: Path, tmp_path: Path) -> None:
    engine = Engine(None, Settings(), llm=FakeLLM({STAGE: list(WALK)}), embedder=EMB)
    ans = engine.skills.ask(SkillsAskRequest(folder=str(folder), question="miso soup tofu", navigator="embedding", k=2))
    assert ans.documents[0].doc_id == "d4" and ans.stopped == "ranked"
    ans = engine.skills.ask(str(folder) and SkillsAskRequest(folder=str(folder), question="miso?"))
    assert ans.cited == ["d4"]
    with pytest.raises(InputError, match="not a skill tree"):
        engine.skills.ask(SkillsAskRequest(folder=str(tmp_path), question="x"))
    with pytest.raises(LLMUnavailable):
        Engine(None, Settings(), llm=FakeLLM(available=False), embedder=EMB).skills.ask(
            SkillsAskRequest(folder=str(folder), question="x"))


def test_cli_skills_ask(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: EMB))
    runner = CliRunner()
    res = runner.invoke(app, ["--set", "llm.provider=none", "skills", "ask", str(folder), "red planet storm",
                              "--navigator", "embedding", "--k", "2", "--explain"])
    assert res.exit_code == 0, res.output
    assert "d8" in res.output and "path:" in res.output and "INDEX.md" in res.output
    res = runner.invoke(app, ["--set", "llm.provider=none", "skills", "ask", str(folder), "rocket", "--navigator",
                              "embedding", "--json"])
    data = json.loads(res.output)
    assert data["navigator"] == "embedding" and data["steps"]
    res = runner.invoke(app, ["--set", "llm.provider=none", "skills", "ask", str(tmp_path), "x", "--navigator", "embedding"])
    assert isinstance(res.exception, InputError) and "not a skill tree" in str(res.exception)  # main() exits 2


@pytest.mark.realmodel
@pytest.mark.slow
def test_agent_with_a_real_model_keeps_the_protocol(opened: OpenedSkills, llama_settings: Any) -> None:
    """Plumbing only (what a 0.5B model chooses is not asserted): every round is a valid action
    or a reported failure, steps are recorded, citations are of documents read."""
    from bookindex.providers.llm import get_llm

    client = get_llm(llama_settings)
    ans = navigate(opened, client, "What goes in miso soup?", max_rounds=3, protocol="json")
    assert ans.stopped in ("answered", "max_rounds", "invalid_action")
    assert ans.usage.llm_calls >= 1 and ans.usage.prompt_tokens > 0
    assert set(ans.cited) <= {s.target for s in ans.steps if s.tool == "get_document" and not s.error}
    assert len([s for s in ans.steps if s.tool != "answer"]) <= 3


def test_lookahead_judges_a_parent_by_its_best_child(opened: OpenedSkills) -> None:

    q = EMB.encode(["tofu seaweed dashi"])[0]
    for c in opened.tree.clusters.values():
        with_look = cluster_score(opened, c, q, "summary", lookahead=True)
        without = cluster_score(opened, c, q, "summary", lookahead=False)
        assert with_look >= without and (c.children or with_look == without)
    soups = opened.tree.cluster("L1-C01")
    assert cluster_score(opened, opened.tree.cluster("L2-C00"), q, "summary") == \
        pytest.approx(max(cluster_score(opened, soups, q, "summary"),
                          cluster_score(opened, opened.tree.cluster("L2-C00"), q, "summary", lookahead=False)))


def test_view_finds_a_group_given_without_its_parents(opened: OpenedSkills) -> None:
    res = opened.tools.view("group-01-soups/INDEX.md")
    assert res.target == "skill-01-cooking/group-01-soups/INDEX.md" and "`d3`" in res.text
    assert opened.tools.view("group-00-rockets/").target == "skill-02-space/group-00-rockets"
    with pytest.raises(ToolError):
        opened.tools.view("group-00-baking/../../x")


def test_the_other_navigation_file_name_is_served(opened: OpenedSkills) -> None:
    """INDEX.md asked of a skill folder (it has SKILL.md), or SKILL.md of a group: the file it has."""
    assert opened.tools.view("skill-01-cooking/INDEX.md").target == "skill-01-cooking/SKILL.md"
    assert opened.tools.view("skill-01-cooking/group-00-baking/SKILL.md").target == "skill-01-cooking/group-00-baking/INDEX.md"
    with pytest.raises(ToolError):
        opened.tools.view("skill-09-none/INDEX.md")


def test_a_folder_view_carries_its_navigation_file(opened: OpenedSkills) -> None:
    text = opened.tools.view("skill-01-cooking/group-00-baking").text
    assert "INDEX.md" in text and "`d1`: Sourdough bread" in text
    with pytest.raises(ToolError, match="that is a folder"):
        opened.tools.get_document("skill-01-cooking/group-00-baking/")


# -- fitting the conversation into the window --------------------------------------------------

def _msgs(*results: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "S" * 100}, {"role": "user", "content": "Q"}]
    for i, r in enumerate(results):
        out += [{"role": "assistant", "content": f'{{"action": "view", "path": "p{i}"}}'},
                {"role": "user", "content": f"Result of view('p{i}'):\n{r}"}]
    return out


def test_fit_leaves_a_conversation_that_fits_alone() -> None:
    msgs = _msgs("a" * 50, "b" * 50)
    assert fit(msgs, 10_000) == 0 and msgs == _msgs("a" * 50, "b" * 50)


def test_fit_cuts_the_oldest_results_first_and_keeps_the_newest() -> None:
    msgs = _msgs("a" * 1000, "b" * 1000, "c" * 1000)
    assert fit(msgs, 2000) == 2
    assert msgs[3]["content"].startswith("Result of view('p0'): [shown earlier")
    assert msgs[5]["content"].startswith("Result of view('p1'): [shown earlier")
    assert msgs[7]["content"].endswith("c" * 1000) and msgs[0]["content"] == "S" * 100


def test_fit_cuts_the_newest_result_when_it_alone_is_too_long() -> None:
    msgs = _msgs("x" * 5000)
    assert fit(msgs, 1500) == 1
    assert msgs[3]["content"].endswith("[... cut to fit the context window]")
    assert sum(len(m["content"]) for m in msgs) <= 1500


def test_fit_trims_native_tool_messages_too() -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
                                  {"role": "assistant", "content": None, "tool_calls": [{"id": "c0"}]},
                                  {"role": "tool", "tool_call_id": "c0", "content": "y" * 3000},
                                  {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
                                  {"role": "tool", "tool_call_id": "c1", "content": "z" * 300}]
    assert fit(msgs, 1000) == 1
    assert msgs[3]["content"].startswith("an earlier tool result") and msgs[3]["tool_call_id"] == "c0"
    assert msgs[5]["content"] == "z" * 300
