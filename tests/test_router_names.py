"""The document router's `name` signal: which question words may name a document by
its file name, IDF over the library's names, and sparse fusion (a document it does not match
gets no rank from it, so it cannot reorder the rest)."""

from __future__ import annotations

import numpy as np
import pytest

from bookindex.routing.names import NameMatcher, name_words, question_words
from bookindex.routing.router import LibraryRouter, identity_names


@pytest.mark.parametrize("question, words", [
    ("what is roa for ADBE in FY2015?", {"adbe", "2015"}),
    ("What is Best Buy's gross margin from FY2022 to FY2021?", {"bestbuy", "2022", "2021"}),
    ("Compare Activision Blizzard revenues", {"activisionblizzard"}),
    ("In 2015, what did the survey find about China?", set()),   # bare year, single proper noun
    ("Under the pro mode to shoot, what does the icon do?", set()),
])
def test_question_words_keep_only_what_names_a_document(question: str, words: set[str]) -> None:
    assert question_words(question) == words


def test_name_words_skip_hashes_and_format_words() -> None:
    assert name_words("ADOBE_2015_10K.pdf") == {"adobe", "2015"}
    assert name_words("698bba535087fa9a7f9009e172a7f763.pdf") == set()
    assert name_words("PP_2019.01.17_Trump-economy_FINAL2.pdf") == {"2019", "trump", "economy"}


def test_a_rarer_name_word_weighs_more() -> None:
    m = NameMatcher(["ADOBE_2015_10K.pdf", "AMAZON_2015_10K.pdf", "ADBE_notes.pdf"])
    s = m.scores("What was ADBE revenue in FY2015?")
    assert s[2] > s[0] == s[1] > 0   # 'adbe' is in one name, '2015' in two


def router(names: list[str]) -> LibraryRouter:
    n = len(names)
    vecs = np.eye(n, 4, dtype=np.float32)
    return LibraryRouter([f"d{i}" for i in range(n)], ["annual report revenue"] * n, vecs, [None] * n, names=names)


def test_the_name_signal_decides_between_otherwise_equal_documents() -> None:
    r = router(["ACME_2014_10K.pdf", "ACME_2015_10K.pdf", "ACME_2016_10K.pdf"])
    qvec = np.zeros(4, dtype=np.float32)
    ranked = r.rank("What was the revenue in FY2015?", qvec)
    assert ranked[0].doc_id == "d1" and ranked[0].ranks["name"] == 1
    assert all("name" not in x.ranks for x in ranked[1:])     # sparse: unmatched documents get no rank
    r.weights = dict(r.weights, name=0.0)
    assert r.rank("What was the revenue in FY2015?", qvec)[0].doc_id == "d0"   # without it: ties by id
    plain = router(["ACME_2014_10K.pdf", "ACME_2015_10K.pdf", "ACME_2016_10K.pdf"])
    assert [x.doc_id for x in plain.rank("What was the revenue?", qvec)] == ["d0", "d1", "d2"]


def test_a_renamed_filing_is_named_by_what_its_cover_says() -> None:
    identities = [{"organisation": "BEST BUY CO., INC.", "fiscal_year": 2023},
                  {"organisation": "WALMART INC.", "fiscal_year": 2023}]
    names = [f"scan_{i}.pdf {identity_names({'identity': ident})}" for i, ident in enumerate(identities)]
    r = router(names)
    ranked = r.rank("What is Best Buy's gross margin for FY2023?", np.ones(4, dtype=np.float32) / 2)
    assert ranked[0].doc_id == "d0" and ranked[0].ranks.get("name") == 1
    assert identity_names({}) == "" and identity_names({"identity": "junk"}) == ""


def test_a_fiscal_year_the_question_does_not_name_comes_after_the_rest() -> None:
    n = 3
    vecs = np.eye(n, 4, dtype=np.float32)
    r = LibraryRouter(["fy2017", "fy2018", "nofy"], ["3M annual report revenue"] * n, vecs, [None] * n,
                      names=["3M COMPANY"] * n, fiscal_years=[2017, 2018, None])
    qvec = np.array([1, 0, 0, 0], dtype=np.float32)  # the vector signal prefers fy2017
    ranked = r.rank("What was 3M's FY2018 capital expenditure?", qvec)
    assert [d.doc_id for d in ranked][-1] == "fy2017"
    assert {d.doc_id: d.signals["year"] for d in ranked} == {"fy2017": -1.0, "fy2018": 1.0, "nofy": 0.0}
    # no document states a year the question names: nothing is demoted
    assert all(d.signals["year"] == 0 for d in r.rank("What was 3M's FY2021 capital expenditure?", qvec))
    assert r.rank("What is 3M's revenue?", qvec)[0].doc_id == "fy2017"
