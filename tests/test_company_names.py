"""A company is one company across its names: its legal forms, the former names its own filings
state and the employer identification number its covers print resolve to one organisation; among
that organisation's filings the fiscal year a question names decides; a ticker is read only where
the cover labels one."""

from __future__ import annotations

import pytest
from fakes import FakeEmbedder
from filing_fixtures import RENAMED, build_renamed_filings

from bookindex.core.config import load_settings
from bookindex.core.model import Block
from bookindex.engine import Engine
from bookindex.indexing.library import DocumentLibrary
from bookindex.parsing.identity import DocumentIdentity, identify
from bookindex.parsing.org_names import former_names, organisation_key
from bookindex.routing.identity_match import organisation_groups
from bookindex.routing.router import decision_of


def _settings():
    return load_settings(overrides={"llm.provider": "none"}, env={})


@pytest.mark.parametrize("one, other", [
    ("NORTHWIND INC.", "Northwind Incorporated"),
    ("Best Buy Co., Inc.", "BEST BUY COMPANY"),
    ("Koninklijke Gerrit N.V.", "KONINKLIJKE GERRIT NV"),
    ("The Fenwick Group plc", "Fenwick Group PLC"),
    ("Oriel S.A.", "ORIEL SA"),
    ("AMAZONIA.COM, INC.", "Amazonia"),
])
def test_names_that_differ_by_legal_form_have_one_key(one: str, other: str) -> None:
    assert organisation_key(one) == organisation_key(other) != ""


def test_a_legal_form_inside_a_name_is_part_of_it() -> None:
    # only the end of a name is its legal form: "Co" starts this one
    assert organisation_key("Co Harvest Inc.") == "co harvest"
    assert organisation_key("Incorporated") == "" and organisation_key("Larkspur Systems Incorporated") != "larkspur"


@pytest.mark.parametrize("text, organisation, former", [
    ('WALDEN INC.\n(formerly "WALDEN STORES, INC.")\nANNUAL REPORT', "WALDEN INC.", ("WALDEN STORES, INC.",)),
    ("Aurelle Brands, Inc. (formerly known as Brightwater Foods Corporation) sells", "AURELLE BRANDS, INC.",
     ("Brightwater Foods Corporation",)),
    ("Aurelle Brands, Inc. (the “Company”), formerly known as Brightwater Foods, Inc., sells", "AURELLE BRANDS, INC.",
     ("Brightwater Foods, Inc.",)),
    ("In May 2021 the Company changed its name from Brightwater Foods Corporation to Aurelle Brands, Inc. and",
     "AURELLE BRANDS, INC.", ("Brightwater Foods Corporation",)),
    ("after our name change from “Brightwater Foods Corp.” to “Aurelle Brands, Inc.” we", "AURELLE BRANDS, INC.",
     ("Brightwater Foods Corp.",)),
    ("the Company changed its name from Brightwater Foods Corporation to Tamsin Corp.", "AURELLE BRANDS, INC.", ()),
    # "formerly" about a product or another company names no former name of the registrant
    ("we launched the Vega processor, formerly codenamed “Kestrel”, in May", "ORIEL SA", ()),
    ("our licence came from Pardo Gaming S.A. (formerly Sociedade Pardo, S.A.), which", "Oriel S.A.", ()),
    ("we exited the dense server business, formerly SeaLark. Oriel continues", "Oriel S.A.", ()),
    ("we met our sales target (formerly Project Falcon) in May", "Target Corp.", ()),
    ("Target Corp. (formerly Project Falcon Inc.) sells", "Target Corp.", ("Project Falcon Inc.",)),
])
def test_the_former_names_a_filing_states_for_its_registrant(text: str, organisation: str, former: tuple) -> None:
    assert former_names(text, organisation) == former


def cover(*lines: str) -> list[Block]:
    text = "\n".join(lines)
    return [Block(type="text", content="FORM 10-K\nFor the fiscal year ended December 31, 2021", page_idx=0),
            Block(type="text", content="ORIEL CORP.\n(Exact name of registrant as specified in its charter)", page_idx=0),
            Block(type="text", content=text + "\nIndicate by check mark whether the registrant is a shell company.",
                  page_idx=0)]


HEADER = "Title of each class Trading Symbol(s) Name of each exchange on which registered"


