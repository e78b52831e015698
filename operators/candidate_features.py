"""The declared features of an answer candidate: every fact a fitted scorer may weigh.

The extractive reader (`operators.reader.candidates`) proposes candidates by small generators
(a span of a sentence, a name an apposition gives, a table cell, a key/value line, an acronym's
long form, ...), each tagged with its generator's name (`Candidate.via`) and, for a sentence's
candidates, the parts its sentence scored by (`Candidate.parts`). This module turns a question's
candidates into one row of numbers each, in the order `FEATURES` declares them, so that a weight
can be fitted to each from data (`scripts/fit_reader.py`) instead of being set by hand.

Nothing here is a rule about which candidate wins: the rule's own score is one feature among
the others (`rule_score`, `rule_rank`), and a fit decides how much it counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from bookindex.operators.reader import hand_set_key

# every generator of `reader.candidates`, by the name it tags its candidates with
GENERATORS: tuple[str, ...] = (
    "sentence", "untyped_sentence", "typed_span", "numeric_span", "given_name", "verb_filler",
    "key_value", "copula_value", "manner_phrase", "section_title", "entry_name", "entry_given",
    "long_form", "entry_gloss", "title_gloss", "glossed_term", "titled_place", "table_cell",
    "assigned_value", "row_named", "row_described", "table_count",
)
# the question kinds `reader.asked` reads
KINDS: tuple[str, ...] = ("quantity", "date", "entity", "yesno", "describe", "page", "section")
# the parts of a sentence's score a sentence's candidates carry (`Candidate.parts`)
SENTENCE_PARTS: tuple[str, ...] = ("hit", "in_title", "named", "subject", "opens_item", "tokens", "sentence")
# what the question asks, from `Asked`'s flags
QUESTION_FLAGS: tuple[str, ...] = ("procedure", "definition", "value", "manner", "reason", "measure")

_CANDIDATE: tuple[str, ...] = (
    "rule_score", "rule_gap", "rule_rank", "rule_best", "fits", "passage_rank", "order", "verb",
    "has_span", "span_words", "span_numeric", "span_code", "span_repeats_question",
    "span_question_share", "sentence_words", "sentence_question_share", "title_question_share",
    "has_parts", "span_votes", "span_passages", "span_in_title",
)
FEATURES: tuple[str, ...] = (
    *_CANDIDATE,
    *(f"part_{p}" for p in SENTENCE_PARTS),
    *(f"via_{g}" for g in GENERATORS),
    *(f"kind_{k}" for k in KINDS),
    *(f"span_for_{k}" for k in KINDS),
    *(f"fits_for_{k}" for k in KINDS),
    *(f"asks_{f}" for f in QUESTION_FLAGS),
    "asks_target",
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}
_WORD = re.compile(r"[\w.$%\\/-]+")
_CODE = re.compile(r"[_\\/]|\w\.\w|\(\)|^-{1,2}\w|^[a-z]+[A-Z]")


def _words(text: str) -> list[str]:
    return [w.lower().strip(".") for w in _WORD.findall(text)]


def _share(terms: Sequence[str], text: str) -> float:
    """The share of the question's terms that `text` holds as words (lower case)."""
    if not terms:
        return 0.0
    held = set(_words(text))
    return sum(1 for t in terms if t in held) / len(terms)


def rule_ranked(cands: Sequence[Any]) -> list[int]:
    """The candidates' indices in `reader.best_candidate`'s order (its answer first; ties keep
    their order, as `max` does)."""
    return sorted(range(len(cands)), key=lambda i: hand_set_key(cands[i]), reverse=True)


def hand_set_pool(cands: Sequence[Any], top_k: int) -> list[int]:
    """The first `top_k` candidates of the hand-set order (every one for 0): what fitted weights
    choose among."""
    ranked = rule_ranked(cands)
    return ranked[:top_k] if top_k else ranked


def _rule_order(cands: Sequence[Any]) -> dict[int, int]:
    """Each candidate's place (0 = the rule's answer) in `reader.best_candidate`'s order."""
    return {i: place for place, i in enumerate(rule_ranked(cands))}


def _span_support(cands: Sequence[Any]) -> dict[str, tuple[int, int]]:
    """Each span (lower case) with how many candidates propose it and from how many passages."""
    votes: dict[str, int] = {}
    passages: dict[str, set[int]] = {}
    for c in cands:
        key = " ".join((c.span or "").lower().split())
        if key:
            votes[key] = votes.get(key, 0) + 1
            passages.setdefault(key, set()).add(c.number)
    return {k: (v, len(passages[k])) for k, v in votes.items()}


def _candidate_values(a: Any, c: Any, place: int, best_score: float, terms: list[str]) -> dict[str, float]:
    span = c.span or ""
    span_words = _words(span)
    question_words = set(a.said) | set(terms)
    return {
        "rule_score": c.score, "rule_gap": c.score - best_score, "rule_rank": 1.0 / (1 + place),
        "rule_best": float(place == 0), "fits": float(c.fits), "passage_rank": 1.0 / max(1, c.number),
        "order": 1.0 / (1 + c.order), "verb": float(c.verb), "has_span": float(bool(span)),
        "span_words": min(len(span_words), 12) / 12, "span_numeric": float(any(ch.isdigit() for ch in span)),
        "span_code": float(bool(_CODE.search(span))),
        "span_repeats_question": float(bool(span_words) and set(span_words) <= question_words),
        "span_question_share": (sum(1 for w in span_words if w in question_words) / len(span_words))
        if span_words else 0.0,
        "sentence_words": math.log1p(len(c.sentence.split())),
        "sentence_question_share": _share(terms, c.sentence),
        "title_question_share": _share(terms, " ".join(c.passage.title_path)),
        "has_parts": float(bool(c.parts)),
    }


def _question_values(a: Any) -> dict[str, float]:
    values = {f"kind_{k}": float(a.kind == k) for k in KINDS}
    values.update({f"asks_{f}": float(bool(getattr(a, f, False))) for f in QUESTION_FLAGS})
    values["asks_target"] = float(bool(a.target))
    return values


def feature_rows(a: Any, cands: Sequence[Any], only: Sequence[int] | None = None) -> np.ndarray:
    """One row of `FEATURES` per candidate of the question `a` (an `Asked`), in their order; with
    `only`, the rows of those candidates alone, in that order (features still read them all)."""
    chosen = list(range(len(cands))) if only is None else list(only)
    rows = np.zeros((len(chosen), len(FEATURES)), dtype=np.float64)
    if not cands:
        return rows
    order = _rule_order(cands)
    best_score = max(c.score for c in cands)
    terms = list(a.terms)
    asked = _question_values(a)
    support = _span_support(cands)
    for row, i in enumerate(chosen):
        c = cands[i]
        values = {**asked, **_candidate_values(a, c, order[i], best_score, terms)}
        key = " ".join((c.span or "").lower().split())
        votes, passages = support.get(key, (0, 0))
        values["span_votes"] = math.log1p(votes)
        values["span_passages"] = math.log1p(passages)
        values["span_in_title"] = float(bool(key) and key in " ".join(c.passage.title_path).lower())
        for part in SENTENCE_PARTS:
            raw = c.parts.get(part, 0.0)
            values[f"part_{part}"] = math.log1p(raw) if part == "tokens" else raw
        if c.via in GENERATORS:
            values[f"via_{c.via}"] = 1.0
        if a.kind in KINDS:
            values[f"span_for_{a.kind}"] = values["has_span"]
            values[f"fits_for_{a.kind}"] = values["fits"]
        for name, value in values.items():
            rows[row, _INDEX[name]] = value
    return rows
