"""The LLM navigator in a library hierarchy: search_document, get_node and get_pages
beside view and get_document, one registry for the JSON action protocol and native tool calls,
every step traced with its arguments and tokens, bad arguments answered with a tool error, answers
citing only blocks read; reachable from Engine.skills_ask, Engine.ask(skills=, navigator="llm")
and the CLI. Scripted test-double LLMs, the small handbook library of test_library_hierarchy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_library_hierarchy as th
from fakes import FakeEmbedder, FakeLLM, LLMCall, ScriptedProvider
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.core.config import LLMSettings
from bookindex.core.errors import LLMUnavailable
from bookindex.engine import AskRequest, Engine
from bookindex.providers.llm import LLMClient, get_llm
from bookindex.services.providers import ProviderSet
from bookindex.skills.navigator.agent import STAGE, NavAction, navigate
from bookindex.skills.navigator.answer import SkillsAskRequest
from bookindex.skills.navigator.tool_registry import REGISTRY

EMB = FakeEmbedder(dim=64, word=r"[a-z]+")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(library, hierarchy, scratch): six handbooks indexed without a graph, hierarchy built once."""
    tmp = tmp_path_factory.mktemp("libagent")
    (tmp / "src").mkdir()
    lib = tmp / "lib"
    eng = th.make_engine(lib, tmp, EMB)
    for key in th.TOPICS:
        (tmp / "src" / f"{key}.md").write_text(th.handbook(key), encoding="utf-8")
        eng.index(tmp / "src" / f"{key}.md", graph=False)
    th.build(eng, lib, tmp / "hier")
    return lib, tmp / "hier", tmp


def engine(built: tuple[Path, Path, Path], llm: Any) -> Engine:
    lib, _, tmp = built
    return Engine(lib, th.settings(tmp), embedder=EMB, llm=llm)


def ids(eng: Engine) -> dict[str, str]:
    return {d.name: d.doc_id for d in eng.library.documents}


def kepler_node(eng: Engine) -> str:
    tree = eng.tree(ids(eng)["orbit.md"])
    return next(n.id for n in tree.nodes.values() if n.type != "document" and "kepler" in n.content.lower()
                and not n.children)


# -- the JSON action protocol ------------------------------------------------------------------

def test_json_protocol_calls_each_tool_traces_it_and_refuses_bad_arguments(built: tuple[Path, Path, Path]) -> None:
    probe = engine(built, FakeLLM(available=False))
    orbit, node = ids(probe)["orbit.md"], kepler_node(probe)
    script = [
        {"action": "view", "path": ""},
        {"action": "search_document", "doc_id": orbit, "question": "kepler laws"},
        {"action": "get_node", "node_id": node},
        {"action": "get_pages", "doc_id": "orbit.md", "pages": "1"},                # a file name is accepted
        {"action": "get_pages", "doc_id": orbit, "pages": "9-3"},                   # backwards range
        {"action": "get_node", "node_id": "feedfacefeedface-00001"},                # no such document
        {"action": "search_document", "doc_id": "nowhere.pdf", "question": "x"},    # no such document
        {"action": "answer", "answer": f"Kepler's laws [{node}].", "cited": [node, "cafe-00009"]},
    ]
    llm = FakeLLM({STAGE: script})
    eng = engine(built, llm)
    ans = eng.skills.ask(SkillsAskRequest(folder=str(built[1]), question="What are Kepler's laws?",
                                          navigator="llm", max_rounds=10, protocol="json"))
    assert ans.stopped == "answered"
    assert [s.tool for s in ans.steps] == ["view", "search_document", "get_node", "get_pages", "get_pages",
                                           "get_node", "search_document", "answer"]
    ok = ans.steps[1:4]
    assert all(not s.error and s.tokens > 0 for s in ok)
    assert ans.steps[1].args == {"doc_id": orbit, "question": "kepler laws"} and ans.steps[1].target == orbit
    assert ans.steps[2].target == node and ans.steps[3].target == f"{orbit}:1"
    bad = ans.steps[4:7]
    assert "9-3" in bad[0].error and "pages" in bad[0].error
    assert "feedfacefeedface-00001" in bad[1].error and "nowhere.pdf" in bad[2].error
    nav = [c for c in llm.calls if c.stage == STAGE]   # search_document's own plan has stages of its own
    assert "Error: get_pages" in nav[5].prompt  # the refusal went back to the model
    # the answer cites the block it read (and its document); the made-up id is dropped with a note
    assert ans.cited == [orbit] and [c.node_id for c in ans.cited_nodes] == [node]
    assert ans.cited_nodes[0].page == 1 and any("cafe-00009" in n for n in ans.notes)
    assert ans.usage.document_tokens == sum(s.tokens for s in ok)
    system = llm.calls[0].messages[0]["content"]
    for name in REGISTRY:
        assert f'"action": "{name}"' in system  # the protocol text comes from the registry
    assert "search_document(doc_id, question)" in system
    path = "\n".join(ans.path())
    assert "question='kepler laws'" in path


