"""The `LibraryStore` contract: add, find by id or name, list, remove; re-adding is a no-op.

The Engine, the CLI and the evaluation harness name documents by id, file name or stem, and
re-run indexing on whole folders, so an unchanged document must not be rebuilt (nor a byte of
the store rewritten), and an unknown name must be an `InputError` the shells can print.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from library_helpers import snapshot

from bookindex.core.errors import InputError
from bookindex.core.protocols import DocumentIndex, LibraryStore


class LibraryStoreContract:
    """Every `LibraryStore`. A subclass provides `store` (empty, fresh per test), `source` (a
    document file it can add) and `reopen(root)` (a new store on the same folder)."""

    @pytest.fixture
    def store(self) -> LibraryStore:
        raise NotImplementedError("subclass provides `store`")

    @pytest.fixture
    def source(self) -> Path:
        raise NotImplementedError("subclass provides `source`")

    @pytest.fixture
    def reopen(self) -> Callable[[Path], LibraryStore]:
        raise NotImplementedError("subclass provides `reopen`")

    def test_satisfies_the_protocol_and_starts_empty(self, store: LibraryStore) -> None:
        assert isinstance(store, LibraryStore)
        assert isinstance(store.root, Path)
        assert list(store.documents) == []

    def test_add_then_get_by_id_name_and_stem(self, store: LibraryStore, source: Path) -> None:
        doc = store.add(source)
        assert isinstance(doc, DocumentIndex) and doc.name == source.name
        for key in (doc.doc_id, source.name, source.stem):
            got = store.get(key)
            assert isinstance(got, DocumentIndex) and got.doc_id == doc.doc_id, key
        assert [d.doc_id for d in store.documents] == [doc.doc_id]
        assert store.get(doc.doc_id).tree.to_dict() == doc.tree.to_dict()

    def test_a_new_store_on_the_same_folder_sees_the_document(self, store: LibraryStore, source: Path,
                                                                reopen: Callable[[Path], LibraryStore]) -> None:
        doc = store.add(source)
        again = reopen(store.root)
        assert [d.doc_id for d in again.documents] == [doc.doc_id]
        assert again.get(source.name).doc_id == doc.doc_id

    def test_re_adding_an_unchanged_document_is_a_no_op(self, store: LibraryStore, source: Path) -> None:
        first = store.add(source)
        before = snapshot(store.root)
        again = store.add(source)
        assert again.doc_id == first.doc_id and again.folder == first.folder
        assert snapshot(store.root) == before
        assert len(store.documents) == 1

    def test_remove(self, store: LibraryStore, source: Path) -> None:
        doc = store.add(source)
        removed = store.remove(source.name)
        # what it still guarantees is the identity: its files are gone, so no isinstance check
        # (that reads every property, the tree included)
        assert removed.doc_id == doc.doc_id and removed.name == source.name
        assert list(store.documents) == []
        for key in (doc.doc_id, source.name):
            with pytest.raises(InputError):
                store.get(key)

    def test_unknown_documents_are_input_errors(self, store: LibraryStore, source: Path) -> None:
        store.add(source)
        before = snapshot(store.root)
        with pytest.raises(InputError):
            store.get("no-such-document.pdf")
        with pytest.raises(InputError):
            store.remove("no-such-document.pdf")
        with pytest.raises(InputError):
            store.add(source.with_name("missing.md"))
        assert snapshot(store.root) == before and len(store.documents) == 1
