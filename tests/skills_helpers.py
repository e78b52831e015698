"""A small skill folder written by hand, as the compiler would (model.py's on-disk contract):
two skills, four leaf groups, eight documents, SKILL.md / INDEX.md stubs, FakeEmbedder vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bookindex.skills.model import (
    BuildParams,
    Cluster,
    CorpusDocument,
    DocumentEntry,
    SkillTree,
    TreeVectors,
    save_documents,
    save_tree,
    save_vectors,
)

DOCS = {
    "d1": ("Sourdough bread", "bake sourdough bread with flour water salt and a starter in the oven"),
    "d2": ("Chocolate cake", "bake a chocolate cake with cocoa sugar eggs flour in the oven"),
    "d3": ("Tomato soup", "simmer tomato soup with onion garlic basil in a pot"),
    "d4": ("Miso soup", "simmer miso soup with tofu seaweed dashi in a pot"),
    "d5": ("Saturn V rocket", "the saturn rocket engine burned kerosene to launch apollo to orbit"),
    "d6": ("Falcon rocket", "the falcon rocket engine lands its booster after launch to orbit"),
    "d7": ("Mars planet", "mars is a red planet with iron dust and a thin atmosphere"),
    "d8": ("Jupiter planet", "jupiter is a gas giant planet with a great red storm and many moons"),
}
# (id, level, label, path, summary, children, documents, parent)
CLUSTERS = [
    ("L2-C00", 2, "cooking", "skill-01-cooking", "cooking recipes bake bread cake simmer soup", ["L1-C00", "L1-C01"], [], None),
    ("L2-C01", 2, "space", "skill-02-space", "space rocket launch orbit planet mars jupiter", ["L1-C02", "L1-C03"], [], None),
    ("L1-C00", 1, "baking", "skill-01-cooking/group-00-baking", "bake bread cake flour oven", [], ["d1", "d2"], "L2-C00"),
    ("L1-C01", 1, "soups", "skill-01-cooking/group-01-soups", "simmer soup pot tomato miso", [], ["d3", "d4"], "L2-C00"),
    ("L1-C02", 1, "rockets", "skill-02-space/group-00-rockets", "rocket engine launch orbit booster", [], ["d5", "d6"], "L2-C01"),
    ("L1-C03", 1, "planets", "skill-02-space/group-01-planets", "planet mars jupiter red storm", [], ["d7", "d8"], "L2-C01"),
]


def build_skill_folder(folder: Path, embedder) -> Path:  # type: ignore[no-untyped-def]
    folder.mkdir(parents=True, exist_ok=True)
    clusters = {}
    for cid, level, label, path, summary, children, docs, parent in CLUSTERS:
        n = len(docs) or 2 * len(children)
        clusters[cid] = Cluster(cid, level, label, path, summary, summary, list(children), list(docs), n, parent)
        (folder / path).mkdir(parents=True, exist_ok=True)
        name = "SKILL.md" if parent is None else "INDEX.md"
        front = f"---\nname: {path.split('/')[-1]}\ndescription: {summary}\nlevel: {level}\nnum_documents: {n}\n---\n"
        if children:
            body = "## Contents\n### Sub-groups (directories)\n" + "".join(
                f"- {dict((c[0], c[3]) for c in CLUSTERS)[ch].split('/')[-1]}/\n" for ch in children)
        else:
            body = f"### Documents ({len(docs)} items)\n" + "".join(f"- `{d}`: {DOCS[d][0]}\n" for d in docs)
            body += "Use get_document with the doc_id to read a document.\n"
        (folder / path / name).write_text(front + body, encoding="utf-8")
    entries = {d: DocumentEntry(DOCS[d][0], DOCS[d][1][:40], cid)
               for cid, *_rest in CLUSTERS for d in clusters[cid].documents}
    tree = SkillTree(roots=["L2-C00", "L2-C01"], clusters=clusters, documents=entries,
                     params=BuildParams(branching=2, top=2, min_size=1, embedder=embedder.name))
    ids = sorted(DOCS)
    doc_vecs = np.asarray(embedder.encode([f"{DOCS[d][0]}\n{DOCS[d][1]}" for d in ids]), dtype=np.float32)
    cids = [c[0] for c in CLUSTERS]
    cl_vecs = np.asarray(embedder.encode([c[4] for c in CLUSTERS]), dtype=np.float32)
    save_vectors(folder, TreeVectors(ids, doc_vecs, cids, cl_vecs))
    save_documents(folder, {d: CorpusDocument(d, t, x, "test") for d, (t, x) in DOCS.items()})
    save_tree(folder, tree)
    return folder
