"""The document router's `name` signal: which question words may name a document by
its file name, IDF over the library's names, and sparse fusion (a document it does not match
gets no rank from it, so it cannot reorder the rest)."""

from __future__ import annotations

import numpy as np
import pytest

from bookindex.parsing.identity import DocumentIdentity
from bookindex.routing.identity_match import OrganisationName, named_form, named_years, question_tokens
from bookindex.routing.names import NameMatcher, name_words, question_words
from bookindex.routing.router import LibraryRouter, decision_of, identity_names


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


def filings(idents: list[DocumentIdentity], names: list[str] | None = None) -> LibraryRouter:
    n = len(idents)
    return LibraryRouter([f"d{i}" for i in range(n)], ["annual report revenue"] * n, np.eye(n, 4, dtype=np.float32),
                         [None] * n, names=names or [""] * n, identities=idents)


def test_a_fiscal_year_the_question_does_not_name_comes_after_the_rest() -> None:
    mmm = [DocumentIdentity(organisation="3M COMPANY", fiscal_year=y) for y in (2017, 2018)] + [DocumentIdentity()]
    r = filings(mmm, names=["3M COMPANY"] * 3)
    qvec = np.array([1, 0, 0, 0], dtype=np.float32)  # the vector signal prefers the FY2017 filing
    ranked = r.rank("What was 3M's FY2018 capital expenditure?", qvec)
    # the document with no identity is of no organisation the question names: last
    assert [d.doc_id for d in ranked] == ["d1", "d0", "d2"]
    assert {d.doc_id: d.signals["year"] for d in ranked} == {"d0": -1.0, "d1": 2.0, "d2": 0.0}
    assert decision_of(ranked, "library")["decided_by"] == "year"
    # no document states a year the question names: nothing is demoted
    assert all(d.signals["year"] == 0 for d in r.rank("What was 3M's FY2021 capital expenditure?", qvec))
    assert r.rank("What is 3M's revenue?", qvec)[0].doc_id == "d0"


def test_a_bare_year_is_a_period_when_the_named_company_reports_that_year() -> None:
    mmm = [DocumentIdentity(organisation="3M COMPANY", fiscal_year=y) for y in (2019, 2022)]
    r = filings(mmm + [DocumentIdentity(organisation="WALMART INC.", fiscal_year=2021)])
    qvec = np.array([1, 0, 0, 0], dtype=np.float32)  # the text prefers the FY2019 filing
    ranked = r.rank("Which segment has dragged down 3M's overall growth in 2022?", qvec)
    assert ranked[0].doc_id == "d1" and decision_of(ranked, "library")["decided_by"] == "year"
    # a year no filing of the named company states, or a year with no company named: the text decides
    assert r.rank("Which segment has dragged down 3M's overall growth in 2021?", qvec)[0].doc_id == "d0"
    assert r.rank("Which segment dragged down growth in 2022?", qvec)[0].doc_id == "d0"


def test_a_comparison_goes_to_the_filing_of_its_latest_year() -> None:
    r = filings([DocumentIdentity(organisation="CORNING INCORPORATED", fiscal_year=y) for y in (2021, 2022)])
    ranked = r.rank("How much has the effective tax rate of Corning changed between FY2021 and FY2022?",
                    np.array([1, 0, 0, 0], dtype=np.float32))
    assert ranked[0].doc_id == "d1" and ranked[1].signals["year"] == 1.0


def test_the_organisation_named_decides_before_the_year_and_text() -> None:
    idents = [DocumentIdentity(organisation="ACTIVISION BLIZZARD, INC.", fiscal_year=2019),
              DocumentIdentity(organisation="SQUARE, INC.", ticker="SQ", fiscal_year=2020),
              DocumentIdentity(organisation="SQUARE, INC.", fiscal_year=2016)]
    r = filings(idents)
    ranked = r.rank("What is the FY2019 - FY2020 revenue growth for Block (formerly known as Square)?",
                    np.array([1, 0, 0, 0], dtype=np.float32))   # the text prefers Activision's filing
    assert [d.doc_id for d in ranked] == ["d1", "d2", "d0"]
    assert ranked[0].signals["organisation"] == 1.0 and ranked[-1].signals["organisation"] == -1.0
    assert decision_of(ranked, "library")["decided_by"] == "year"   # d1 before d2; Activision last by organisation
    # a question about no reporting period keeps the fused ranking, whatever company it names
    assert r.rank("How many Square datasets are in the paper?", np.array([1, 0, 0, 0], dtype=np.float32))[0].doc_id == "d0"


def test_a_quarter_named_prefers_the_quarterly_report() -> None:
    idents = [DocumentIdentity(organisation="BEST BUY CO., INC.", form="10-K", period="year",
                               fiscal_year_end="2024-02-03"),
              DocumentIdentity(organisation="BEST BUY CO., INC.", form="10-Q", period="quarter",
                               fiscal_year_end="2024-02-03")]
    ranked = filings(idents).rank("Which category performed best in Q2 of FY2024 for Best Buy?",
                                  np.array([1, 0, 0, 0], dtype=np.float32))
    assert ranked[0].doc_id == "d1" and decision_of(ranked, "library")["decided_by"] == "form"


@pytest.mark.parametrize("organisation, ticker, question, named", [
    ("BEST BUY CO., INC.", "BBY", "What are Best Buy's gross margins?", True),
    ("BEST BUY CO., INC.", "BBY", "What is the best buy for a bond investor?", False),
    ("BEST BUY CO., INC.", "BBY", "BBY revenue?", True),
    ("MGM Resorts International", "", "Which region had the highest EBITDAR for MGM?", True),
    ("AMAZON.COM, INC.", "", "What is Amazon's FY2017 DPO?", True),
    ("AMAZON.COM, INC.", "", "amazon prime members", False),
    ("ADVANCED MICRO DEVICES, INC.", "", "What is AMD's FY2015 revenue?", True),
    ("GENERAL MILLS, INC.", "GIS", "What is the general ledger?", False),
    ("3M COMPANY", "MMM", "What is the FY2018 capex for 3M?", True),
])
def test_how_a_question_names_an_organisation(organisation: str, ticker: str, question: str, named: bool) -> None:
    name = OrganisationName.of(DocumentIdentity(organisation=organisation, ticker=ticker))
    assert name.named_in(question_tokens(question)) is named


def test_years_and_forms_a_question_names() -> None:
    assert named_years("between FY 2023 and Q2 of FY2024, fiscal 2022 and in 2015") == {2022, 2023, 2024}
    assert named_form("in its 10-Q") == "10-Q" and named_form("the 10K") == "10-K"
    assert named_form("during the second quarter") == "quarter" and named_form("in FY2020") == ""
