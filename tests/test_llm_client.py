"""LLMClient plumbing with the scripted provider: JSON repair, retries, cache, ledger, map."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedProvider
from pydantic import BaseModel

from bookindex.core.config import LLMSettings, load_settings
from bookindex.core.errors import ConfigError, LLMOutputError, LLMRequestError, LLMUnavailable
from bookindex.providers.llm import (
    DiskCache,
    LLMClient,
    TransientError,
    cache_key,
    get_llm,
    image_part,
    user_message,
)
from bookindex.providers.llm.jsonfix import NoJSON, extract_json
from bookindex.providers.llm.ledger import Ledger, add_snapshots, counters_delta, stages_total, usage_delta


class Person(BaseModel):
    name: str
    age: int


def make_client(provider: ScriptedProvider, cache: DiskCache | None = None, **cfg: Any) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    settings = LLMSettings(provider="openai", model=provider.model, **cfg)
    client = LLMClient(provider, settings, cache=cache, sleep=sleeps.append, jitter=lambda: 0.0)
    return client, sleeps


# ------------------------------------------------------------------------------- JSON handling
@pytest.mark.parametrize("raw,expected", [
    ('{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
    ('```json\n{"name": "Ada", "age": 36}\n```', {"name": "Ada", "age": 36}),
    ('Sure! Here it is: {"name": "Ada", "age": 36} Let me know {if} more.', {"name": "Ada", "age": 36}),
    ('{"name": "Ada", "age": 36, "note": "cut here', {"name": "Ada", "age": 36, "note": "cut here"}),
    ('{"name": "Ada", "age": 36, "tags": ["a", "b', {"name": "Ada", "age": 36, "tags": ["a", "b"]}),
    ('[{"x": 1}, {"x": 2}, {"x"', [{"x": 1}, {"x": 2}]),
    ('{"s": "brace } and \\" quote"}', {"s": 'brace } and " quote'}),
    ('Use {placeholders} like [this]; answer: {"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
])
def test_extract_json(raw: str, expected: Any) -> None:
    assert extract_json(raw) == expected


def test_extract_json_without_json() -> None:
    with pytest.raises(NoJSON):
        extract_json("I cannot help with that.")


def test_schema_call_strips_fences_and_asks_for_compact_json() -> None:
    fake = ScriptedProvider.metered(['```json\n{"name": "Ada", "age": 36}\n``` hope this helps'])
    client, _ = make_client(fake)
    person = client.complete("Who?", schema=Person, stage="extract")
    assert person == Person(name="Ada", age=36)
    system = fake.requests[0][0]
    assert system["role"] == "system" and "compact JSON" in system["content"]
    assert '"age"' in system["content"]  # the schema is shown


def test_truncated_json_is_repaired_without_a_second_call() -> None:
    fake = ScriptedProvider.metered(['{"name": "Ada", "age": 36, "bio": "born in Lon'])
    client, _ = make_client(fake)

    class WithBio(Person):
        bio: str

    assert client.complete("Who?", schema=WithBio).bio == "born in Lon"
    assert len(fake.requests) == 1


def test_broken_json_syntax_is_repaired_without_a_second_call() -> None:
    fake = ScriptedProvider.metered(["Here you go:\n```json\n{'name': 'Ada', // the person\n 'age': 36, 'active': True,}\n```"])
    client, _ = make_client(fake)

    class Active(Person):
        active: bool

    assert client.complete("Who?", schema=Active) == Active(name="Ada", age=36, active=True)
    assert len(fake.requests) == 1


def test_validation_failure_gets_one_repair_round_trip() -> None:
    fake = ScriptedProvider.metered(['{"name": "Ada", "age": "old"}', '{"name": "Ada", "age": 36}'])
    client, _ = make_client(fake)
    assert client.complete("Who?", schema=Person, stage="extract").age == 36
    assert len(fake.requests) == 2
    repair = fake.requests[1]
    assert repair[-2] == {"role": "assistant", "content": '{"name": "Ada", "age": "old"}'}
    assert "age" in repair[-1]["content"] and "not valid" in repair[-1]["content"]


def test_second_failure_raises_typed_error_naming_stage_model_raw() -> None:
    fake = ScriptedProvider.metered(["no idea", "still no idea"])
    client, _ = make_client(fake)
    with pytest.raises(LLMOutputError) as err:
        client.complete("Who?", schema=Person, stage="extract")
    e = err.value
    assert e.stage == "extract" and e.model == "fake-1" and e.raw == "still no idea"
    assert "extract" in str(e) and "fake-1" in str(e) and "still no idea" in str(e)
    assert "\n" not in str(e)


def test_a_prose_reply_read_by_from_text_needs_no_repair_call() -> None:
    fake = ScriptedProvider.metered(["Ada, aged 36 [2][3]", '{"name": "Ada", "age": 36}'])
    client, _ = make_client(fake)
    seen: list[str] = []

    def read(text: str) -> Person:
        seen.append(text)
        return Person(name=text.split(",")[0], age=36)

    assert client.complete("Who?", schema=Person, stage="extract", from_text=read) == Person(name="Ada", age=36)
    assert seen == ["Ada, aged 36 [2][3]"] and len(fake.requests) == 1


def test_from_text_that_declines_leaves_the_repair_round() -> None:
    fake = ScriptedProvider.metered(['{"name": "Ada", "age": "old"}', '{"name": "Ada", "age": 36}'])
    client, _ = make_client(fake)
    assert client.complete("Who?", schema=Person, stage="extract", from_text=lambda _t: None).age == 36
    assert len(fake.requests) == 2


def test_schema_can_be_any_type() -> None:
    client, _ = make_client(ScriptedProvider.metered(['["a", "b"]']))
    assert client.complete("list", schema=list[str]) == ["a", "b"]


# ------------------------------------------------------------------------------------- retries
def test_transient_errors_are_retried_with_exponential_backoff() -> None:
    fake = ScriptedProvider.metered([TransientError("HTTP 500"), TransientError("timeout"),
                         TransientError("HTTP 429"), "fine"])
    client, sleeps = make_client(fake, max_retries=4, retry_base_delay=1.0, retry_max_delay=3.0)
    assert client.complete("hi", stage="s") == "fine"
    # jitter 0 → half of min(max, base * 2**n): 0.5, 1.0, 1.5 (capped at 3.0)
    assert sleeps == [0.5, 1.0, 1.5]
    usage = client.ledger.stage("s")
    assert usage.calls == 1 and usage.retries == 3 and usage.errors == 0


def test_jitter_spreads_delays() -> None:
    client = LLMClient(ScriptedProvider.metered(), LLMSettings(retry_base_delay=1.0), jitter=lambda: 1.0)
    assert client._backoff(0) == 1.0 and client._backoff(2) == 4.0


def test_retries_are_bounded_and_raise_request_error() -> None:
    fake = ScriptedProvider.metered(default=TransientError("HTTP 503 from http://x"))
    client, sleeps = make_client(fake, max_retries=2)
    with pytest.raises(LLMRequestError, match="after 3 attempts.*503"):
        client.complete("hi", stage="s")
    assert len(fake.requests) == 3 and len(sleeps) == 2
    assert client.ledger.stage("s").errors == 1


def test_permanent_errors_are_not_retried() -> None:
    fake = ScriptedProvider.metered([LLMRequestError("HTTP 401"), "never"])
    client, sleeps = make_client(fake)
    with pytest.raises(LLMRequestError, match="401"):
        client.complete("hi")
    assert len(fake.requests) == 1 and sleeps == []


# --------------------------------------------------------------------------------------- cache
def test_cache_key_covers_provider_model_messages_params() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    base = cache_key("openai", "m", msgs, {"temperature": 0.0})
    assert base == cache_key("openai", "m", [{"content": "hi", "role": "user"}], {"temperature": 0.0})
    assert base != cache_key("llamacpp", "m", msgs, {"temperature": 0.0})
    assert base != cache_key("openai", "m2", msgs, {"temperature": 0.0})
    assert base != cache_key("openai", "m", [{"role": "user", "content": "hi!"}], {"temperature": 0.0})
    assert base != cache_key("openai", "m", msgs, {"temperature": 0.1})


def test_disk_cache_makes_rerun_free(tmp_path: Path) -> None:
    fake = ScriptedProvider.metered(default="answer")
    cache = DiskCache(tmp_path / "llm.sqlite")
    client, _ = make_client(fake, cache=cache)
    assert client.complete("q", stage="a") == "answer"
    assert client.complete("q", stage="a") == "answer"
    assert client.complete("q", stage="a", max_tokens=5) == "answer"  # other params: new key
    assert len(fake.requests) == 2
    assert client.ledger.stage("a").cache_hits == 1
    # a new process (new cache connection, new client) still hits
    client2, _ = make_client(fake, cache=DiskCache(tmp_path / "llm.sqlite"))
    client2.complete("q", stage="a")
    assert len(fake.requests) == 2 and client2.ledger.stage("a").calls == 0
    # per-call bypass
    client2.complete("q", stage="a", cache=False)
    assert len(fake.requests) == 3


def test_schema_answers_are_cached(tmp_path: Path) -> None:
    fake = ScriptedProvider.metered(default='{"name": "Ada", "age": 36}')
    client, _ = make_client(fake, cache=DiskCache(tmp_path / "c.sqlite"))
    assert client.complete("q", schema=Person) == client.complete("q", schema=Person)
    assert len(fake.requests) == 1


def test_interrupted_batch_resumes(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c.sqlite")
    requests = [{"messages": f"item {i}", "stage": "batch"} for i in range(10)]

    def fail_on_7(text: str) -> Any:
        return LLMRequestError("boom") if text == "item 7" else f"done {text}"

    broken = ScriptedProvider.metered(respond=fail_on_7, max_concurrency=1)
    client, _ = make_client(broken, cache=cache, max_concurrency=1)
    with pytest.raises(LLMRequestError):
        client.map(requests)
    assert len(broken.requests) == 8  # items 0..7, 7 failed
    healthy = ScriptedProvider.metered(respond=lambda text: f"done {text}")
    client2, _ = make_client(healthy, cache=cache)
    out = client2.map(requests)
    assert out == [f"done item {i}" for i in range(10)]
    assert len(healthy.requests) == 3  # only 7, 8, 9
    assert client2.ledger.stage("batch").cache_hits == 7


def test_get_llm_uses_cache_dir_and_no_cache(tmp_path: Path) -> None:
    settings = load_settings(overrides={"cache.path": str(tmp_path)})
    client = get_llm(settings)
    assert client.cache is not None and client.cache.path == tmp_path / "llm.sqlite"
    assert get_llm(settings.with_overrides({"cache.enabled": False})).cache is None


# ---------------------------------------------------------------------------------- ledger, map
def test_ledger_sums_per_stage_and_total() -> None:
    client, _ = make_client(ScriptedProvider.metered(default="x"))
    for _ in range(3):
        client.complete("a", stage="sections")
    for _ in range(2):
        client.complete("b", stage="extract")
    snap = client.ledger.snapshot()
    assert snap["stages"]["sections"]["calls"] == 3
    assert snap["stages"]["sections"]["prompt_tokens"] == 30
    assert snap["stages"]["extract"]["completion_tokens"] == 6
    total = snap["total"]
    assert total["calls"] == 5 and total["prompt_tokens"] == 50 and total["completion_tokens"] == 15
    assert set(total) >= {"calls", "cache_hits", "prompt_tokens", "completion_tokens", "seconds"}


def test_snapshot_arithmetic_gives_what_was_spent_between_two_and_the_sum_of_several() -> None:

    ledger = Ledger()
    ledger.record("sections", calls=2, prompt_tokens=20, seconds=0.25)
    before = ledger.snapshot()
    ledger.record("sections", calls=1, prompt_tokens=10, seconds=0.1234)
    ledger.record("skills.summary", calls=3, completion_tokens=9)
    after = ledger.snapshot()
    keys = ("calls", "prompt_tokens", "seconds")
    spent = usage_delta(before, after, keys=keys)
    assert spent == {"sections": {"calls": 1, "prompt_tokens": 10, "seconds": 0.123},
                     "skills.summary": {"calls": 3, "prompt_tokens": 0, "seconds": 0.0}}
    assert list(usage_delta(before, after, prefix="skills.")) == ["skills.summary"]
    assert usage_delta(after, after) == {}  # nothing spent: no stage
    assert stages_total(spent, keys) == {"calls": 4, "prompt_tokens": 10, "seconds": 0.123}
    assert counters_delta(before["total"], after["total"], ("calls",)) == {"calls": 4}
    both = add_snapshots([before, None, after])
    assert both["stages"]["sections"]["calls"] == 5 and both["total"]["calls"] == 8


def test_map_preserves_order_and_bounds_concurrency() -> None:
    active = {"now": 0, "max": 0}
    lock = threading.Lock()

    def reply(text: str) -> str:
        with lock:
            active["now"] += 1
            active["max"] = max(active["max"], active["now"])
        time.sleep(0.02)
        with lock:
            active["now"] -= 1
        return text.upper()

    client, _ = make_client(ScriptedProvider.metered(respond=reply), max_concurrency=3)
    out = client.map([{"messages": f"w{i}"} for i in range(12)], progress=False)
    assert out == [f"W{i}" for i in range(12)]
    assert 1 < active["max"] <= 3


def test_map_return_exceptions() -> None:
    fake = ScriptedProvider.metered(respond=lambda text: LLMRequestError("bad") if text == "1" else "ok",
                                    max_concurrency=1)
    client, _ = make_client(fake)
    out = client.map([{"messages": str(i)} for i in range(3)], return_exceptions=True)
    assert out[0] == "ok" and isinstance(out[1], LLMRequestError) and out[2] == "ok"


def test_judge_returns_probability() -> None:
    client, _ = make_client(ScriptedProvider.metered())
    assert client.judge("Is it?") == pytest.approx(0.8)


# ------------------------------------------------------------------------------------ providers
def test_none_provider_is_unavailable() -> None:
    client = get_llm(load_settings(overrides={"cache.enabled": False}))
    assert client.available is False
    with pytest.raises(LLMUnavailable):
        client.complete("hi")


def test_openai_provider_key_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_KEY", raising=False)
    remote = load_settings(overrides={"llm.provider": "openai", "llm.base_url": "https://api.example.com/v1",
                                      "llm.api_key_env": "MY_KEY", "cache.enabled": False})
    with pytest.raises(ConfigError, match="MY_KEY is not set"):
        get_llm(remote)
    local = remote.with_overrides({"llm.base_url": "http://127.0.0.1:8080/v1"})
    assert get_llm(local).available  # loopback servers get a dummy key
    monkeypatch.setenv("MY_KEY", "sk-test")
    assert get_llm(remote).available


def test_llamacpp_missing_gguf(tmp_path: Path) -> None:
    settings = load_settings(overrides={"llm.provider": "llamacpp",
                                        "llm.model": str(tmp_path / "missing.gguf")})
    with pytest.raises(ConfigError, match="GGUF file not found"):
        get_llm(settings)


def test_vision_message_parts(tmp_path: Path) -> None:
    img = tmp_path / "p.png"
    img.write_bytes(b"\x89PNG fake")
    msg = user_message("What is shown?", images=[img])
    assert msg["content"][0] == {"type": "text", "text": "What is shown?"}
    assert msg["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert image_part(b"abc", "image/jpeg")["image_url"]["url"] == "data:image/jpeg;base64,YWJj"
