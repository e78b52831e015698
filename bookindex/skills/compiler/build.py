"""`skills build`: load a corpus, compile it, write the folder whole; report counts and costs.

The summariser is the LLM one when an LLM is available and not switched off, else the
extractive one. Nothing touches the output folder until everything is computed and written
beside it (`materialise.replace_folder`).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bookindex.core.events import Events
from bookindex.core.protocols import LLM, Embedder
from bookindex.providers.llm.ledger import usage_delta
from bookindex.routing.document_text import embed_documents
from bookindex.skills.compiler.compile import compile_tree
from bookindex.skills.compiler.corpus import load_corpus
from bookindex.skills.compiler.materialise import check_output, replace_folder
from bookindex.skills.compiler.requests import SkillsBuildReport, SkillsBuildRequest
from bookindex.skills.compiler.summarise import ExtractiveSummariser, LLMSummariser, Summariser
from bookindex.skills.model import BuildParams, CorpusDocument


def make_summariser(docs: list[CorpusDocument], llm: LLM | None, no_llm: bool) -> Summariser:
    fallback = ExtractiveSummariser(docs)
    if llm is not None and llm.available and not no_llm:
        return LLMSummariser(llm, fallback)
    return fallback


def uses_llm(llm: LLM | None, no_llm: bool) -> bool:
    return llm is not None and llm.available and not no_llm


def build_params(req: SkillsBuildRequest, embedder: Embedder, llm: LLM | None) -> BuildParams:
    """What a build records of how it was made (`llm`: the model that writes the summaries, or
    None for the extractive ones)."""
    return BuildParams(branching=req.branching, top=req.top, min_size=req.min_size, seed=req.seed,
                       compact=req.compact, embed_chars=req.embed_chars, embedder=embedder.name,
                       llm=(llm.model or "llm") if llm is not None else "",
                       doc_int8=bool(getattr(embedder, "quantized", False)),
                       doc_tokens=int(getattr(embedder, "max_tokens", 0) or 0),
                       soft=req.soft, soft_margin=req.soft_margin)


def build(req: SkillsBuildRequest, embedder: Embedder, llm: LLM | None, on_event: Events | None = None,
          progress: bool = False) -> SkillsBuildReport:
    """Compile `req.sources` into `req.output`."""
    emit = on_event or (lambda event, info: None)
    out = Path(req.output).expanduser()
    check_output(out)
    t0 = time.perf_counter()
    docs = load_corpus(req.sources)
    emit("loaded", {"documents": len(docs)})
    t1 = time.perf_counter()
    vecs = embed_documents(docs, embedder, req.embed_chars, progress=progress)
    t2 = time.perf_counter()
    with_llm = uses_llm(llm, req.no_llm)
    params = build_params(req, embedder, llm if with_llm else None)
    summariser = make_summariser(docs, llm, req.no_llm)
    before = llm.ledger.snapshot() if llm is not None else {}
    tree, vectors = compile_tree(docs, vecs, params, summariser, embedder, on_event=emit)
    t3 = time.perf_counter()
    written = replace_folder(out, tree, vectors, {d.id: d for d in docs})
    t4 = time.perf_counter()
    sizes = [p.stat().st_size for p in written]
    levels = max((c.level for c in tree.clusters.values()), default=0)
    return SkillsBuildReport(
        output=str(out), documents=len(docs), clusters=len(tree.clusters), leaves=len(tree.leaves()),
        roots=len(tree.roots), levels=levels, files=len(written),
        median_file_bytes=float(statistics.median(sizes)) if sizes else 0.0, max_file_bytes=max(sizes, default=0),
        llm=params.llm, summaries=len(tree.clusters),
        llm_usage=usage_delta(before, llm.ledger.snapshot(), prefix="skills.") if llm is not None else {},
        seconds=round(t4 - t0, 3),
        timings={"load": round(t1 - t0, 3), "embed": round(t2 - t1, 3), "compile": round(t3 - t2, 3),
                 "write": round(t4 - t3, 3)},
        warnings=list(summariser.warnings))
