"""Shared by the distributed-indexing tests: a picklable provider factory for worker processes
and Ray tasks (the fake embedder; the LLM client from the settings, provider none), and a corpus."""

from __future__ import annotations

from pathlib import Path

from fakes import FakeEmbedder
from library_helpers import handbook_markdown
from pdf_fixtures import build_handbook

from bookindex.core.config import Settings
from bookindex.indexing.parallel.worker import WorkerProviders
from bookindex.providers.llm import get_llm
from bookindex.providers.reranker import get_reranker


def fake_providers(settings: Settings) -> WorkerProviders:
    """What a worker builds with in tests: no model downloads, deterministic vectors."""
    emb = FakeEmbedder()
    reranker = get_reranker(settings, embedder=emb) if settings.graph.enabled else None
    return WorkerProviders(get_llm(settings), emb, reranker)


def small_corpus(root: Path) -> list[Path]:
    """Five small documents: two PDFs (with and without outline), Markdown and text."""
    root.mkdir(parents=True, exist_ok=True)
    files = [build_handbook(root / "handbook.pdf"), build_handbook(root / "plain.pdf", outline=False)]
    (root / "handbook.md").write_text(handbook_markdown())
    (root / "notes.txt").write_text("1 Notes\n\nSome notes about the tool and its graph.\n\n1.1 More\n\n"
                                    "Details on Ray workers and the writer.\n")
    (root / "guide.md").write_text("# Guide\n\nThe writer commits builds.\n\n## Workers\n\n"
                                   "Workers build documents in parallel with the embedder.\n")
    return files + [root / "handbook.md", root / "notes.txt", root / "guide.md"]
