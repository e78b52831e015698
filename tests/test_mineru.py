"""MinerU output readers: every schema generation, bboxes in points, furniture, images, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bookindex.core.config import load_settings
from bookindex.core.errors import InputError
from bookindex.parsing.dispatch import parse_file, sniff, to_tree
from bookindex.parsing.mineru import detect_format, mineru_available, parse_mineru, run_mineru

DATA = Path(__file__).parent / "data" / "mineru"
V1_1X = DATA / "magicpdf1x_content_list.example.json"
V1_2X = DATA / "mineru2x_content_list.example.json"
MID_2X = DATA / "mineru2x_middle.example.json"
V1_4X = DATA / "mineru4_flash_content_list_v1.sample.json"
V2_4X = DATA / "mineru4_flash_content_list_v2.sample.json"
MID_4X = DATA / "mineru4_flash_middle_json.sample.json"


def types(parsed):
    return [b.type for b in parsed.blocks]


def make_pdf(path: Path, pages: int, size=(612, 792), outline=()) -> Path:
    """A byte-stable PDF with `pages` pages and (level, title, page_idx) bookmarks."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=size, invariant=1)
    for p in range(pages):
        c.drawString(72, 720, f"page {p + 1}")
        for k, (lv, t, pg) in enumerate(outline):
            if pg == p:
                c.bookmarkPage(f"k{k}")
                c.addOutlineEntry(t, f"k{k}", level=lv - 1)
        c.showPage()
    c.save()
    return path


def test_formats_are_recognized_by_shape():
    assert detect_format(json.loads(V1_1X.read_text())) == "content_list_v1"
    assert detect_format(json.loads(V1_2X.read_text())) == "content_list_v1"
    assert detect_format(json.loads(V1_4X.read_text())) == "content_list_v1"
    assert detect_format(json.loads(V2_4X.read_text())) == "content_list_v2"
    assert detect_format(json.loads(MID_2X.read_text())) == "middle_v1"
    assert detect_format(json.loads(MID_4X.read_text())) == "middle_v4"
    assert detect_format({"foo": 1}) is None
    assert detect_format("text") is None


def test_magicpdf_1x_content_list_without_bbox():
    p = parse_mineru(V1_1X)
    assert p.parser == "mineru" and p.meta["mineru_format"] == "content_list_v1"
    assert types(p) == ["title", "text", "image", "table", "equation"]
    title, _, img, table, eq = p.blocks
    assert title.content == "Chapter 3 Installing Packages" and title.page_idx == 11
    assert title.level is None and title.features["mineru_level"] == 1  # "is a heading", depth undecided
    assert all(b.bbox is None and "bbox_norm" not in b.extra for b in p.blocks)
    assert img.extra["caption"] == "Figure 3.1: Package tree" and img.content == "Figure 3.1: Package tree"
    assert table.extra["caption"] == "Table 3.2: Repositories"
    assert table.extra["markdown"] == "| CRAN | main |\n| --- | --- |"
    assert table.extra["html"].startswith("<table>")
    assert eq.content == "E = mc^2" and eq.extra["latex"] == "E = mc^2"
    assert p.page_count == 14 and not p.levels_final


def test_mineru_2x_content_list_skips_furniture_and_keeps_lists_and_code():
    p = parse_mineru(V1_2X)
    assert types(p) == ["title", "text", "image", "table", "equation", "list", "code"]
    assert p.meta["skipped"] == {"header": 1, "page_number": 1}
    assert not any("R Installation" in b.content for b in p.blocks)
    assert p.blocks[5].content == "- first item\n- second item"
    assert p.blocks[6].content == 'install.packages("zoo")' and p.blocks[6].extra["language"] == "r"
    # No page sizes known: boxes stay normalized, with a warning saying how to get points.
    assert p.blocks[0].bbox is None and p.blocks[0].extra["bbox_norm"] == [0.062, 0.088, 0.52, 0.112]
    assert any("page sizes unknown" in w for w in p.warnings)


