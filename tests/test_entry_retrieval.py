"""Reference entries at query time: one unit each, matched by their name's words, read whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookindex.core.config import load_settings
from bookindex.core.model import Block, build_tree, entry_of
from bookindex.engine import Engine
from bookindex.operators.passages import build_passages
from bookindex.operators.reasoner import collapse_entries
from bookindex.operators.selector import leaves_of

REPO = Path(__file__).resolve().parents[1]


def _tree():
    B = Block
    entry = lambda name: {"entry": {"kind": "texinfo", "name": name, "summary": ""}}  # noqa: E731
    return build_tree("entryret00000000", "m.pdf", [
        B("title", "4 DER functions", 0, (50, 40, 300, 60), level=1),
        B("title", "asn1_der_coding", 0, (50, 70, 300, 85), level=2, extra=entry("asn1_der_coding")),
        B("text", "int asn1_der_coding (asn1_node element, void * ider)", 0, (50, 90, 500, 110)),
        B("text", "Creates the DER encoding for the NAME structure.", 0, (50, 120, 500, 140)),
        B("title", "asn1_der_decoding", 0, (50, 150, 300, 165), level=2, extra=entry("asn1_der_decoding")),
        B("text", "Fill the structure element with values of a DER encoding string.", 0, (50, 170, 500, 190)),
    ], {"pages": 1})


def test_entries_are_units_and_their_blocks_collapse_into_them():
    tree = _tree()
    coding = next(n.id for n in tree.walk() if n.title == "asn1_der_coding")
    desc = next(n.id for n in tree.walk() if n.content.startswith("Creates the DER"))
    assert coding in leaves_of(tree, None) and entry_of(tree, desc) == coding
    scores = {"text": {desc: 0.9, coding: 0.2}, "graph": {desc: 0.1}}
    pool = collapse_entries(tree, scores, ["text", "graph"], {desc, coding})
    assert pool == {coding} and scores["text"][coding] == 0.9 and scores["graph"][coding] == 0.1
    [p] = build_passages(tree, [coding])
    assert p.name == "asn1_der_coding" and "Creates the DER encoding" in p.text and "int asn1_der_coding" in p.text


@pytest.mark.timeout(600)
def test_the_readme_question_finds_the_entry_on_the_real_manual(tmp_path: Path):
    pdf = REPO / "data" / "libtasn1.pdf"
    if not pdf.is_file():
        pytest.skip("data/libtasn1.pdf absent")
    engine = Engine(tmp_path / "lib", load_settings(overrides={"cache.path": str(tmp_path / "cache")}, env={}))
    engine.index(pdf)
    ans = engine.ask("Which function decodes a DER encoded buffer into an ASN.1 structure?")
    names = [e.section for e in ans.evidence[:3]]
    assert "asn1_der_decoding" in names, names
    top = ans.evidence[names.index("asn1_der_decoding")]
    assert top.page == 23 and "Fill the structure" in top.snippet
    # without an LLM: the entry's name, cited, with a sentence from it; a citation that resolves
    assert ans.citation_check == "extractive" and ans.citations
    assert ans.answer.startswith("asn1_der_decoding [") and all(1 <= c <= len(ans.evidence) for c in ans.citations)
