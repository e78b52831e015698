"""Copy a library (or several, pooled into one) with its documents renamed to meaningless names,
and/or with each document's identity read from its source file: the set-up for measuring routing
that cannot lean on file names.

    python scripts/rename_library.py /tmp/idx-financebench-dev /tmp/idx-fb-renamed --rename --identity \
        --data ../shared/data/financebench-dev --data-out /tmp/fb-renamed-data

- `--rename`: every document becomes `document-NNN.pdf` (a seeded shuffle, so the number says
  nothing either), in the catalog, the manifest, and the tree's root title where that was the file
  name. With `--data`, the split's questions.json is written to `--data-out` with the new names.
- `--identity`: parse each document's source again (parsing only: no embedding, no graph) and
  store what its cover says (`parsing.identity`) in its manifest, as a build today does. A library
  built before the identity existed is thus measured as if rebuilt, in a minute instead of hours.

    python scripts/rename_library.py /tmp/idx-mml-after /tmp/idx-mmlongbench-dev2 /tmp/idx-mml44 --identity

Several sources are pooled into one library (their documents side by side, as one `library.json`);
a document held by two of them is kept once. The source libraries are only read. Prints and saves the name mapping as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

from bookindex.core.config import load_settings
from bookindex.parsing.dispatch import parse_file
from bookindex.parsing.identity import identify


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path, nargs="+", help="library folder(s) (read only), then the new library folder")
    ap.add_argument("--rename", action="store_true", help="rename documents to document-NNN.pdf")
    ap.add_argument("--identity", action="store_true", help="read each document's identity from its source")
    ap.add_argument("--data", type=Path, action="append",
                    help="split folder whose questions.json names the documents (repeat for pooled splits)")
    ap.add_argument("--data-out", type=Path, help="where the renamed questions.json goes (with --data)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if len(args.src) < 2:
        ap.error("give the source library folder(s) and then the new library folder")
    *sources, args.dst = args.src
    for src in sources:
        if not (src / "library.json").is_file():
            print(f"{src}: not a library (no library.json)", file=sys.stderr)
            return 2
    if args.dst.exists():
        print(f"{args.dst}: exists; choose a new folder", file=sys.stderr)
        return 2
    if args.data and not args.data_out:
        print("--data needs --data-out", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix=args.dst.name + ".", dir=args.dst.parent))
    try:
        pool(sources, tmp)
        mapping = rewrite(tmp, rename=args.rename, identity=args.identity, seed=args.seed)
        tmp.rename(args.dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if args.data:
        questions = [q for data in args.data for q in json.loads((data / "questions.json").read_text())]
        for q in questions:
            q["doc_id"] = mapping.get(q["doc_id"], q["doc_id"])
        args.data_out.mkdir(parents=True, exist_ok=True)
        (args.data_out / "questions.json").write_text(json.dumps(questions, indent=1))
    (args.dst / "renamed.json").write_text(json.dumps(mapping, indent=1))
    print(json.dumps(mapping, indent=1))
    return 0


def pool(sources: list[Path], dst: Path) -> None:
    """Copy the libraries' document folders into `dst` under one catalog (the first's header)."""
    catalog: dict[str, object] = {}
    documents: dict[str, object] = {}
    for src in sources:
        data = json.loads((src / "library.json").read_text())
        catalog = catalog or data
        for doc_id, entry in data["documents"].items():
            if doc_id in documents:
                continue
            documents[doc_id] = entry
            shutil.copytree(src / "docs" / entry["dir"], dst / "docs" / entry["dir"])
    (dst / "library.json").write_text(json.dumps({**catalog, "documents": documents}, indent=1))


def rewrite(lib: Path, *, rename: bool, identity: bool, seed: int) -> dict[str, str]:
    """Rename and/or add identities in the library at `lib`, in place; return old -> new names."""
    catalog_path = lib / "library.json"
    catalog = json.loads(catalog_path.read_text())
    entries = catalog["documents"]
    order = sorted(entries)
    random.Random(seed).shuffle(order)
    settings = load_settings(overrides={"llm.provider": "none"}, env={})
    mapping: dict[str, str] = {}
    for k, doc_id in enumerate(order):
        entry = entries[doc_id]
        folder = lib / "docs" / entry["dir"]
        manifest = json.loads((folder / "manifest.json").read_text())
        old = entry["name"]
        if identity:
            with tempfile.TemporaryDirectory() as work:
                parsed = parse_file(Path(manifest["source"]), settings, image_dir=Path(work) / "img",
                                    work_dir=Path(work) / "parse")
            manifest["identity"] = identify(parsed.blocks).to_dict()
            print(f"{old}: {manifest['identity']}", file=sys.stderr, flush=True)
        if rename:
            new = f"document-{k:03d}{Path(old).suffix}"
            mapping[old] = new
            entry["name"] = manifest["name"] = new
            tree_path = folder / "tree.json"
            tree = json.loads(tree_path.read_text())
            if tree.get("name") == old:
                tree["name"] = new
            for node in tree["nodes"] if isinstance(tree.get("nodes"), list) else []:
                if node.get("type") == "document" and node.get("title") == old:
                    node["title"] = new
            tree_path.write_text(json.dumps(tree))
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    catalog_path.write_text(json.dumps(catalog, indent=1))
    return mapping


if __name__ == "__main__":
    sys.exit(main())