def test_content_list_bbox_to_points_with_pdf_beside(tmp_path):
    shutil.copy(V1_2X, tmp_path / "manual_content_list.json")
    make_pdf(tmp_path / "manual.pdf", 14, size=(500, 800), outline=[(1, "3 Installing Packages", 11)])
    p = parse_mineru(tmp_path / "manual_content_list.json")
    t = p.blocks[0]
    assert t.bbox == pytest.approx((62 / 1000 * 500, 88 / 1000 * 800, 520 / 1000 * 500, 112 / 1000 * 800))
    assert t.features["font_size"] == pytest.approx((112 - 88) / 1000 * 800 / 1.2, abs=0.1)
    assert p.page_count == 14 and len(p.page_sizes) == 14
    assert [(o.level, o.title, o.page_idx) for o in p.outline] == [(1, "3 Installing Packages", 11)]
    assert not any("page sizes unknown" in w for w in p.warnings)


def test_content_list_bbox_to_points_from_middle_json_beside(tmp_path):
    shutil.copy(V1_2X, tmp_path / "doc_content_list.json")
    shutil.copy(MID_2X, tmp_path / "doc_middle.json")
    p = parse_mineru(tmp_path / "doc_content_list.json")
    on_11 = [b for b in p.blocks if b.page_idx == 11]
    assert on_11[0].bbox == pytest.approx((62 * 0.612, 88 * 0.792, 520 * 0.612, 112 * 0.792), abs=0.01)
    # pages 12-13 are not in the (partial) middle.json: still normalized
    assert all(b.bbox is None and "bbox_norm" in b.extra for b in p.blocks if b.page_idx > 11)


def test_middle_2x_points_spans_and_discarded():
    p = parse_mineru(MID_2X)
    assert p.meta["mineru_format"] == "middle_v1"
    assert types(p) == ["title", "text", "table", "image", "equation"]
    assert p.meta["skipped"] == {"discarded": 1}
    title, text, table, img, eq = p.blocks
    assert title.bbox == (38.0, 70.0, 318.0, 89.0)  # already points
    assert title.features["font_size"] == pytest.approx(19 / 1.2, abs=0.1)
    assert text.content == "Packages are installed with $x^2$"  # inline math kept as LaTeX
    assert table.extra["caption"] == "Table 3.2: Repositories" and table.content == "| CRAN | main |\n| --- | --- |"
    assert img.extra["caption"] == "Figure 3.1: Package tree"
    assert eq.content == "E = mc^2"
    assert p.page_sizes[11] == (612.0, 792.0)


def test_middle_4x_fractions_to_points():
    p = parse_mineru(MID_4X)
    assert p.meta["mineru_format"] == "middle_v4"
    assert types(p) == ["title", "title", "text", "table", "image"]
    w, h = 595.2755737304688, 841.8897705078125
    assert p.blocks[0].bbox == pytest.approx((0.371 * w, 0.094 * h, 0.629 * w, 0.119 * h), abs=0.01)
    assert [b.features["mineru_level"] for b in p.blocks[:2]] == [1, 2]
    assert all(b.level is None for b in p.blocks)
    assert p.blocks[3].content.startswith("| Item | Qty | Price |")
    assert p.page_count == 6  # from metadata.document.page_count
    # page 1 has no size in extensions.docvortex_layout: normalized box kept
    assert p.blocks[4].bbox is None and p.blocks[4].extra["bbox_norm"] == [0.399, 0.093, 0.601, 0.188]


def test_4x_content_lists_v1_and_v2_agree_with_middle():
    v1, v2, mid = parse_mineru(V1_4X), parse_mineru(V2_4X), parse_mineru(MID_4X)
    assert [b.content for b in v1.blocks] == [b.content for b in mid.blocks]
    assert "1.1 Section 1.1" in [b.content for b in v2.blocks if b.type == "title"]
    assert v1.meta["skipped"] == {"header": 1}  # 4.x marks a running head as header: dropped
    assert [b.extra["bbox_norm"] for b in v1.blocks] == [b.extra["bbox_norm"] for b in v2.blocks if b.content != "1.1 Section 1.1"]


