"""The corpus benchmark (Corpus2Skill): questions over a folder of documents, gold = document ids.

Data folders hold `corpus.jsonl` (`id`, `title`, `text`) and `questions.jsonl` (`id`,
`question`, gold ids in `gold_doc_ids` or `article_ids`, optional `answer`): SciFact, HotpotQA-100
and WixQA in ../shared/data. Every method searches one compiled skill folder (its document store
and vectors), so all rows rank the same documents; nothing is indexed into a library.

Metrics: document recall@k = |gold ∩ top-k| / |gold| and all@k (every gold document in the top
k; reported in the loop's `hit` slot), plus, from the rows, documents fetched and tokens read per
question. With an LLM, answers are scored against the reference answer with token F1,
ROUGE-1/2 and BLEU (`text_metrics`), free-form: no short-answer extraction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookindex.core.errors import InputError
from bookindex.evaluation.answering import build_context
from bookindex.evaluation.benchmark import Corpus, EvidenceScore, Group, Meta, Record, Retrieved
from bookindex.evaluation.text_metrics import answer_scores
from bookindex.skills.compiler.corpus import jsonl_records

LABELS = {"SUPPORT", "CONTRADICT"}  # SciFact's verdicts are not answers to score text against
READER_STAGE = "eval_answer"
READER_PROMPT = (
    "Answer the question using only the numbered documents below. The direct answer comes first, "
    "no preamble; at most about 80 words for a fact, numbered steps for a procedure; plain text. "
    "If the documents do not say, reply: Not found in the documents.\n\n"
    "Documents:\n{context}\n\nQuestion: {question}\nAnswer:")


@dataclass(frozen=True)
class CorpusQuestion:
    qid: str
    text: str
    gold: tuple[str, ...]
    answer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def doc(self) -> str | None:
        return None


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line; InputError naming the file and line."""
    if not path.is_file():
        raise InputError(f"{path}: not found")
    return jsonl_records(path, path.read_text(encoding="utf-8"))


def load_questions(data_dir: Path) -> list[CorpusQuestion]:
    path = data_dir / "questions.jsonl"
    qs = []
    for n, rec in read_jsonl(path):
        gold = rec.get("gold_doc_ids", rec.get("article_ids"))
        if "question" not in rec or not isinstance(gold, list):
            raise InputError(f"{path}:{n}: a question needs 'question' and 'gold_doc_ids' (or 'article_ids')")
        answer = rec.get("answer")
        answer = answer if isinstance(answer, str) and answer.strip() and answer not in LABELS else None
        qs.append(CorpusQuestion(str(rec.get("id", n)), str(rec["question"]), tuple(str(g) for g in gold), answer,
                                 {k: v for k, v in rec.items() if k in ("level", "type")}))
    return qs


def load_corpus(data_dir: Path) -> list[tuple[str, str, str]]:
    """(id, title, text) of every document in corpus.jsonl."""
    path = data_dir / "corpus.jsonl"
    docs, seen = [], set()
    for n, rec in read_jsonl(path):
        if "id" not in rec or not str(rec.get("text", "")).strip():
            raise InputError(f"{path}:{n}: a document needs 'id' and a non-empty 'text'")
        doc_id = str(rec["id"])
        if doc_id in seen:
            raise InputError(f"{path}:{n}: duplicate id {doc_id!r}")
        seen.add(doc_id)
        docs.append((doc_id, str(rec.get("title", "")), str(rec["text"])))
    return docs


def corpus_scores(documents: Sequence[str], gold: Sequence[str], ks: Sequence[int]) -> EvidenceScore:
    """Recall@k and all@k of a ranked document list against the gold ids."""
    g = set(gold)
    recall, every = {}, {}
    for k in ks:
        hit = g & set(documents[:k])
        recall[k] = len(hit) / len(g)
        every[k] = float(hit == g)
    return EvidenceScore(recall, every)


class CorpusBenchmark:
    """A `Benchmark` over one corpus data folder, searched through the skill folder `skills`."""

    title = "Corpus navigation"
    recall_label = "document recall"
    breakdowns: Sequence[tuple[str, str]] = ()
    extracts_answer = False  # free answers are scored as written

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.split = self.data_dir.name
        self.name = f"corpus_{self.split}"
        self.skills = ""  # the skill folder searched, for the report

    def questions(self, limit: int | None = None) -> list[CorpusQuestion]:
        qs = load_questions(self.data_dir)
        return qs[:limit] if limit else qs

    def corpus(self, questions: Sequence[CorpusQuestion], index_dir: Path) -> Corpus:
        # nothing to index: the rows search a skill folder (CorpusRow.corpus)
        return Corpus(folder=self.data_dir, files=[], library=Path(index_dir) / "library")

    def asked_without_llm(self, question: CorpusQuestion) -> bool:
        return True

    def record_fields(self, question: CorpusQuestion) -> Record:
        return {"gold_doc_ids": list(question.gold), "answer": question.answer}

    def groups(self, question: CorpusQuestion) -> dict[str, Group]:
        return {}

    def score_evidence(self, question: CorpusQuestion, retrieved: Retrieved, ks: Sequence[int]) -> EvidenceScore | None:
        if not question.gold:
            return None
        return corpus_scores(retrieved.documents, question.gold, ks)

    def reader_passages(self, retrieved: Retrieved, k: int) -> list[tuple[str, str]]:
        return [(e.doc_id, e.snippet) for e in retrieved.evidence[:k]]

    def wants_answer(self, question: CorpusQuestion) -> bool:
        """Only questions with a reference answer are answered by the reader (a SciFact claim,
        whose label is a verdict, is scored on retrieval alone; the navigator still answers)."""
        return question.answer is not None

    def answer_question(self, llm: Any, question: str, passages: Sequence[tuple[str, str]]) -> str:
        """The reader of flat rows: the same model and answer format as the navigator's."""
        prompt = READER_PROMPT.format(context=build_context(passages), question=question)
        return str(llm.complete([{"role": "user", "content": prompt}], stage=READER_STAGE)).strip()

    def score_answer(self, question: CorpusQuestion, raw_answer: str, pred: str) -> dict[str, float]:
        if question.answer is None:
            return {}
        s = answer_scores(raw_answer, question.answer)
        return {"score": s["f1"], **s}

    def answer_metrics(self, records: list[Record]) -> dict[str, float]:
        keys = ("f1", "rouge1", "rouge2", "bleu")
        return {k: sum(r[k] for r in records) / len(records) for k in keys}

    answer_columns = (("F1", "f1"), ("R-1", "rouge1"), ("R-2", "rouge2"), ("BLEU", "bleu"))

    def describe(self, questions: Sequence[CorpusQuestion], docs: Mapping[str, str]) -> Meta:
        return {"gold_per_question": sum(len(q.gold) for q in questions) / max(1, len(questions))}

    def summary_lines(self, meta: Meta) -> list[str]:
        return [f"- {meta['questions']} questions, {meta.get('gold_per_question', 0):.2f} gold documents each; "
                f"skill folder: `{self.skills}`",
                "- R@k: share of a question's gold documents in the top k; hit@k here is all@k "
                "(every gold document in the top k)"]
