"""One hierarchy from library to block: document skills and their file rules, rebuilds
that render only changed documents, the combined tree, navigation that reaches a block through
search_document, the routing decision in ask's trace, and bad inputs. Offline: FakeEmbedder,
FakeLLM, a small library of Markdown handbooks indexed without a graph."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder, FakeLLM, LLMCall
from typer.testing import CliRunner

from bookindex.cli.app import app, main
from bookindex.core.config import load_settings
from bookindex.core.errors import InputError
from bookindex.engine import AskRequest, Engine, SkillsBuildRequest
from bookindex.services.providers import ProviderSet
from bookindex.skills.compiler.docsummary import DOC_STAGE
from bookindex.skills.model import HIERARCHY_FILE, load_hierarchy, load_tree

NAME_RE = re.compile(r"^[a-z0-9-]{1,64}$")
TOPICS = {
    "bread": ("Baking bread", ["Starter", "Dough kneading", "Oven baking"], "sourdough flour starter dough oven crust"),
    "cake": ("Baking cakes", ["Batter", "Frosting", "Oven baking"], "cake batter sugar cocoa frosting oven"),
    "rocket": ("Rocket engines", ["Propellant", "Combustion chamber", "Nozzle"], "rocket engine kerosene thrust nozzle"),
    "orbit": ("Orbital mechanics", ["Kepler laws", "Transfer orbits", "Launch windows"], "orbit kepler transfer launch window"),
    "tax": ("Income tax guide", ["Deductions", "Filing dates", "Penalties"], "income tax deduction filing penalty refund"),
    "vat": ("Value added tax", ["Rates", "Invoices", "Returns"], "vat rate invoice return refund"),
}


def handbook(key: str, extra: str = "") -> str:
    title, sections, words = TOPICS[key]
    w = words.split()
    out = [f"# {title}", "", f"This handbook explains {words} for readers.", ""]
    for i, s in enumerate(sections):
        out += [f"## {s}", "", f"The {s.lower()} part covers {w[i % len(w)]} and {w[(i + 1) % len(w)]} in detail. {extra}", "",
                f"### {s} details", "", f"More on {s.lower()}: {' '.join(w)}.", ""]
    return "\n".join(out)


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dim=64, word=r"[a-z]+")


def settings(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_settings(env={}, overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")})


def make_engine(lib: Path, tmp_path: Path, embedder: FakeEmbedder, llm: FakeLLM | None = None) -> Engine:
    return Engine(lib, settings(tmp_path), embedder=embedder, llm=llm or FakeLLM(available=False))


@pytest.fixture
def library(tmp_path: Path, embedder: FakeEmbedder) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    lib = tmp_path / "lib"
    eng = make_engine(lib, tmp_path, embedder)
    for key in TOPICS:
        (src / f"{key}.md").write_text(handbook(key), encoding="utf-8")
        eng.index(src / f"{key}.md", graph=False)
    return lib


def build(eng: Engine, lib: Path, out: Path, **kw):  # type: ignore[no-untyped-def]
    return eng.skills.build(SkillsBuildRequest(sources=[str(lib)], output=str(out), documents=True,
                                               branching=2, top=2, min_size=1, **kw))


def frontmatter(text: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in text.split("---\n")[1].strip().splitlines())


def test_document_skills_follow_the_file_rules(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    eng = make_engine(library, tmp_path, embedder)
    out = tmp_path / "hier"
    report = build(eng, library, out)
    assert report.documents == 6 and len(report.documents_rendered) == 6 and not report.documents_reused
    hier = load_hierarchy(out)
    tree = load_tree(out)
    for doc in eng.library.documents:
        entry = hier.document(doc.doc_id)
        leaf = tree.cluster(tree.documents[doc.doc_id].cluster)
        assert entry.path.startswith(leaf.path + "/doc-")  # hung under its leaf cluster: one tree
        skill = (out / entry.path / "SKILL.md").read_text(encoding="utf-8")
        fm = frontmatter(skill)
        assert {"name", "description", "level", "num_documents", "doc_id", "pages"} <= set(fm)
        assert fm["doc_id"] == doc.doc_id and len(json.loads(fm["description"])) <= 1024
        tops = [doc.tree.nodes[c] for c in doc.tree.root.children if doc.tree.nodes[c].type == "section"]
        for s in tops:  # each top-level section: folder, node id, page range, title
            assert f"`{s.id}` (pp. 1)" in skill and s.title in skill
        for sec in doc.tree.sections():  # one INDEX.md per section, listing its blocks
            index = (out / entry.path / entry.sections[sec.id] / "INDEX.md").read_text(encoding="utf-8")
            assert frontmatter(index)["node_id"] == sec.id
            for c in sec.children:
                node = doc.tree.nodes[c]
                if node.type != "section":
                    assert f"`{node.id}` {node.type} p. 1" in index
        leaf_file = (out / leaf.path / ("SKILL.md" if leaf.parent is None else "INDEX.md")).read_text(encoding="utf-8")
        assert "### Document skills" in leaf_file and f"`{doc.doc_id}` → {entry.path.rsplit('/', 1)[-1]}/SKILL.md" in leaf_file
    for p in out.rglob("*"):
        if p.is_dir():
            assert NAME_RE.match(p.name), p
    assert max(p.stat().st_size for p in out.rglob("*.md")) < 8000
    # the same library twice: the same bytes
    again = tmp_path / "again"
    build(eng, library, again)
    files = lambda f: {str(p.relative_to(f)): p.read_bytes() for p in sorted(f.rglob("*")) if p.is_file()}  # noqa: E731
    assert files(out) == files(again)


def test_reindexing_one_document_rewrites_only_its_skill(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    eng = make_engine(library, tmp_path, embedder)
    out = tmp_path / "hier"
    build(eng, library, out)
    before = load_hierarchy(out)
    kept = {d: os.stat(out / e.path / "SKILL.md").st_ino for d, e in before.documents.items()}
    report = build(eng, library, out)  # nothing changed: nothing rendered
    assert report.documents_rendered == [] and len(report.documents_reused) == 6
    (tmp_path / "src" / "tax.md").write_text(handbook("tax", extra="Now with a new penalty table."), encoding="utf-8")
    new = eng.index(tmp_path / "src" / "tax.md", graph=False)
    assert new.status == "replaced"
    report = build(eng, library, out)
    assert report.documents_rendered == [new.doc_id] and len(report.documents_reused) == 5
    after = load_hierarchy(out)
    for d, e in after.documents.items():
        if d != new.doc_id:  # the same file (a hard link of the previous build's), not rewritten
            assert os.stat(out / e.path / "SKILL.md").st_ino == kept[d]
    skill = (out / after.document(new.doc_id).path / "SKILL.md").read_text(encoding="utf-8")
    assert frontmatter(skill)["doc_id"] == new.doc_id and len(after.documents) == 6
    assert not list(tmp_path.glob(".hier.*"))  # the temporary folders are gone


def test_llm_document_summaries_are_cached_and_counted(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    def reply(call: LLMCall) -> dict:
        if call.stage == DOC_STAGE:
            return {"summary": "LLM SUMMARY of the handbook.", "sections": ["LLM LINE one", "LLM LINE two"]}
        return {"topic": "Topic.", "questions": ["Which?"], "key_terms": ["a", "b"], "label": "topic words"}

    llm = FakeLLM(reply)
    eng = make_engine(library, tmp_path, embedder, llm=llm)
    out = tmp_path / "hier"
    report = build(eng, library, out)
    assert report.llm_usage[DOC_STAGE]["calls"] == 6
    skill = next(out.rglob("doc-*/SKILL.md")).read_text(encoding="utf-8")
    assert "LLM SUMMARY" in skill and "LLM LINE one" in skill
    report = build(eng, library, out)  # unchanged documents: no document call at all
    assert DOC_STAGE not in report.llm_usage and report.documents_rendered == []


def test_navigation_reaches_a_block_through_search_document(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    eng = make_engine(library, tmp_path, embedder)
    out = tmp_path / "hier"
    build(eng, library, out)
    ans = eng.navigate_library("kepler transfer orbit launch window", skills=str(out))
    orbit = next(d for d in eng.library.documents if d.name == "orbit.md")
    assert ans.documents[0].doc_id == orbit.doc_id and ans.decision["chosen"] == orbit.doc_id
    tools = [s.tool for s in ans.steps]
    assert tools[0] == "view" and "route" in tools
    assert tools[-4:] == ["view", "search_document", "view", "get_node"]
    assert ans.steps[-4].target.endswith("/SKILL.md") and ans.steps[-2].target.endswith("/INDEX.md")
    assert ans.evidence and all(e.doc_id == orbit.doc_id for e in ans.evidence)
    assert ans.steps[-1].target == ans.evidence[0].node_id
    view = eng.node(ans.evidence[0].node_id)  # get_node: text, page, bbox
    assert view.doc_id == orbit.doc_id and view.page_idx == 0
    pages = eng.pages(orbit.doc_id, "1")
    assert pages[0].page == 1 and "kepler" in pages[0].text
    for bad in ("x", "3-1", "0", "2"):
        with pytest.raises(InputError, match="pages"):
            eng.pages(orbit.doc_id, bad)


def test_a_routed_question_is_embedded_once(tmp_path: Path, library: Path):
    # the router and the chosen document's retrieval share the Engine's query vectors
    class Recording(FakeEmbedder):
        def __init__(self) -> None:
            super().__init__(dim=64, word=r"[a-z]+")
            self.texts: list[str] = []

        def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
            self.texts.extend(texts)
            return super().encode(texts, progress)

    emb = Recording()
    eng = make_engine(library, tmp_path, emb)
    question = "rocket engine kerosene thrust nozzle"
    eng.ask(AskRequest(question=question))
    assert emb.texts.count(question) == 1
    eng.ask(AskRequest(question=question))
    assert emb.texts.count(question) == 1


def test_ask_without_a_document_shows_the_routing_decision(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    eng = make_engine(library, tmp_path, embedder)
    ans = eng.ask(AskRequest(question="rocket engine kerosene thrust nozzle"))
    route = ans.trace[0]
    rocket = next(d for d in eng.library.documents if d.name == "rocket.md")
    assert route.op == "Route" and route.kind == "library" and route.chosen == rocket.doc_id
    assert ans.doc["doc_id"] == rocket.doc_id
    assert set(route.outputs[0]["signals"]) == {"nodes", "lexical", "passages", "vector", "name", "organisation", "year", "form"}
    assert route.decided_by.startswith("fused")   # a question about no reporting period
    out = tmp_path / "hier"
    build(eng, library, out)
    ans = eng.ask(AskRequest(question="rocket engine kerosene thrust nozzle", skills=str(out)))
    route = ans.trace[0]
    assert route.kind == "hierarchy" and route.chosen == rocket.doc_id
    assert [s["tool"] for s in route.navigation][-2:] == ["route", "view"]


def test_a_hierarchy_of_another_library_is_refused(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    eng = make_engine(library, tmp_path, embedder)
    out = tmp_path / "hier"
    build(eng, library, out)
    other = make_engine(tmp_path / "other", tmp_path, embedder)
    (tmp_path / "one.md").write_text(handbook("vat"), encoding="utf-8")
    other.index(tmp_path / "one.md", graph=False)
    (tmp_path / "two.md").write_text(handbook("cake"), encoding="utf-8")
    other.index(tmp_path / "two.md", graph=False)
    with pytest.raises(InputError, match="does not hold"):
        other.navigate_library("vat", skills=str(out))


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, embedder: FakeEmbedder) -> None:
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: embedder))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOKINDEX_LLM__PROVIDER", "none")


def test_cli_build_navigate_and_ask(tmp_path: Path, library: Path, cli_env: None):
    runner = CliRunner()
    out = tmp_path / "hier"
    r = runner.invoke(app, ["skills", "build", str(library), "--documents", "-o", str(out), "--branching", "2",
                            "--top", "2", "--min-size", "1", "-q"])
    assert r.exit_code == 0, r.output
    assert "document skills: 6 rendered, 0 unchanged" in r.output and (out / HIERARCHY_FILE).is_file()
    r = runner.invoke(app, ["skills", "navigate", str(out), "income tax deduction filing", "-i", str(library), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["documents"][0]["title"] == "tax.md" and data["steps"][-1]["tool"] == "get_node"
    r = runner.invoke(app, ["ask", str(library), "income tax deduction filing", "--skills", str(out), "--explain"])
    assert r.exit_code == 0, r.output
    assert "Route" in r.output and "chosen" in r.output


@pytest.mark.parametrize("args", [
    ["skills", "build", "{src}", "--documents", "-o", "{out}"],              # not a library
    ["skills", "navigate", "{src}", "question", "-i", "{lib}"],              # not a hierarchy
    ["ask", "{lib}", "income tax", "--skills", "{src}"],                     # not a hierarchy either
    ["skills", "navigate", "{src}", "  ", "-i", "{lib}"],                    # empty question
    ["skills", "remove", "{hier}", "some-id"],                                # a hierarchy is rebuilt, not edited
])
def test_cli_bad_input_exits_2(tmp_path: Path, library: Path, cli_env: None, args: list[str]):
    (tmp_path / "hier").mkdir()
    (tmp_path / "hier" / HIERARCHY_FILE).write_text("{}")
    argv = [a.format(src=tmp_path / "src", out=tmp_path / "out", lib=library, hier=tmp_path / "hier") for a in args]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert not (tmp_path / "out").exists()


def test_a_comparison_searches_the_best_documents(tmp_path: Path, library: Path, embedder: FakeEmbedder):
    eng = make_engine(library, tmp_path, embedder)
    out = tmp_path / "hier"
    build(eng, library, out)
    ans = eng.navigate_library("compare income tax refund and vat refund", skills=str(out), documents=2)
    searched = [s.target for s in ans.steps if s.tool == "search_document"]
    names = {d.doc_id: d.name for d in eng.library.documents}
    assert sorted(names[d] for d in searched) == ["tax.md", "vat.md"]
    assert {e.doc_id for e in ans.evidence} == set(searched)


@pytest.mark.realmodel
@pytest.mark.slow
def test_document_summaries_with_a_real_local_model(llama_settings, tmp_path: Path, embedder: FakeEmbedder):  # type: ignore[no-untyped-def]
    """Plumbing with the embedded 0.5B: one call per document through the one client, counted
    under its stage, the reply schema-validated (or the extractive summary with a warning), and
    the files still follow the rules; not what the small model says."""
    from bookindex.providers.llm import get_llm

    llm = get_llm(llama_settings)
    lib = tmp_path / "lib"
    eng = Engine(lib, llama_settings, embedder=embedder, llm=llm)
    for key in ("bread", "rocket"):
        (tmp_path / f"{key}.md").write_text(handbook(key), encoding="utf-8")
        eng.index(tmp_path / f"{key}.md", graph=False, llm_sections=False)
    out = tmp_path / "hier"
    report = build(eng, lib, out)
    assert report.llm_usage[DOC_STAGE]["calls"] >= 2  # one per document, plus any schema repair round
    assert len(report.documents_rendered) == 2
    for skill in out.rglob("doc-*/SKILL.md"):
        fm = frontmatter(skill.read_text(encoding="utf-8"))
        assert NAME_RE.match(fm["name"]) and 0 < len(json.loads(fm["description"])) <= 1024
    again = build(eng, lib, out)  # unchanged: served by reuse, no new call
    assert DOC_STAGE not in again.llm_usage
