"""The evaluation loop with a benchmark defined here and nowhere else.

`TinyCorpus` implements only the `Benchmark` protocol (no base class, no registration): a corpus
benchmark whose questions name no document (the Engine routes them), whose gold is a document
file and whose metric is document recall@k. If the loop needed anything beyond the protocol,
these tests could not pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeEmbedder, FakeLLM, LLMCall

from bookindex.core.config import load_settings
from bookindex.core.model import Evidence
from bookindex.evaluation.benchmark import Corpus, EvidenceScore, Group, Meta, Record, Retrieved
from bookindex.evaluation.loop import run_benchmark
from bookindex.evaluation.rows import make_rows

DOCS = {
    "zebra.md": "# Zebras\n\nZebras are striped animals of the African savanna.\n",
    "comet.md": "# Comets\n\nComets are icy bodies with glowing tails in the night sky.\n",
}


@dataclass(frozen=True)
class CorpusQuestion:
    qid: str
    text: str
    gold: list[str]
    answer: str
    topic: str
    doc: str | None = None


QUESTIONS = [
    CorpusQuestion("c-1", "Which animals are striped?", ["zebra.md"], "zebras", "animals"),
    CorpusQuestion("c-2", "Which icy bodies have glowing tails?", ["comet.md"], "comets", "space"),
    CorpusQuestion("c-3", "Who first painted striped animals?", [], "not answerable", "animals"),
]


@dataclass
class TinyCorpus:
    """Documents written from DOCS; `extra` questions may name a document (one not indexed)."""

    extra: list[CorpusQuestion] = field(default_factory=list)
    name: str = "tinycorpus"
    title: str = "Tiny corpus"
    split: str = "tiny"
    recall_label: str = "document recall@k"
    breakdowns: tuple[tuple[str, str], ...] = (("topic", "topic"),)

    def questions(self, limit: int | None = None) -> list[CorpusQuestion]:
        qs = QUESTIONS + self.extra
        return qs[:limit] if limit else qs

    def corpus(self, questions: Sequence[CorpusQuestion], index_dir: Path) -> Corpus:
        folder = index_dir / "docs"
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in DOCS.items():
            (folder / name).write_text(text, encoding="utf-8")
        return Corpus(folder=folder, files=sorted(DOCS), library=index_dir / "library")

    def asked_without_llm(self, question: CorpusQuestion) -> bool:
        return bool(question.gold)

    def record_fields(self, question: CorpusQuestion) -> Record:
        return {"gold_docs": question.gold}

    def groups(self, question: CorpusQuestion) -> dict[str, Group]:
        return {"topic": question.topic}

    def score_evidence(self, question: CorpusQuestion, retrieved: Retrieved,
                       ks: Sequence[int]) -> EvidenceScore | None:
        if not question.gold:
            return None
        found = retrieved.documents
        recall = {k: len(set(found[:k]) & set(question.gold)) / len(question.gold) for k in ks}
        return EvidenceScore(recall=recall, hit={k: float(v > 0) for k, v in recall.items()})

    def reader_passages(self, retrieved: Retrieved, k: int) -> list[tuple[str, str]]:
        return [(f"doc {d}", t) for d, t in zip(retrieved.documents, retrieved.texts[:k])]

    def score_answer(self, question: CorpusQuestion, raw_answer: str, pred: str) -> dict[str, float]:
        return {"score": float(pred.lower() == question.answer), "raw_len": float(len(raw_answer))}

    def answer_metrics(self, records: list[Record]) -> dict[str, float]:
        return {"accuracy": sum(r["score"] for r in records) / len(records), "f1": 0.5}

    def describe(self, questions: Sequence[CorpusQuestion], docs: Mapping[str, str]) -> Meta:
        return {"corpus_documents": len(docs)}

    def summary_lines(self, meta: Meta) -> list[str]:
        return [f"- corpus: {meta['corpus_documents']} documents; questions: {meta['questions']}"]


def passage_reply(call: LLMCall) -> Any:
    """Answers with the first word of the first passage's text; extraction returns the reply."""
    text = call.prompt
    if call.schema is None:
        passage = text.split("Passages:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        return passage.split(") ", 1)[1].split()[0] if ") " in passage else "Not answerable"
    return {"answer": text.split("Response:", 1)[1].strip()}


@pytest.fixture()
def settings():
    return load_settings(env={}, overrides={"llm.provider": "none", "graph.enabled": False})


def _run(benchmark, settings, tmp_path, **kw):
    return run_benchmark(benchmark, make_rows(["bm25"], [], settings), [1, 2], settings=settings,
                         index_dir=tmp_path / "idx", embedder=FakeEmbedder.words(),
                         progress=False, command="pytest", **kw)


