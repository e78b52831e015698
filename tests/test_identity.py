"""A document's identity comes from its cover, never from its file name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes import FakeEmbedder
from pdf_fixtures import build_cover_report
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.core.config import load_settings
from bookindex.core.model import Block
from bookindex.indexing.library import DocumentLibrary
from bookindex.parsing.dispatch import parse_file
from bookindex.parsing.identity import DocumentIdentity, identify, parse_date

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "financebench-dev" / "documents"


def block(text: str, page: int = 0, size: float = 8.0, kind: str = "text") -> Block:
    return Block(type=kind, content=text, page_idx=page, features={"font_size": size})


SEC_COVER = [
    block("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", size=12),
    block("FORM 10-Q", size=12),
    block("QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
          "For the quarterly period ended July 29, 2023"),
    block("Commission File Number: 1-9595"),
    block("NORTHWIND TRADERS, INC.\n(Exact name of registrant as specified in its charter)", size=10),
    block("Minnesota 41-0907483 " + "Indicate by check mark whether the registrant has filed all reports. " * 4),
    block("Results for the second quarter of fiscal 2024 compared with fiscal 2023 and fiscal 2024 plans.", page=2),
]


def test_a_filing_cover_gives_registrant_form_period_and_fiscal_year() -> None:
    ident = identify(SEC_COVER, nlp=None)
    assert ident.organisation == "NORTHWIND TRADERS, INC."
    assert ident.form == "10-Q"
    assert ident.period_end == "2023-07-29"
    # the document calls the quarter fiscal 2024, though the period ends in 2023
    assert ident.fiscal_year == 2024
    assert ident.summary() == "NORTHWIND TRADERS, INC. · 10-Q · FY2024"
    assert ident.period == "quarter" and ident.years() == {2024}


def test_a_quarter_falls_in_the_fiscal_year_after_the_one_its_pages_cite() -> None:
    pages = SEC_COVER[:-1] + [block("as described in our Annual Report on Form 10-K for the fiscal year ended "
                                    "January 28, 2023, and the year ended January 29, 2022.", page=3)]
    ident = identify(pages, nlp=None)
    assert ident.fiscal_year_end == "2024-01-28"   # the anniversary after the quarter's July 29, 2023
    assert ident.fiscal_year == 2024 and ident.years() == {2024}


def test_an_annual_cover_small_capitals_ticker_and_share_class() -> None:
    cover = [
        block("FORM 10-K", size=12),
        block("ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
              "For the fiscal year ended December 31, 2020"),
        block("MGM R ESORTS I NTERNATIONAL\n(Exact name of registrant as specified in its charter)", size=10),
        block("Title of Each Class Trading Symbol(s) Name of each exchange on which registered\n"
              "Class A Common Stock, $0.0000001 par value per share SQ New York Stock Exchange"),
    ]
    ident = identify(cover, nlp=None)
    assert ident.organisation == "MGM RESORTS INTERNATIONAL"
    assert ident.ticker == "SQ" and ident.period == "year"
    assert ident.fiscal_year_end == ident.period_end == "2020-12-31" and ident.years() == {2020}


def test_a_press_release_names_its_issuer_before_its_listing_and_both_year_conventions_count() -> None:
    release = [
        block("March 9, 2023"),
        block("Acme Beauty Announces Fourth Quarter Fiscal 2022 Results", size=16),
        block("BOLINGBROOK, Ill.--(BUSINESS WIRE)-- Acme Beauty, Inc. (NASDAQ: ACME) today announced results for "
              "the fourth quarter and fiscal year ended January 28, 2023 compared to the year ended January 29, 2022."),
    ]
    ident = identify(release, nlp=None)
    assert ident.organisation == "Acme Beauty, Inc." and ident.ticker == "ACME"
    assert ident.period == "quarter" and ident.period_end == "2023-01-28"
    # the company calls it fiscal 2022; a question may call it FY2023, the year it ends in
    assert ident.fiscal_year == 2022 and ident.years() == {2022, 2023}


def test_an_8k_is_dated_by_its_date_of_report() -> None:
    cover = [block("FORM 8-K", size=12),
             block("CURRENT REPORT Pursuant to Section 13 OR 15(d) of the Securities Exchange Act of 1934\n"
                   "Date of Report (Date of earliest event reported): April 12, 2023\n"
                   "NORTHWIND TRADERS, INC.\n(Exact name of registrant as specified in its charter) "
                   "Commission File Number 1-9595, filed May 1, 2023.")]
    ident = identify(cover, nlp=None)
    assert ident.form == "8-K" and ident.date == "2023-04-12" and ident.years() == set()


class FakeNLP:
    """spaCy's interface as _organisation uses it: .ents with .text and .label_."""

    def __init__(self, orgs: list[str]) -> None:
        self.orgs = orgs

    def __call__(self, text: str):
        class Ent:
            def __init__(self, t: str) -> None:
                self.text, self.label_ = t, "ORG"

        class Doc:
            ents = [Ent(o) for o in self.orgs if o.lower() in text.lower() for _ in range(text.lower().count(o.lower()))]

        return Doc()


