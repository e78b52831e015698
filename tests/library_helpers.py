"""Shared by the library tests: the fixture handbook as Markdown and MinerU output (same content
as tests/pdf_fixtures.py) and a snapshot of a library folder. The fake embedder is tests/fakes.py's."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakes import FakeEmbedder
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.indexing.library import DocumentLibrary


def snapshot(root: Path) -> dict[str, str]:
    """Every path under root with a content hash: equal snapshots = the library is untouched."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


# -- the PDF fixture handbook (tests/pdf_fixtures.py) as Markdown and as MinerU output -------------

LOREM = ("The parser reads spans and lines and joins them into blocks in reading order so that every "
         "paragraph ends up under the heading that introduces it in the document.")

# (page, kind, text, level) in reading order; kind: title/text/code/table/image/header/page_number
HANDBOOK = [
    (0, "header", "Fixture Handbook - Version 1.0", None),
    (0, "title", "1 Introduction", 1), (0, "text", "Welcome to the fixture handbook. " + LOREM, None),
    (0, "title", "1.1 Background", 2), (0, "text", "Background paragraph with a word in " + LOREM, None),
    (0, "title", "1.1.1 Earlier work", 3), (0, "text", "Earlier work paragraph. " + LOREM, None),
    (0, "code", "def parse(path):\n    doc = open(path)\n    return doc.blocks", None),
    (0, "title", "1.2 Scope", 2), (0, "text", "Scope paragraph. " + LOREM, None),
    (0, "page_number", "1", None),
    (1, "header", "Fixture Handbook - Version 1.0", None),
    (1, "title", "2 Methods", 1), (1, "text", "Methods paragraph. " + LOREM, None),
    (1, "title", "2.1 Data tables", 2),
    (1, "text", "Data tables paragraph introduces the measured runs below.", None),
    (1, "table", "Table 1: Parsing speed of three runs", None),
    (1, "text", "After the table the text goes on with its discussion of the runs.", None),
    (1, "title", "2.2 Figures", 2), (1, "text", "Figures paragraph shows the pattern.", None),
    (1, "image", "Figure 1: A grey test pattern", None),
    (1, "title", "2.2.1 Plot details", 3), (1, "text", "Plot details paragraph. " + LOREM, None),
    (1, "page_number", "2", None),
    (2, "title", "3 Results", 1),
    (2, "text", "Results intro spanning the full width of the page before the two columns begin. " + LOREM, None),
    (2, "title", "3.1 Left findings", 2), (2, "text", "Left column first paragraph. " + LOREM, None),
    (2, "text", "Left column second paragraph. " + LOREM, None),
    (2, "title", "3.2 Right findings", 2), (2, "text", "Right column first paragraph. " + LOREM, None),
    (2, "text", "Right column second paragraph. " + LOREM, None),
    (2, "page_number", "3", None),
]
TABLE_ROWS = [["Run", "Pages", "Seconds"], ["alpha", "311", "2.5"], ["beta", "36", "0.3"], ["gamma", "50", "0.4"]]
_HEADING_PT = {1: 18, 2: 14, 3: 11.5}
A4_H = 841.8897637795275


def handbook_content_list() -> list[dict]:
    """The handbook as MinerU 2.x-style content_list.json: bbox 0-1000, every title text_level 1
    (as MinerU's pipeline backend emits), running header and page numbers as furniture."""
    items: list[dict] = []
    y = {0: 100, 1: 100, 2: 100}
    for page, kind, text, level in HANDBOOK:
        top = y[page]
        if kind == "title":
            h = round(_HEADING_PT[level] * 1.2 / A4_H * 1000)  # box height tracks the font size
            items.append({"type": "text", "text": text, "text_level": 1, "bbox": [85, top, 600, top + h],
                          "page_idx": page})
        elif kind == "text":
            h = 15 * (1 + len(text) // 90)
            items.append({"type": "text", "text": text, "bbox": [85, top, 915, top + h], "page_idx": page})
        elif kind == "code":
            h = 40
            items.append({"type": "code", "sub_type": "code", "code_body": text, "code_caption": [],
                          "guess_lang": "python", "bbox": [106, top, 500, top + h], "page_idx": page})
        elif kind == "table":
            h = 80
            html = "<table>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in TABLE_ROWS) + "</table>"
            items.append({"type": "table", "img_path": "images/t1.jpg", "table_caption": [text], "table_footnote": [],
                          "table_body": html, "bbox": [85, top, 660, top + h], "page_idx": page})
        elif kind == "image":
            h = 130
            items.append({"type": "image", "img_path": "images/f1.jpg", "image_caption": [text], "image_footnote": [],
                          "bbox": [85, top, 355, top + h], "page_idx": page})
        elif kind == "header":
            h = 12
            items.append({"type": "header", "text": text, "bbox": [85, 40, 500, 52], "page_idx": page})
        else:
            h = 12
            items.append({"type": "page_number", "text": text, "bbox": [490, 955, 510, 967], "page_idx": page})
        y[page] = top + h + 8
    return items


def handbook_markdown() -> str:
    out: list[str] = []
    for _page, kind, text, level in HANDBOOK:
        if kind == "title":
            out.append("#" * level + " " + text)
        elif kind == "text":
            out.append(text)
        elif kind == "code":
            out.append("```python\n" + text + "\n```")
        elif kind == "table":
            out.append(text)
            out.append("\n".join(["| " + " | ".join(r) + " |" if i != 1 else "| --- | --- | --- |\n| " + " | ".join(r) + " |"
                                  for i, r in enumerate(TABLE_ROWS)]))
        elif kind == "image":
            out.append(f"![{text}](images/f1.png)")
    return "\n\n".join(out) + "\n"


# One tree-shape comparison for every parser's tests: the PDF fixture's.
from pdf_fixtures import matches_expected, tree_shape  # noqa: E402,F401

# -- one document indexed by the CLI with the fake embedder ---------------------------------------

def index_one(pdf: Path, lib: Path, monkeypatch: Any, cache: Path) -> Callable[[], Path]:
    """Index `pdf` into `lib` through the CLI (no graph, tests/fakes.py's embedder, the cache in
    `cache`); return a function giving the document's current folder (it changes with each
    refresh or re-index, so tests call it again after one)."""
    emb = FakeEmbedder()
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: emb))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(cache))
    result = CliRunner().invoke(app, ["index", str(pdf), "-i", str(lib), "--no-graph"])
    assert result.exit_code == 0, result.output

    def folder() -> Path:
        (entry,) = json.loads((lib / "library.json").read_text())["documents"].values()
        return lib / "docs" / entry["dir"]
    return folder