def test_json_protocol_missing_argument_is_repaired_by_the_client(built: tuple[Path, Path, Path]) -> None:
    orbit = ids(engine(built, FakeLLM(available=False)))["orbit.md"]
    llm = FakeLLM({STAGE: [{"action": "search_document", "doc_id": orbit},          # no question: invalid
                           {"action": "search_document", "doc_id": orbit, "question": "transfer orbits"},
                           {"action": "answer", "answer": "Hohmann transfers.", "cited": [orbit]}]})
    ans = navigate_in(built, llm)
    assert llm.calls[1].attempt == 1 and 'needs "question"' in llm.calls[1].prompt
    assert ans.cited == [orbit] and ans.steps[0].tool == "search_document" and not ans.steps[0].error


def navigate_in(built: tuple[Path, Path, Path], llm: Any, **kw: Any) -> Any:
    eng = engine(built, llm)
    opened = eng.skills.open(built[1])
    return navigate(opened, llm, "transfer orbits?", library=eng.skills.library_tools(built[1]), **kw)


def test_nav_action_validates_each_tools_arguments() -> None:
    assert NavAction.model_validate({"action": "get_pages", "doc_id": "d", "pages": "2"}).arguments() == \
        {"doc_id": "d", "pages": "2"}
    for bad in ({"action": "get_pages", "doc_id": "d"}, {"action": "get_node"}, {"action": "get_node", "node_id": " "},
                {"action": "teleport"}):
        with pytest.raises(ValueError):
            NavAction.model_validate(bad)


def test_without_its_library_the_document_tools_are_not_offered(built: tuple[Path, Path, Path]) -> None:
    lib, hier, tmp = built
    orbit = ids(engine(built, FakeLLM(available=False)))["orbit.md"]
    llm = FakeLLM({STAGE: [{"action": "search_document", "doc_id": orbit, "question": "kepler"},
                           {"action": "get_document", "doc_id": orbit},
                           {"action": "answer", "answer": "Kepler.", "cited": [orbit]}]})
    eng = Engine(None, th.settings(tmp), embedder=EMB, llm=llm)
    ans = eng.skills.ask(SkillsAskRequest(folder=str(hier), question="kepler?", protocol="json"))
    assert "not available here" in ans.steps[0].error and ans.cited == [orbit]
    assert any("without its library" in n for n in ans.notes)
    assert '"action": "search_document"' not in llm.calls[0].messages[0]["content"]


# -- native tool calls -------------------------------------------------------------------------

def test_native_tool_calls_reach_each_tool_and_refuse_bad_arguments(built: tuple[Path, Path, Path]) -> None:
    probe = engine(built, FakeLLM(available=False))
    rocket = ids(probe)["rocket.md"]
    node = next(n.id for n in probe.tree(rocket).nodes.values() if "nozzle" in n.content.lower() and not n.children)
    provider = ScriptedProvider(tool_turns=[
        ([("search_document", json.dumps({"doc_id": rocket, "question": "nozzle"})),
          ("get_node", json.dumps({"node_id": node}))], ""),
        ([("get_pages", json.dumps({"doc_id": rocket, "pages": "1-1"})),
          ("get_pages", json.dumps({"doc_id": rocket, "pages": "x"})),              # malformed range
          ("search_document", json.dumps({"doc_id": rocket})),                      # missing question
          ("get_node", "{not json"),                                                 # arguments not JSON
          ("launch", "{}")], ""),                                                    # no such tool
        ([], f"The nozzle expands the gas. Sources: {node}"),
    ])
    client = LLMClient(provider, LLMSettings())
    ans = navigate_in(built, client, protocol="tools")
    assert ans.stopped == "answered"
    _, tools = provider.tool_requests[0]
    assert [t["function"]["name"] for t in tools] == list(REGISTRY)
    assert tools[2]["function"]["parameters"]["required"] == ["doc_id", "question"]
    steps = [(s.tool, bool(s.error)) for s in ans.steps]
    assert steps == [("search_document", False), ("get_node", False), ("get_pages", False), ("get_pages", True),
                     ("search_document", True), ("get_node", True), ("unknown", True), ("answer", False)]
    errors = [s.error for s in ans.steps if s.error]
    assert "'x'" in errors[0] and "missing question" in errors[1] and "not JSON" in errors[2] and "launch" in errors[3]
    msgs, _ = provider.tool_requests[2]
    tool_replies = [m["content"] for m in msgs if m["role"] == "tool"]
    assert len(tool_replies) == 7 and sum(r.startswith("Error:") for r in tool_replies) == 4
    assert ans.cited == [rocket] and [c.node_id for c in ans.cited_nodes] == [node]
    assert ans.usage.llm_calls == 3 and ans.steps[2].args == {"doc_id": rocket, "pages": "1-1"}


