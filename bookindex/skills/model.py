"""The skill tree as data: what the compiler writes and the navigators read.

A skill folder holds
- `SKILL.md` / `INDEX.md` files (for agents; see `materialise`),
- `skills.json`: this module's `SkillTree` (clusters, their paths, summaries and members),
- `vectors.npz`: document and cluster-summary embeddings (the no-LLM navigator and incremental
  updates need them; `doc_ids`/`doc_vectors`, `cluster_ids`/`cluster_vectors`, float32, L2-normed),
- the document store: `documents.json` (`{doc_id: {"title", "text", "source"}}`, as in the paper),
- for a library hierarchy (`skills build LIB --documents`), `hierarchy.json`: this module's
  `Hierarchy`, where each document's own skill folder and its sections' folders sit.

The compiler (`skills.compiler`) writes these files and the navigators (`skills.navigator`) read
them; this module is all the two share.

Plain dataclasses and JSON on purpose: a tree must be byte-identical for the same corpus and
seed, and diffable by a person.
"""

from __future__ import annotations

import bisect
import io
import json
import zipfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bookindex.core.atomic import atomic_open, write_json_atomic
from bookindex.core.errors import InputError

FORMAT = "bookindex-skills/1"
TREE_FILE = "skills.json"
VECTORS_FILE = "vectors.npz"
DOCUMENTS_FILE = "documents.json"
HIERARCHY_FILE = "hierarchy.json"
HIERARCHY_FORMAT = "bookindex-hierarchy/1"


@dataclass
class CorpusDocument:
    """One document of a corpus: what `get_document` returns."""

    id: str
    title: str
    text: str
    source: str = ""  # the file (and line) it came from, for error messages and provenance


@dataclass
class Cluster:
    """One node of the hierarchy. Level 1 clusters are leaves and hold documents; higher levels
    hold child clusters. Roots are the top level and become `skill-NN-label/` folders."""

    id: str                     # stable within a tree, e.g. "L2-C03"
    level: int                  # 1 = leaf
    label: str                  # 2-5 words from the LLM, or key terms without one
    path: str                   # folder relative to the skill root, e.g. "skill-01-x/group-00-y"
    summary: str                # overview paragraph: topic, questions answered, key terms
    description: str            # one line for the parent's listing / YAML (<= 1024 chars)
    children: list[str] = field(default_factory=list)   # cluster ids (internal clusters)
    documents: list[str] = field(default_factory=list)  # document ids (leaves)
    num_documents: int = 0
    parent: str | None = None
    summary_size: int = 0       # num_documents when `summary` was written (incremental updates
                                # re-summarise a cluster once its size drifts from this)
    also: list[str] = field(default_factory=list)  # leaves: documents homed in another leaf but
                                # near this one's centroid, listed here too (soft membership)


@dataclass
class DocumentEntry:
    """What a leaf listing says of a document, and where it hangs."""

    title: str
    line: str          # one-line summary
    cluster: str       # id of its leaf cluster


@dataclass
class BuildParams:
    branching: int = 10
    top: int = 8
    min_size: int = 3
    seed: int = 0
    compact: bool = False
    embed_chars: int = 2000
    embedder: str = ""
    llm: str = ""       # model name, "" when built without an LLM
    doc_int8: bool = False  # documents embedded by the int8 copy of `embedder` (an add must match)
    doc_tokens: int = 0     # their truncation in tokens (0: the model's own limit)
    soft: int = 0           # soft membership: other leaves a document is also listed in (at most)
    soft_margin: float = 0.0  # ... when their centroid is within this cosine of its own leaf's


