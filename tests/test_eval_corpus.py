"""The corpus benchmark on a tiny in-test corpus, its metrics, and the answer metrics."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from fakes import FakeEmbedder, FakeLLM
from script_loader import load_script
from skills_helpers import DOCS, build_skill_folder

from bookindex.core.config import Settings
from bookindex.core.errors import InputError
from bookindex.evaluation.cli import run_and_print
from bookindex.evaluation.corpus import READER_STAGE, corpus_scores, load_corpus, load_questions
from bookindex.evaluation.corpus_run import run
from bookindex.evaluation.loop import error_limit, method_failures
from bookindex.evaluation.text_metrics import answer_scores, bleu, rouge, token_f1
from bookindex.skills.navigator.agent import STAGE

EMB = FakeEmbedder(dim=64, word=r"\w+")
QUESTIONS = [
    {"id": "q1", "question": "bake sourdough bread starter", "gold_doc_ids": ["d1"], "answer": "Use a starter."},
    {"id": "q2", "question": "rocket engine launch orbit", "gold_doc_ids": ["d5", "d6"], "answer": None},
    {"id": "q3", "question": "red planet storm moons", "article_ids": ["d8"], "answer": "SUPPORT"},
]


def write_data(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "title": t, "text": x}) + "\n"
                                                 for d, (t, x) in DOCS.items()))
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return folder


def settings(tmp_path: Path) -> Settings:
    return Settings().with_overrides({"cache.path": str(tmp_path / "cache"), "llm.provider": "none"})


def test_corpus_scores_recall_and_all() -> None:
    s = corpus_scores(["a", "x", "b"], ["a", "b"], [1, 2, 3])
    assert s.recall == {1: 0.5, 2: 0.5, 3: 1.0} and s.hit == {1: 0.0, 2: 0.0, 3: 1.0}


def test_loading_names_the_file_and_line(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    qs = load_questions(data)
    assert [q.gold for q in qs] == [("d1",), ("d5", "d6"), ("d8",)]
    assert qs[0].answer == "Use a starter." and qs[2].answer is None  # a SciFact verdict is no answer
    (data / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(InputError, match=r"corpus.jsonl:2: duplicate id"):
        load_corpus(data)
    (data / "questions.jsonl").write_text('{"id": 1}\n')
    with pytest.raises(InputError, match=r"questions.jsonl:1"):
        load_questions(data)


def test_benchmark_every_method_without_an_llm(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    skills = build_skill_folder(tmp_path / "skills", EMB)
    res = run(data, ["bm25", "dense", "hybrid", "raptor", "skills-embedding"], [1, 2, 5], skills=skills,
              settings=settings(tmp_path), embedder=EMB, beam=1, out_dir=tmp_path / "out", progress=False)
    summary = json.loads((tmp_path / "out" / "corpus_data.json").read_text())["corpus_summary"]
    assert set(summary) == {"bm25", "dense", "hybrid", "raptor", "skills-embedding"}
    for row in summary.values():
        assert row["questions"] == 3 and row["errors"] == 0
        assert row["recall"]["5"] == 1.0  # every method finds them on this corpus
    assert summary["skills-embedding"]["nav_tokens"] > 0 and summary["bm25"]["nav_tokens"] == 0
    assert summary["skills-embedding"]["fetched"] == 2.0  # beam 1 reaches one leaf of two documents
    assert "all@5" in res.markdown and "docs fetched/q" in res.markdown


def test_benchmark_flat_store_without_a_skill_folder(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    res = run(data, ["bm25", "dense"], [1, 5], settings=settings(tmp_path), embedder=EMB, progress=False)
    assert res.summary["dense"]["recall"][5] == 1.0
    with pytest.raises(InputError, match="unknown corpus method"):
        run(data, ["bookindex"], [1], settings=settings(tmp_path), embedder=EMB, progress=False)


def test_benchmark_answers_with_an_llm(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    skills = build_skill_folder(tmp_path / "skills", EMB)

    def reply(call):  # type: ignore[no-untyped-def]
        if call.stage == STAGE:
            read = any("Result of get_document" in str(m.get("content")) for m in call.messages)
            return ({"action": "answer", "answer": "Use a starter.", "cited": ["d1"]} if read
                    else {"action": "get_document", "doc_id": "d1"})
        return "Use a starter for the bread."

    llm = FakeLLM(reply)
    res = run(data, ["dense", "skills-llm"], [1, 5], skills=skills, settings=settings(tmp_path), embedder=EMB,
              llm=llm, progress=False)
    assert res.summary["skills-llm"]["answers"]["f1"] == 1.0  # q1 only: the one with a text answer
    assert 0 < res.summary["dense"]["answers"]["f1"] < 1.0
    rec = next(r for r in res.records if r["method"] == "skills-llm" and r["qid"] == "q1")
    assert rec["cited"] == ["d1"] and rec["llm_calls"] == 2 and rec["recall"][1] == 1.0
    assert "eval_extract" not in llm.stages  # free answers are scored as written
    # q2 and q3 have no reference text: the reader is not asked, the navigator's answer is kept
    assert llm.stages.count(READER_STAGE) == 1
    assert "raw_answer" not in next(r for r in res.records if r["method"] == "dense" and r["qid"] == "q2")
    assert next(r for r in res.records if r["method"] == "skills-llm" and r["qid"] == "q2")["raw_answer"]


def test_answer_metrics() -> None:
    assert token_f1("The cat sat.", "a cat sat") == 1.0
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("", "") == 1.0
    r1, r2 = rouge("the cat sat on the mat", "the cat sat on a mat")
    assert 0.8 < r1 < 1.0 and 0.5 < r2 < 1.0
    assert bleu("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(1.0)
    assert bleu("completely different words", "the cat sat on the mat") < 0.1
    assert set(answer_scores("a", "b")) == {"f1", "rouge1", "rouge2", "bleu"}


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    (data / "questions.jsonl").write_text('{"id": "1", "question": "q", "gold_doc_ids": []}\nnot json\n')
    with pytest.raises(InputError, match=r"questions.jsonl:2: malformed JSON"):
        load_questions(data)


def test_the_llm_navigators_recall_is_split_into_read_and_listed(tmp_path: Path) -> None:
    """A navigator that opens the right leaf but never reads a document: its ranking still holds
    the leaf's documents (R@k), while R@k over what it read stays 0 and is reported apart."""
    data = write_data(tmp_path / "data")
    skills = build_skill_folder(tmp_path / "skills", EMB)

    def reply(call):  # type: ignore[no-untyped-def]
        if call.stage == STAGE:
            return {"action": "view", "path": "skill-02-space/group-00-rockets/INDEX.md"}
        return "no idea"

    res = run(data, ["skills-llm-plain"], [1, 5], skills=skills, settings=settings(tmp_path), embedder=EMB,
              llm=FakeLLM(reply), out_dir=tmp_path / "out", progress=False, limit=2, offset=1)
    rec = res.records[0]
    assert rec["qid"] == "q2" and rec["stopped"] == "max_rounds" and rec["read_docs"] == []
    assert rec["listed"] == 2 and rec["recall"][5] == 1.0
    s = json.loads((tmp_path / "out" / "corpus_data.json").read_text())["corpus_summary"]["skills-llm-plain"]
    assert s["read_recall"]["5"] == 0.0 and s["recall"]["5"] == 0.5 and s["listed"] == 2.0
    assert "R@5 read+listed" in res.markdown
    # guided, the width-1 beam's documents follow what it read: nothing is left only "listed"
    guided = run(data, ["skills-llm"], [1, 5], skills=skills, settings=settings(tmp_path), embedder=EMB,
                 llm=FakeLLM(reply), out_dir=tmp_path / "out2", progress=False, limit=2, offset=1)
    rec = guided.records[0]
    assert rec["read_docs"] == [] and rec["recall"][5] == 1.0


