"""One entry point for questions to a skill folder: the LLM agent, the beam, or a flat method.

`ask` is what `Engine.skills_ask` calls; `search` is what the corpus evaluation calls for every
method it compares (the flat baselines, RAPTOR, the beam and the agent), so they all return the
same `SkillsAnswer` and are scored alike.
"""

from __future__ import annotations

from bookindex.core.errors import InputError, LLMUnavailable
from bookindex.core.protocols import LLM, Embedder
from bookindex.skills.navigator.agent import navigate
from bookindex.skills.navigator.answer import SkillsAnswer, SkillsAskRequest
from bookindex.skills.navigator.beam import beam_search
from bookindex.skills.navigator.document_tools import DocumentTools
from bookindex.skills.navigator.flat import FLAT_METHODS, flat_search
from bookindex.skills.navigator.opened import OpenedSkills

# skills-llm-plain: the LLM navigator without the embedding guide (the paper's agent), for comparison
SEARCH_METHODS = tuple(FLAT_METHODS) + ("skills-embedding", "skills-llm", "skills-llm-plain")


def ask(opened: OpenedSkills, request: SkillsAskRequest, *, llm: LLM, embedder: Embedder,
        library: DocumentTools | None = None) -> SkillsAnswer:
    """Answer (LLM) or rank documents (embedding) for one question; `library`: the LLM
    navigator's tools at a document of a library hierarchy."""
    if request.navigator == "embedding":
        return beam_search(opened, embedder, request.question, k=request.k, beam=request.beam, route=request.route,
                           rank=request.rank)
    if not llm.available:
        raise LLMUnavailable("the llm navigator needs an LLM (llm.provider = none); "
                             "use --navigator embedding to navigate without one")
    return navigate(opened, llm, request.question, max_rounds=request.max_rounds, protocol=request.protocol,
                    library=library, embedder=embedder, guided=request.guided)


def search(opened: OpenedSkills, question: str, method: str, *, k: int, llm: LLM, embedder: Embedder,
           beam: int | None = None, max_rounds: int = 10) -> SkillsAnswer:
    """The documents one method returns for a question (`SEARCH_METHODS`)."""
    if method in FLAT_METHODS:
        return flat_search(opened, embedder, question, method, k)
    if method == "skills-embedding":
        return beam_search(opened, embedder, question, k=k, beam=beam)
    if method in ("skills-llm", "skills-llm-plain"):
        return ask(opened, SkillsAskRequest(folder=str(opened.folder), question=question, navigator="llm",
                                            max_rounds=max_rounds, guided=method == "skills-llm"),
                   llm=llm, embedder=embedder)
    raise InputError(f"--method: unknown corpus method {method!r}; choose from {', '.join(SEARCH_METHODS)}")
