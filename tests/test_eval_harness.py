"""End-to-end of the MMLongBench harness on a 3-page fixture PDF with two questions.

The PDF is built with reportlab at test time and indexed by the real library with a hashed
bag-of-words embedder; `test_harness_with_real_library` runs the same flow with MiniLM.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import FakeEmbedder, FakeLLM, LLMCall

from bookindex.core.config import load_settings
from bookindex.core.errors import InputError
from bookindex.engine import Engine
from bookindex.evaluation.answering import extract_answer
from bookindex.evaluation.mmlongbench_run import run
from bookindex.evaluation.qasper_run import paper_to_markdown
from bookindex.evaluation.qasper_run import run as run_qasper
from bookindex.evaluation.reader_text import reader_text

PAGES = [
    ("1 Installation", "Install the zebra toolkit with the package manager. The installer asks for a licence key."),
    ("2 Colours", "The palette uses crimson, teal and amber. Crimson marks errors in every plot."),
    ("3 Fonts", "Fonts default to DejaVu Sans at eleven points. Change the size with the font option."),
]
QUESTIONS = [
    {"qid": "t-1", "doc_id": "fixture.pdf", "doc_type": "Guidebook", "question": "Which colour marks errors in a plot?",
     "answer": "crimson", "answer_format": "Str", "evidence_pages": "[2]", "evidence_sources": "['Pure-text (Plain-text)']"},
    {"qid": "t-2", "doc_id": "fixture.pdf", "doc_type": "Guidebook", "question": "What is the default font size?",
     "answer": "11", "answer_format": "Int", "evidence_pages": "[3]", "evidence_sources": "['Table']"},
    {"qid": "t-3", "doc_id": "fixture.pdf", "doc_type": "Guidebook", "question": "Who wrote the toolkit?",
     "answer": "Not answerable", "answer_format": "None", "evidence_pages": "[]", "evidence_sources": "[]"},
]


def _make_pdf(path: Path) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    for title, body in PAGES:
        c.setFont("Helvetica-Bold", 18)
        c.drawString(72, 760, title)
        c.setFont("Helvetica", 11)
        c.drawString(72, 730, body)
        c.showPage()
    c.save()


@pytest.fixture()
def split(tmp_path):
    d = tmp_path / "mini-split"
    (d / "documents").mkdir(parents=True)
    _make_pdf(d / "documents" / "fixture.pdf")
    (d / "questions.json").write_text(json.dumps(QUESTIONS))
    yield d


def _settings():
    return load_settings(env={}, overrides={"llm.provider": "none", "graph.enabled": False})


def test_harness_end_to_end_and_reuse(split, tmp_path):
    settings = _settings()
    out = tmp_path / "out"
    res = run(split, ["bm25", "dense", "hybrid", "chunks", "tree"], [1, 3], index_dir=tmp_path / "lib",
              settings=settings, embedder=FakeEmbedder.words(), out_dir=out, progress=False, command="pytest")
    # no LLM: only the two answerable questions are asked, once per method
    assert len(res.records) == 2 * 5
    assert res.meta["indexed"] == 1
    bm = res.summary["bm25"]
    assert bm["recall_questions"] == 2 and bm["errors"] == 0
    assert bm["recall"][1] == 1.0  # both answers are unique words on their gold page
    for rec in res.records:
        assert rec["nodes"] >= 1 and rec["chars"] > 0
        assert set(rec["recall"]) == {1, 3}
    # the chunk baseline has one chunk starting on page 1, so it can only find page-1 evidence
    assert res.summary["chunks"]["recall"][3] == 0.0
    data = json.loads((out / "mmlongbench.json").read_text())
    assert len(data["records"]) == 10 and data["meta"]["indexed"] == 1
    md = (out / "mmlongbench.md").read_text()
    assert "| bm25 | 2 | 1.000" in md and "text (n=1)" in md and "table (n=1)" in md
    assert (out / "mmlongbench_recall.png").stat().st_size > 1000
    # a second run reuses the indexed document
    res2 = run(split, ["bm25"], [1], index_dir=tmp_path / "lib", settings=settings, embedder=FakeEmbedder.words(),
               progress=False)
    assert res2.meta["indexed"] == 0 and res2.meta["reused"] == 1


def answering_llm() -> FakeLLM:
    """The shared FakeLLM answering from the passages' text and extracting the first word; enough
    for plumbing."""

    def reply(call: LLMCall) -> object:
        text = call.prompt
        if call.schema is None:
            if "crimson" in text.lower() and "colour" in text.lower():
                return "Crimson, as the passage says."
            if "eleven" in text:
                return "11 points"
            return "Not answerable"
        resp = text.split("Response:", 1)[1].strip()
        return {"answer": "Not answerable" if resp.startswith("Not answerable") else resp.split(",")[0].split()[0]}

    return FakeLLM(reply)


def test_harness_scores_answers_with_an_llm(split, tmp_path):
    res = run(split, ["bm25"], [1, 3], index_dir=tmp_path / "lib", settings=_settings(), llm=answering_llm(),
              embedder=FakeEmbedder.words(), progress=False, index_without_llm=True)
    recs = {r["qid"]: r for r in res.records}
    assert len(recs) == 3  # with an LLM the unanswerable question is asked too
    assert recs["t-1"]["score"] == 1.0 and recs["t-2"]["score"] == 1.0 and recs["t-3"]["score"] == 1.0
    assert recs["t-3"]["recall"] is None
    assert res.summary["bm25"]["answers"]["accuracy"] == 1.0
    assert res.summary["bm25"]["answers"]["f1"] == 1.0
    assert "| acc | F1 |" in res.markdown.replace("F1 | errors", "F1 |")


@pytest.mark.realmodel
def test_harness_with_real_library(split, tmp_path):
    """The same flow through the real library (PyMuPDF parser, MiniLM embeddings), twice."""
    settings = load_settings(env={}, overrides={"graph.enabled": False})
    out = tmp_path / "out"
    res = run(split, ["bm25", "dense", "hybrid", "chunks", "tree"], [1, 3], index_dir=tmp_path / "lib",
              settings=settings, progress=False, out_dir=out)
    assert res.meta["indexed"] == 1
    for row in ("bm25", "dense", "hybrid", "tree"):
        assert res.summary[row]["errors"] == 0
        assert res.summary[row]["recall"][3] == 1.0, row
    res2 = run(split, ["bm25"], [1, 3], index_dir=tmp_path / "lib", settings=settings, progress=False)
    assert res2.meta["reused"] == 1 and res2.summary["bm25"]["recall"][3] == 1.0


# -- Qasper ---------------------------------------------------------------------------------
PAPER = {
    "title": "Zebra Parsing", "abstract": "We parse zebras with stripes.",
    "full_text": {"section_name": ["Introduction", "Method ::: Data"],
                  "paragraphs": [["Zebras are striped animals of the African savanna plains.", "- a dash line"],
                                 ["We collected 512 zebra photographs from three national parks."]]},
    "figures_and_tables": {"caption": ["Table 1: Counts of zebra photographs per park."], "file": ["t1.png"]},
    "qas": {"question": ["How many photographs were collected?"], "question_id": ["q1"],
            "answers": [{"answer": [
                {"unanswerable": False, "extractive_spans": ["512"], "yes_no": None, "free_form_answer": "",
                 "evidence": ["We collected 512 zebra photographs from three national parks.",
                              "FLOAT SELECTED: Table 1: Counts of zebra photographs per park."]}]}]},
}


def test_qasper_markdown_and_recall(tmp_path):
    md = paper_to_markdown({"id": "p1", **PAPER})
    assert "## Method\n\n### Data" in md and "\\- a dash line" in md
    assert "## Figures and tables\n\nTable 1: Counts" in md
    d = tmp_path / "qasper-mini"
    d.mkdir()
    (d / "papers.json").write_text(json.dumps({"p1": PAPER}))
    res = run_qasper(d, ["bm25"], [1, 2], index_dir=tmp_path / "idx", settings=_settings(),
                     embedder=FakeEmbedder.words(), progress=False, out_dir=tmp_path / "out")
    rec = res.records[0]
    assert rec["recall"] == {1: 0.5, 2: 1.0}  # paragraph first, then the caption
    md = (tmp_path / "out" / "qasper.md").read_text()
    assert md.startswith("# Qasper (qasper-mini)\n") and "- papers: 1; questions: 1 (1 with evidence" in md
    assert "| bm25 | 1 | 0.500 | 1.000 |" in md and "Recall@2 by evidence type:" in md
    assert "Recall@2 by answer type:" in md and "extractive (n=1)" in md


def test_a_document_that_fails_to_index_fails_only_its_questions(split, tmp_path, monkeypatch):
    def broken(self, path, **options):
        raise InputError(f"{path}: not a PDF")

    monkeypatch.setattr(Engine, "index", broken)
    res = run(split, ["bm25"], [1], index_dir=tmp_path / "lib", settings=_settings(),
              embedder=FakeEmbedder.words(), progress=False)
    assert res.summary["bm25"]["errors"] == 2 and res.summary["bm25"]["recall"][1] == 0.0
    assert "fixture.pdf" in res.meta["index_failures"]
    assert "failed to index: fixture.pdf" in res.markdown


@pytest.mark.parametrize("reply,expected", [({"answer": 2630}, "2630"), ({"answer": 2.5}, "2.5"),
                                            ({"answer": ["Dubai", "Frankfurt"]}, "['Dubai', 'Frankfurt']"),
                                            ({"answer": "Not answerable"}, "Not answerable")])
def test_the_extraction_step_takes_numbers_and_lists(reply, expected):
    # the 1.5B model wrote {"answer": 2630} for "What was the population ...?" and the question
    # was scored as an error for both methods (MMLongBench mml-0240)
    assert extract_answer(FakeLLM({"eval_extract": reply}), "q", "response") == expected


def test_answer_in_evidence_reads_the_passages_ask_packs(split, tmp_path):
    """Answer-in-evidence scores the short answers against the exact evidence text `ask` gives
    its reader, and text-answerable against the gold pages' PDF text."""

    qs = json.loads((split / "questions.json").read_text())
    qs.append({"qid": "t-4", "doc_id": "fixture.pdf", "doc_type": "Guidebook", "question": "Which colour is the chart's bar?",
               "answer": "magenta", "answer_format": "Str", "evidence_pages": "[2]", "evidence_sources": "['Chart']"})
    (split / "questions.json").write_text(json.dumps(qs))
    settings = _settings()
    res = run(split, ["bm25", "bookindex"], [1, 3], index_dir=tmp_path / "lib", settings=settings,
              embedder=FakeEmbedder.words(), out_dir=tmp_path / "out", progress=False, command="pytest")
    recs = {(r["qid"], r["method"]): r for r in res.records}
    assert recs[("t-1", "bm25")]["text_answerable"] is True and recs[("t-1", "bm25")]["in_evidence"] is True
    assert recs[("t-2", "bm25")]["text_answerable"] is True  # 11 printed as "eleven"
    assert recs[("t-4", "bm25")]["text_answerable"] is False and recs[("t-4", "bm25")]["in_evidence"] is False
    assert recs[("t-1", "bm25")]["page_shown"] is True  # the crimson passage is on gold page 2
    for method in ("bm25", "bookindex"):
        e = res.summary[method]["in_evidence"]
        assert e["n"] == 3 and e["n_text"] == 2
        assert e["all"] == pytest.approx(sum(recs[(q, method)]["in_evidence"] for q in ("t-1", "t-2", "t-4")) / 3)
    assert "in evidence (text) | gold page shown" in res.markdown and "chart (n=1)" in res.markdown
    data = json.loads((tmp_path / "out" / "mmlongbench.json").read_text())
    assert data["in_evidence_breakdown"]["source/text"]["n"] == {"table": 1, "text": 1}

    # the text scored is the evidence block of the prompt a baseline's answer is asked with
    llm = FakeLLM(lambda call: "Crimson [1]")
    engine = Engine(tmp_path / "lib", settings, llm=llm, embedder=FakeEmbedder.words())
    ans = engine.ask(QUESTIONS[0]["question"], doc="fixture.pdf", method="bm25")
    shown = reader_text(engine.open("fixture.pdf"), ans.evidence)
    assert shown and "crimson" in shown.lower()
    assert any(shown in call.prompt for call in llm.calls)


def test_a_gold_page_beyond_the_document_is_read_as_the_page_label_it_names(tmp_path):
    import pymupdf

    from bookindex.evaluation.mmlongbench_run import physical_pages

    doc = pymupdf.open()
    for i in range(5):
        doc.new_page().insert_text((72, 100), f"Sheet {i + 1}")
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "D", "firstpagenum": 1},
                         {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 287}])
    doc.save(tmp_path / "excerpt.pdf")
    pdf = tmp_path / "excerpt.pdf"
    assert physical_pages(pdf, (288,)) == [4]  # labelled 288: the fourth sheet
    assert physical_pages(pdf, (2, 3)) == [2, 3]  # pages the document has are physical, as given
    assert physical_pages(pdf, (0,)) == [0]  # no sheet and no label: kept, it scores nothing