@pytest.mark.parametrize("lines, ticker", [
    # the table registers no class: the next words of the cover are not a symbol
    ((HEADER, "None", "SECURITIES REGISTERED PURSUANT TO SECTION 12(g) OF THE ACT: COMMON STOCK"), ""),
    ((HEADER, "N/A N/A N/A"), ""),
    ((HEADER, "COMMON STOCK, PAR VALUE $0.01 PER SHARE ORL NEW YORK STOCK EXCHANGE"), ""),  # case says nothing
    ((HEADER, "Common Stock, par value $0.01 per share ORL New York Stock Exchange"), "ORL"),
    (("| Title of each class | Trading Symbol(s) | Name of each exchange on which registered |", "|---|---|---|",
      "| Common Stock | ORL.B | NYSE |"), "ORL.B"),
    (("Our common stock trades under the ticker symbol ORLX on the Nasdaq Global Market.",), "ORLX"),
    (("Common stock listed (NYSE: ORL)",), "ORL"),
    (("FOR THE TRANSITION PERIOD FROM TO", "Common stock listed on an exchange"), ""),
])
def test_a_ticker_is_read_only_where_the_cover_labels_one(lines: tuple, ticker: str) -> None:
    assert identify(cover(*lines), nlp=None).ticker == ticker


def test_organisation_groups_join_legal_forms_former_names_and_one_employer_id() -> None:
    idents = [DocumentIdentity(organisation="LARKSPUR SYSTEMS INCORPORATED", employer_id="84-3170526"),
              DocumentIdentity(organisation="LARKSPUR INC.", employer_id="84-3170526"),
              DocumentIdentity(organisation="BRIGHTWATER FOODS CORPORATION"),
              DocumentIdentity(organisation="AURELLE BRANDS, INC.", aliases=("Brightwater Foods Corporation",)),
              DocumentIdentity(organisation="AURELLE BRANDS INC"),
              DocumentIdentity(organisation="TAMSIN CORP."), DocumentIdentity(organisation="Tamsin Corporation"),
              DocumentIdentity(organisation="LARKSPUR GARDENS LTD."), DocumentIdentity()]
    assert organisation_groups(idents) == [0, 0, 2, 2, 2, 5, 5, 7, 8]


@pytest.fixture(scope="module")
def filings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Engine, dict[str, str]]:
    """A library of the renamed filings, their files called `scan_NN.pdf`."""
    root = tmp_path_factory.mktemp("renamed")
    pdfs = build_renamed_filings(root / "pdf")
    lib = DocumentLibrary.open(root / "lib", _settings(), embedder=FakeEmbedder(dim=64))
    ids = {key: lib.add(pdf).doc_id for key, pdf in pdfs.items()}
    return Engine(root / "lib", _settings(), embedder=FakeEmbedder(dim=64)), ids


def test_the_renamed_filings_covers_say_who_filed_them(filings: tuple[Engine, dict[str, str]]) -> None:
    engine, ids = filings
    said = {key: DocumentIdentity.from_dict(engine.library.get(ids[key]).manifest["identity"]) for key in RENAMED}
    assert said["larkspur-2017"].organisation == "LARKSPUR SYSTEMS INCORPORATED"
    assert said["larkspur-2017"].employer_id == said["larkspur-2020"].employer_id == "84-3170526"
    assert said["aurelle-2022"].aliases == ("Brightwater Foods Corporation",)
    assert said["tamsin-2021"].ticker == "TMSN" and said["tamsin-2020"].ticker == ""   # its table lists no class
    assert {said[k].ticker for k in ("larkspur-2017", "brightwater-2019", "aurelle-2021")} == {""}


@pytest.mark.parametrize("question, filing", [
    ("What was Larkspur's net revenue in FY2018?", "larkspur-2018"),
    ("What was Larkspur's net revenue in FY2017?", "larkspur-2017"),
    ("What was Larkspur's net revenue in FY2020?", "larkspur-2020"),
    ("What was the gross margin of Aurelle Brands in FY2019?", "brightwater-2019"),
    ("How did Brightwater Foods' net revenue change in FY2022?", "aurelle-2022"),
    ("What was TMSN's operating income in FY2020?", "tamsin-2020"),
])
def test_a_question_naming_an_older_fiscal_year_goes_to_that_years_filing(
        filings: tuple[Engine, dict[str, str]], question: str, filing: str) -> None:
    engine, ids = filings
    ranked = engine.routing.rank(question)
    assert ranked[0].doc_id == ids[filing]
    # the organisation's other years come after it, whatever name their covers print
    company = filing.split("-")[0]
    group = {ids[k] for k in RENAMED if k.split("-")[0] == company or {k.split("-")[0], company} == {"aurelle", "brightwater"}}
    assert {r.doc_id for r in ranked[:len(group)]} == group
    assert all(r.signals["year"] < 0 for r in ranked[1:len(group)])
    assert decision_of(ranked, "library")["decided_by"] == "year"
