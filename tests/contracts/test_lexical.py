"""The one BM25 index passes the LexicalIndex contract (document_lexical_index builds the same
class; the DocumentIndex contract checks what it indexes)."""

from __future__ import annotations

import pytest

from bookindex.providers.lexical import LexicalIndex
from contracts.lexical import LexicalIndexContract, MakeIndex


class TestBM25LexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def make_index(self) -> MakeIndex:
        return LexicalIndex
