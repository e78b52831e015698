"""The `LLM` contract: what every caller of `llm.complete / map / judge` relies on.

`LLMContract` holds what any implementation guarantees, a real model included: text is a str, a
schema call returns a validated value or raises `LLMOutputError`, every failure is a
`BookIndexError`, the ledger counts calls per stage, `map` answers in input order, a repeated
request is served from the cache. `ScriptedLLMContract` adds what can only be checked when the
test decides the model's raw output: the exact text, JSON extraction, the one repair round.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from bookindex.core.errors import BookIndexError, LLMOutputError, LLMUnavailable
from bookindex.core.protocols import LLM, UsageLedger

# make(script=[raw replies in order], respond=fn(last user message) -> raw reply) -> LLM
MakeScripted = Callable[..., LLM]


class Answer(BaseModel):
    answer: str


class Person(BaseModel):
    name: str
    age: int


def stage_usage(llm: LLM, stage: str) -> dict[str, Any]:
    """The ledger's counters of one stage (all zero when the stage never ran)."""
    stages = llm.ledger.snapshot()["stages"]
    return stages.get(stage, {"calls": 0, "cache_hits": 0, "errors": 0, "retries": 0})


def echo_json(prompt: str) -> str:
    """A scripted model's generic answer: valid `Answer` JSON (so it is also a usable text reply)."""
    return json.dumps({"answer": f"echo: {prompt}"})


class LLMContract:
    """Every `LLM`. Fixtures a subclass provides (each fresh per test):

    - `llm`: a working instance with a completion cache;
    - `failing_llm`: the same implementation whose backend fails every request;
    - `unavailable_llm`: its no-LLM form (provider `none`).
    """

    @pytest.fixture
    def llm(self) -> LLM:
        raise NotImplementedError("subclass provides `llm`")

    @pytest.fixture
    def failing_llm(self) -> LLM:
        raise NotImplementedError("subclass provides `failing_llm`")

    @pytest.fixture
    def unavailable_llm(self) -> LLM:
        raise NotImplementedError("subclass provides `unavailable_llm`")

    def test_satisfies_the_protocol(self, llm: LLM) -> None:
        assert isinstance(llm, LLM)
        assert isinstance(llm.ledger, UsageLedger)
        assert llm.available is True and isinstance(llm.model, str)

    def test_text_completion_is_a_string_counted_under_its_stage(self, llm: LLM) -> None:
        out = llm.complete("Name one colour.", stage="contract-text", max_tokens=16)
        assert isinstance(out, str)
        snap = llm.ledger.snapshot()
        assert set(snap["stages"]) == {"contract-text"}
        assert snap["stages"]["contract-text"]["calls"] == 1 and snap["total"]["calls"] == 1

    def test_schema_completion_is_validated_or_an_output_error(self, llm: LLM) -> None:
        try:
            out = llm.complete('Reply with {"answer": "<one colour>"}.', schema=Answer,
                               stage="contract-json", max_tokens=64)
        except LLMOutputError as exc:  # what a model that cannot produce the JSON gets
            assert exc.stage == "contract-json" and isinstance(exc.raw, str)
            assert stage_usage(llm, "contract-json")["calls"] == 2  # the reply and one repair
        else:
            assert isinstance(out, Answer)
            assert 1 <= stage_usage(llm, "contract-json")["calls"] <= 2

    def test_a_repeated_request_is_a_cache_hit(self, llm: LLM) -> None:
        first = llm.complete("Name one fruit.", stage="contract-cache", max_tokens=16)
        again = llm.complete("Name one fruit.", stage="contract-cache", max_tokens=16)
        assert again == first
        usage = stage_usage(llm, "contract-cache")
        assert usage["calls"] == 1 and usage["cache_hits"] == 1
        llm.complete("Name one fruit.", stage="contract-cache", max_tokens=16, cache=False)
        assert stage_usage(llm, "contract-cache")["calls"] == 2  # cache=False asks the model

    def test_map_answers_in_input_order(self, llm: LLM) -> None:
        prompts = [f"Repeat the word {w}." for w in ("alpha", "bravo", "charlie", "delta")]
        results = llm.map([{"messages": p, "stage": "contract-map", "max_tokens": 12} for p in prompts])
        assert len(results) == len(prompts) and all(isinstance(r, str) for r in results)
        # each request, asked again alone, is answered from the cache with what map returned for it
        assert [llm.complete(p, stage="contract-map", max_tokens=12) for p in prompts] == results
        usage = stage_usage(llm, "contract-map")
        assert usage["calls"] == len(prompts) and usage["cache_hits"] == len(prompts)

    def test_judge_is_a_probability(self, llm: LLM) -> None:
        p = llm.judge("Is the sky blue on a clear day? Answer yes or no.", stage="contract-judge")
        assert isinstance(p, float) and 0.0 <= p <= 1.0
        usage = stage_usage(llm, "contract-judge")
        assert usage["calls"] + usage["cache_hits"] == 1

    def test_failures_are_bookindex_errors_counted_in_the_ledger(self, failing_llm: LLM) -> None:
        with pytest.raises(BookIndexError):
            failing_llm.complete("Hello?", stage="contract-fail")
        with pytest.raises(BookIndexError):
            failing_llm.complete("Hello?", schema=Answer, stage="contract-fail")
        with pytest.raises(BookIndexError):
            failing_llm.judge("Yes?", stage="contract-fail")
        assert stage_usage(failing_llm, "contract-fail")["errors"] >= 3
        requests = [{"messages": f"q{i}", "stage": "contract-fail"} for i in range(3)]
        with pytest.raises(BookIndexError):
            failing_llm.map(requests)
        out = failing_llm.map(requests, return_exceptions=True)
        assert len(out) == 3 and all(isinstance(x, BookIndexError) for x in out)

    def test_unavailable_llm_raises_llm_unavailable(self, unavailable_llm: LLM) -> None:
        assert isinstance(unavailable_llm, LLM) and unavailable_llm.available is False
        with pytest.raises(LLMUnavailable):
            unavailable_llm.complete("Hello?", stage="contract-none")
        with pytest.raises(LLMUnavailable):
            unavailable_llm.judge("Yes?", stage="contract-none")
        assert stage_usage(unavailable_llm, "contract-none")["calls"] == 0