def test_a_protocol_only_benchmark_runs_through_the_loop(settings, tmp_path):
    out = tmp_path / "out"
    res = _run(TinyCorpus(), settings, tmp_path, out_dir=out)
    # retrieval only: the question without gold is not asked
    assert [r["qid"] for r in res.records] == ["c-1", "c-2"]
    assert res.meta["indexed"] == 2 and res.meta["corpus_documents"] == 2
    for rec, q in zip(res.records, QUESTIONS):
        assert rec["error"] is None and rec["doc"] is None
        assert rec["gold_docs"] == q.gold and rec["groups"] == {"topic": q.topic}
        assert rec["recall"] == {1: 1.0, 2: 1.0}, rec  # routed to the right document
        assert rec["evidence"] and rec["nodes"] >= 1
    s = res.summary["bm25"]
    assert s["recall_questions"] == 2 and "answers" not in s
    md = (out / "tinycorpus.md").read_text()
    assert md.startswith("# Tiny corpus (tiny)\n")
    assert "- corpus: 2 documents; questions: 3" in md
    assert "| bm25 | 2 | 1.000 | 1.000 |" in md and "| acc |" not in md
    assert "Recall@2 by topic:" in md and "animals (n=1)" in md and "space (n=1)" in md
    data = json.loads((out / "tinycorpus.json").read_text())
    assert set(data["breakdown"]) == {"topic"} and len(data["records"]) == 2
    assert (out / "tinycorpus_recall.png").stat().st_size > 1000
    assert res.files == {"json": str(out / "tinycorpus.json"), "markdown": str(out / "tinycorpus.md"),
                         "plot": str(out / "tinycorpus_recall.png")}
    # a second run reuses both documents
    again = _run(TinyCorpus(), settings, tmp_path, limit=1)
    assert again.meta["reused"] == 2 and again.meta["indexed"] == 0 and len(again.records) == 1


def test_with_an_llm_the_benchmark_labels_passages_and_scores_answers(settings, tmp_path):
    llm = FakeLLM(passage_reply, model="fake")
    res = _run(TinyCorpus(), settings, tmp_path, llm=llm, index_without_llm=True)
    prompts = [c.prompt for c in llm.calls]
    recs = {r["qid"]: r for r in res.records}
    assert set(recs) == {"c-1", "c-2", "c-3"}  # with an LLM every question is asked
    assert recs["c-3"]["recall"] is None
    assert any("(doc zebra.md) Zebras" in p for p in prompts)  # reader_passages labelled them
    assert recs["c-1"]["pred"] == "Zebras" and recs["c-1"]["score"] == 1.0
    assert recs["c-1"]["raw_len"] == len("Zebras")  # every key score_answer returns is kept
    assert recs["c-2"]["score"] == 1.0 and recs["c-3"]["score"] == 0.0
    assert res.summary["bm25"]["answers"] == {"accuracy": pytest.approx(2 / 3), "f1": 0.5}
    assert "| acc | F1 | errors |" in res.markdown and "| 0.667 | 0.500 | 0 |" in res.markdown
    assert res.meta["llm"] != "none (retrieval only)" and "llm_usage" in res.meta


def test_a_question_whose_document_is_not_indexed_fails_alone(settings, tmp_path):
    lost = CorpusQuestion("c-4", "Which animals are striped?", ["zebra.md"], "zebras", "animals", doc="lost.md")
    res = _run(TinyCorpus(extra=[lost]), settings, tmp_path)
    recs = {r["qid"]: r for r in res.records}
    assert "lost.md" in recs["c-4"]["error"] and recs["c-4"]["recall"] == {1: 0.0, 2: 0.0}
    assert recs["c-1"]["error"] is None and recs["c-1"]["recall"][1] == 1.0
    assert res.summary["bm25"]["errors"] == 1


def _ev(doc: str, node: str, rank: int) -> Evidence:
    return Evidence(doc_id=doc, node_id=node, type="text", page_idx=0, rank=rank)


def test_retrieved_reads_passages_once_and_only_when_asked():
    reads: list[str] = []

    def read(e: Evidence) -> str:
        reads.append(e.node_id)
        return f"text of {e.node_id}"

    got = Retrieved([_ev("d1", "a", 1), _ev("d2", "b", 2), _ev("d1", "c", 3)], None, read=read,
                    names={"d1": "one.md"})
    assert got.documents == ["one.md", "d2"]  # rank order, each once, file names where known
    assert reads == []
    assert got.texts == ["text of a", "text of b", "text of c"] and got.texts is got.texts
    assert reads == ["a", "b", "c"]
