"""`skills build LIB --documents`: one tree from library to block.

The library's documents are clustered by the skills compiler (topic clusters, SKILL.md /
INDEX.md, skills.json, vectors.npz, documents.json), and each document's own section tree is
written as a skill (`docskill`) inside the folder of its leaf cluster:

    skill-01-<topic>/SKILL.md
    skill-01-<topic>/group-00-<topic>/INDEX.md          lists documents and their skill folders
    skill-01-<topic>/group-00-<topic>/doc-<name>/SKILL.md
    skill-01-<topic>/group-00-<topic>/doc-<name>/sec-01-<title>/INDEX.md ...

`hierarchy.json` records, per document, its folder, its sections' folders and the hash it was
rendered from. A rebuild renders only documents whose hash changed (a re-indexed document has a
new stored generation); the others' files are hard-linked from the previous build, so they are
not rewritten and cost no summary. The folder is built beside the target and renamed in.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from functools import partial
from pathlib import Path

from bookindex.core.atomic import write_json_atomic
from bookindex.core.errors import InputError
from bookindex.core.events import Events
from bookindex.core.protocols import LLM, Embedder
from bookindex.indexing.library import DocumentLibrary
from bookindex.indexing.stored_document import StoredDocument
from bookindex.providers.llm.ledger import usage_delta
from bookindex.routing.document_text import embed_documents
from bookindex.skills.compiler.build import build_params, make_summariser, uses_llm
from bookindex.skills.compiler.compile import compile_tree
from bookindex.skills.compiler.corpus import is_library, load_library
from bookindex.skills.compiler.docskill import DocumentSkill, document_hash, folder_for, render_document
from bookindex.skills.compiler.docsummary import DocumentSummariser, ExtractiveDocumentSummariser, LLMDocumentSummariser
from bookindex.skills.compiler.materialise import check_output, file_of, swap_in, write_folder
from bookindex.skills.compiler.requests import SkillsBuildReport, SkillsBuildRequest
from bookindex.skills.model import HIERARCHY_FILE, Cluster, Hierarchy, HierDocument, SkillTree, is_hierarchy, load_hierarchy

NEXT_SKILLS = ("Each document above is also a skill: open its SKILL.md to walk its chapters and sections, "
               "or call search_document(doc_id, question) to run its retrieval.")



def stored_documents(sources: list[str]) -> dict[str, tuple[StoredDocument, str]]:
    """Every stored document of the source libraries (InputError for anything else)."""
    out: dict[str, tuple[StoredDocument, str]] = {}
    for src in sources:
        folder = Path(src).expanduser()
        if not folder.is_dir() or not is_library(folder):
            raise InputError(f"{src}: --documents needs bookindex libraries (a folder with library.json)")
        for d in DocumentLibrary.open(folder).documents:
            if d.doc_id in out:
                raise InputError(f"{src}: document {d.name!r} ({d.doc_id}) is also in {out[d.doc_id][1]}")
            out[d.doc_id] = (d, str(folder.resolve()))
    if not out:
        raise InputError(f"{', '.join(sources)}: the libraries hold no documents")
    return out


def leaf_folder(c: Cluster) -> str:
    """The folder a leaf's documents hang in (compact leaves are listed in their parent's file)."""
    return c.path.split("#", 1)[0]


def build(req: SkillsBuildRequest, embedder: Embedder, llm: LLM | None, on_event: Events | None = None,
          progress: bool = False) -> SkillsBuildReport:
    """Cluster the libraries' documents and hang each document's skill under its leaf."""
    emit = on_event or (lambda event, info: None)
    out = Path(req.output).expanduser()
    check_output(out)
    old = load_hierarchy(out) if is_hierarchy(out) else None
    t0 = time.perf_counter()
    stored = stored_documents(req.sources)
    docs = [d for src in req.sources for d in load_library(Path(src).expanduser())]
    emit("loaded", {"documents": len(docs)})
    t1 = time.perf_counter()
    vecs = embed_documents(docs, embedder, req.embed_chars, progress=progress)
    t2 = time.perf_counter()
    with_llm = uses_llm(llm, req.no_llm)
    params = build_params(req.model_copy(update={"soft": 0}), embedder, llm if with_llm else None)  # one path per document skill
    summariser = make_summariser(docs, llm, req.no_llm)
    doc_summariser: DocumentSummariser = (LLMDocumentSummariser(llm) if with_llm and llm is not None
                                          else ExtractiveDocumentSummariser())
    before = llm.ledger.snapshot() if llm is not None else {}
    tree, vectors = compile_tree(docs, vecs, params, summariser, embedder, on_event=emit)
    t3 = time.perf_counter()
    skills, reuse, hier = _document_skills(tree, stored, doc_summariser, old, out)
    emit("documents", {"rendered": len(skills), "reused": len(reuse)})
    t4 = time.perf_counter()

    def extra(tmp: Path) -> None:
        _write_documents(tmp, tree, hier, skills, reuse, out)
        write_json_atomic(tmp / HIERARCHY_FILE, hier.to_json())

    swap_in(out, lambda tmp: write_folder(tmp, tree, vectors, {d.id: d for d in docs}), extra)
    t5 = time.perf_counter()
    nav = sorted(p for p in out.rglob("*.md"))
    sizes = [p.stat().st_size for p in nav]
    levels = max((c.level for c in tree.clusters.values()), default=0)
    return SkillsBuildReport(
        output=str(out), documents=len(docs), clusters=len(tree.clusters), leaves=len(tree.leaves()),
        roots=len(tree.roots), levels=levels, files=len(nav),
        median_file_bytes=float(statistics.median(sizes)) if sizes else 0.0, max_file_bytes=max(sizes, default=0),
        llm=params.llm, summaries=len(tree.clusters) + len(skills),
        llm_usage=usage_delta(before, llm.ledger.snapshot(), prefix="skills.") if llm is not None else {},
        seconds=round(t5 - t0, 3),
        timings={"load": round(t1 - t0, 3), "embed": round(t2 - t1, 3), "compile": round(t3 - t2, 3),
                 "documents": round(t4 - t3, 3), "write": round(t5 - t4, 3)},
        warnings=list(summariser.warnings) + list(doc_summariser.warnings),
        documents_rendered=sorted(skills), documents_reused=sorted(reuse))


def _document_skills(tree: SkillTree, stored: dict[str, tuple[StoredDocument, str]], summariser: DocumentSummariser,
                     old: Hierarchy | None, out: Path) -> tuple[dict[str, DocumentSkill], dict[str, str], Hierarchy]:
    """Render the documents whose hash changed; name the old folders of the others (reuse)."""
    taken: dict[str, set[str]] = {}
    hier = Hierarchy({})
    todo: list[str] = []
    reuse: dict[str, str] = {}
    for doc_id in sorted(tree.documents):
        d, lib = stored[doc_id]
        leaf = leaf_folder(tree.cluster(tree.documents[doc_id].cluster))
        folder = folder_for(d.name, doc_id, taken.setdefault(leaf, set()))
        h = document_hash(doc_id, d.dir.name, summariser.tag)
        was = old.documents.get(doc_id) if old is not None else None
        entry = HierDocument(name=d.name, pages=int(d.manifest.get("pages") or 0), path=f"{leaf}/{folder}",
                             hash=h, library=lib)
        hier.documents[doc_id] = entry
        if was is not None and was.hash == h and (out / was.path / "SKILL.md").is_file():
            reuse[doc_id] = was.path
            entry.sections = dict(was.sections)
        else:
            todo.append(doc_id)
    summaries = summariser.summarise([(stored[i][0].tree, stored[i][0].name) for i in todo])
    skills = {}
    for doc_id, s in zip(todo, summaries):
        d = stored[doc_id][0]
        entry = hier.documents[doc_id]
        sk = render_document(d.tree, name=d.name, pages=entry.pages, folder=entry.path.rsplit("/", 1)[-1],
                             summary=s.summary, line=partial(s.line, d.tree))
        entry.sections = dict(sk.sections)
        skills[doc_id] = sk
    return skills, reuse, hier


def _write_documents(tmp: Path, tree: SkillTree, hier: Hierarchy, skills: dict[str, DocumentSkill],
                     reuse: dict[str, str], out: Path) -> None:
    """Document skills into the new folder (rendered, or hard-linked from the old one), and a
    listing of them appended to each leaf's navigation file."""
    for doc_id, sk in skills.items():
        base = tmp / hier.documents[doc_id].path
        for rel, text in sk.files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")  # inside the temporary folder: the rename is the commit
    for doc_id, old_path in reuse.items():
        shutil.copytree(out / old_path, tmp / hier.documents[doc_id].path, copy_function=_link)
    for c in tree.leaves():
        nav = file_of(c) or (file_of(tree.cluster(c.parent)) if c.parent else None)
        if nav is None:
            continue
        lines = ["", "### Document skills", ""]
        lines += [f"- `{d}` → {hier.documents[d].path.rsplit('/', 1)[-1]}/SKILL.md" for d in sorted(c.documents)]
        lines += ["", NEXT_SKILLS, ""]
        with open(tmp / nav, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines))


def _link(src: str, dst: str) -> None:
    """A hard link (the file is not rewritten), else a copy keeping its times."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