class ScriptedLLMContract(LLMContract):
    """An `LLM` whose model output the test scripts. Subclasses provide `scripted_llm`, a factory
    `make(script=[raw replies, in order], respond=fn(last user message) -> raw reply)`; the
    instances it makes have a completion cache. `llm` defaults to one answering `echo_json`."""

    @pytest.fixture
    def scripted_llm(self) -> MakeScripted:
        raise NotImplementedError("subclass provides `scripted_llm`")

    @pytest.fixture
    def llm(self, scripted_llm: MakeScripted) -> LLM:
        return scripted_llm(respond=echo_json)

    def test_text_is_the_model_reply(self, scripted_llm: MakeScripted) -> None:
        llm = scripted_llm(script=["Paris is the capital of France."])
        assert llm.complete("Capital of France?", stage="answer") == "Paris is the capital of France."

    def test_json_is_found_in_fences_and_prose_and_validated(self, scripted_llm: MakeScripted) -> None:
        llm = scripted_llm(script=['Sure! ```json\n{"name": "Ada", "age": 36}\n``` Anything else?'])
        assert llm.complete("Who?", schema=Person, stage="extract") == Person(name="Ada", age=36)
        assert stage_usage(llm, "extract")["calls"] == 1

    def test_invalid_json_gets_one_repair_round(self, scripted_llm: MakeScripted) -> None:
        llm = scripted_llm(script=['{"name": "Ada", "age": "old"}', '{"name": "Ada", "age": 36}'])
        assert llm.complete("Who?", schema=Person, stage="extract") == Person(name="Ada", age=36)
        assert stage_usage(llm, "extract")["calls"] == 2

    def test_a_second_invalid_reply_is_an_output_error(self, scripted_llm: MakeScripted) -> None:
        # the third reply is valid: an implementation that repaired twice would wrongly succeed
        llm = scripted_llm(script=["no idea", "still no idea", '{"name": "Ada", "age": 36}'])
        with pytest.raises(LLMOutputError) as err:
            llm.complete("Who?", schema=Person, stage="extract")
        assert err.value.stage == "extract" and err.value.raw == "still no idea"
        assert stage_usage(llm, "extract")["calls"] == 2

    def test_map_keeps_input_order_and_counts_each_stage(self, scripted_llm: MakeScripted) -> None:
        def respond(prompt: str) -> str:  # later items answer sooner: concurrent replies finish out of order
            time.sleep(0.002 * (12 - int(prompt.split()[1])))
            return prompt.upper()

        llm = scripted_llm(respond=respond)
        requests = [{"messages": f"item {i}", "stage": "even" if i % 2 == 0 else "odd"} for i in range(12)]
        assert llm.map(requests, max_concurrency=4) == [f"ITEM {i}" for i in range(12)]
        assert stage_usage(llm, "even")["calls"] == 6 and stage_usage(llm, "odd")["calls"] == 6

    def test_map_returns_failures_in_place(self, scripted_llm: MakeScripted) -> None:
        def respond(prompt: str) -> str:  # the repair prompt names no person: invalid again
            m = re.fullmatch(r"person (\d+)", prompt)
            return json.dumps({"name": f"p{m[1]}", "age": int(m[1])}) if m and int(m[1]) % 3 else "not JSON"

        llm = scripted_llm(respond=respond)
        requests: Sequence[dict[str, Any]] = [{"messages": f"person {i}", "schema": Person, "stage": "m"}
                                              for i in range(6)]
        out = llm.map(requests, return_exceptions=True)
        assert [type(x).__name__ for x in out] == ["LLMOutputError", "Person", "Person"] * 2
        assert out[4] == Person(name="p4", age=4)
        with pytest.raises(LLMOutputError):
            llm.map(requests)

    def test_judge_reads_yes_and_no(self, scripted_llm: MakeScripted) -> None:
        llm = scripted_llm(script=["yes", "no"])
        assert llm.judge("Is A relevant?", stage="rerank") == 1.0
        assert llm.judge("Is B relevant?", stage="rerank") == 0.0
        assert stage_usage(llm, "rerank")["calls"] == 2