def test_the_unguided_navigator_is_a_row_of_its_own(tmp_path: Path) -> None:
    """skills-llm offers next steps nearest the question first; skills-llm-plain is the paper's
    agent, shown the tree's order. Both are scored as LLM navigators."""
    data = write_data(tmp_path / "data")
    skills = build_skill_folder(tmp_path / "skills", EMB)
    seen: dict[str, str] = {}

    def reply(call):  # type: ignore[no-untyped-def]
        seen.setdefault(call.stage + str(len(seen)), call.prompt)
        return {"action": "answer", "answer": "no idea"}

    res = run(data, ["skills-llm", "skills-llm-plain"], [1], skills=skills, settings=settings(tmp_path), embedder=EMB,
              llm=FakeLLM(reply), out_dir=tmp_path / "out", progress=False, limit=1)
    assert {r["method"] for r in res.records} == {"skills-llm", "skills-llm-plain"}
    guided = [p for p in seen.values() if "nearest the question" in p]
    assert guided and len(guided) < len(seen)
    s = json.loads((tmp_path / "out" / "corpus_data.json").read_text())["corpus_summary"]
    assert s["skills-llm-plain"]["read_recall"] is not None


def eval_corpus_script() -> ModuleType:
    return load_script("eval_corpus")


@pytest.mark.parametrize("method", ["skills-embedding", "skills-llm", "skills-llm-plain", "raptor"])
def test_tree_methods_without_a_skill_folder_are_refused_at_start(tmp_path: Path, method: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = write_data(tmp_path / "data")
    with pytest.raises(InputError, match=f"--method {method} navigates a skill tree: give --skills FOLDER"):
        run(data, ["dense", method], [1], settings=settings(tmp_path), embedder=EMB, progress=False)
    assert not (tmp_path / "cache").exists()  # refused before anything was embedded
    code = eval_corpus_script().main([str(data), "--method", f"dense,{method}", "--no-progress",
                                      "--out", str(tmp_path / "out"), "--set", f"cache.path={tmp_path / 'cache'}"])
    assert code == 2
    assert "give --skills FOLDER" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_method_failing_on_most_questions_fails_the_run_after_its_report(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = write_data(tmp_path / "data")
    flat = run(data, ["dense"], [1], settings=settings(tmp_path), embedder=EMB, progress=False)
    assert flat.failures == []
    code = run_and_print(lambda: run(data, ["dense", "skills-embedding"], [1, 5], skills=Path(flat.meta["skills"]),
                                     settings=settings(tmp_path), embedder=EMB, out_dir=tmp_path / "out", progress=False))
    out, err = capsys.readouterr()
    assert code == 1
    assert (tmp_path / "out" / "corpus_data.json").is_file() and "corpus_data.md" in out  # the report came first
    assert "error: skills-embedding: 3 of 3 questions failed" in err and "no clusters to navigate" in err
    assert "dense" not in err


def test_the_error_limit_allows_a_few_errors_only() -> None:
    assert error_limit(10) == 2 and error_limit(300) == 15

    def records(n: int, errors: int) -> list[dict[str, object]]:
        return [{"method": "m", "qid": f"q{i}", "error": "Boom: x" if i < errors else None} for i in range(n)]

    assert method_failures(records(10, 2), ["m"]) == []
    assert method_failures(records(300, 15), ["m"]) == []
    [line] = method_failures(records(300, 16), ["m"])
    assert line.startswith("m: 16 of 300 questions failed") and line.endswith("first, q0: Boom: x")
