"""Markdown and plain-text parsing into section trees."""

from __future__ import annotations

import pytest

from bookindex.core.config import load_settings
from bookindex.core.errors import InputError
from bookindex.parsing.dispatch import parse_file, sniff, to_tree
from bookindex.parsing.markdown import parse_markdown, parse_text

HANDBOOK_MD = """\
---
title: Fixture Handbook
---
Fixture Handbook
================

1 Introduction
--------------

The quick brown fox jumps over the lazy dog.
It keeps jumping.

### 1.1 Scope

Scope text with **bold** and a [link](http://x).

#### 1.1.1 Details

- first item
- second item
  - nested item

Table 1: Parts list

| Item | Qty |
|------|----:|
| bolt | 3 |
| nut  | 6 |

## 2 Usage

```sh
tool --run
```

![Figure 1: Architecture](img/arch.png)

    indented code

> A quoted note.

$$
E = mc^2
$$

# Appendix A Licence

Text of the licence.
"""


def tree_of(text: str):
    s = load_settings(env={})
    return to_tree(parse_markdown(text), "md0", "handbook.md", s)


def test_headings_atx_and_setext_with_dense_levels():
    p = parse_markdown(HANDBOOK_MD)
    assert p.levels_final and p.parser == "markdown" and p.page_count == 1
    titles = [(b.content, b.level, b.extra["style"]) for b in p.blocks if b.type == "title"]
    assert titles == [
        ("Fixture Handbook", 1, "setext"), ("1 Introduction", 2, "setext"), ("1.1 Scope", 3, "atx"),
        ("1.1.1 Details", 4, "atx"), ("2 Usage", 2, "atx"), ("Appendix A Licence", 1, "atx"),
    ]
    assert p.meta["front_matter"] == {"title": "Fixture Handbook"}


def test_leaf_blocks():
    p = parse_markdown(HANDBOOK_MD)
    kinds = [b.type for b in p.blocks if b.type != "title"]
    assert kinds == ["text", "text", "list", "table", "code", "image", "code", "text", "equation", "text"]
    text = [b for b in p.blocks if b.type == "text"]
    assert text[0].content == "The quick brown fox jumps over the lazy dog. It keeps jumping."
    assert text[1].content == "Scope text with bold and a link."
    lst = next(b for b in p.blocks if b.type == "list")
    assert lst.content == "- first item\n- second item\n  - nested item"
    table = next(b for b in p.blocks if b.type == "table")
    assert table.extra["caption"] == "Table 1: Parts list"
    assert table.extra["markdown"].splitlines()[0] == "| Item | Qty |"
    assert "<td>bolt</td>" in table.extra["html"] and table.extra["rows"] == 3
    assert table.content.startswith("| Item | Qty |")  # caption in extra, as the PDF parser does
    code = [b for b in p.blocks if b.type == "code"]
    assert code[0].content == "tool --run" and code[0].extra["language"] == "sh"
    assert code[1].content == "indented code"
    img = next(b for b in p.blocks if b.type == "image")
    assert img.extra["caption"] == "Figure 1: Architecture" and img.extra["image_ref"] == "img/arch.png"
    eq = next(b for b in p.blocks if b.type == "equation")
    assert eq.content == "E = mc^2"
    assert all(b.page_idx == 0 and "lines" in b.extra for b in p.blocks)
    assert table.extra["lines"] == [25, 28]  # 1-based source lines of the pipe table


def test_tree_nesting():
    t = tree_of(HANDBOOK_MD)
    top = [t[c] for c in t.root.children]
    assert [(n.type, n.title) for n in top] == [("section", "Fixture Handbook"), ("section", "Appendix A Licence")]
    intro = t.find_section("1 Introduction")
    assert [t[c].type for c in intro.children] == ["text", "section"]
    details = t.find_section("1.1.1 Details")
    assert [t[c].type for c in details.children] == ["list", "table"]
    assert [p.title for p in t.parent_path(details)] == ["handbook.md", "Fixture Handbook", "1 Introduction", "1.1 Scope"]
    usage = t.find_section("2 Usage")
    assert usage.parent == t.find_section("Fixture Handbook").id
    assert [n.title for n in t.sections(depth=2)] == ["1 Introduction", "2 Usage"]


def test_caption_before_table_or_after_image_only():
    p = parse_markdown("Intro.\n\n| a |\n|---|\n| 1 |\n\nTable 2: After the table\n")
    table = p.blocks[1]
    assert table.extra["caption"] == "Table 2: After the table" and len(p.blocks) == 2
    p = parse_markdown("Table 9: not next to a table\n\nSome text.\n")
    assert [b.type for b in p.blocks] == ["text", "text"]


def test_html_table_block():
    p = parse_markdown("<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>\n")
    assert p.blocks[0].type == "table"
    assert p.blocks[0].content == "| A | B |\n| --- | --- |\n| 1 | 2 |"


def test_markdown_file_and_image_resolution(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "arch.png").write_bytes(b"png")
    f = tmp_path / "guide.md"
    f.write_text(HANDBOOK_MD)
    assert sniff(f) == "markdown"
    p = parse_file(f, load_settings(env={}))
    img = next(b for b in p.blocks if b.type == "image")
    assert img.extra["image_path"] == str((tmp_path / "img" / "arch.png").resolve())


def test_plain_text():
    text = ("USER GUIDE\n==========\n\nWelcome to the tool.\nIt helps.\n\n1 Installation\n\n"
            "Download it.\n\n1.1 Requirements\n\n- Python 3.11\n- 2 GB RAM\n\f"
            "Chapter 2 Usage\n\nRun it.\n\n2. This line ends with a period.\n")
    p = parse_text(text)
    assert p.levels_final and p.page_count == 2
    got = [(b.type, b.level, b.page_idx, b.content) for b in p.blocks]
    assert got == [
        ("title", 1, 0, "USER GUIDE"),
        ("text", None, 0, "Welcome to the tool. It helps."),
        ("title", 1, 0, "1 Installation"),
        ("text", None, 0, "Download it."),
        ("title", 2, 0, "1.1 Requirements"),
        ("list", None, 0, "- Python 3.11\n- 2 GB RAM"),
        ("title", 1, 1, "Chapter 2 Usage"),
        ("text", None, 1, "Run it."),
        ("list", None, 1, "2. This line ends with a period."),
    ]
    t = to_tree(p, "t0", "guide.txt", load_settings(env={}))
    assert t.find_section("1.1 Requirements").parent == t.find_section("1 Installation").id
    assert t.nodes_on_pages(1) == [t[i] for i in t.find_section("Chapter 2 Usage").children]


def test_bad_text_inputs(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        parse_markdown(tmp_path / "missing.md")
    b = tmp_path / "bin.txt"
    b.write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InputError, match="binary"):
        sniff(b)
    u = tmp_path / "x.docx"
    u.write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError, match="unsupported file type"):
        sniff(u)


def test_markdown_handbook_gives_the_pdf_fixture_tree():
    from library_helpers import handbook_markdown, matches_expected, tree_shape
    from pdf_fixtures import EXPECTED_TREE

    tree = tree_of(handbook_markdown())
    assert matches_expected(tree_shape(tree), EXPECTED_TREE), tree_shape(tree)
    table = next(n for n in tree.walk() if n.type == "table")
    assert table.meta["caption"] == "Table 1: Parsing speed of three runs"
