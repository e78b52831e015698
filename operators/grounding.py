"""Verified citations: an LLM answer must cite the evidence it uses, or it is not returned.

Small models often answer without citing, or cite a number no evidence item has. A user cannot
check such an answer, so it is checked here: every LLM answer must cite at least one item [n],
and every cited n must be an item the prompt showed. An answer that breaks the rule gets one
repair round (the same prompt, the answer, and the rule it broke); if the repaired answer still
breaks it, the extractive answer is returned instead. Which of these happened is recorded
(`check`), so traces and benchmarks can count it. "Not answerable" needs no citation. An answer
whose only content words are the question's own ("sponsor [2]" to "What is a sponsor?") breaks
the rule too, however well it cites: it says nothing a reader could check against the evidence.

A refusal can be replaced too (`refusal_fallback`): when the model answers "not answerable" and
the extractive reader finds an answer in the same evidence, that answer is returned behind
REFUSED_MARK, which says the model found none, with check "refused-extractive". A small model
refuses questions its evidence answers; a capable model's refusal is usually right (documents do
leave questions unanswered), so callers turn this on per model (`refusal_fallback_on`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bookindex.core.config import Settings
from bookindex.core.protocols import LLM
from bookindex.core.quantities import CURRENCY
from bookindex.operators import prompts
from bookindex.operators.question_shape import asks_yes_or_no, offered_words, question_verbs
from bookindex.providers.lexical import STOPWORDS, stem_words, tokenize

NOT_ANSWERABLE = "not answerable from the document"
# what precedes the extractive answer that replaced a refusal (it must not read as a refusal itself)
REFUSED_MARK = "The model found no answer in the evidence; the extractive reader's answer: "

# ("token", text) | ("reset", why): the answer as it is written (grounded_answer)
AnswerEvents = Callable[[str, Any], None]

CitationCheck = Literal["valid", "repaired", "fallback", "extractive", "not-answerable", "refused-extractive"]
# the checks of an answer the model wrote (the others are the extractive reader's)
MODEL_CHECKS: tuple[CitationCheck, ...] = ("valid", "repaired", "not-answerable")


@dataclass
class GroundedAnswer:
    answer: str
    citations: list[int]
    check: CitationCheck
    notes: dict[str, Any] = field(default_factory=dict)


_CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")  # [3], [2, 3], [2; 3]


def cited_numbers(text: str) -> list[int]:
    """The evidence numbers an answer cites: [3], [2][3] and [2, 3] all count."""
    nums: set[int] = set()
    for group in _CITATION.findall(text):
        nums.update(int(x) for x in re.split(r"\s*[,;]\s*", group))
    return sorted(nums)


def is_not_answerable(text: str) -> bool:
    t = " ".join(text.lower().split()).strip(" .\"'")
    return t.startswith("not answerable") or t.startswith(NOT_ANSWERABLE)


def _for_embedded(mode: str, settings: Settings) -> bool:
    """An "auto | always | never" setting's answer: "auto" holds for the in-process model only
    (llm.provider llamacpp, the embedded small model)."""
    return mode == "always" or (mode == "auto" and settings.llm.provider == "llamacpp")


def refusal_fallback_on(settings: Settings) -> bool:
    """Whether a refusal gives way to the extractive answer (`answer.refusal_fallback`): "auto"
    means for the in-process model only."""
    return _for_embedded(settings.answer.refusal_fallback, settings)


def computed_on(settings: Settings, llm_answers: bool) -> bool:
    """Whether a question's arithmetic is computed from the tables (`answer.computed`): "auto"
    when no model answers, or the model is the in-process one (llm.provider llamacpp)."""
    mode = settings.answer.computed
    return mode == "always" or (mode == "auto" and (not llm_answers or settings.llm.provider == "llamacpp"))


def extractive_quantities_on(settings: Settings) -> bool:
    """Whether a quantity question the extractive reader answers with a number of the kind asked
    is answered without the model (`answer.extractive_quantities`): "auto" for the in-process
    model (llm.provider llamacpp)."""
    return _for_embedded(settings.answer.extractive_quantities, settings)


def _span(allowed: Collection[int]) -> str:
    nums = sorted(allowed)
    if nums and nums == list(range(nums[0], nums[-1] + 1)):
        return f"{nums[0]} to {nums[-1]}"
    return ", ".join(str(n) for n in nums)


_QUOTES = "\"'“”‘’"
_SENTENCE_END = ".,;:!?"
_NUMBER = re.compile(rf"[-+{CURRENCY}]?\d[\d,.]*%?")
# a negation is a stopword that answers: "no stretch or shrink" says what the question does not
NEGATIONS = frozenset({"no", "not", "nor", "never", "none", "neither", "nothing", "cannot"})


def _written(text: str) -> list[str]:
    """The words of `text` as written, quotes and sentence punctuation off; a name's own marks
    stay ("write.csv", "/media", ".gprc", "`quit`"), so a name spelled from the question's words
    is not one of them."""
    words = (w.strip(_QUOTES).rstrip(_SENTENCE_END).strip(_QUOTES) for w in text.split())
    return [w for w in words if w]


def _repeats(word: str, asked: set[str], asked_lower: set[str], stems: set[str]) -> bool:
    """Whether `word` is a word of the question: the same word, or the same stem ("mirrors"),
    and not a name told by its capitals ("REMOVE" where the question writes "remove")."""
    if word.isupper() and len(word) > 1 and word not in asked:
        return False
    low = word.lower()
    return low in asked_lower or (low.isalpha() and stem_words([low])[0] in stems)


def question_words_only(answer: str, question: str) -> list[str]:
    """The answer's content words when every one of them is a word of the question, else []:
    "mirror [2][3]" to "What is a mirror?" says nothing the evidence adds, whatever it cites.
    Kept: a number or a negation (a value, a denial), a yes/no question's restatement (it
    affirms it), a word of something the question offers to choose from ("A or B?": it picks
    one) and the question's own verb ("quit" to "How do I quit the shell?": a command named by
    it), as `operators.question_shape` reads them."""
    written = _written(_CITATION.sub(" ", answer))
    if not question.strip() or any(_NUMBER.fullmatch(w) or w.lower() in NEGATIONS for w in written):
        return []
    words = [w for w in written if w.lower() not in STOPWORDS]
    asked = set(_written(question))
    asked_lower = {w.lower() for w in asked}
    stems = set(stem_words([w for w in asked_lower if w.isalpha()]))
    if not words or not all(_repeats(w, asked, asked_lower, stems) for w in words):
        return []
    lower = {w.lower() for w in words}
    if asks_yes_or_no(question) or lower & (offered_words(question) | question_verbs(question)):
        return []
    return list(dict.fromkeys(w.lower() for w in words))


def answered_parts(partials: list[dict[str, Any]], allowed: Collection[int]) -> list[tuple[str, list[int]]]:
    """(sub-question, the shown numbers its partial answer cites) of each partial that found an
    answer: what a merged answer to questions joined in one must keep (`citation_problem`)."""
    out = []
    for p in partials:
        text = str(p.get("answer", ""))
        nums = [n for n in cited_numbers(text) if n in allowed]
        if nums and not is_not_answerable(text) and prompts.NOT_FOUND not in text.lower():
            out.append((str(p.get("question", "")), nums))
    return out


def citation_problem(answer: str, allowed: Collection[int], question: str = "",
                     parts: list[tuple[str, list[int]]] | None = None) -> str | None:
    """What is wrong with an answer's citations (None: nothing). `allowed`: the shown numbers;
    with the `question`, an answer that only repeats its words is wrong too, cited or not; with
    `parts` (`answered_parts`), an answer citing none of a part's evidence leaves that part out,
    and one saying the document does not answer contradicts the partial answers that found one."""
    if is_not_answerable(answer):
        if parts:
            return (f"says the document does not answer, though the evidence answers {parts[0][0]!r} "
                    f"(from {''.join(f'[{n}]' for n in parts[0][1])}); answer every part of the question")
        return None
    nums = cited_numbers(answer)
    if not nums:
        return "cites no evidence"
    bad = [n for n in nums if n not in allowed]
    if bad:
        return f"cites {', '.join(f'[{n}]' for n in bad)}, which no evidence item has"
    repeated = question_words_only(answer, question)
    if repeated:
        return (f"only repeats the question's words ({', '.join(repeated)}) and says nothing the evidence "
                "adds; answer with what the evidence says about them")
    for asked, part_nums in parts or []:
        if not set(part_nums) & set(nums):
            return (f"leaves out the answer to {asked!r} (from {''.join(f'[{n}]' for n in part_nums)}); "
                    "answer every part of the question")
    return None


def reply_text(reply: Any, shown: Collection[int] | None = None) -> str:
    """The answer text, with the `citations` field written in when the prose cites nothing
    (with `shown`, only the numbers of the evidence the call showed: a Map call shows a group)."""
    text = str(getattr(reply, "answer", reply)).strip()
    listed = sorted({n for n in getattr(reply, "citations", None) or []
                     if isinstance(n, int) and (shown is None or n in shown)})
    if listed and text and not cited_numbers(text) and not is_not_answerable(text):
        text = f"{text} " + "".join(f"[{n}]" for n in listed)
    return text


def drop_unsupported(answer: str, sources: Mapping[int, str]) -> tuple[str, list[int]]:
    """Remove citations [n] whose evidence shares no word with the answer (a model that cites
    every item it was shown): a passage that says nothing the answer says cannot support it.
    Returns the answer and the dropped numbers; when no cited item shares a word (the answer
    paraphrases), nothing is dropped, since words alone cannot judge it."""
    words = set(tokenize(_CITATION.sub(" ", answer)))
    cited = [n for n in cited_numbers(answer) if n in sources]
    if not words or not cited:
        return answer, []
    keep = [n for n in cited if words & set(tokenize(sources[n]))]
    if not keep:
        return answer, []
    dropped = [n for n in cited if n not in keep]
    for n in dropped:
        answer = answer.replace(f"[{n}]", "")
    return " ".join(answer.split()), dropped


def grounded_answer(llm: LLM | None, prompt: str, allowed: Collection[int],
                    extractive: Callable[[], tuple[str, list[int]]], *, stage: str = "answer",
                    sources: Mapping[int, str] | None = None,
                    on_event: AnswerEvents | None = None, refusal_fallback: bool = False,
                    reader: Callable[[], tuple[str, list[int]]] | None = None,
                    question: str = "", parts: list[tuple[str, list[int]]] | None = None) -> GroundedAnswer:
    """Answer with `prompt` and check the citations against `allowed`; one repair round, then
    the `extractive` answer. Without an available LLM, or when a call fails, extractive at once.
    With `sources` (number -> the text shown for it), citations of items that share no word
    with the answer are dropped (`drop_unsupported`) and listed in the notes.
    `on_event` gets the answer as it is written: ("token", text) pieces of the model's answer,
    and ("reset", why) when the text streamed so far is withdrawn (a repair round follows, or
    the extractive answer replaces it); the returned answer is the one to keep.
    `refusal_fallback`: a "not answerable" reply gives way to the extractive answer when the
    reader finds one, marked (REFUSED_MARK, check "refused-extractive"; module docstring);
    `reader` is the extractive reader's answer for that (default: `extractive`), where
    `extractive` is something else (partial answers joined). With the `question`, an answer that
    only repeats its words breaks the rule too (`question_words_only`); with `parts`, an answer
    that cites none of a part's evidence (questions joined in one, `answered_parts`)."""
    notes: dict[str, Any] = {}
    result = _grounded(llm, prompt, allowed, extractive, stage, notes, on_event, (question, parts))
    if refusal_fallback and result.check == "not-answerable":
        result = _instead_of_refusal(result, reader or extractive, notes, on_event)
    if sources and result.check in ("valid", "repaired"):
        text, dropped = drop_unsupported(result.answer, sources)
        if dropped:
            notes["unsupported_citations_dropped"] = dropped
            result = GroundedAnswer(text, cited_numbers(text), result.check, notes)
    return result


