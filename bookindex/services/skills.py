"""Compiled skill folders (Corpus2Skill): build, add, remove, view, and questions to them.

A skill folder is opened once per process and re-read when its skills.json changes. For a
library hierarchy (`skills build LIB --documents`) whose library this process holds, the LLM
navigator also gets the document tools (search_document, get_node, get_pages) over
`LibraryDocuments`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError
from bookindex.core.events import Events
from bookindex.core.protocols import LLM, Embedder
from bookindex.services.documents import DocumentCache
from bookindex.services.library_access import LibraryDocuments
from bookindex.services.providers import ProviderSet
from bookindex.skills.compiler import build as skills_build
from bookindex.skills.compiler import hierarchy as skills_hierarchy
from bookindex.skills.compiler import update as skills_update
from bookindex.skills.compiler.requests import (
    SkillsAddRequest,
    SkillsBuildReport,
    SkillsBuildRequest,
    SkillsRemoveRequest,
    SkillsTreeView,
    SkillsUpdateReport,
)
from bookindex.skills.compiler.treeview import tree_view
from bookindex.skills.model import Hierarchy, is_hierarchy, load_hierarchy, load_tree
from bookindex.skills.navigator import navigate as skills_navigate
from bookindex.skills.navigator.answer import SkillsAnswer, SkillsAskRequest
from bookindex.skills.navigator.document_tools import DocumentTools
from bookindex.skills.navigator.opened import OpenedSkills
from bookindex.skills.navigator.tool_result import ToolResult

LibraryIds = Callable[[], set[str] | None]  # the doc ids of the library this process holds, None without one


class SkillsService:
    """Skill folders of one process: opened once each, built and updated with its providers."""

    def __init__(self, providers: ProviderSet, cache: DocumentCache, library_ids: LibraryIds,
                 documents: LibraryDocuments) -> None:
        self.providers = providers
        self._cache = cache
        self._library_ids = library_ids
        self._documents = documents

    # -- reading ----------------------------------------------------------------------------
    def open(self, folder: str | Path) -> OpenedSkills:
        """A skill folder opened once (re-read when its skills.json changes)."""
        return self._cache.skill_folder(folder)

    def tree(self, folder: str | Path) -> SkillsTreeView:
        """The hierarchy of a skill folder: labels, paths, counts, descriptions."""
        return tree_view(folder)

    def view(self, folder: str | Path, path: str) -> ToolResult:
        """What the navigator's `view` tool shows: a folder's listing with its navigation file, or
        a file's text (paths relative to the skill root; InputError for one that leaves it)."""
        return self.open(folder).tools.view(path)

    def document(self, folder: str | Path, doc_id: str) -> ToolResult:
        """What the navigator's `get_document` tool returns: a document's title and text."""
        return self.open(folder).tools.get_document(doc_id)

    def hierarchy(self, opened: OpenedSkills) -> Hierarchy:
        """A library hierarchy's map, checked against this process's library (InputError when it
        holds documents the library does not)."""
        hier = load_hierarchy(opened.folder)
        known = self._library_ids() or set()
        missing = sorted(set(hier.documents) - known)
        if missing:
            raise InputError(f"{opened.folder}: built from documents this library does not hold "
                             f"({', '.join(missing[:3])}); rebuild it with `bookindex skills build LIB --documents`")
        return hier

    def library_tools(self, folder: str | Path) -> DocumentTools | None:
        """The LLM navigator's tools at a document (search_document, get_node, get_pages) when
        `folder` is a library hierarchy and this process holds its library; None otherwise."""
        opened = self.open(folder)
        if not is_hierarchy(opened.folder) or self._library_ids() is None:
            return None
        return DocumentTools(self._documents, self.hierarchy(opened))

    # -- questions ----------------------------------------------------------------------------
    def ask(self, request: SkillsAskRequest | str, **fields: Any) -> SkillsAnswer:
        """Navigate a skill folder: `--navigator llm` answers citing documents it read,
        `embedding` (no LLM) ranks documents by beam search down the tree."""
        req = request if isinstance(request, SkillsAskRequest) else SkillsAskRequest(question=request, **fields)
        opened = self.open(req.folder)
        library = self.library_tools(opened.folder) if req.navigator == "llm" else None
        ans = skills_navigate.ask(opened, req, llm=self.providers.llm, embedder=self.providers.embedder, library=library)
        if req.navigator == "llm" and library is None and is_hierarchy(opened.folder):
            ans.notes.append("a library hierarchy without its library: search_document, get_node and get_pages "
                             "were not offered (open the Engine on the library, or `skills ask DIR -i LIB`)")
        return ans

    def search(self, folder: str | Path, question: str, method: str, k: int = 10,
               beam: int | None = None, max_rounds: int = 10) -> SkillsAnswer:
        """The documents a corpus method returns (bm25, dense, hybrid, raptor, skills-embedding,
        skills-llm, skills-llm-plain): what the corpus evaluation compares."""
        return skills_navigate.search(self.open(folder), question, method, k=k, llm=self.providers.llm,
                                      embedder=self.providers.embedder, beam=beam, max_rounds=max_rounds)

    # -- compiling ----------------------------------------------------------------------------
    def build(self, request: SkillsBuildRequest, *, on_event: Events | None = None,
              progress: bool = False) -> SkillsBuildReport:
        """Compile files, folders or libraries into a skill folder (written whole, then renamed in);
        `documents=True`: libraries into one hierarchy whose leaves hold each document's skill."""
        if request.documents:
            return skills_hierarchy.build(request, self.providers.embedder, self._summary_llm(request.no_llm),
                                          on_event=on_event, progress=progress)
        return skills_build.build(request, self.providers.corpus_embedder(), self._summary_llm(request.no_llm),
                                  on_event=on_event, progress=progress)

    def add(self, request: SkillsAddRequest) -> SkillsUpdateReport:
        """Add documents to a skill folder: nearest leaf, only touched clusters re-summarised."""
        _not_a_hierarchy(request.folder)
        return skills_update.add(request, self._tree_embedder(request.folder), self._summary_llm(request.no_llm))

    def remove(self, request: SkillsRemoveRequest) -> SkillsUpdateReport:
        """Remove documents by id from a skill folder; empty clusters are dropped."""
        _not_a_hierarchy(request.folder)
        return skills_update.remove(request, self._tree_embedder(request.folder), self._summary_llm(request.no_llm))

    def _summary_llm(self, no_llm: bool) -> LLM | None:
        """The LLM for summaries, or None for the extractive (no-LLM) path."""
        return None if no_llm else self.providers.llm

    def _tree_embedder(self, folder: str | Path) -> Embedder:
        """The corpus embedder a skill folder was built with (an add must embed like its build)."""
        params = load_tree(folder).params
        return self.providers.corpus_embedder(int8=params.doc_int8, tokens=params.doc_tokens)


def _not_a_hierarchy(folder: str) -> None:
    """`skills add/remove` rewrite a topic tree without document skills: refused for a hierarchy."""
    if is_hierarchy(folder):
        raise InputError(f"{folder}: a library hierarchy is kept current by re-running `bookindex skills build LIB "
                         "--documents -o DIR` (only re-indexed documents are rendered); add or remove documents in the library")