def test_images_resolved_and_copied(tmp_path):
    src = tmp_path / "out"
    (src / "images").mkdir(parents=True)
    shutil.copy(V1_4X, src / "doc_content_list.json")
    (src / "images" / "page_0_table_12.jpg").write_bytes(b"\xff\xd8fake-jpeg")
    dest = tmp_path / "lib-images"
    p = parse_mineru(src / "doc_content_list.json", image_dir=dest)
    table = next(b for b in p.blocks if b.type == "table")
    assert Path(table.extra["image_path"]).read_bytes() == b"\xff\xd8fake-jpeg"
    assert Path(table.extra["image_path"]).parent == dest.resolve()
    image = next(b for b in p.blocks if b.type == "image")
    assert "image_path" not in image.extra  # page_1_image_1.jpg is missing: reported, not invented
    assert any("1 image file(s) referenced but not found" in w for w in p.warnings)


def test_output_folder_prefers_middle_json(tmp_path):
    shutil.copy(V1_4X, tmp_path / "doc_content_list.json")
    shutil.copy(MID_4X, tmp_path / "doc_middle.json")
    assert parse_mineru(tmp_path).meta["mineru_format"] == "middle_v4"
    assert sniff(tmp_path) == "mineru"


def test_titles_go_through_section_filtering_with_the_pdf_outline(tmp_path):
    """text_level is not depth: with the source PDF beside, its outline decides the levels."""
    items = [
        {"type": "text", "text": "1 Getting Started", "text_level": 1, "bbox": [100, 100, 400, 130], "page_idx": 0},
        {"type": "text", "text": "Intro text.", "bbox": [100, 140, 900, 200], "page_idx": 0},
        {"type": "text", "text": "1.1 Install", "text_level": 1, "bbox": [100, 220, 400, 245], "page_idx": 0},
        {"type": "text", "text": "Run the installer.", "bbox": [100, 250, 900, 300], "page_idx": 0},
        {"type": "text", "text": "2 Usage", "text_level": 1, "bbox": [100, 100, 400, 130], "page_idx": 1},
        {"type": "text", "text": "Call it.", "bbox": [100, 140, 900, 200], "page_idx": 1},
    ]
    (tmp_path / "g_content_list.json").write_text(json.dumps(items))
    make_pdf(tmp_path / "g.pdf", 2, outline=[(1, "1 Getting Started", 0), (2, "1.1 Install", 0), (1, "2 Usage", 1)])
    s = load_settings(env={})
    tree = to_tree(parse_file(tmp_path / "g_content_list.json", s), "d0", "g", s)
    secs = [(n.title, n.level) for n in tree.sections()]
    assert secs == [("1 Getting Started", 1), ("1.1 Install", 2), ("2 Usage", 1)]
    install = tree.find_section("1.1 Install")
    assert [tree[c].text for c in install.children] == ["Run the installer."]
    assert tree.find_section("Getting Started").page_end_idx == 0