def _instead_of_refusal(refused: GroundedAnswer, extractive: Callable[[], tuple[str, list[int]]],
                        notes: dict[str, Any], on_event: AnswerEvents | None) -> GroundedAnswer:
    """The extractive answer, marked, in place of the model's refusal; the refusal stands when
    the reader finds nothing either."""
    text, cites = extractive()
    if not text.strip() or is_not_answerable(text):
        return refused
    notes["model_answer"] = refused.answer[:500]
    if on_event is not None:
        on_event("reset", "the model found no answer: the extractive answer replaces it, marked")
    return GroundedAnswer(REFUSED_MARK + text, cites, "refused-extractive", notes)


def _ask(llm: LLM, prompt: str, stage: str, sink: Callable[[str], None] | None) -> str:
    """One answer call: the Grounded schema, or the reply read as prose when it is not JSON."""
    return reply_text(llm.complete(prompt, schema=prompts.Grounded, stage=stage, on_text=sink,
                                    from_text=prompts.grounded_from_prose))


def _grounded(llm: LLM | None, prompt: str, allowed: Collection[int],
              extractive: Callable[[], tuple[str, list[int]]], stage: str, notes: dict[str, Any],
              on_event: AnswerEvents | None = None,
              asked: tuple[str, list[tuple[str, list[int]]] | None] = ("", None)) -> GroundedAnswer:
    streamed: list[str] = []

    def on_text(text: str) -> None:
        streamed.append(text)
        if on_event is not None:
            on_event("token", text)

    def reset(why: str) -> None:
        if streamed and on_event is not None:
            on_event("reset", why)
        streamed.clear()

    sink = on_text if on_event is not None else None
    if llm is not None and llm.available and allowed:
        try:
            first = _ask(llm, prompt, stage, sink) or NOT_ANSWERABLE
            problem = citation_problem(first, allowed, *asked)
            if problem is None:
                check: CitationCheck = "not-answerable" if is_not_answerable(first) else "valid"
                return GroundedAnswer(first, cited_numbers(first) if check == "valid" else [], check, notes)
            notes["citation_problem"] = problem
            reset(f"the answer {problem}: one repair round")
            repair = prompt + prompts.REPAIR_CITATIONS.format(answer=first, problem=problem, allowed=_span(allowed))
            second = _ask(llm, repair, f"{stage}-repair", sink)
            problem2 = citation_problem(second, allowed, *asked) if second else "was empty"
            if problem2 is None:
                check = "not-answerable" if is_not_answerable(second) else "repaired"
                return GroundedAnswer(second, cited_numbers(second) if check == "repaired" else [], check, notes)
            notes["discarded_answer"] = second[:500] or first[:500]
            notes["repair_problem"] = problem2
            reset(f"the repaired answer {problem2}: the extractive answer replaces it")
            text, cites = extractive()
            return GroundedAnswer(text, cites, "fallback", notes)
        except Exception as exc:  # noqa: BLE001 - the extractive answer still answers
            notes["fallback"] = f"LLM failed ({type(exc).__name__}: {str(exc)[:160]}); used the no-LLM path"
            reset("the LLM failed: the extractive answer replaces it")
    text, cites = extractive()
    return GroundedAnswer(text, cites, "extractive", notes)
