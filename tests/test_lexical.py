"""The one BM25 index and analyser (bookindex.providers.lexical)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bm25s
import numpy as np
import pytest
import Stemmer
from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS

from bookindex.core.model import Block, build_tree
from bookindex.providers.lexical import (
    ANALYSER,
    STOPWORDS,
    Analyser,
    LexicalIndex,
    document_lexical_index,
    document_row_index,
    joined_parts,
    joined_words,
    passages_fingerprint,
    save_document_lexical_index,
    stored_indexes_current,
    table_row_passages,
    tokenize,
)


def test_stopwords_are_the_library_list():
    assert STOPWORDS == frozenset(STOPWORDS_EN_PLUS)
    assert tokenize("What is the total of these?") == ["total"]


def test_words_are_kept_whole_by_default_and_snowball_is_one_argument_away():
    assert tokenize("Tables plotting companies") == ["tables", "plotting", "companies"]
    snowball = Analyser(stemmer="english")
    assert snowball("Tables plotting companies") == snowball("table plots company") == ["tabl", "plot", "compani"]


def test_single_digits_are_terms():
    assert tokenize("Figure 3 on page 5") == ["figure", "3", "page", "5"]


def test_a_ligature_is_its_letters_so_a_typed_query_finds_a_typeset_word():
    assert tokenize("the default preﬁx of the ﬁle, a ﬂag") == ["default", "prefix", "file", "flag"]
    idx = LexicalIndex(["p1", "p2"], ["The default preﬁx is /usr/local.", "Colours of the plots."])
    assert idx.scores("default prefix")[0] > 0
    # the fold is part of what a stored index was built with: one stored without it is rebuilt
    assert passages_fingerprint(["p"], ["x"]) != passages_fingerprint(["p"], ["x"], Analyser(fold_ligatures=False))


def test_a_query_word_written_with_hyphens_is_also_one_word():
    assert ANALYSER.query("a read-only variable, the built-in 10-K") == [
        "read", "variable", "built", "10", "readonly", "builtin"]
    idx = LexicalIndex(["p1", "p2"], ["Mark each name as readonly.", "Colours of the plots."])
    assert idx.scores("which builtin marks a variable as read-only?")[0] > idx.scores("which builtin marks a variable?")[0]


def test_a_word_joining_two_question_words_is_found_in_any_order_and_inflection():
    words = tokenize("Which option puts the section numbers into the PDF bookmarks?")
    assert joined_words(words, ["bookmarksnumbered", "bookmarksopen", "pdfpagemode", "numbers"]) == ["bookmarksnumbered"]
    assert joined_parts("bookmarksnumbered", words) == ("bookmarks", "numbers")
    # three parts; and parts shorter than three letters ("us" + "age") join nothing
    assert joined_words(tokenize("the penalty for a url break"), ["urlbreakpenalty"]) == ["urlbreakpenalty"]
    assert joined_words(["us", "age"], ["usage"]) == []
    # one part is not a join: "pdflatex" is not found for a question on PDF files
    assert joined_words(tokenize("How do I make a PDF file?"), ["pdflatex"]) == []
    # a name the question writes capitalised is written whole only in addresses ("bestbuy.com")
    words = tokenize("What is the revenue of Best Buy in color?")
    assert joined_words(words, ["bestbuy"], names=["best", "buy"]) == []
    assert joined_words(words, ["bestbuy"]) == ["bestbuy"]


def test_a_query_also_matches_a_word_that_writes_two_of_its_words_as_one():
    idx = LexicalIndex(["p1", "p2", "p3"], ["urlcolor color magenta", "linkcolor color red", "plain text"])
    assert idx.joined_terms(ANALYSER.query("What color are URL links?")) == ["linkcolor", "urlcolor"]
    scores = idx.scores("what color are URL addresses")
    assert scores[0] > scores[1] > scores[2] == 0
    # not for a name the query writes capitalised
    names = LexicalIndex(["p1", "p2"], ["see bestbuy com", "Best Buy revenue was high"])
    assert names.joined_terms(["best", "buy"], ["best", "buy"]) == []
    assert names.scores("Best Buy revenue")[1] > names.scores("Best Buy revenue")[0]


def test_analyser_reproduces_bm25s_tokenize():
    """Configured like `bm25s.tokenize(stopwords="en")` (the baselines' analyser until the
    shared one), the Analyser gives exactly its terms, with and without a stemmer."""
    text = "The Installer's 2 options: running it, or don't; a B c-d 42 Tables"
    for stemmer in (None, "english"):
        a = Analyser(stopwords=frozenset(STOPWORDS_EN), stemmer=stemmer, token_pattern=r"(?u)\b\w\w+\b")
        want = bm25s.tokenize([text], stopwords="en", stemmer=Stemmer.Stemmer("english") if stemmer else None,
                              return_ids=False, show_progress=False)[0]
        assert a(text) == want


def test_index_scores_matching_passages_only():
    idx = LexicalIndex(["p1", "p2", "p3"], ["Install with pip.", "Colours of the plots.", "Install on Windows."])
    s = idx.scores("how do I install it?")
    assert idx.ids == ["p1", "p2", "p3"]
    assert s.dtype == np.float32 and s.shape == (3,)
    assert s[0] > 0 and s[2] > 0 and s[1] == 0


@pytest.mark.parametrize("texts", [[], ["the", "of and"]])
def test_an_index_without_terms_scores_zero(texts):
    idx = LexicalIndex([str(i) for i in range(len(texts))], texts)
    assert idx.scores("anything at all").tolist() == [0.0] * len(texts)


def test_ids_and_texts_must_align():
    with pytest.raises(ValueError):
        LexicalIndex(["a"], ["x", "y"])


def test_document_index_covers_leaves_with_their_section_titles():
    tree = build_tree("t", "doc", [
        Block("title", "3 Zebra crossings", 0, level=1),
        Block("text", "They are painted white.", 0),
        Block("text", "   ", 1),
    ])
    idx = document_lexical_index(tree)
    assert len(idx.ids) == 1  # the blank leaf is not indexed
    assert idx.scores("zebra")[0] > 0  # found through its section title


def test_threads_share_the_analyser_safely():
    texts = [f"running tables {i} of studies and companies" for i in range(200)]
    want = [tokenize(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(tokenize, texts)) == want


def _tree(words: str = "They are painted white."):
    return build_tree("t", "doc", [Block("title", "3 Zebra crossings", 0, level=1), Block("text", words, 0),
                                   Block("title", "4 Traffic lights", 1, level=1), Block("text", "Red means stop.", 1)])


def test_a_stored_document_index_is_read_back_with_the_same_scores(tmp_path: Path, monkeypatch) -> None:
    tree = _tree()
    built = save_document_lexical_index(tree, tmp_path / "lexical")
    assert (tmp_path / "lexical" / "lexical.json").is_file()
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **k: pytest.fail("rebuilt instead of read"))
    read = document_lexical_index(tree, tmp_path / "lexical")
    assert read.ids == built.ids
    for q in ("zebra white", "red stop", "nothing here"):
        assert read.scores(q).tolist() == built.scores(q).tolist()


def test_a_stored_index_of_other_passages_is_not_used(tmp_path: Path) -> None:
    save_document_lexical_index(_tree(), tmp_path / "lexical")
    changed = _tree("They are painted yellow.")  # same node ids, another text
    assert document_lexical_index(changed, tmp_path / "lexical").scores("yellow")[0] > 0
    ids, texts = ["a"], ["yellow"]
    assert LexicalIndex.load(tmp_path / "lexical", ids, passages_fingerprint(ids, texts)) is None
    assert LexicalIndex.load(tmp_path / "missing", ids, passages_fingerprint(ids, texts)) is None


def test_the_fingerprint_covers_the_analyser_and_parameters() -> None:
    ids, texts = ["a", "b"], ["red lights", "white lines"]
    base = passages_fingerprint(ids, texts)
    assert base == passages_fingerprint(list(ids), list(texts))
    assert base != passages_fingerprint(ids, texts, Analyser(stemmer="english"))
    assert base != passages_fingerprint(ids, texts, k1=1.5)
    assert base != passages_fingerprint(["a", "c"], texts)


def test_an_unreadable_stored_index_is_rebuilt(tmp_path: Path) -> None:
    tree = _tree()
    save_document_lexical_index(tree, tmp_path / "lexical")
    for f in (tmp_path / "lexical").glob("*.npy"):
        f.write_bytes(b"not numpy")
    assert document_lexical_index(tree, tmp_path / "lexical").scores("zebra")[0] > 0


def test_an_index_without_terms_is_stored_and_read(tmp_path: Path) -> None:
    tree = build_tree("t", "doc", [Block("text", "the of and", 0)])
    save_document_lexical_index(tree, tmp_path / "lexical")
    assert document_lexical_index(tree, tmp_path / "lexical").scores("anything").tolist() == [0.0]


def test_indexing_stores_the_index_that_opened_documents_read(tmp_path: Path, md_file: Path, monkeypatch) -> None:
    from fakes import FakeEmbedder

    from bookindex.core.config import load_settings
    from bookindex.indexing.document_folder import LEXICAL_DIR
    from bookindex.indexing.library import DocumentLibrary

    settings = load_settings(env={}, overrides={"cache.enabled": False, "llm.provider": "none"})
    lib = DocumentLibrary.open(tmp_path / "lib", settings, embedder=FakeEmbedder())
    doc = lib.add(md_file)
    assert (doc.dir / LEXICAL_DIR / "lexical.json").is_file()
    fresh = document_lexical_index(doc.tree)
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **k: pytest.fail("rebuilt instead of read"))
    reopened = DocumentLibrary.open(tmp_path / "lib", settings, embedder=FakeEmbedder()).get(doc.doc_id)
    stored = reopened.lexical_index()
    assert stored.ids == fresh.ids
    assert stored.scores("plot install").tolist() == fresh.scores("plot install").tolist()


def test_table_rows_are_stored_and_read_with_the_passages(tmp_path: Path, monkeypatch) -> None:
    table = "| Item | 2020 |\n|---|---|\n| Revenue | 10 |\n| Purchases of equipment | 3 |"
    tree = build_tree("t", "doc", [Block("title", "Cash flows", 0, level=1), Block("table", table, 0),
                                   Block("text", "Revenue grew.", 0)])
    table_id = next(n.id for n in tree.walk() if n.type == "table")
    ids, texts = table_row_passages(tree)
    assert ids == [table_id, table_id]
    assert texts[1].splitlines() == ["Cash flows", "| Item | 2020 |", "| Purchases of equipment | 3 |"]
    built = document_row_index(tree)
    save_document_lexical_index(tree, tmp_path / "lexical")
    assert stored_indexes_current(tree, tmp_path / "lexical")
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **k: pytest.fail("rebuilt instead of read"))
    read = document_row_index(tree, tmp_path / "lexical")
    assert read is not None and built is not None and read.ids == built.ids
    assert read.scores("purchases of equipment").tolist() == built.scores("purchases of equipment").tolist()
    monkeypatch.undo()
    shutil.rmtree(tmp_path / "lexical" / "rows")  # an index stored before rows were: not current
    assert not stored_indexes_current(tree, tmp_path / "lexical")
    assert document_row_index(build_tree("t", "doc", [Block("text", "No tables.", 0)])) is None