@dataclass
class SkillTree:
    roots: list[str]
    clusters: dict[str, Cluster]
    documents: dict[str, DocumentEntry]
    params: BuildParams = field(default_factory=BuildParams)
    format: str = FORMAT

    def cluster(self, cluster_id: str) -> Cluster:
        try:
            return self.clusters[cluster_id]
        except KeyError:
            raise InputError(f"no cluster {cluster_id!r} in this skill tree") from None

    def leaves(self) -> list[Cluster]:
        return [c for c in self.clusters.values() if not c.children]

    def ancestors(self, cluster_id: str) -> list[Cluster]:
        """From the cluster itself up to its root."""
        out: list[Cluster] = []
        cur: str | None = cluster_id
        while cur is not None:
            c = self.cluster(cur)
            out.append(c)
            cur = c.parent
        return out

    def recount(self) -> None:
        """Every cluster's `num_documents` from its membership (a leaf's documents, the sum of a
        group's children): the one count its frontmatter, its parent's listing and the navigator
        show, set again before every write."""
        done: dict[str, int] = {}

        def count(cid: str) -> int:
            if cid not in done:
                c = self.clusters[cid]
                done[cid] = len(c.documents) if not c.children else sum(count(k) for k in c.children)
                c.num_documents = done[cid]
            return done[cid]

        for cid in sorted(self.clusters):
            count(cid)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "params": asdict(self.params),
            "roots": list(self.roots),
            "clusters": {k: asdict(v) for k, v in sorted(self.clusters.items())},
            "documents": {k: asdict(v) for k, v in sorted(self.documents.items())},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SkillTree:
        return cls(
            roots=list(data["roots"]),
            clusters={k: Cluster(**v) for k, v in data["clusters"].items()},
            documents={k: DocumentEntry(**v) for k, v in data["documents"].items()},
            params=BuildParams(**data.get("params", {})),
            format=data.get("format", FORMAT),
        )


