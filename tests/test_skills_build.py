"""The Corpus2Skill compiler: inputs, clustering invariants, files, determinism, atomic builds,
incremental add/remove and the CLI — offline, with FakeEmbedder and FakeLLM; one compile runs
through a real model behind llama.cpp's OpenAI-compatible server on loopback."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import FakeEmbedder, FakeLLM, LLMCall
from library_helpers import handbook_markdown
from typer.testing import CliRunner

from bookindex.cli.app import app, main
from bookindex.core.errors import InputError, LLMRequestError
from bookindex.engine import Engine, SkillsAddRequest, SkillsBuildRequest, SkillsRemoveRequest
from bookindex.indexing.library import DocumentLibrary
from bookindex.services.providers import ProviderSet
from bookindex.skills.compiler.corpus import content_id, load_corpus
from bookindex.skills.compiler.materialise import SKILL_FILE
from bookindex.skills.compiler.summarise import slug
from bookindex.skills.model import CorpusDocument, DocIds, load_documents, load_tree, load_vectors, short_ids
from bookindex.skills.navigator.agent import STAGE, navigate
from bookindex.skills.navigator.opened import OpenedSkills

TOPICS = {
    "payments": "payment card refund invoice checkout charge billing",
    "domains": "domain dns record nameserver transfer registrar ssl",
    "email": "email inbox mailbox smtp forwarding alias spam",
    "seo": "seo search ranking sitemap keywords index crawl",
    "booking": "booking appointment calendar staff schedule service",
    "video": "video upload stream player playlist channel thumbnail",
}
NAME_RE = re.compile(r"^[a-z0-9-]{1,64}$")


def corpus_records(per_topic: int = 8) -> list[dict]:
    out = []
    for t, words in TOPICS.items():
        w = words.split()
        for i in range(per_topic):
            text = " ".join(w[(i + j) % len(w)] for j in range(12)) + f". More about {t} number {i}."
            out.append({"id": f"{t}-{i:02d}", "title": f"{t.title()} guide {i}", "text": text})
    return out


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dim=64, word=r"[a-z]+")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", corpus_records())


def summary_reply(call: LLMCall) -> dict:
    digest = hashlib.md5(call.prompt.encode()).hexdigest()[:6]
    return {"topic": f"Topic {digest}. Second sentence.", "questions": ["How do I do it"],
            "key_terms": ["alpha", "beta"], "label": f"Label {digest} Words"}


def engine(embedder: FakeEmbedder, llm: FakeLLM | None = None) -> Engine:
    return Engine(None, embedder=embedder, llm=llm or FakeLLM(available=False))


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def frontmatter(text: str) -> dict[str, str]:
    head = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in head.strip().splitlines())


# -- inputs ------------------------------------------------------------------------------------

def test_loads_every_format(tmp_path: Path):
    d = tmp_path / "src"
    (d / "sub").mkdir(parents=True)
    (d / "a.md").write_text("# Alpha Title\n\nAlpha body text.\n")
    (d / "b.txt").write_text("Beta first line\nmore beta\n")
    (d / "c.json").write_text(json.dumps({"id": "c1", "title": "Gamma", "text": "gamma text"}))
    (d / "sub" / "d.json").write_text(json.dumps([{"text": "delta one"}, {"_id": 7, "text": "delta two"}]))
    write_jsonl(d / "e.jsonl", [{"id": "e1", "title": "E", "text": "eps"}, {"text": "no id here"}])
    (d / "ignored.pdf").write_bytes(b"%PDF")
    docs = {x.id: x for x in load_corpus([d])}
    md = "# Alpha Title\n\nAlpha body text.\n"
    assert docs[content_id(md)].title == "Alpha Title"
    assert docs[content_id("Beta first line\nmore beta\n")].title == "Beta first line"
    assert docs["c1"].title == "Gamma" and docs["7"].text == "delta two"
    assert docs[content_id("delta one")].title == "delta one"
    assert docs[content_id("no id here")].source.endswith("e.jsonl:2")
    assert len(docs) == 7


@pytest.mark.parametrize("case, message", [
    ("empty", "no documents"),
    ("undecodable", "not UTF-8"),
    ("duplicate", "duplicate document id 'x'"),
    ("no_text", "e.jsonl:2: record has no text"),
    ("bad_json", "e.jsonl:1: malformed JSON"),
    ("deep_json", "e.jsonl:1: JSON nested deeper than"),
])
def test_bad_inputs_name_the_file(tmp_path: Path, case: str, message: str):
    d = tmp_path / "src"
    d.mkdir()
    if case == "undecodable":
        (d / "bad.txt").write_bytes(b"ok \xff\xfe broken")
    elif case == "duplicate":
        write_jsonl(d / "a.jsonl", [{"id": "x", "text": "one"}])
        write_jsonl(d / "b.jsonl", [{"id": "y", "text": "two"}, {"id": "x", "text": "three"}])
    elif case == "no_text":
        write_jsonl(d / "e.jsonl", [{"id": "1", "text": "fine"}, {"id": "2", "title": "no text"}])
    elif case == "bad_json":
        (d / "e.jsonl").write_text("{not json}\n")
    elif case == "deep_json":
        (d / "e.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InputError, match=re.escape(message)) as e:
        load_corpus([d])
    if case == "undecodable":
        assert "bad.txt" in str(e.value)
    if case == "duplicate":
        assert "b.jsonl:2" in str(e.value) and "a.jsonl:1" in str(e.value)


def test_output_that_is_not_a_skill_tree_is_refused(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a skill tree"):
        engine(embedder).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out)))
    assert (out / "precious.txt").read_text() == "keep me"


def test_library_source(tmp_path: Path, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: FakeEmbedder()))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "handbook.md").write_text(handbook_markdown())
    (tmp_path / "notes.md").write_text("# Notes\n\nSome notes about the tool.\n")
    lib = DocumentLibrary.open(tmp_path / "lib")
    for f in ("handbook.md", "notes.md"):
        lib.add(tmp_path / f, graph=False)
    docs = load_corpus([tmp_path / "lib"])
    assert sorted(d.id for d in docs) == sorted(d.doc_id for d in lib.documents)
    assert all(d.text.strip() for d in docs)
    assert any("notes about the tool" in d.text for d in docs)


# -- compile -----------------------------------------------------------------------------------

def test_clustering_invariants_and_files(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "skills"
    rep = engine(embedder).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3,
                                                           top=3, min_size=2))
    tree = load_tree(out)
    leaves = tree.leaves()
    placed = [d for leaf in leaves for d in leaf.documents]
    assert sorted(placed) == sorted(r["id"] for r in corpus_records())  # every doc in exactly one leaf
    assert len(tree.roots) <= 3 and rep.roots == len(tree.roots)
    assert all(len(leaf.documents) >= 2 for leaf in leaves)
    assert rep.levels >= 3 and rep.summaries == len(tree.clusters) and not rep.llm_usage
    for c in tree.clusters.values():
        assert c.num_documents == (len(c.documents) or sum(tree.clusters[k].num_documents for k in c.children))
        assert all(tree.clusters[k].level == c.level - 1 for k in c.children)
    vec = load_vectors(out)
    assert vec.cluster_ids == sorted(tree.clusters) and vec.doc_vectors.shape == (48, 64)
    assert set(load_documents(out)) == set(placed)
    md_files = sorted(out.rglob("*.md"))
    assert len(md_files) == rep.files == len(tree.clusters)
    for f in md_files:
        text = f.read_text()
        fm = frontmatter(text)
        assert NAME_RE.match(fm["name"]) and fm["name"] == f.parent.name
        assert len(json.loads(fm["description"])) <= 1024
        assert int(fm["level"]) >= 1 and int(fm["num_documents"]) >= 1
        if f.name == SKILL_FILE:
            assert f.parent.parent == out and f.parent.name.startswith("skill-")
        else:
            assert f.parent.name.startswith("group-")
        if int(fm["level"]) == 1:
            assert "Use get_document with the doc_id" in text and re.search(r"- `[^`]+` — ", text)
        else:
            assert "### Sub-groups (directories)" in text and " docs): " in text


def test_same_corpus_and_seed_give_identical_bytes(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    shuffled = write_jsonl(tmp_path / "shuffled.jsonl", list(reversed(corpus_records())))
    a, b = tmp_path / "a", tmp_path / "b"
    engine(embedder).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(a), branching=3, top=3))
    engine(embedder).skills.build(SkillsBuildRequest(sources=[str(shuffled)], output=str(b), branching=3, top=3))
    fa, fb = files_of(a), files_of(b)
    fa.pop("documents.json"), fb.pop("documents.json")  # sources differ (file names); the rest may not
    assert fa == fb


def test_failed_build_leaves_output_untouched(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "skills"
    engine(embedder).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=3))
    before = files_of(out)

    class Broken(FakeEmbedder):
        def encode(self, texts, progress=False):
            if self.calls >= 1:
                raise RuntimeError("embedder died mid-compile")
            return super().encode(texts, progress)

    with pytest.raises(RuntimeError):
        engine(Broken(dim=64, word=r"[a-z]+")).skills.build(
            SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=4, top=2))
    assert files_of(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "skills"]  # no temp folder left


def test_llm_summaries_labels_stages_and_free_rerun(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(summary_reply, cache=True)
    rep = engine(embedder, llm).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(tmp_path / "s"),
                                                                branching=3, top=3))
    tree = load_tree(tmp_path / "s")
    n_leaves = len(tree.leaves())
    assert rep.llm_usage["skills.summary"]["calls"] == n_leaves
    assert rep.llm_usage["skills.overview"]["calls"] == len(tree.clusters) - n_leaves
    assert all(re.match(r"^label-[0-9a-f]{6}-words$", c.label) for c in tree.clusters.values())
    assert all(c.summary.startswith("Topic ") and "Key terms: alpha, beta." in c.summary for c in tree.clusters.values())
    assert tree.params.llm == "fake-llm"
    rep2 = engine(embedder, llm).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(tmp_path / "s"),
                                                                 branching=3, top=3))
    assert all(u.get("calls", 0) == 0 for u in rep2.llm_usage.values())  # all from the cache
    assert rep2.llm_usage["skills.summary"]["cache_hits"] == n_leaves


def test_invalid_llm_reply_falls_back_to_extractive(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(default="not json at all")
    rep = engine(embedder, llm).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(tmp_path / "s"),
                                                                branching=3, top=3))
    assert rep.warnings and "extractive summary used" in rep.warnings[0]
    assert all(c.summary for c in load_tree(tmp_path / "s").clusters.values())


def test_compact_lists_leaves_in_parent(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "c"
    rep = engine(embedder).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=3,
                                                           compact=True))
    tree = load_tree(out)
    assert rep.files == len([c for c in tree.clusters.values() if c.level > 1])
    compacted = [c for c in tree.leaves() if "#" in c.path]
    assert compacted and all(tree.clusters[c.parent].level == 2 for c in compacted)
    parent = tree.clusters[compacted[0].parent]
    text = (out / parent.path / ("SKILL.md" if parent.parent is None else "INDEX.md")).read_text()
    assert compacted[0].path.split("#")[1] in text and f"`{compacted[0].documents[0]}`" in text


def test_slug_rules():
    assert slug("Wix Payments: Fraud & Security!!") == "wix-payments-fraud-security"
    assert slug("one two three four five six seven") == "one-two-three-four-five"
    assert len(slug("x" * 80)) == 50 and slug("***") == ""


# -- incremental updates -----------------------------------------------------------------------

def test_add_resummarises_only_ancestors(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(summary_reply, cache=True)
    out = tmp_path / "s"
    eng = engine(embedder, llm)
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=3))
    before = load_tree(out)
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": "dns-new", "title": "New DNS guide",
                                                "text": "domain dns record nameserver transfer registrar ssl domain dns"}])
    n_calls = len(llm.calls)
    rep = eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(new)], drift=0.0))
    after = load_tree(out)
    leaf = after.clusters[after.documents["dns-new"].cluster]
    path_ids = {c.id for c in after.ancestors(leaf.id)}
    assert rep.summaries == len(path_ids) == len(llm.calls) - n_calls == rep.touched
    for cid, c in after.clusters.items():
        if cid not in path_ids:
            assert c.summary == before.clusters[cid].summary and c.path == before.clusters[cid].path
        assert c.label == before.clusters[cid].label  # labels kept: folders stable
    assert "dns-new" in (out / leaf.path / "INDEX.md").read_text()
    assert "dns-new" in load_documents(out) and "dns-new" in load_vectors(out).doc_ids


def test_add_with_drift_skips_small_changes_but_lists_the_document(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(summary_reply, cache=True)
    out = tmp_path / "s"
    eng = engine(embedder, llm)
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=2))
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": "seo-new", "title": "SEO extra", "text": TOPICS["seo"]}])
    rep = eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(new)], drift=0.5))
    tree = load_tree(out)
    leaf = tree.clusters[tree.documents["seo-new"].cluster]
    assert rep.summaries < rep.touched
    assert "seo-new" in (out / leaf.path / "INDEX.md").read_text()
    assert all(c.num_documents == len(c.documents) for c in tree.leaves())


def test_add_splits_an_oversized_leaf(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "s"
    eng = engine(embedder)
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=3))
    extra = [{"id": f"vid-x{i}", "title": f"Video extra {i}", "text": TOPICS["video"] + f" clip{i} clip{i}"} for i in range(10)]
    rep = eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(write_jsonl(tmp_path / "x.jsonl", extra))]))
    tree = load_tree(out)
    assert rep.splits >= 1
    touched = [leaf for leaf in tree.leaves() if any(d.startswith("vid-x") for d in leaf.documents)]
    assert touched and all(len(leaf.documents) <= 6 for leaf in touched)  # 2p
    placed = sorted(d for leaf in tree.leaves() for d in leaf.documents)
    assert placed == sorted(tree.documents) and len(placed) == 58
    assert len(list(out.rglob("*.md"))) == len([c for c in tree.clusters.values()])


def test_remove_drops_documents_and_empty_clusters(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(summary_reply, cache=True)
    out = tmp_path / "s"
    eng = engine(embedder, llm)
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=3))
    tree = load_tree(out)
    leaf = tree.leaves()[0]
    n_calls = len(llm.calls)
    rep = eng.skills.remove(SkillsRemoveRequest(folder=str(out), ids=list(leaf.documents), drift=0.0))
    after = load_tree(out)
    assert leaf.id not in after.clusters and rep.deleted_clusters >= 1
    assert not set(leaf.documents) & set(after.documents)
    assert not set(leaf.documents) & set(load_vectors(out).doc_ids) and not set(leaf.documents) & set(load_documents(out))
    ancestors = {c.id for c in tree.ancestors(leaf.id)[1:]}
    assert 0 < len(llm.calls) - n_calls <= len(ancestors) == rep.summaries
    with pytest.raises(InputError, match="no document 'nope'"):
        eng.skills.remove(SkillsRemoveRequest(folder=str(out), ids=["nope"]))


def test_update_refuses_a_folder_that_is_not_a_skill_tree(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    with pytest.raises(InputError, match="not a skill tree"):
        engine(embedder).skills.add(SkillsAddRequest(folder=str(tmp_path), sources=[str(corpus)]))


# -- CLI -----------------------------------------------------------------------------------------

@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, embedder: FakeEmbedder) -> None:
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: embedder))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))


def test_cli_build_tree_add_remove(tmp_path: Path, corpus: Path, cli_env: None):
    runner = CliRunner()
    out = tmp_path / "skills"
    r = runner.invoke(app, ["skills", "build", str(corpus), "-o", str(out), "--branching", "3", "--top", "3",
                            "--no-llm", "-q"])
    assert r.exit_code == 0, r.output
    assert "48 documents" in r.output and "navigation files" in r.output
    r = runner.invoke(app, ["skills", "tree", str(out)])
    assert r.exit_code == 0 and "skill-01-" in r.output and "docs)" in r.output
    view = json.loads(runner.invoke(app, ["skills", "tree", str(out), "--json"]).output)
    assert view["documents"] == 48 and len(view["roots"]) <= 3
    new = write_jsonl(tmp_path / "n.jsonl", [{"id": "n1", "text": TOPICS["email"]}])
    r = runner.invoke(app, ["skills", "add", str(out), str(new), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["added"] == ["n1"]
    r = runner.invoke(app, ["skills", "remove", str(out), "n1"])
    assert r.exit_code == 0 and "removed 1" in r.output


@pytest.mark.parametrize("args", [
    ["skills", "build", "{empty}", "-o", "{out}"],
    ["skills", "build", "{corpus}", "-o", "{notskills}"],
    ["skills", "tree", "{notskills}"],
    ["skills", "add", "{notskills}", "{corpus}"],
    ["skills", "remove", "{notskills}", "x"],
])
def test_cli_bad_input_exits_2(tmp_path: Path, corpus: Path, cli_env: None, args: list[str]):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notskills").mkdir()
    (tmp_path / "notskills" / "file.txt").write_text("x")
    argv = [a.format(empty=tmp_path / "empty", out=tmp_path / "out", corpus=corpus, notskills=tmp_path / "notskills")
            for a in args]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert not (tmp_path / "out").exists()


def test_cli_adding_a_document_already_in_the_tree_names_the_tree(tmp_path: Path, corpus: Path, cli_env: None,
                                                                   capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "skills"
    with pytest.raises(SystemExit) as e:
        main(["skills", "build", str(corpus), "-o", str(out), "--no-llm", "-q"])
    assert e.value.code in (0, None)
    before = files_of(out)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["skills", "add", str(out), str(corpus)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"'payments-00' is already in the skill tree {out}" in err
    assert "also in" not in err  # not the file itself named as the other place
    assert files_of(out) == before


def test_vectors_are_normalised(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    engine(embedder).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(tmp_path / "s")))
    v = load_vectors(tmp_path / "s")
    assert np.allclose(np.linalg.norm(v.doc_vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(np.linalg.norm(v.cluster_vectors, axis=1), 1.0, atol=1e-5)


def test_llm_outage_stops_the_build_and_leaves_no_output(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(default=LLMRequestError("endpoint down after 4 retries"))
    with pytest.raises(LLMRequestError):
        engine(embedder, llm).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(tmp_path / "s")))
    assert not (tmp_path / "s").exists()


def test_missing_label_is_made_from_key_terms(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    llm = FakeLLM(default={"topic": "Things.", "questions": [], "key_terms": ["Domain Names", "DNS", "SSL", "x"]})
    engine(embedder, llm).skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(tmp_path / "s")))
    tree = load_tree(tmp_path / "s")
    assert {c.label for c in tree.clusters.values()} == {"domain-names-dns-ssl"}
    assert len(llm.calls) == len(tree.clusters)  # no repair rounds


@pytest.mark.realmodel
@pytest.mark.slow
def test_compile_with_a_real_model_over_an_openai_endpoint(tmp_path: Path, embedder: FakeEmbedder,
                                                          llama_settings: Any):
    """Plumbing only, through llama.cpp's server on 127.0.0.1 (what a 0.5B model writes is not
    asserted): one summary call per leaf reaches the server, every cluster gets a valid summary and
    label (the model's, or the extractive fallback with a warning), the files obey the name and
    description limits, and a rerun is served from the cache with byte-identical files."""
    records = [r for r in corpus_records(per_topic=4) if r["id"].split("-")[0] in ("payments", "domains")]
    src = write_jsonl(tmp_path / "two-topics.jsonl", records)
    request = SkillsBuildRequest(sources=[str(src)], output=str(tmp_path / "s"), branching=2, top=2, min_size=2)
    rep = Engine(None, llama_settings, embedder=embedder).skills.build(request)
    tree = load_tree(tmp_path / "s")
    n_leaves = len(tree.leaves())
    summary = rep.llm_usage["skills.summary"]
    assert summary["calls"] >= n_leaves and summary["prompt_tokens"] > 0 and summary["errors"] == 0
    assert tree.params.llm  # the model that wrote the summaries is recorded
    fallbacks = [w for w in rep.warnings if "extractive summary used" in w]
    assert len(fallbacks) <= len(tree.clusters)
    for c in tree.clusters.values():
        assert c.summary.strip() and NAME_RE.match(c.label)
    for f in sorted((tmp_path / "s").rglob("*.md")):
        fm = frontmatter(f.read_text())
        assert NAME_RE.match(fm["name"]) and len(json.loads(fm["description"])) <= 1024
    first = files_of(tmp_path / "s")
    rep2 = Engine(None, llama_settings, embedder=embedder).skills.build(request)
    assert all(u.get("calls", 0) == 0 for u in rep2.llm_usage.values())
    assert rep2.llm_usage["skills.summary"]["cache_hits"] >= n_leaves
    assert files_of(tmp_path / "s") == first


# -- what the listings say: counts, titles, ids --------------------------------------------------

LISTING_LINE = re.compile(r"^- \*\*(group-[^/]+)/\*\* \((\d+) docs\): (.*)$", re.M)


def counts_agree(out: Path) -> None:
    """Every navigation file's count, its parent's listing line and skills.json agree with the
    membership, and no description states another number of documents."""
    tree = load_tree(out)
    for c in tree.clusters.values():
        members = len(c.documents) if not c.children else None
        text = (out / c.path / (SKILL_FILE if c.parent is None else "INDEX.md")).read_text(encoding="utf-8")
        head = frontmatter(text)
        stated = [int(n) for n in re.findall(r"(\d+) (?:documents|docs)\b", head["description"])]
        assert all(n == c.num_documents for n in stated), (c.id, head["description"])
        assert int(head["num_documents"]) == c.num_documents
        if members is not None:
            assert c.num_documents == members
        else:
            assert c.num_documents == sum(tree.clusters[k].num_documents for k in c.children)
            listed = {m.group(1): (int(m.group(2)), m.group(3)) for m in LISTING_LINE.finditer(text)}
            for k in c.children:
                kid = tree.clusters[k]
                n, desc = listed[kid.path.rsplit("/", 1)[-1]]
                assert n == kid.num_documents
                assert all(int(x) == n for x in re.findall(r"(\d+) (?:documents|docs)\b", desc)), desc


def test_counts_agree_after_build_add_and_remove_without_resummary(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "s"
    eng = engine(embedder)
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=2, no_llm=True))
    counts_agree(out)
    new = write_jsonl(tmp_path / "n.jsonl", [{"id": f"seo-n{i}", "title": f"SEO more {i}", "text": TOPICS["seo"]}
                                             for i in range(2)])
    rep = eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(new)], drift=10.0, no_llm=True))
    assert rep.summaries < rep.touched  # some clusters kept their old summary text
    counts_agree(out)
    eng.skills.remove(SkillsRemoveRequest(folder=str(out), ids=["seo-n0"], drift=10.0, no_llm=True))
    counts_agree(out)


def test_markdown_titles_and_lines_are_plain_text(tmp_path: Path, corpus: Path, embedder: FakeEmbedder):
    out = tmp_path / "s"
    eng = engine(embedder)
    eng.skills.build(SkillsBuildRequest(sources=[str(corpus)], output=str(out), branching=3, top=2, no_llm=True))
    md = tmp_path / "payments.md"
    md.write_text("# Wix Payments: **Setting up** a [checkout](https://example.com/a_b)\n\n"
                  "Connect *Wix Payments* to accept card payment at checkout. Refunds go to the invoice.\n",
                  encoding="utf-8")
    eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(md)], no_llm=True))
    tree = load_tree(out)
    (doc_id,) = [d for d in tree.documents if d not in {r["id"] for r in corpus_records()}]
    assert tree.documents[doc_id].title == "Wix Payments: Setting up a checkout"
    leaf = tree.clusters[tree.documents[doc_id].cluster]
    (line,) = [ln for ln in (out / leaf.path / "INDEX.md").read_text().splitlines() if "Wix Payments" in ln]
    assert "#" not in line and "**" not in line and "](" not in line and line.count("Wix Payments: Setting up") == 1
    assert "Connect Wix Payments to accept card payment at checkout." in line


def hashed_corpus(tmp_path: Path) -> Path:
    """Records without ids: each gets 16 hex digits of its text's hash."""
    return write_jsonl(tmp_path / "hashed.jsonl", [{"title": r["title"], "text": r["text"]} for r in corpus_records(4)])


def build_hashed(tmp_path: Path, embedder: FakeEmbedder) -> tuple[Engine, Path]:
    """A no-LLM skill tree of `hashed_corpus` in tmp_path/s: (the engine, the folder)."""
    out = tmp_path / "s"
    eng = engine(embedder)
    eng.skills.build(SkillsBuildRequest(sources=[str(hashed_corpus(tmp_path))], output=str(out), branching=3, top=2,
                                        no_llm=True))
    return eng, out


def test_listings_name_documents_by_short_ids_the_tools_accept(tmp_path: Path, embedder: FakeEmbedder):
    eng, out = build_hashed(tmp_path, embedder)
    tree = load_tree(out)
    full = sorted(tree.documents)
    assert all(len(d) == 16 for d in full)
    shown = [m for p in out.rglob("INDEX.md") for m in re.findall(r"^- `([^`]+)`", p.read_text(), re.M)]
    assert sorted(shown) == sorted(d[:8] for d in full)  # listed once each, by an 8-character prefix
    assert set(load_documents(out)) == set(full)  # the store keeps the full ids
    opened = OpenedSkills(out)
    got = opened.tools.get_document(full[0][:8])
    assert got.doc_id == full[0] and got.text.startswith(f"[{full[0][:8]}]")
    assert opened.tools.get_document(full[0]).doc_id == full[0]
    eng.skills.remove(SkillsRemoveRequest(folder=str(out), ids=[full[1][:8]], no_llm=True))
    assert full[1] not in load_tree(out).documents


def test_short_ids_grow_on_a_shared_prefix_and_resolve():
    ids = ["0123456789abcdef", "0123456789abffff", "fedcba9876543210", "short-id", "0123456"]
    short = short_ids(ids)
    assert short == {"0123456789abcdef": "0123456789abc", "0123456789abffff": "0123456789abf",
                     "fedcba9876543210": "fedcba98", "short-id": "short-id", "0123456": "0123456"}
    named = DocIds(ids)
    assert all(named.resolve(s) == d for d, s in short.items())
    assert named.resolve("`fedcba98`") == "fedcba9876543210" and named.resolve("fedcba987654") == "fedcba9876543210"
    assert named.resolve("0123456789ab") is None  # shared by two ids
    assert named.resolve("01234567") is None and named.resolve("nope") is None


def test_add_then_remove_restores_the_folder_byte_for_byte(tmp_path: Path, embedder: FakeEmbedder):
    eng, out = build_hashed(tmp_path, embedder)
    before = files_of(out)
    victim = sorted(load_tree(out).documents)[0]
    # a document whose id shares the first 12 characters with one in the tree: that one's short id grows
    clash = CorpusDocument(id=victim[:12] + "ffff", title="Email extra", text=TOPICS["email"] + " extra", source="x")
    new = write_jsonl(tmp_path / "n.jsonl", [{"id": clash.id, "title": clash.title, "text": clash.text}])
    eng.skills.add(SkillsAddRequest(folder=str(out), sources=[str(new)], no_llm=True))
    listed = " ".join(p.read_text() for p in out.rglob("INDEX.md"))
    assert f"`{victim[:13]}`" in listed and f"`{clash.id[:13]}`" in listed and f"`{victim[:8]}`" not in listed
    eng.skills.remove(SkillsRemoveRequest(folder=str(out), ids=[clash.id], no_llm=True))
    assert files_of(out) == before


def test_the_agent_reads_and_cites_by_short_id(tmp_path: Path, embedder: FakeEmbedder):
    out = tmp_path / "s"
    engine(embedder).skills.build(SkillsBuildRequest(sources=[str(hashed_corpus(tmp_path))], output=str(out),
                                                     branching=3, top=2, no_llm=True))
    opened = OpenedSkills(out)
    leaf = sorted(opened.tree.leaves(), key=lambda c: c.id)[0]
    first, *rest = sorted(leaf.documents)
    walk = [{"action": "view", "path": f"{leaf.path}/INDEX.md"}, {"action": "get_document", "doc_id": first[:8]},
            {"action": "answer", "answer": f"It says so [{first[:8]}].", "cited": [first[:8]]}]
    ans = navigate(opened, FakeLLM({STAGE: walk}), "a question")
    assert ans.cited == [first]
    assert [(d.doc_id, d.via) for d in ans.documents][:1] == [(first, "read")]
    assert {d.doc_id for d in ans.documents if d.via == "listed"} == set(rest)
