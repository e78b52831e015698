"""Two questions asked in one (issue 63): planned as two, and the answer answers both, without a
model (the extractive reader per part) and with one (a partial answer per part, merged, and a
merge that leaves a part out is not returned)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes import FakeEmbedder, FakeLLM, LLMCall

from bookindex.api import Library as ApiLibrary
from bookindex.core.config import load_settings
from bookindex.engine import Engine
from bookindex.indexing.library import DocumentLibrary

LANTERN = """# The Lantern site generator

## Writing pages

Each page is a Markdown file under the pages folder. A page may start with a front matter block
that sets its title and its date.

## Themes

The look of every page comes from a theme. The theme is chosen with the palette key in
lantern.toml; without that key the plain theme is used.

## Publishing

Publishing copies the built site to the server named in the upload section. Before it uploads
the site, Lantern runs the link checker hrefscan over every page and stops when a link is broken.

## Troubleshooting

A build that stops with an encoding error usually has a page saved in a legacy code page.
"""

QUESTION = "Which link checker does Lantern run before uploading, and where is the theme chosen?"
PARTS = ["Which link checker does Lantern run before uploading?", "where is the theme chosen?"]


def _settings():
    return load_settings(overrides={"llm.provider": "none"}, env={})


@pytest.fixture(scope="module")
def libdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("joined")
    md = root / "lantern.md"
    md.write_text(LANTERN)
    DocumentLibrary.open(root / "lib", _settings(), embedder=FakeEmbedder(dim=256)).add(md)
    return root / "lib"


def _doc(libdir: Path, llm: FakeLLM | None = None):
    return ApiLibrary(Engine(libdir, _settings(), embedder=FakeEmbedder(dim=256), llm=llm)).get("lantern.md")


def _cited_snippets(ans) -> dict[int, str]:
    return {e.rank: e.snippet for e in ans.evidence}


def test_without_a_model_the_answer_answers_each_question(libdir):
    ans = _doc(libdir).ask(QUESTION)
    assert ans.query_type == "multi-hop"
    assert ans.plan.steps[0].params["sub_questions"] == PARTS
    assert ans.citation_check == "extractive"
    snippets = _cited_snippets(ans)
    for said, source in (("hrefscan", "link checker hrefscan"), ("palette key", "palette key in")):
        m = re.search(re.escape(said) + r"[^\[]*\[(\d+)\]", ans.answer)
        assert m, (said, ans.answer)
        assert source in snippets[int(m.group(1))]  # each part is cited by the passage that says it


def _number_of(prompt: str, needle: str) -> int:
    """The evidence number [n] the prompt shows `needle` under."""
    number = None
    for line in prompt.splitlines():
        head = re.match(r"\[(\d+)\] \(", line)
        if head:
            number = int(head.group(1))
        if needle in line and number is not None:
            return number
    raise AssertionError(f"{needle!r} not in the prompt's evidence")


def _partial(text: str, number: int, as_field: bool) -> dict:
    """A partial answer citing `number` inline, or (`as_field`, as small models do) in `citations`."""
    return {"answer": text, "citations": [number]} if as_field else {"answer": f"{text} [{number}]"}


def _scripted(drop_second: bool = False, as_field: bool = False, refuse_repair: bool = False):
    """A model that answers each sub-question from its evidence and merges the partial answers
    (or, `drop_second`, merges only the first one, as a small model may; `refuse_repair`: asked to
    repair that, it says the document does not answer)."""
    def reply(call: LLMCall):
        if call.stage == "map":
            if "Question: Which link checker" in call.prompt:
                return _partial("hrefscan", _number_of(call.prompt, "hrefscan"), as_field)
            if "Question: where is the theme chosen?" in call.prompt:
                return _partial("with the palette key in lantern.toml", _number_of(call.prompt, "palette key"), as_field)
            return {"answer": "not found in this evidence"}
        if call.stage == "answer-repair" and refuse_repair:
            return {"answer": "not answerable from the document"}
        if call.stage.startswith("answer"):
            partials = re.findall(r"^- .*?\?: (.*)$", call.prompt, re.M)
            return {"answer": partials[0] if drop_second else "; ".join(partials)}
        if call.stage == "select_section":
            return {"sections": []}
        raise AssertionError(f"unexpected stage {call.stage}")
    return FakeLLM(reply)


def test_with_a_model_each_question_is_asked_and_both_answers_are_kept(libdir):
    llm = _scripted()
    ans = _doc(libdir, llm).ask(QUESTION)
    assert ans.query_type == "multi-hop" and "classify" not in llm.stages and "decompose" not in llm.stages
    asked = [re.search(r"^Question: (.*)$", c.prompt, re.M).group(1) for c in llm.calls if c.stage == "map"]
    assert asked == PARTS
    merge = next(c.prompt for c in llm.calls if c.stage == "answer")
    assert f"Question: {QUESTION}" in merge and "hrefscan [" in merge and "palette key in lantern.toml [" in merge
    assert ans.citation_check == "valid"
    assert "hrefscan" in ans.answer and "palette key" in ans.answer and len(ans.citations) == 2


@pytest.mark.parametrize("as_field", [False, True], ids=["cited-inline", "cited-in-the-field"])
def test_a_merge_that_leaves_a_question_out_is_repaired_or_replaced_by_both_partial_answers(libdir, as_field):
    llm = _scripted(drop_second=True, as_field=as_field)
    ans = _doc(libdir, llm).ask(QUESTION)
    assert llm.stages.count("answer") == 1 and llm.stages.count("answer-repair") == 1
    repair = next(c.prompt for c in llm.calls if c.stage == "answer-repair")
    assert "leaves out the answer to 'where is the theme chosen?'" in repair
    assert ans.citation_check == "fallback"  # the partial answers, each cited, joined
    assert "hrefscan [" in ans.answer and "palette key in lantern.toml [" in ans.answer


def test_a_repair_that_says_not_answerable_is_not_taken_over_the_partial_answers(libdir):
    llm = _scripted(drop_second=True, as_field=True, refuse_repair=True)
    ans = _doc(libdir, llm).ask(QUESTION)
    assert llm.stages.count("answer-repair") == 1
    assert ans.citation_check == "fallback"
    assert "hrefscan [" in ans.answer and "palette key in lantern.toml [" in ans.answer