def test_unmatched_outline_entry_keeps_its_place_in_mineru_output(tmp_path):
    """MinerU 4 flash fused "2.2 Figures" and its paragraph into the figure region: the outline
    entry matches no block, and its inserted title must go after "2.1 Data tables" (before the
    image, by the bookmark's target point), not at the top of the page under "1 Introduction"."""
    from library_helpers import handbook_content_list
    from pdf_fixtures import HEADINGS, build_handbook

    items = handbook_content_list()
    k = next(i for i, it in enumerate(items) if it.get("text") == "2.2 Figures")
    image = next(it for it in items if it["type"] == "image")
    image["bbox"][1] = items[k]["bbox"][1]  # the figure region starts at the heading
    del items[k:k + 2]
    (tmp_path / "handbook_content_list.json").write_text(json.dumps(items))
    build_handbook(tmp_path / "handbook.pdf", outline=True)
    s = load_settings(env={})
    parsed = parse_file(tmp_path / "handbook_content_list.json", s)
    assert all(o.y is not None for o in parsed.outline)
    tree = to_tree(parsed, "fx", "handbook", s)
    assert [(n.title, n.level) for n in tree.sections()] == HEADINGS
    figs = tree.find_section("2.2 Figures")
    assert figs.parent == tree.find_section("2 Methods").id
    assert [tree[c].type for c in figs.children] == ["image", "section"]
    assert tree[tree.find_section("2.1 Data tables").children[-1]].text.startswith("After the table")


def test_numbered_heading_repeating_its_number_survives_section_filtering():
    s = load_settings(env={})
    tree = to_tree(parse_mineru(V2_4X), "v2", "fixture", s)
    assert ("1.1 Section 1.1", 2) in [(n.title, n.level) for n in tree.sections()]


@pytest.mark.parametrize("payload, field", [
    ('[{"type": "text", "text": "x", "page_idx": "3"}]', "[0].page_idx"),
    ('[{"type": "text", "text": "x", "page_idx": 0}, {"text": "y", "page_idx": 0}]', "[1].type"),
    ('[{"type": "text", "text": "x", "page_idx": 0, "bbox": [1, 2, 3]}]', "[0].bbox"),
    ('[{"type": "table", "table_body": 5, "page_idx": 0}]', None),  # numbers become text: accepted
    ('[{"type": "image", "img_caption": [1, {"a": 2}], "page_idx": 0}]', "[0].image_caption[1]"),
    ('{"pdf_info": [{"page_idx": 0, "page_size": [612], "para_blocks": []}]}', "pdf_info[0].page_size"),
    ('{"pdf_info": [{"page_idx": 0, "para_blocks": [{"type": "text", "lines": [{"spans": "oops"}]}]}]}',
     "pdf_info[0].para_blocks[0].lines[0].spans"),
    ('{"schema": "docvortex.middle", "pages": [{"page_idx": 0, "blocks": [{"type": "table", "content": []}]}]}',
     "pages[0].blocks[0].content"),
    ('[[{"type": "title", "content": {"title_content": "x"}, "bbox": "1,2,3,4"}]]', "[0][0].bbox"),
])
def test_malformed_json_names_the_field(tmp_path, payload, field):
    f = tmp_path / "bad_content_list.json"
    f.write_text(payload)
    if field is None:
        assert parse_mineru(f).blocks[0].type == "table"
        return
    with pytest.raises(InputError) as e:
        parse_mineru(f)
    assert str(f) in str(e.value) and field in str(e.value)


def test_syntax_error_and_unknown_shape(tmp_path):
    bad = tmp_path / "x_middle.json"
    bad.write_text('{"pdf_info": [ {"page_idx": 0,, } ]}')
    with pytest.raises(InputError, match=r"malformed JSON at line 1 column"):
        parse_mineru(bad)
    other = tmp_path / "other.json"
    other.write_text('{"hello": "world"}')
    with pytest.raises(InputError, match="not a MinerU output"):
        parse_mineru(other)
    with pytest.raises(InputError, match="not MinerU output"):
        sniff(other)


@pytest.mark.skipif(mineru_available(), reason="mineru is installed: the in-process path is tested instead")
def test_parser_mineru_on_pdf_without_mineru_explains_how(tmp_path):
    pdf = make_pdf(tmp_path / "a.pdf", 1)
    with pytest.raises(InputError) as e:
        run_mineru(pdf, work_dir=tmp_path / "w")
    msg = str(e.value)
    assert str(pdf) in msg and "pip install" in msg and "middle.json" in msg
    s = load_settings(env={}, overrides={"parsing.parser": "mineru"})
    with pytest.raises(InputError, match="not installed"):
        parse_file(pdf, s, work_dir=tmp_path / "w")


