"""Nodes whose LLM extraction fails are retried once, recorded in build.json,
counted in the `bookindex index` summary, and a re-run of `bookindex index` retries only them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import ExtractionScript, FakeEmbedder, FakeLLM, LLMCall, extraction_bodies
from library_helpers import snapshot
from typer.testing import CliRunner

from bookindex.core.config import load_settings
from bookindex.indexing.document_folder import load_entity_vectors
from bookindex.indexing.library import DocumentLibrary
from bookindex.services.providers import ProviderSet

BROKEN = ("Scope paragraph", "Plot details paragraph")  # two text nodes of the handbook


def scripted_llm(broken: tuple[str, ...] = ()) -> tuple[FakeLLM, ExtractionScript]:
    script = ExtractionScript.for_library(broken)
    return FakeLLM(script, model="scripted"), script


def extract_calls(llm: FakeLLM) -> list[LLMCall]:
    return [c for c in llm.calls if c.stage == "extract"]


def settings():
    return load_settings(env={}, overrides={"cache.enabled": False, "graph.extractor": "llm",
                                            "graph.batch_tokens": 200})


def _failed_ids(doc: Any) -> list[str]:
    return [n.id for n in doc.tree.walk() if any(b in n.text for b in BROKEN)]


def test_failed_nodes_are_recorded_then_only_they_are_retried(tmp_path: Path, md_file: Path) -> None:
    llm, script = scripted_llm(broken=BROKEN)
    lib = DocumentLibrary.open(tmp_path / "lib", settings(), embedder=FakeEmbedder(), llm=llm)
    doc = lib.add(md_file)
    assert doc.status == "added"
    bad = _failed_ids(doc)
    assert len(bad) == 2
    build = doc.build_report["graph"]
    assert build["nodes_failed"] == 2 and build["failed_node_ids"] == sorted(bad)
    assert doc.manifest["graph_failed"] == 2
    assert all("malformed" in build["failures"][i] for i in bad)
    assert set(bad) <= set(build["retried_node_ids"])  # each was retried once within the build
    solo = [c for c in extract_calls(llm) if len(extraction_bodies(c)) == 1 and any(b in extraction_bodies(c)[0] for b in BROKEN)]
    assert len(solo) == 2 and all(c.cache is False for c in solo)
    assert not any(set(bad) & set(e.node_ids) for e in doc.graph.entities.values())
    links_before = sum(len(e.node_ids) for e in doc.graph.entities.values())
    old_dir = doc.dir
    del doc  # a held document keeps its version on disk (a reader lease)

    # Second run, same unchanged file: the model now answers; only the failed nodes are sent.
    script.broken.clear()
    llm.calls.clear()
    again = lib.add(md_file)
    assert again.status == "retried" and again.dir != old_dir and not old_dir.exists()
    sent = [body for c in extract_calls(llm) for body in extraction_bodies(c)]
    assert len(sent) == 2 and all(any(b in body for b in BROKEN) for body in sent)
    calls = extract_calls(llm)
    assert 1 <= len(calls) <= 2 and all(c.cache is False for c in calls)
    assert again.retry["recovered"] == 2 and again.retry["still_failed"] == 0 and again.retry["llm_calls"] == len(calls)
    g = again.graph
    gained = {i for e in g.entities.values() for i in e.node_ids} & set(bad)
    assert gained == set(bad)
    assert any(e.name == "Scope" for e in g.entities.values())
    assert sum(len(e.node_ids) for e in g.entities.values()) >= links_before + 2
    assert all(nid in again.tree.nodes for e in g.entities.values() for nid in e.node_ids)
    rep = again.build_report["graph"]
    assert rep["nodes_failed"] == 0 and rep["failed_node_ids"] == [] and rep["failures"] == {}
    assert rep["entities"] == len(g.entities) and rep["retries"][-1]["recovered"] == 2
    assert again.manifest["graph_failed"] == 0

    ids, mat = load_entity_vectors(again.dir)
    assert sorted(ids) == sorted(g.entities) and mat.shape == (len(ids), FakeEmbedder().dim)

    # Third run: nothing failed any more, so an unchanged document is a no-op again.
    llm.calls.clear()
    third = lib.add(md_file)
    assert third.status == "unchanged" and llm.calls == [] and third.dir == again.dir


def test_nodes_failing_again_stay_recorded(tmp_path: Path, md_file: Path) -> None:
    llm, script = scripted_llm(broken=BROKEN)
    lib = DocumentLibrary.open(tmp_path / "lib", settings(), embedder=FakeEmbedder(), llm=llm)
    bad = _failed_ids(lib.add(md_file))
    script.broken = {BROKEN[0]}  # one node recovers, the other still fails
    llm.calls.clear()
    doc = lib.add(md_file)
    assert doc.status == "retried" and doc.retry["recovered"] == 1 and doc.retry["still_failed"] == 1
    rep = doc.build_report["graph"]
    still = [i for i in bad if BROKEN[0] in doc.tree[i].text]
    assert rep["failed_node_ids"] == still and list(rep["failures"]) == still
    assert all(any(b in body for b in BROKEN) for c in extract_calls(llm) for body in extraction_bodies(c))


def test_a_failed_retry_leaves_the_library_as_it_was(tmp_path: Path, md_file: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    llm, script = scripted_llm(broken=BROKEN)
    lib = DocumentLibrary.open(tmp_path / "lib", settings(), embedder=FakeEmbedder(), llm=llm)
    lib.add(md_file)
    before = snapshot(lib.root)
    script.broken.clear()
    from bookindex.indexing import construction as store  # where the retry calls save_graph

    def boom(*a: Any, **k: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "save_graph", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        lib.add(md_file)
    assert snapshot(lib.root) == before


def test_cli_summary_counts_failed_nodes_and_rerun_retries(tmp_path: Path, md_file: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from bookindex.cli.app import app

    llm, script = scripted_llm(broken=BROKEN)
    emb = FakeEmbedder()
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: emb))
    monkeypatch.setattr(ProviderSet, "llm", property(lambda self: llm))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    lib = str(tmp_path / "lib")
    args = ["--set", "graph.extractor=llm", "index", str(md_file), "-i", lib]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "2 of" in r.output and "nodes failed extraction" in r.output
    assert "2 graph nodes failed extraction" in r.output  # the final summary line
    script.broken.clear()
    llm.calls.clear()
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "1 retried" in r.output and "2 recovered, 0 still failing" in r.output
    assert sum(len(extraction_bodies(c)) for c in extract_calls(llm)) == 2
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "unchanged" in r.output and "failed extraction" not in r.output
    build = json.loads(next((tmp_path / "lib" / "docs").glob("*/build.json")).read_text())
    assert build["graph"]["nodes_failed"] == 0
