"""Map sends image and chart evidence to the VLM as the cropped page region."""

from __future__ import annotations

import base64

import pymupdf
from fakes import FakeLLM

from bookindex.core.errors import LLMRequestError
from bookindex.core.model import Block, build_tree
from bookindex.operators.base import State
from bookindex.operators.context import IndexContext, MemoryIndex
from bookindex.operators.synthesizer import Map

PARTIAL = {"answer": "the bar for 2021 is highest [1]"}


def fake_vlm() -> FakeLLM:
    """The shared FakeLLM as the VLM: answers every Map group with PARTIAL."""
    return FakeLLM({"map-vision": PARTIAL})


def _pdf_with_chart(path) -> tuple[float, float, float, float]:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=400)
    page.insert_text((50, 40), "Figure 1: Sales by year", fontsize=11)
    bbox = (50.0, 60.0, 250.0, 260.0)
    page.draw_rect(pymupdf.Rect(*bbox), color=(0, 0, 0), fill=(0.2, 0.4, 0.8))
    doc.save(str(path))
    return bbox


def _context(tmp_path, vlm):
    pdf = tmp_path / "chart.pdf"
    bbox = _pdf_with_chart(pdf)
    blocks = [Block("title", "Results", 0, level=1),
              Block("text", "Sales grew every year.", 0, bbox=(50, 270, 300, 290)),
              Block("image", "Figure 1: Sales by year", 0, bbox=bbox, extra={"caption": "Figure 1: Sales by year"})]
    tree = build_tree("d" * 16, "chart.pdf", blocks)
    return IndexContext(index=MemoryIndex(tree=tree, manifest={"source": str(pdf)}), vlm=vlm), tree


def test_region_image_is_the_cropped_page_region(tmp_path):
    ctx, tree = _context(tmp_path, None)
    img = next(n for n in tree.walk() if n.type == "image")
    png = ctx.region_image(img.id, dpi=72)
    assert png is not None and png[:8] == b"\x89PNG\r\n\x1a\n"
    pix = pymupdf.Pixmap(png)
    assert (pix.width, pix.height) == (200, 200)  # the 200 x 200 pt box at 72 dpi, not the page


def test_map_sends_images_to_the_vlm_and_text_groups_do_not(tmp_path):
    vlm = fake_vlm()
    ctx, tree = _context(tmp_path, vlm)
    img = next(n for n in tree.walk() if n.type == "image")
    txt = next(n for n in tree.walk() if n.type == "text")
    state = State(question="Which year had the highest sales?", candidates=[img.id, txt.id],
                  ranked=[(img.id, 1.0), (txt.id, 0.5)])
    out = Map(ctx, {"group_size": 8}).run(state)
    assert out.partials[0]["source"] == "vlm" and out.partials[0]["images"] == [img.id]
    assert out.partials[0]["answer"] == PARTIAL["answer"] and vlm.calls[0].schema is not None
    content = vlm.calls[0].messages[-1]["content"]
    parts = [p for p in content if p["type"] == "image_url"]
    assert len(parts) == 1
    data = base64.b64decode(parts[0]["image_url"]["url"].split(",", 1)[1])
    assert data[:4] == b"\x89PNG"
    # a group without image nodes never reaches the VLM
    vlm.calls.clear()
    Map(ctx, {"group_size": 8}).run(State(question="q", candidates=[txt.id], ranked=[(txt.id, 1.0)]))
    assert vlm.calls == []


def test_a_failing_vlm_falls_back_to_the_text_path(tmp_path):
    vlm = FakeLLM(default=LLMRequestError("vision endpoint down"))  # every request fails
    ctx, tree = _context(tmp_path, vlm)
    img = next(n for n in tree.walk() if n.type == "image")
    out = Map(ctx, {}).run(State(question="Which year?", candidates=[img.id], ranked=[(img.id, 1.0)]))
    assert vlm.stages == ["map-vision"]  # the VLM was asked, once, and failed
    assert out.partials[0]["source"] == "extractive" and "images" not in out.partials[0]
    assert out.partials[0]["answer"] != PARTIAL["answer"]
    assert out.trace[-1]["vlm_fallback"] == "VLM failed (LLMRequestError); used captions and OCR text"
