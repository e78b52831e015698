"""LLM answering for baseline rows and MMLongBench-style answer extraction (A.1.1 of BookRAG).

Baselines only retrieve; to compare answer accuracy with bookindex, the same LLM reads each
baseline's top evidence and answers. Every raw answer (baseline or bookindex) then goes
through one extraction step that turns it into a short answer before rule-based scoring.
"""

from __future__ import annotations

from typing import Any, Sequence

from pydantic import BaseModel, field_validator

ANSWER_STAGE = "eval_answer"
EXTRACT_STAGE = "eval_extract"
MAX_CONTEXT_CHARS = 12000


class ExtractedAnswer(BaseModel):
    answer: str

    @field_validator("answer", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        """A number or a list is an answer too (the model writes {"answer": 2630}): the scorer
        reads the text, and a list as the Python list the benchmark writes."""
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            return str(value)
        if isinstance(value, list):
            return repr([str(v) for v in value])
        return value


def build_context(passages: Sequence[tuple[str, str]], max_chars: int = MAX_CONTEXT_CHARS) -> str:
    """Numbered passages "[i] (page p) text", cut at `max_chars` in total."""
    out: list[str] = []
    used = 0
    for i, (where, text) in enumerate(passages, start=1):
        text = " ".join(text.split())
        room = max_chars - used
        if room <= 0:
            break
        piece = f"[{i}] ({where}) {text[:room]}"
        out.append(piece)
        used += len(piece)
    return "\n\n".join(out)


def answer_question(llm: Any, question: str, passages: Sequence[tuple[str, str]]) -> str:
    """Answer from the retrieved passages only; "Not answerable" when they do not say."""
    prompt = (
        "Answer the question using only the numbered passages from a document.\n"
        "Give the answer first in as few words as possible (a number, a short phrase, or a list "
        "like ['a', 'b']), then one sentence of justification. If the passages do not contain "
        "the answer, reply exactly: Not answerable.\n\n"
        f"Passages:\n{build_context(passages)}\n\nQuestion: {question}\nAnswer:"
    )
    return str(llm.complete([{"role": "user", "content": prompt}], stage=ANSWER_STAGE)).strip()


def extract_answer(llm: Any, question: str, response: str) -> str:
    """The short answer a free-form response gives, in MMLongBench's answer style."""
    prompt = (
        "Extract the final answer to the question from the response below. Output JSON "
        '{"answer": "..."}. Rules: an integer as digits ("3"); a decimal or percentage as written '
        '("72.3%"); a list as a Python list of strings ("[\'a\', \'b\']"); otherwise the shortest '
        'phrase that answers. If the response says the question cannot be answered, output '
        '{"answer": "Not answerable"}.\n\n'
        f"Question: {question}\nResponse: {response}"
    )
    res = llm.complete([{"role": "user", "content": prompt}], schema=ExtractedAnswer, stage=EXTRACT_STAGE)
    return res.answer.strip() if isinstance(res, ExtractedAnswer) else str(res).strip()