# -- Engine.ask and the CLI ----------------------------------------------------------------------

def test_ask_routes_through_the_llm_navigator(built: tuple[Path, Path, Path]) -> None:
    lib, hier, _ = built
    probe = engine(built, FakeLLM(available=False))
    tax = ids(probe)["tax.md"]
    script = [{"action": "search_document", "doc_id": tax, "question": "filing dates"},
              {"action": "answer", "answer": "See the filing dates section.", "cited": [tax]}]

    def reply(call: LLMCall) -> Any:
        if call.stage == STAGE:
            return script.pop(0)
        return LLMUnavailable("scripted: only the navigator has a model")

    eng = engine(built, FakeLLM(reply))
    ans = eng.ask(AskRequest(question="When are income tax filing dates?", skills=str(hier), navigator="llm",
                             method="bm25"))
    route = ans.trace[0]
    assert route.op == "Route" and route.kind == "hierarchy-llm" and route.chosen == tax
    assert ans.doc["doc_id"] == tax
    assert [s["tool"] for s in route.navigation] == ["search_document", "answer"]
    assert route.navigation[0]["args"]["question"] == "filing dates"
    assert route.agent_answer.startswith("See the filing") and route.llm["calls"] == 2


def test_cli_skills_ask_finds_the_library_it_was_built_from(built: tuple[Path, Path, Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    lib, hier, tmp = built
    vat = ids(engine(built, FakeLLM(available=False)))["vat.md"]
    llm = FakeLLM({STAGE: [{"action": "get_pages", "doc_id": vat, "pages": "1"},
                           {"action": "answer", "answer": "VAT rates are on page 1.", "cited": [vat]}]})
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: EMB))
    monkeypatch.setattr(ProviderSet, "llm", property(lambda self: llm))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp / "cache"))
    r = CliRunner().invoke(app, ["skills", "ask", str(hier), "What are the VAT rates?", "--protocol", "json",
                                 "--explain"])
    assert r.exit_code == 0, r.output
    assert "VAT rates are on page 1." in r.output and f"get_pages {vat}:1 pages='1'" in r.output
    r = CliRunner().invoke(app, ["ask", str(lib), "vat", "--navigator", "llm"])
    assert r.exit_code != 0 and "--skills" in str(r.exception)


# -- a real model ------------------------------------------------------------------------------

@pytest.mark.realmodel
@pytest.mark.slow
def test_library_agent_with_a_real_model_keeps_the_protocol(built: tuple[Path, Path, Path], llama_settings: Any) -> None:
    """Plumbing only (what a 0.5B model chooses is not asserted): every round is a valid action
    or a reported failure, each tool call is traced with its arguments, and whatever is cited
    was read."""

    client = get_llm(llama_settings)
    ans = navigate_in(built, client, max_rounds=4, protocol="json")
    assert ans.stopped in ("answered", "max_rounds", "invalid_action")
    assert ans.usage.llm_calls >= 1 and ans.usage.prompt_tokens > 0
    calls = [s for s in ans.steps if s.tool != "answer"]
    assert len(calls) <= 4
    assert all(s.args for s in calls if s.tool in ("search_document", "get_node", "get_pages"))
    read_docs = {s.target.split(":")[0] for s in calls if not s.error and s.tool != "view"}
    read_docs |= {s.target.split("-")[0] for s in calls if not s.error and s.tool == "get_node"}
    assert set(ans.cited) <= read_docs
    assert all(c.doc_id in ans.cited for c in ans.cited_nodes)
