"""Reference entries become sub-sections (parsing.entries): generated fixtures for each layout
convention, the block-level rules, and the real libtasn1 manual shipped in data/."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("pymupdf")

sys.path.insert(0, str(Path(__file__).parent))

from fakes import FakeLLM, LLMCall  # noqa: E402
from pdf_fixtures import (  # noqa: E402
    build_man_page,
    build_option_list,
    build_r_manual,
    build_sphinx_entries,
    build_texinfo_entries,
)
from script_loader import load_script  # noqa: E402

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.core.model import Block, DocumentTree, Node, build_tree, node_text  # noqa: E402
from bookindex.parsing.base import OutlineEntry, ParsedDocument  # noqa: E402
from bookindex.parsing.dispatch import to_tree  # noqa: E402
from bookindex.parsing.entries import mark_entries, signature_name  # noqa: E402
from bookindex.parsing.heading_eval import score_headings  # noqa: E402
from bookindex.parsing.pdf import parse_pdf  # noqa: E402
from bookindex.parsing.sections import assign_levels  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LIBTASN1 = REPO / "data" / "libtasn1.pdf"


def _tree(pdf: Path, llm: FakeLLM | None = None) -> DocumentTree:
    return to_tree(parse_pdf(pdf, images=False), "fx", pdf.name, load_settings(env={}), llm)


def _section(tree: DocumentTree, title: str) -> Node:
    found = [n for n in tree.walk() if n.type == "section" and n.title == title]
    assert len(found) == 1, (title, [n.title for n in tree.sections()])
    return found[0]


def _kids(tree: DocumentTree, node: Node) -> list[Node]:
    return [tree.nodes[c] for c in node.children]


def _entries(tree: DocumentTree, parent: Node) -> list[str]:
    return [k.title for k in _kids(tree, parent) if k.type == "section" and k.meta.get("entry")]


def _subtree_text(tree: DocumentTree, node: Node) -> str:
    return "\n".join(n.text for n in tree.subtree(node) if n.type != "section")


# -- generated fixtures ---------------------------------------------------------------------------

def test_texinfo_signature_split_over_two_blocks(tmp_path: Path) -> None:
    tree = _tree(build_texinfo_entries(tmp_path / "texinfo.pdf"))
    der = _section(tree, "4.3 DER functions")
    assert _entries(tree, der) == ["asn1_der_decoding", "asn1_der_coding"]
    # the paragraph after the last entry is back at the margin: it stays in the section
    assert _kids(tree, der)[-1].type == "text" and _kids(tree, der)[-1].text.startswith("All DER functions")
    dec = _section(tree, "asn1_der_decoding")
    assert dec.level == der.level + 1
    assert dec.meta["entry"]["kind"] == "texinfo" and dec.meta["entry"]["category"] == "Function"
    assert dec.meta["entry"]["heading_text"] == "asn1 der decoding"  # the title line is the entry's heading
    sig, *rest = _kids(tree, dec)
    assert sig.type == "code"
    assert sig.text == ("int asn1_der_decoding (asn1_node * element, const void * ider, "
                        "int ider_len, char * errorDescription) [Function]")
    body = "\n".join(n.text for n in rest)
    assert "ider: vector that contains the DER encoding." in body and "Fill the structure element" in body
    # no loose title line or signature half is left anywhere
    assert not [n for n in tree.leaves() if n.text in ("asn1 der decoding", "asn1 der coding")]
    assert not [n for n in tree.leaves() if n.text.startswith("int ider_len")]
    assert dec.meta["entry"]["summary"].startswith("Fill the structure element with values")


def test_sphinx_and_doxygen_signatures(tmp_path: Path) -> None:
    tree = _tree(build_sphinx_entries(tmp_path / "sphinx.pdf"))
    api = _section(tree, "API reference")
    assert _entries(tree, api) == ["parse_file", "build_tree", "bi_open"]
    kids = _kids(tree, api)
    assert kids[0].text.startswith("The functions below") and kids[-1].text.startswith("Every function raises")
    for name, sig, desc in [("parse_file", "parse_file(path, settings, llm=None)", "Parse one document"),
                            ("build_tree", "build_tree(doc_id, name, blocks)", "Assemble the section tree"),
                            ("bi_open", "int bi_open(const char * path, int flags)", "Open an index folder")]:
        node = _section(tree, name)
        first, second = _kids(tree, node)
        assert first.type == "code" and first.text == sig
        assert second.type == "text" and second.text.startswith(desc)
        assert node.meta["entry"]["kind"] == "signature"


def test_option_list(tmp_path: Path) -> None:
    tree = _tree(build_option_list(tmp_path / "options.pdf"))
    opts = _section(tree, "2.1 Options")
    assert _entries(tree, opts) == ["--output", "--verbose", "-q"]
    out = _section(tree, "--output")
    assert [k.text for k in _kids(tree, out)] == ["-o, --output FILE", "Write the answer to FILE instead of the standard output."]
    assert _kids(tree, _section(tree, "-q"))[1].text.startswith("Quiet mode")
    assert _kids(tree, opts)[-1].text == "Options may also be set in the configuration file."


def test_man_page(tmp_path: Path) -> None:
    tree = _tree(build_man_page(tmp_path / "man.pdf"))
    titles = [s.title for s in tree.sections() if not s.meta.get("entry")]
    assert titles == ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SEE ALSO"]
    options = _section(tree, "OPTIONS")
    assert _entries(tree, options) == ["--all", "--top-k", "--json"]
    top_k = _section(tree, "--top-k")
    assert top_k.level == options.level + 1
    assert [k.text for k in _kids(tree, top_k)] == ["-k, --top-k=N", "return at most N evidence passages (default 10)."]
    assert _kids(tree, _section(tree, "SEE ALSO"))[0].text.startswith("The full manual")


def test_r_usage_and_arguments(tmp_path: Path) -> None:
    tree = _tree(build_r_manual(tmp_path / "r.pdf"))
    entries = [s for s in tree.sections() if s.meta.get("entry")]
    assert [s.title for s in entries] == ["zoo", "index"]
    # the Rd labels are part of the topic, never sections of their own
    assert not [s for s in tree.sections() if s.title in ("Description", "Usage", "Arguments", "Details")]
    zoo = _section(tree, "zoo")
    assert zoo.meta["entry"]["kind"] == "r" and "print" in zoo.meta["entry"]["aliases"]
    kids = _kids(tree, zoo)
    usage = [k for k in kids if k.meta.get("signature")]
    assert len(usage) == 1 and usage[0].type == "code" and usage[0].text.startswith("zoo(x = NULL, order.by = index(x)")
    text = _subtree_text(tree, zoo)
    assert "zoo is the creator for an S3 class" in text  # description
    assert "order.by an index vector with unique entries" in text  # arguments
    assert "Z's Ordered Observations" in text  # the topic title, from the header
    assert zoo.meta["entry"]["summary"].startswith("Z's Ordered Observations. zoo is the creator")
    index = _section(tree, "index")
    assert "Generic functions for extracting the index" in _subtree_text(tree, index)
    assert "zoo is the creator" not in _subtree_text(tree, index)


def test_entries_survive_the_llm_section_pass(tmp_path: Path) -> None:
    """The LLM pass runs before the entries: whatever it makes of the option lines (here: every
    candidate a level-1 heading), the options still become entries under OPTIONS."""
    def reply(call: LLMCall):
        user = call.messages[-1]["content"]
        n = len(user.split("Candidates (JSON lines):\n")[1].split("\n\n")[0].splitlines())
        return {"levels": [1] * n}

    llm = FakeLLM(reply)
    tree = _tree(build_man_page(tmp_path / "man.pdf"), llm)
    assert llm.calls and all(c.stage == "sections" for c in llm.calls)
    assert _entries(tree, _section(tree, "OPTIONS")) == ["--all", "--top-k", "--json"]


# -- block-level rules ------------------------------------------------------------------------

def _b(kind: str, text: str, x: float, y: float, *, level: int | None = None, page: int = 0, **feat) -> Block:
    return Block(type=kind, content=text, page_idx=page, bbox=(x, y, 500, y + 10), level=level,
                 features={"font_size": 10.0, **feat})


def _texinfo_blocks() -> list[Block]:
    return [
        _b("title", "2 Functions", 90, 80, level=1, bold=True, font_size=14.0),
        _b("title", "foo bar", 90, 100, bold=True, font_size=12.0),
        _b("text", "int foo_bar (const char * s, [Function]", 90, 115),
        _b("text", "int n)", 140, 127),
        _b("text", "s: the string. n: its length. Counts the words of s.", 119, 140),
        _b("text", "More prose at the margin, after the entry.", 90, 160),
        _b("title", "3 Next chapter", 90, 180, level=1, bold=True, font_size=14.0),
    ]


def test_mark_entries_on_blocks_and_build_tree_closes_the_entry() -> None:
    out = mark_entries(_texinfo_blocks())
    head = [b for b in out if b.extra.get("entry")]
    assert len(head) == 1 and head[0].content == "foo_bar" and head[0].level == 2 and head[0].type == "title"
    tree = build_tree("d", "d", out)
    chap = _section(tree, "2 Functions")
    kids = _kids(tree, chap)
    assert [k.title or k.text[:9] for k in kids] == ["foo_bar", "More pros"]
    entry = kids[0]
    assert [k.type for k in _kids(tree, entry)] == ["code", "list", "text"]  # signature, parameters, description
    assert _kids(tree, entry)[0].text == "int foo_bar (const char * s, int n) [Function]"
    assert _kids(tree, entry)[1].text == "s: the string. n: its length."
    assert _kids(tree, entry)[2].text == "Counts the words of s."


def test_texinfo_deftypefnx_signatures_share_one_entry() -> None:
    blocks = [_b("title", "2 Functions", 90, 80, level=1, bold=True, font_size=14.0),
              _b("text", "int foo_open (const char * path) [Function]", 90, 100),
              _b("text", "int foo_openat (int dir, const char * path) [Function]", 90, 112),
              _b("text", "Open the file at path and return a descriptor.", 119, 126)]
    tree = build_tree("d", "d", mark_entries(blocks))
    entry = _section(tree, "foo_open")
    assert entry.meta["entry"]["aliases"] == ["foo_openat"]
    sig, desc = _kids(tree, entry)
    assert sig.text == "int foo_open (const char * path) [Function]\nint foo_openat (int dir, const char * path) [Function]"
    assert desc.text.startswith("Open the file")


def test_entry_name_reaches_retrieval_texts() -> None:
    tree = build_tree("d", "d", mark_entries(_texinfo_blocks()))
    entry = _section(tree, "foo_bar")
    desc = _kids(tree, entry)[-1]
    # lexical: the two nearest section titles, the entry's name among them, before the content
    assert node_text(tree, desc, "lexical") == "2 Functions\nfoo_bar\nCounts the words of s."
    # vector: the entry section's title path plus what the entry does
    assert node_text(tree, entry, "vector") == "2 Functions > foo_bar: Counts the words of s."


def test_heading_eval_skips_entry_headings() -> None:
    outline = [OutlineEntry(1, "2 Functions", 0), OutlineEntry(1, "3 Next chapter", 0)]
    blocks = _texinfo_blocks()
    before = score_headings(blocks, outline)
    after = score_headings(mark_entries(blocks), outline)
    assert before.f1 == after.f1 == 1.0 and after.n_pred == 2


def test_option_listing_in_a_code_block_is_split() -> None:
    listing = ("Mandatory arguments to long options are mandatory for short options too.\n"
               "-c, --check checks the syntax only\n-o, --output=FILE output file\n"
               "-h, --help display this help and exit\n   --debug print debugging information\n"
               "Report bugs to: bugs@example.org")
    blocks = [_b("title", "Invoking tool", 90, 80, level=1, bold=True, font_size=14.0),
              Block(type="code", content=listing, page_idx=0, bbox=(101, 100, 400, 160), features={"mono": True})]
    tree = build_tree("d", "d", mark_entries(blocks))
    sec = _section(tree, "Invoking tool")
    assert [k.title or k.text[:9] for k in _kids(tree, sec)] == ["Mandatory", "--check", "--output", "--help", "--debug",
                                                               "Report bu"]
    assert _kids(tree, _section(tree, "--output"))[0].text == "-o, --output=FILE output file"
    assert _section(tree, "--check").meta["entry"]["summary"] == "checks the syntax only"


def test_a_synopsis_of_bare_options_is_not_split() -> None:
    synopsis = "-V, --version\n-h, --help\n-p --persist\n-e \"command1; command2\"\n-c scriptfile ARG1 ARG2 ..."
    blocks = [_b("title", "Command line options", 72, 80, level=1, bold=True, font_size=14.0),
              Block(type="code", content=synopsis, page_idx=0, bbox=(93, 100, 300, 160), features={"mono": True})]
    assert mark_entries(blocks) == blocks


def test_no_entries_in_ordinary_prose_and_code() -> None:
    blocks = [_b("title", "1 Results", 72, 80, level=1, bold=True, font_size=14.0),
              _b("text", "Operating Income (Loss)", 72, 100, bold=True),
              _b("text", "Operating income by segment is as follows for the last three years.", 90, 112),
              _b("code", "R> plot(scus)", 72, 130, mono=True),
              _b("title", "M-fluctuation test", 260, 150, bold=True),
              _b("code", "plot sin(x)", 93, 170, mono=True),
              _b("text", "-1 < length < 0 is interpreted in graph coordinates here.", 72, 185),
              _b("text", "-2 < width < 0 likewise for the width of the arrow head.", 72, 200)]
    assert mark_entries(blocks) == blocks


@pytest.mark.parametrize("text,name", [
    ("parse_file(path, settings, llm=None)", "parse_file"), ("int bi_open(const char * path, int flags)", "bi_open"),
    ("std::vector<int> Foo::bar(unsigned long int n) const", "Foo::bar"), ("os.path.join(a, *p)", "os.path.join"),
    ("def f(x: int = 3) -> str", "f"), ("void asn1_perror (int error)", "asn1_perror"), ("main()", "main"),
    ("Operating Income (Loss)", None), ("EXTERIOR DIMENSIONS (in.)", None), ("Both (VOL)", None),
    ("Revenue reserve rollforward (in thousands):", None), ("1D sampling (x or t axis)", None), ("R> plot(scus)", None),
    ("See the function foo(x). It is fast.", None),
])
def test_signature_name(text: str, name: str | None) -> None:
    assert signature_name(text) == name


def test_markdown_like_blocks_without_boxes_are_left_alone() -> None:
    blocks = [Block(type="title", content="Options", page_idx=0, level=1),
              Block(type="text", content="--verbose", page_idx=0),
              Block(type="text", content="Print more.", page_idx=0)]
    assert mark_entries(blocks) == blocks


# -- the real manual in data/ ------------------------------------------------------------------

@pytest.fixture(scope="module")
def libtasn1_tree() -> DocumentTree:
    if not LIBTASN1.exists():
        pytest.skip("data/libtasn1.pdf absent")
    return to_tree(parse_pdf(LIBTASN1, tables=False, images=False), "libtasn1", "libtasn1.pdf", load_settings(env={}))


def test_libtasn1_asn1_der_decoding_is_one_entry(libtasn1_tree: DocumentTree) -> None:
    tree = libtasn1_tree
    node = _section(tree, "asn1_der_decoding")
    assert node.meta["entry"]["kind"] == "texinfo"
    assert node.page_idx + 1 == 23 and node.page_end_idx + 1 == 23
    assert tree.parent_path(node)[-1].title == "4.3 DER functions"
    sig = _kids(tree, node)[0]
    assert sig.type == "code" and sig.text.startswith("int asn1_der_decoding (asn1 node * element, const void * ider, int ider_len")
    text = _subtree_text(tree, node)
    assert "errorDescription)" in text and "decod" in text.lower()
    assert "Fill the structure * element with values of a DER encoding string" in text
    assert node.meta["entry"]["summary"].startswith("Fill the structure")
    # every child of "4.3 DER functions" is an entry: no loose title line, signature half or description
    der = tree.nodes[node.parent or ""]
    assert all(k.type == "section" and k.meta.get("entry") for k in _kids(tree, der))
    assert len(_kids(tree, der)) == 20  # asn1_length_der ... asn1_decode_simple_ber


def test_libtasn1_index_names_are_nodes(libtasn1_tree: DocumentTree) -> None:
    ev = load_script("eval_entries")
    names = ev.index_names(libtasn1_tree)
    assert len(names) == 41 and "asn1_der_decoding" in names
    titles = [n.title for n in libtasn1_tree.walk() if n.type == "section"]
    one = [n for n in names if titles.count(n) == 1]
    assert len(one) / len(names) >= 0.95, sorted(set(names) - set(one))


def test_libtasn1_heading_f1_unchanged_by_entries() -> None:
    if not LIBTASN1.exists():
        pytest.skip("data/libtasn1.pdf absent")
    parsed = parse_pdf(LIBTASN1, tables=False, images=False)
    blocks = assign_levels(parsed, use_outline=False)
    before = score_headings(blocks, parsed.outline)
    after = score_headings(mark_entries(blocks), parsed.outline)
    assert after.f1 >= before.f1 and after.level_accuracy >= before.level_accuracy
    with_outline = score_headings(mark_entries(assign_levels(parsed, use_outline=True)), parsed.outline)
    assert with_outline.f1 == 1.0


def test_parsed_document_levels_final_still_gets_entries() -> None:
    blocks = _texinfo_blocks()
    parsed = ParsedDocument(blocks=blocks, page_count=1, parser="mineru", levels_final=True)
    tree = to_tree(parsed, "m", "m", load_settings(env={}))
    assert _section(tree, "foo_bar").meta["entry"]["kind"] == "texinfo"


def test_a_failing_entry_pass_keeps_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    import bookindex.parsing.dispatch as dispatch

    def boom(blocks: list[Block]) -> list[Block]:
        raise ValueError("rule bug")

    monkeypatch.setattr(dispatch, "mark_entries", boom)
    parsed = ParsedDocument(blocks=_texinfo_blocks(), page_count=1, parser="pymupdf", levels_final=True)
    tree = to_tree(parsed, "w", "w", load_settings(env={}))
    assert [s.title for s in tree.sections()] == ["2 Functions", "3 Next chapter"]
    assert tree.meta["warnings"] == ["reference entries not grouped (ValueError: rule bug)"]