def test_a_filing_without_the_caption_names_the_organisation_in_large_type_that_its_pages_name() -> None:
    cover = [
        block("SECURITIES AND EXCHANGE COMMISSION", size=12),
        block("FORM 10-K", size=12),
        block("For the fiscal year ended December 31, 2018"),
        block("CONTOSO COMPANY", size=12),
        block("Listed on the Example Stock Exchange. " * 8),
        block("Contoso Company sells widgets. Contoso Company makes widgets. Contoso Company grew.", page=1),
    ]
    orgs = ["SECURITIES AND EXCHANGE COMMISSION", "CONTOSO COMPANY", "Example Stock Exchange"]
    ident = identify(cover, nlp=lambda: FakeNLP(orgs))
    assert ident.organisation == "CONTOSO COMPANY"
    assert (ident.form, ident.period_end, ident.fiscal_year) == ("10-K", "2018-12-31", 2018)


def test_a_report_gets_its_largest_type_as_title_and_no_guessed_organisation() -> None:
    cover = [block("Working Paper 12", size=9), block("Views of Rivers After the Flood", size=20),
             block("Released December 15, 2015 by the Example Institute " * 6, size=9)]
    called = []
    ident = identify(cover, nlp=lambda: called.append(1))
    assert ident.title == "Views of Rivers After the Flood"
    assert ident.date == "2015-12-15" and ident.organisation == "" and ident.form == ""
    assert called == []  # spaCy is loaded only for a filing without its registrant caption


def test_dates_and_round_trip() -> None:
    assert parse_date("as of Sept. 3 2020") is None  # not a month name or abbreviation
    assert parse_date("as of Sep. 3, 2020").isoformat() == "2020-09-03"
    assert parse_date("on July 8, 1596 and March 2, 2021").isoformat() == "2021-03-02"
    ident = identify(SEC_COVER, nlp=None)
    assert DocumentIdentity.from_dict(ident.to_dict()) == ident
    assert identify([], nlp=None) == DocumentIdentity()


def test_the_identity_is_in_the_manifest_and_the_listing_whatever_the_file_is_called(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = FakeEmbedder()
    monkeypatch.setattr(DocumentLibrary, "embedder", property(lambda self: emb))
    monkeypatch.setenv("BOOKINDEX_CACHE_DIR", str(tmp_path / "cache"))
    pdf = build_cover_report(tmp_path / "report (3).pdf")
    lib = str(tmp_path / "lib")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(pdf), "-i", lib, "--no-graph"]).exit_code == 0
    (manifest,) = json.loads(runner.invoke(app, ["list", lib, "--json"]).output)
    ident = manifest["identity"]
    assert ident["title"] == "Annual Report of the Harbour Board"
    assert ident["date"] == "2021-03-02" and ident["period_end"] == "2020-12-31"
    out = runner.invoke(app, ["list", lib]).output
    assert "about" in out and "Annual Report of the Harbour" in out


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/financebench-dev absent")
@pytest.mark.parametrize("name, expected", [
    ("BESTBUY_2024Q2_10Q.pdf", {"organisation": "BEST BUY CO., INC.", "form": "10-Q", "period_end": "2023-07-29",
                                "fiscal_year": 2024, "ticker": "BBY"}),
    ("MGMRESORTS_2022Q4_EARNINGS.pdf", {"period_end": "2022-12-31", "fiscal_year": 2022, "ticker": "MGM"}),
    ("ULTABEAUTY_2023Q4_EARNINGS.pdf", {"organisation": "Ulta Beauty, Inc.", "fiscal_year": 2022,
                                        "fiscal_year_end": "2023-01-29"}),
])
def test_real_filings_renamed_to_random_names(tmp_path: Path, name: str, expected: dict) -> None:
    renamed = tmp_path / "scan_0042.pdf"
    shutil.copyfile(SHARED / name, renamed)
    settings = load_settings(overrides={"llm.provider": "none"}, env={})
    parsed = parse_file(renamed, settings, image_dir=tmp_path / "img", work_dir=tmp_path / "work")
    ident = identify(parsed.blocks).to_dict()
    assert {k: ident.get(k) for k in expected} == expected
