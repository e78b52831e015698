"""REST routes over the compiled skill folders (Corpus2Skill) a server is started with
(`bookindex serve LIB --skills DIR`): the hierarchy, the navigator's two tools (`view`,
`get_document`) for an agent or a person walking the tree over HTTP, and questions answered by
the embedding navigator (no LLM) or the LLM navigator.

A skill folder is addressed by its folder name, which must be one the server was started with:
no request string ever becomes a path here (the `view` path is resolved inside the skill root by
the skill tools, which refuse anything that leaves it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from bookindex.engine import Engine
from bookindex.server.problem import Problem
from bookindex.skills.compiler.requests import SkillsTreeView
from bookindex.skills.navigator.answer import SkillsAnswer, SkillsAskRequest


class SkillFolder(BaseModel):
    name: str
    documents: int
    clusters: int
    roots: int


class SkillText(BaseModel):
    target: str  # the normalised path, or the document id
    text: str


class SkillsQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    navigator: Literal["embedding", "llm"] = "embedding"
    k: int = Field(10, ge=1, le=100)


def install(api: FastAPI, engine: Callable[[], Engine], folders: dict[str, Path], tags: list[str | Any]) -> None:
    """Add the /skills routes for `folders` (with none, `GET /skills` lists none)."""
    def folder(name: str) -> Path:
        if name not in folders:
            raise Problem(404, f"no skill folder {name!r}; this server serves {', '.join(sorted(folders))}")
        return folders[name]

    @api.get("/skills", response_model=list[SkillFolder], tags=tags)
    def list_skills() -> list[SkillFolder]:
        """The skill folders this server serves, by name."""
        out = []
        for name, path in sorted(folders.items()):
            opened = engine().skills.open(path)
            out.append(SkillFolder(name=name, documents=len(opened.documents), clusters=len(opened.tree.clusters),
                                   roots=len(opened.tree.roots)))
        return out

    @api.get("/skills/{name}/tree", response_model=SkillsTreeView, tags=tags)
    def skills_tree(name: str) -> SkillsTreeView:
        """The hierarchy: every cluster's label, path, level, document count and description."""
        return engine().skills.tree(folder(name))

    @api.get("/skills/{name}/view", response_model=SkillText, tags=tags)
    def skills_view(name: str, path: str = "") -> SkillText:
        """The navigator's `view`: a folder's listing (with its SKILL.md / INDEX.md) or a file."""
        result = engine().skills.view(folder(name), path)
        return SkillText(target=result.target, text=result.text)

    @api.get("/skills/{name}/documents/{doc_id}", response_model=SkillText, tags=tags)
    def skills_document(name: str, doc_id: str) -> SkillText:
        """The navigator's `get_document`: a document's title and text (ids are listed in leaf INDEX.md files)."""
        result = engine().skills.document(folder(name), doc_id)
        return SkillText(target=result.target, text=result.text)

    @api.post("/skills/{name}/ask", response_model=SkillsAnswer, tags=tags)
    def skills_ask(name: str, body: SkillsQuestion) -> SkillsAnswer:
        """Navigate the tree: `embedding` ranks documents by beam search (no LLM), `llm` lets the
        configured model walk it with view / get_document and answer citing what it read."""
        req = SkillsAskRequest(folder=str(folder(name)), question=body.question, navigator=body.navigator, k=body.k)
        return engine().skills.ask(req)