# -- short document ids: what listings show (documents.json keeps the full ids) -------------------
SHORT_ID_KEEP = 12   # an id this long or shorter is shown whole
SHORT_ID_MIN = 8     # a longer one by a prefix of at least this many characters


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """Each id's listing form: ids of up to `SHORT_ID_KEEP` characters whole, longer ones (content
    hashes of 64 hex digits) by their shortest prefix of at least `SHORT_ID_MIN` characters that
    no other id of the tree starts with. A prefix grows only when another id shares it, so a
    short id is stable while its neighbours in sort order stay; it is a pure function of the id
    set, so adding a document and removing it again gives back the same listings."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for i, d in enumerate(ordered):
        if len(d) <= SHORT_ID_KEEP:
            out[d] = d
            continue
        need = SHORT_ID_MIN  # sorted neighbours share the longest prefixes with d
        for j in (i - 1, i + 1):
            if 0 <= j < len(ordered):
                need = max(need, _common_prefix(d, ordered[j]) + 1)
        out[d] = d[:need] if need < len(d) else d
    return out


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class DocIds:
    """A tree's document ids with their short forms: `short(id)` for listings, `resolve(text)`
    for what an agent or a user passes back (a full id, a short id, or a longer unique prefix)."""

    def __init__(self, ids: Iterable[str]) -> None:
        self._short = short_ids(ids)
        self._by_short = {s: d for d, s in self._short.items()}
        self._sorted = sorted(self._short)

    def short(self, doc_id: str) -> str:
        return self._short.get(doc_id, doc_id)

    def resolve(self, text: str) -> str | None:
        """The full id `text` names, or None (unknown, or a prefix shared by several ids)."""
        key = (text or "").strip().strip("`'\"[]")
        if key in self._short:
            return key
        if key in self._by_short:
            return self._by_short[key]
        if len(key) < SHORT_ID_MIN:
            return None
        i = bisect.bisect_left(self._sorted, key)
        hits = [d for d in self._sorted[i:i + 2] if d.startswith(key)]
        return hits[0] if len(hits) == 1 else None


def is_skill_dir(folder: str | Path) -> bool:
    return (Path(folder) / TREE_FILE).is_file()


def load_tree(folder: str | Path) -> SkillTree:
    """Read `skills.json`; a clear InputError when the folder is not a skill tree."""
    path = Path(folder) / TREE_FILE
    if not path.is_file():
        raise InputError(f"{folder}: not a skill tree (no {TREE_FILE}); build one with `bookindex skills build`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise InputError(f"{path}: unknown format {data.get('format')!r}, expected {FORMAT!r}")
        return SkillTree.from_json(data)
    except InputError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: damaged skill tree ({exc})") from None


def save_tree(folder: str | Path, tree: SkillTree) -> None:
    write_json_atomic(Path(folder) / TREE_FILE, tree.to_json())


@dataclass
class TreeVectors:
    doc_ids: list[str]
    doc_vectors: np.ndarray       # (n_docs, dim) float32, L2-normalised
    cluster_ids: list[str]
    cluster_vectors: np.ndarray   # (n_clusters, dim) embeddings of the cluster summaries


def load_vectors(folder: str | Path) -> TreeVectors:
    path = Path(folder) / VECTORS_FILE
    if not path.is_file():
        raise InputError(f"{folder}: not a skill tree (no {VECTORS_FILE})")
    with np.load(path, allow_pickle=False) as z:
        return TreeVectors([str(x) for x in z["doc_ids"]], z["doc_vectors"].astype(np.float32),
                           [str(x) for x in z["cluster_ids"]], z["cluster_vectors"].astype(np.float32))


def save_vectors(folder: str | Path, vectors: TreeVectors) -> None:
    """An .npz (np.load reads it) written with fixed zip timestamps: `np.savez` stamps each member
    with the current time, which would make two builds of the same corpus differ byte-wise."""
    arrays = {"doc_ids": np.array(vectors.doc_ids, dtype=str),
              "doc_vectors": vectors.doc_vectors.astype(np.float32),
              "cluster_ids": np.array(vectors.cluster_ids, dtype=str),
              "cluster_vectors": vectors.cluster_vectors.astype(np.float32)}
    with atomic_open(Path(folder) / VECTORS_FILE, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue())


def load_documents(folder: str | Path) -> dict[str, CorpusDocument]:
    path = Path(folder) / DOCUMENTS_FILE
    if not path.is_file():
        raise InputError(f"{folder}: not a skill tree (no {DOCUMENTS_FILE})")
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: CorpusDocument(id=k, title=v.get("title", ""), text=v.get("text", ""), source=v.get("source", ""))
            for k, v in data.items()}


def save_documents(folder: str | Path, docs: dict[str, CorpusDocument]) -> None:
    write_json_atomic(Path(folder) / DOCUMENTS_FILE,
                      {k: {"title": d.title, "text": d.text, "source": d.source} for k, d in sorted(docs.items())})


# -- a library hierarchy (`skills build LIB --documents`): where each document's skill sits ----
@dataclass
class HierDocument:
    """Where one document's skill sits in the tree, and what it was rendered from."""

    name: str
    pages: int
    path: str                          # the document's skill folder, relative to the root
    hash: str
    library: str                       # the library folder it was read from
    sections: dict[str, str] = field(default_factory=dict)   # node id -> folder relative to `path`


@dataclass
class Hierarchy:
    documents: dict[str, HierDocument]
    format: str = HIERARCHY_FORMAT

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "documents": {k: asdict(v) for k, v in sorted(self.documents.items())}}

    def document(self, doc_id: str) -> HierDocument:
        try:
            return self.documents[doc_id]
        except KeyError:
            raise InputError(f"no document {doc_id!r} in this hierarchy") from None


def is_hierarchy(folder: str | Path) -> bool:
    return (Path(folder) / HIERARCHY_FILE).is_file()


def load_hierarchy(folder: str | Path) -> Hierarchy:
    path = Path(folder) / HIERARCHY_FILE
    if not path.is_file():
        raise InputError(f"{folder}: not a library hierarchy (no {HIERARCHY_FILE}); build one with "
                         "`bookindex skills build LIB --documents -o DIR`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != HIERARCHY_FORMAT:
            raise InputError(f"{path}: unknown format {data.get('format')!r}, expected {HIERARCHY_FORMAT!r}")
        return Hierarchy({k: HierDocument(**v) for k, v in data["documents"].items()})
    except InputError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: damaged hierarchy ({exc})") from None