@pytest.mark.skipif(not mineru_available(), reason="mineru 4.x not installed")
def test_parser_mineru_runs_in_process(tmp_path):
    """MinerU 4 flash tier (text layer, no models) on the fixture PDF, read back by our reader."""
    from pdf_fixtures import HEADINGS, build_handbook

    pdf = build_handbook(tmp_path / "handbook.pdf", outline=False)
    s = load_settings(env={}, overrides={"parsing.parser": "mineru"})
    parsed = parse_file(pdf, s, image_dir=tmp_path / "img", work_dir=tmp_path / "w")
    assert parsed.meta["mineru_in_process"] and parsed.meta["mineru_format"] == "middle_v4"
    assert parsed.meta["skipped"].get("page_number") == 3  # running header and page numbers dropped
    assert not any("Fixture Handbook - Version" in b.content for b in parsed.blocks)
    assert all(b.bbox is not None and 0 <= b.bbox[0] < b.bbox[2] <= 595.3 for b in parsed.blocks)
    tree = to_tree(parsed, "mx", "handbook", s)
    # MinerU 4.0.12 flash puts the figure's region over the "2.2 Figures" heading and its
    # paragraph: that text arrives inside the image block, not as a heading (MinerU's call).
    assert [(n.title, n.level) for n in tree.sections()] == [h for h in HEADINGS if h[0] != "2.2 Figures"]
    image = next(n for n in tree.walk() if n.type == "image")
    assert image.meta["caption"] == "Figure 1: A grey test pattern" and "2.2 Figures" in image.content
    table = next(n for n in tree.walk() if n.type == "table")
    assert table.text.startswith("| Run | Pages | Seconds |")
    assert tree.find_section("2.1 Data tables").id == table.parent


# -- same tree semantics as the PDF fixture (tests/pdf_fixtures.py) ------------------------

def _fixture_tree(folder: Path, with_pdf_outline: bool | None):
    from library_helpers import handbook_content_list

    (folder / "handbook_content_list.json").write_text(json.dumps(handbook_content_list()))
    if with_pdf_outline is not None:
        from pdf_fixtures import build_handbook

        build_handbook(folder / "handbook.pdf", outline=with_pdf_outline)
    s = load_settings(env={})
    parsed = parse_file(folder / "handbook_content_list.json", s)
    return parsed, to_tree(parsed, "fx", "handbook", s)


@pytest.mark.parametrize("pdf", [None, False, True], ids=["no-pdf", "pdf-without-outline", "pdf-with-outline"])
def test_mineru_handbook_gives_the_pdf_fixture_tree(tmp_path, pdf):
    """Every MinerU title says text_level 1; levels still come out 1/2/3 (outline or rules)."""
    from library_helpers import matches_expected, tree_shape
    from pdf_fixtures import EXPECTED_TREE

    parsed, tree = _fixture_tree(tmp_path, pdf)
    assert {b.features.get("mineru_level") for b in parsed.blocks if b.type == "title"} == {1}
    assert parsed.meta["skipped"] == {"header": 2, "page_number": 3}
    assert matches_expected(tree_shape(tree), EXPECTED_TREE), tree_shape(tree)
    table = next(n for n in tree.walk() if n.type == "table")
    assert table.meta["caption"] == "Table 1: Parsing speed of three runs"
    assert table.text.startswith("| Run | Pages | Seconds |\n| --- | --- | --- |\n| alpha | 311 | 2.5 |")
    assert tree.find_section("2 Methods").page_idx == 1 and tree.root.page_end_idx == 2
    if pdf is not None:  # page sizes from the PDF: boxes in points on A4
        assert table.bbox is not None and 0 < table.bbox[2] <= 595.3
