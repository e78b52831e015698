"""The pymupdf parser on fixture PDFs built at test time, plus every bad input."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("pymupdf")

sys.path.insert(0, str(Path(__file__).parent))

from pdf_fixtures import (  # noqa: E402
    EXPECTED_TREE,
    HEADER,
    HEADINGS,
    build_borderless_table,
    build_encrypted,
    build_handbook,
    build_run_in,
    build_scanned,
    build_statement,
    build_truncated,
    build_zero_pages,
    matches_expected,
    tree_shape,
)

from bookindex.core.errors import InputError  # noqa: E402
from bookindex.core.model import build_tree  # noqa: E402
from bookindex.parsing.heading_eval import score_headings  # noqa: E402
from bookindex.parsing.pdf import parse_pdf  # noqa: E402
from bookindex.parsing.pdf_images import tessdata_dir  # noqa: E402
from bookindex.parsing.pdf_lines import is_bold_span  # noqa: E402
from bookindex.parsing.pdf_open import import_pymupdf  # noqa: E402
from bookindex.parsing.pdf_order import reading_order  # noqa: E402
from bookindex.parsing.pdf_words import rejoin  # noqa: E402
from bookindex.parsing.sections import assign_levels  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pdfs")
    return {"outline": build_handbook(d / "outline.pdf", outline=True),
            "plain": build_handbook(d / "plain.pdf", outline=False)}


@pytest.fixture(scope="module")
def parsed(pdfs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    img = tmp_path_factory.mktemp("img")
    return parse_pdf(pdfs["outline"], image_dir=img), img


def _tree(parsed_doc, use_outline: bool):
    return build_tree("fixture", "fixture.pdf", assign_levels(parsed_doc, use_outline=use_outline))


def _section_levels(tree) -> list[tuple[str, int]]:
    return [(s.title, s.level) for s in tree.sections()]


def test_fixture_is_byte_stable(pdfs: dict[str, Path], tmp_path: Path) -> None:
    again = build_handbook(tmp_path / "again.pdf", outline=True)
    assert again.read_bytes() == pdfs["outline"].read_bytes()


@pytest.mark.parametrize("which,use_outline", [("outline", True), ("outline", False), ("plain", True), ("plain", False)])
def test_exact_tree(pdfs: dict[str, Path], which: str, use_outline: bool) -> None:
    doc = parse_pdf(pdfs[which])
    tree = _tree(doc, use_outline)
    shape = tree_shape(tree)
    assert matches_expected(shape, EXPECTED_TREE), shape
    assert _section_levels(tree) == HEADINGS
    # sections span their descendants' pages
    assert [(s.title, s.page_idx, s.page_end_idx) for s in tree.sections(depth=1)] == [
        ("1 Introduction", 0, 0), ("2 Methods", 1, 1), ("3 Results", 2, 2)]


def test_outline_read_but_not_applied(pdfs: dict[str, Path]) -> None:
    doc = parse_pdf(pdfs["outline"])
    assert [(e.title, e.level) for e in doc.outline] == HEADINGS
    assert [e.page_idx for e in doc.outline] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert all(b.level is None for b in doc.blocks)
    assert parse_pdf(pdfs["plain"]).outline == []


def test_outline_gives_levels_even_for_plain_looking_titles(pdfs: dict[str, Path]) -> None:
    doc = parse_pdf(pdfs["outline"])
    for b in doc.blocks:  # make every heading look like body text: only the outline can tell
        if b.type == "title":
            b.type, b.features = "text", {**b.features, "font_size": 10.0, "bold": False}
    tree = _tree(doc, use_outline=True)
    assert _section_levels(tree) == HEADINGS
    # without the outline those lines are text: no sections at all
    assert _tree(doc, use_outline=False).sections() == []


def test_running_headers_and_page_numbers_removed(parsed) -> None:
    doc, _ = parsed
    texts = [b.content for b in doc.blocks]
    assert not any(HEADER in t or "Chapter guide" in t for t in texts)
    assert not any(t.strip() in {"1", "2", "3"} for t in texts)
    assert doc.page_count == 3 and len(doc.page_sizes) == 3


def test_table_block(parsed) -> None:
    doc, _ = parsed
    tables = [b for b in doc.blocks if b.type == "table"]
    assert len(tables) == 1
    t = tables[0]
    assert t.page_idx == 1
    assert t.extra["markdown"] == ("| Run | Pages | Seconds |\n|---|---|---|\n| alpha | 311 | 2.5 |\n"
                                   "| beta | 36 | 0.3 |\n| gamma | 50 | 0.4 |")
    assert t.extra["html"].startswith("<table><tr><th>Run</th><th>Pages</th><th>Seconds</th></tr>")
    assert "<td>gamma</td><td>50</td><td>0.4</td>" in t.extra["html"]
    assert t.extra["caption"] == "Table 1: Parsing speed of three runs"
    assert doc.meta["table_pages"] == 1  # the two-column page is not taken for a borderless table
    assert not any(b.type == "text" and b.content.startswith("Table 1") for b in doc.blocks)
    # cell text does not leak into text blocks
    assert not any(b.type == "text" and "gamma" in b.content for b in doc.blocks)


def test_borderless_table_from_aligned_columns(tmp_path: Path) -> None:
    doc = parse_pdf(build_borderless_table(tmp_path / "borderless.pdf"))
    assert [b.type for b in doc.blocks] == ["text", "table", "text"]
    assert doc.blocks[1].extra["markdown"] == (
        "| Option | Default | Meaning |\n|---|---|---|\n| --fast | off | skip tables |\n| --depth | 3 | tree depth |\n"
        "| --out | stdout | where to write |\n| --quiet | off | no progress |")
    assert doc.meta["table_pages"] == 1


def test_no_tables_when_disabled(pdfs: dict[str, Path]) -> None:
    doc = parse_pdf(pdfs["outline"], tables=False)
    assert not any(b.type == "table" for b in doc.blocks)
    assert any("gamma" in b.content for b in doc.blocks)


def test_image_block(parsed) -> None:
    doc, img_dir = parsed
    images = [b for b in doc.blocks if b.type == "image"]
    assert len(images) == 1
    im = images[0]
    assert im.extra["caption"] == "Figure 1: A grey test pattern"
    assert im.content == im.extra["caption"]
    x0, y0, x1, y1 = im.bbox
    assert abs(x0 - 72) < 1 and abs(x1 - 232) < 1 and abs((y1 - y0) - 100) < 1
    path = Path(im.extra["image_path"])
    assert path.parent == Path(img_dir) and path.exists() and path.stat().st_size > 0
    no_img = parse_pdf(Path(doc.meta["source"]), images=False)
    assert not any(b.type == "image" for b in no_img.blocks)
    assert any(b.type == "text" and b.content == "Figure 1: A grey test pattern" for b in no_img.blocks)


def test_two_column_reading_order(parsed) -> None:
    doc, _ = parsed
    page3 = [b.content[:20] for b in doc.blocks if b.page_idx == 2]
    assert page3 == ["3 Results", "Results intro spanni", "3.1 Left findings", "Left column first pa",
                     "Left column second p", "3.2 Right findings", "Right column first p", "Right column second "]


def test_code_and_features(parsed) -> None:
    doc, _ = parsed
    code = [b for b in doc.blocks if b.type == "code"]
    assert [b.content for b in code] == ["def parse(path):\n    doc = open(path)\n    return doc.blocks"]
    h1 = next(b for b in doc.blocks if b.content == "1 Introduction")
    assert h1.type == "title"
    assert h1.features["font_size"] == 18.0 and h1.features["bold"] is True
    assert h1.features["font_name"] == "Helvetica-Bold"
    body = next(b for b in doc.blocks if b.content.startswith("Welcome"))
    assert body.type == "text" and body.features["bold"] is False and body.features["font_size"] == 10.0
    assert body.bbox[0] == pytest.approx(72, abs=0.5)


def test_run_in_headings(tmp_path: Path) -> None:
    doc = parse_pdf(build_run_in(tmp_path / "runin.pdf"))
    got = [(b.type, b.content[:30], bool(b.features.get("run_in"))) for b in doc.blocks]
    assert got == [("title", "Functions", False), ("title", "Column", True),
                   ("text", "The column function returns th", False), ("title", "Valid", True),
                   ("text", "The valid function tells wheth", False), ("text", "Bold words such as notice insi", False)]
    tree = _tree(doc, use_outline=False)
    assert [(s.title, s.level) for s in tree.sections()] == [("Functions", 1), ("Column", 2), ("Valid", 2)]


def test_statement_title_holds_its_table(tmp_path: Path) -> None:
    # the title in the header band and its subtitle are one heading, its split last letter is
    # rejoined ("flows" is a word the report prints), and the bold "Fiscal Year 2018 2017" over
    # the value columns is the table's header, so the table sits in the statement's section
    doc = parse_pdf(build_statement(tmp_path / "statement.pdf"))
    tree = _tree(doc, use_outline=False)
    shape = tree_shape(tree)
    assert [s[0] for s in shape] == ["Liquidity and Capital Resources",
                                     "Consolidated Statement of Cash Flows Years ended December 31"]
    assert [k for k, _ in shape[1][1]] == ["text", "table", "text"]
    assert shape[1][1][0][1] == "Fiscal Year 2018 2017"
    assert "Purchases of property, plant and equipment" in shape[1][1][1][1]


def test_split_heading_words_rejoin_only_into_the_documents_words() -> None:
    words = Counter({"flows": 40, "flow": 30, "s": 40, "income": 25, "into": 12, "in": 300, "to": 400,
                     "contents": 3, "sheet": 9, "certain": 5, "a": 200})
    assert rejoin("Consolidated Statement of Cash Flow s", words) == "Consolidated Statement of Cash Flows"
    assert rejoin("Consolidated Statement of Incom e", words) == "Consolidated Statement of Income"
    assert rejoin("Balance Shee t", words) == "Balance Sheet"
    assert rejoin("C O N T E N T S", words) == "CONTENTS"
    # both pieces are words of the document, or the join is not one: left alone
    assert rejoin("Moving in to new offices", words) == "Moving in to new offices"
    assert rejoin("See Certain a", words) == "See Certain a"
    assert rejoin("Cash Flow, s", words) == "Cash Flow, s"


def test_bold_from_font_names() -> None:
    for name in ("ABCDEF+Inter-SemiBold", "Myriad-Demi", "Lato-Heavy", "Roboto-Black", "CMBX12", "Arial,Bold"):
        assert is_bold_span(name, 0), name
    for name in ("Times-Roman", "CMR10", "Helvetica-Oblique", "Inter-Regular"):
        assert not is_bold_span(name, 0), name
    assert is_bold_span("Anything", 16)


def test_reading_order_columns_and_rows() -> None:
    boxes = {  # full-width title, two columns whose paragraph gaps align, full-width footer note
        "title": (50, 50, 550, 70), "L1": (50, 80, 290, 150), "L2": (50, 160, 290, 230),
        "R1": (310, 80, 550, 150), "R2": (310, 160, 550, 230), "note": (50, 240, 550, 260),
    }
    got = reading_order(list(boxes), lambda k: boxes[k])
    assert got == ["title", "L1", "L2", "R1", "R2", "note"]
    # a narrow label column (definition list) is read row by row, not column by column
    rows = {"t1": (50, 80, 100, 92), "d1": (120, 80, 550, 92), "t2": (50, 100, 100, 112), "d2": (120, 100, 550, 112)}
    assert reading_order(list(rows), lambda k: rows[k]) == ["t1", "d1", "t2", "d2"]


# -- bad input ----------------------------------------------------------------------------

def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope.pdf.*no such file"):
        parse_pdf(tmp_path / "nope.pdf")


def test_not_a_pdf(tmp_path: Path) -> None:
    p = tmp_path / "notes.pdf"
    p.write_text("just some text, not a PDF\n")
    with pytest.raises(InputError, match="notes.pdf.*not a PDF"):
        parse_pdf(p)


def test_truncated_pdf(pdfs: dict[str, Path], tmp_path: Path) -> None:
    p = build_truncated(tmp_path / "cut.pdf", pdfs["outline"])
    with pytest.raises(InputError, match="cut.pdf.*(truncated|corrupt)"):
        parse_pdf(p)


def test_encrypted_pdf(tmp_path: Path) -> None:
    p = build_encrypted(tmp_path / "locked.pdf")
    with pytest.raises(InputError, match="locked.pdf.*encrypted"):
        parse_pdf(p)


def test_zero_page_pdf(tmp_path: Path) -> None:
    p = build_zero_pages(tmp_path / "empty.pdf")
    with pytest.raises(InputError, match="empty.pdf.*(no pages|corrupt)"):
        parse_pdf(p)


def test_scanned_page_without_ocr_is_kept_as_image(tmp_path: Path) -> None:
    p = build_scanned(tmp_path / "scan.pdf")
    doc = parse_pdf(p, ocr=False, images=False, image_dir=tmp_path / "img")
    assert len(doc.warnings) == 1 and "page 1" in doc.warnings[0] and "no text layer" in doc.warnings[0]
    assert [b.type for b in doc.blocks] == ["image"]
    assert doc.blocks[0].extra["scanned_page"] is True
    assert Path(doc.blocks[0].extra["image_path"]).exists()


@pytest.mark.skipif(tessdata_dir() is None, reason="tesseract not installed")
def test_scanned_page_ocr(tmp_path: Path) -> None:
    doc = parse_pdf(build_scanned(tmp_path / "scan.pdf"), ocr=True)
    assert len(doc.warnings) == 1 and "OCR" in doc.warnings[0]
    text = " ".join(b.content for b in doc.blocks)
    assert "Installation guide" in text and "power button" in text
    assert doc.meta["ocr_pages"] == 1
    # recognized text is read as prose, never as code or as headings guessed from pixel sizes
    assert {b.type for b in doc.blocks if b.content.strip()} <= {"text", "list"}


def _outlined_text_pdf(path: Path, header: bool) -> Path:
    """A page of prose whose text is drawn as outlines (through SVG with text as paths), with a
    real text-layer running header when `header`."""
    pymupdf = import_pymupdf()
    src = pymupdf.open()
    page = src.new_page(width=595, height=842)
    lines = ["Board of Directors and Bankers", "The bankers of the company are State Bank of India,",
             "Bank of Baroda and Citibank N.A. The registrars and transfer agents are",
             "Sharepro Services, whose office is in Mumbai. The auditors are A.F. Ferguson",
             "and Co., chartered accountants. The solicitors are Crawford Bayley and Co."] * 3
    for k, line in enumerate(lines):
        page.insert_text((60, 150 + 28 * k), line, fontsize=12)
    outlined = pymupdf.open("pdf", pymupdf.open("svg", page.get_svg_image(text_as_path=True).encode()).convert_to_pdf())
    if header:
        outlined[0].insert_text((60, 40), "ANNUAL REPORT 2003", fontsize=9)
    outlined.save(path)
    return path


@pytest.mark.skipif(tessdata_dir() is None, reason="tesseract not installed")
@pytest.mark.parametrize("header", [False, True])
def test_a_page_of_text_drawn_as_outlines_is_read_by_ocr(tmp_path: Path, header: bool) -> None:
    doc = parse_pdf(_outlined_text_pdf(tmp_path / "outlined.pdf", header), ocr=True)
    assert any("drawn as outlines" in w for w in doc.warnings)
    text = " ".join(b.content for b in doc.blocks)
    assert "State Bank of India" in text and "Crawford Bayley" in text
    assert doc.meta["ocr_pages"] == 1


def test_drawn_text_is_not_read_without_ocr(tmp_path: Path) -> None:
    doc = parse_pdf(_outlined_text_pdf(tmp_path / "outlined.pdf", True), ocr=False)
    assert not any("outlines" in w for w in doc.warnings)
    assert "State Bank" not in " ".join(b.content for b in doc.blocks)


# -- a real handbook shipped in data/ -----------------------------------------------------

@pytest.mark.skipif(not (REPO / "data" / "libtasn1.pdf").exists(), reason="data/libtasn1.pdf absent")
def test_libtasn1_headings_without_outline() -> None:
    doc = parse_pdf(REPO / "data" / "libtasn1.pdf", tables=False)
    assert len(doc.outline) == 21
    score = score_headings(assign_levels(doc, use_outline=False), doc.outline)
    assert score.f1 >= 0.9 and score.level_accuracy >= 0.9, score.to_dict()
    with_outline = score_headings(assign_levels(doc, use_outline=True), doc.outline)
    assert with_outline.f1 == 1.0 and with_outline.level_accuracy == 1.0


def test_a_ligature_glyph_is_read_as_its_letters(tmp_path: Path) -> None:
    """TeX and many fonts print "fi" as one glyph (U+FB01): the text is what a reader types and
    searches, "prefix", not "preﬁx"."""
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("Vera", str(Path(reportlab.__file__).parent / "fonts" / "Vera.ttf")))
    path = tmp_path / "ligatures.pdf"
    c = canvas.Canvas(str(path))
    c.setFont("Vera", 12)
    c.drawString(72, 700, "The default pre\ufb01x of the \ufb01le is set by a \ufb02ag.")
    c.save()
    text = " ".join(b.content for b in parse_pdf(path).blocks)
    assert "The default prefix of the file is set by a flag." in text, text
