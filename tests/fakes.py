"""The shared test doubles: one scripted `FakeLLM` and one hashing `FakeEmbedder`.

Both satisfy the protocols of `bookindex.core.protocols` and pass the same contract suites as the
real implementations (tests/contracts/), so a test that uses them exercises the code under test
against the behaviour the real ones promise (schema validation with one repair round, errors as
`BookIndexError`s, a per-stage ledger, `map` in input order; L2-normalised float32 rows), not
against whatever a hand-rolled stub happened to do. `ScriptedProvider` is the model end of the
real `LLMClient` for tests that want the client's own plumbing (the one provider double);
`ExtractionScript` is what a FakeLLM answers the graph extractor.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, TypeAdapter, ValidationError

from bookindex.core.errors import BookIndexError, LLMOutputError, LLMUnavailable
from bookindex.indexing.graph.extract_llm import BatchOut
from bookindex.providers.llm import Completion, Ledger
from bookindex.providers.llm.client import REPAIR_PROMPT
from bookindex.providers.llm.jsonfix import NoJSON, extract_json
from bookindex.providers.llm.streaming import replay_text, text_sink_for

Messages = list[dict[str, Any]]


# -- LLM ------------------------------------------------------------------------------------------

@dataclass
class LLMCall:
    """One request a FakeLLM received. A repair round is a call of its own (`attempt` 1) whose
    messages end, as the client's do, with the invalid reply and the request to correct it."""

    index: int  # position in FakeLLM.calls
    kind: str  # "complete" or "judge"
    stage: str
    messages: Messages
    schema: Any = None
    temperature: float | None = None
    max_tokens: int | None = None
    cache: bool = True
    attempt: int = 0
    cached: bool = False  # answered from the FakeLLM's cache, no reply consumed

    @property
    def prompt(self) -> str:
        """Text of the last user message (what the caller asked, without system instructions)."""
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return _text(m.get("content"))
        return _text(self.messages[-1].get("content")) if self.messages else ""


class UnscriptedCall(LookupError):
    """A FakeLLM got a request its script has no reply for: the test's script is incomplete."""


_NO_DEFAULT: Any = object()
Reply = Any  # str | dict | list | BaseModel | float | BaseException
Replies = Mapping[str, Any] | Sequence[Any] | Callable[[LLMCall], Any] | None


class FakeLLM:
    """A scripted `LLM` with a real `Ledger`, recording every call in `calls`.

    `replies` says what the model answers:
      - a callable `reply(call: LLMCall)`, asked for every request (a repair round too);
      - a mapping stage -> reply, or stage -> list of replies consumed in order;
      - a list of replies consumed in order whatever the stage.
    A request nothing in `replies` answers gets `default` (when given), else raises
    `UnscriptedCall`. A reply is a raw text (with a schema: parsed like the real client, fences
    and prose stripped, then validated; invalid text gets one repair round that takes the next
    reply, then `LLMOutputError`), a dict/list/BaseModel (validated against the schema), a float
    (a `judge` answer; "yes"/"no" text works too) or an exception instance (raised; script
    `bookindex.core.errors` ones, as the real client raises only those).
    With `cache=True` a repeated identical request is answered from memory (ledger cache_hits),
    like the client's disk cache; `available=False` behaves like provider `none`.
    """

    def __init__(self, replies: Replies = None, *, default: Reply = _NO_DEFAULT, available: bool = True,
                 model: str = "fake-llm", cache: bool = False, context_size: int = 8192) -> None:
        self.replies = replies
        self.context_size = context_size  # the window a long conversation must fit (LLMClient's too)
        self.default = default
        self._available = available
        self._model = model
        self.ledger = Ledger()
        self.calls: list[LLMCall] = []
        self._cache: dict[str, Any] | None = {} if cache else None
        self._queues: dict[str | None, list[Any]] = {}
        self._lock = threading.RLock()

    @property
    def available(self) -> bool:
        return self._available

    @property
    def model(self) -> str:
        return self._model

    @property
    def stages(self) -> list[str]:
        """The stage of every call, in order."""
        return [c.stage for c in self.calls]

    # -- the LLM protocol ---------------------------------------------------------------------
    def complete(self, messages: Messages | str, schema: Any = None, stage: str = "default", *,
                 temperature: float | None = None, max_tokens: int | None = None,
                 cache: bool = True, on_text: Callable[[str], None] | None = None,
                 from_text: Callable[[str], Any] | None = None) -> Any:
        msgs = _normalise(messages)
        call = self._record("complete", stage, msgs, schema=schema, temperature=temperature,
                            max_tokens=max_tokens, cache=cache)
        key = self._key("complete", msgs, schema, temperature, max_tokens)
        hit, value = self._cached(call, key)
        if hit:
            if on_text is not None:  # like the client: a cache hit replays the text as one chunk
                shown = replay_text(_as_text(value), _schema_of(schema))
                if shown:
                    on_text(shown)
            return value
        reply = self._answer(call)
        if on_text is not None:  # streamed like a provider: word by word, the answer field of JSON
            feed = text_sink_for(_schema_of(schema), on_text)
            for piece in re.findall(r"\S+\s*|\s+", _as_text(reply)):
                feed(piece)
        if schema is None:
            result: Any = _as_text(reply)
        else:
            adapter = TypeAdapter(schema)
            try:
                result = _validate(reply, adapter)
            except (NoJSON, ValidationError) as exc:
                prose = from_text(_as_text(reply)) if from_text is not None else None
                if prose is not None:  # like the client: prose read as the value, no repair round
                    self._store(call, key, prose)
                    return prose
                shown = msgs + [{"role": "assistant", "content": _as_text(reply)},
                                {"role": "user", "content": REPAIR_PROMPT.format(error=exc)}]
                repair = self._record("complete", stage, shown, schema=schema, temperature=temperature,
                                      max_tokens=max_tokens, cache=cache, attempt=1)
                reply2 = self._answer(repair)
                try:
                    result = _validate(reply2, adapter)
                except (NoJSON, ValidationError):
                    raw = _as_text(reply2)
                    raise LLMOutputError(
                        f"stage '{stage}': model {self.model} returned output that is not a valid "
                        f"{getattr(schema, '__name__', schema)} after one repair attempt ({exc}); "
                        f"raw output: {raw[:300]!r}", stage=stage, model=self.model, raw=raw) from None
        self._store(call, key, result)
        return result

    def map(self, requests: Sequence[dict[str, Any]], *, max_concurrency: int | None = None,
            progress: bool = False, desc: str = "LLM", return_exceptions: bool = False) -> list[Any]:
        """`complete(**request)` for each request, one after another, results in input order."""
        results: list[Any] = []
        for request in requests:
            try:
                results.append(self.complete(**request))
            except BookIndexError as exc:
                if not return_exceptions:
                    raise
                results.append(exc)
        return results

    def judge(self, messages: Messages | str, stage: str = "judge", cache: bool = True) -> float:
        msgs = _normalise(messages)
        call = self._record("judge", stage, msgs, cache=cache)
        key = self._key("judge", msgs, None, None, None)
        hit, value = self._cached(call, key)
        if hit:
            return float(value)
        reply = self._answer(call)
        if isinstance(reply, (int, float)) and not isinstance(reply, bool):
            p = float(reply)
        else:
            word = _as_text(reply).strip().lower()
            p = 1.0 if word.startswith("yes") else 0.0 if word.startswith("no") else 0.5
        self._store(call, key, p)
        return p

    # -- internals ----------------------------------------------------------------------------
    def _record(self, kind: str, stage: str, msgs: Messages, **kw: Any) -> LLMCall:
        with self._lock:
            call = LLMCall(index=len(self.calls), kind=kind, stage=stage, messages=msgs, **kw)
            self.calls.append(call)
        if not self._available:
            raise LLMUnavailable("no LLM configured (FakeLLM(available=False))")
        return call

    def _cached(self, call: LLMCall, key: str | None) -> tuple[bool, Any]:
        if key is None or not call.cache:
            return False, None
        with self._lock:
            if key not in self._cache:
                return False, None
            call.cached = True
            self.ledger.record(call.stage, cache_hits=1)
            return True, copy.deepcopy(self._cache[key])

    def _store(self, call: LLMCall, key: str | None, value: Any) -> None:
        if key is not None and self._cache is not None:  # like the client: also when the call skipped it
            with self._lock:
                self._cache[key] = copy.deepcopy(value)

    def _key(self, kind: str, msgs: Messages, schema: Any, temperature: float | None,
             max_tokens: int | None) -> str | None:
        """What identifies a request for the cache (None without one); like the client's key, not the stage."""
        if self._cache is None:
            return None
        shown = None if schema is None else json.dumps(TypeAdapter(schema).json_schema(), sort_keys=True)
        return json.dumps([kind, msgs, shown, temperature, max_tokens], sort_keys=True, default=str)

    def _answer(self, call: LLMCall) -> Any:
        """The scripted reply for `call`, accounted like a provider request; raises scripted errors."""
        reply = self._lookup(call)
        if isinstance(reply, BaseException):
            self.ledger.record(call.stage, errors=1)
            raise reply
        self.ledger.record(call.stage, calls=1, prompt_tokens=sum(len(_text(m.get("content")).split())
                                                                  for m in call.messages),
                           completion_tokens=len(_as_text(reply).split()))
        return reply

    def _lookup(self, call: LLMCall) -> Any:
        replies = self.replies
        if callable(replies) and not isinstance(replies, (Mapping, list, tuple)):
            return replies(call)
        with self._lock:
            if isinstance(replies, Mapping) and call.stage in replies:
                reply = replies[call.stage]
                if not isinstance(reply, list):
                    return reply
                queue = self._queues.setdefault(call.stage, list(reply))
                if queue:
                    return queue.pop(0)
            elif isinstance(replies, (list, tuple)):
                queue = self._queues.setdefault(None, list(replies))
                if queue:
                    return queue.pop(0)
        if self.default is not _NO_DEFAULT:
            return self.default
        raise UnscriptedCall(f"FakeLLM: no reply scripted for {call.kind} call {call.index} "
                             f"(stage {call.stage!r})")


def _normalise(messages: Messages | str) -> Messages:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: the text parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


def _as_text(reply: Any) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    return json.dumps(reply, default=str)


def _validate(reply: Any, adapter: TypeAdapter[Any]) -> Any:
    if isinstance(reply, str):
        return adapter.validate_python(extract_json(reply))
    if isinstance(reply, BaseModel):
        reply = reply.model_dump()
    return adapter.validate_python(reply)




class ScriptedProvider:
    """An in-memory model behind the real `LLMClient` (the Provider protocol of
    bookindex/providers/llm/providers.py), recording every request's messages in `requests`.

    Each request gets the next raw text of `script`; once it runs out, `respond(prompt)` of the
    last user message, else `default`, else `UnscriptedCall`. An exception instance (in the script,
    as the default or returned by `respond`) is raised (`TransientError` is retried by the client).
    Usage is counted in words unless `tokens` fixes (prompt, completion) tokens per request; P(yes)
    comes from the text answer unless `p_yes` fixes it (then the script is not consumed). `delay`
    holds each request that many seconds, outside the lock, as a slow server would.

    With `tool_turns` (even empty: a client whose answers all come from its cache) it also calls
    tools natively, as OpenAI-compatible servers do: each `complete_tools` request takes the next
    turn `(calls, text)`, `calls` a list of (tool name, arguments as a dict or as raw JSON text),
    at 100 prompt and 5 completion tokens; `tool_requests` keeps a copy of each request's
    (messages, tools).
    """

    name = "scripted"

    def __init__(self, script: Sequence[Any] = (), respond: Callable[[str], Any] | None = None, *,
                 default: Any = _NO_DEFAULT, model: str = "scripted-1", max_concurrency: int = 4,
                 delay: float = 0.0, tokens: tuple[int, int] | None = None, p_yes: float | None = None,
                 tool_turns: Sequence[tuple[Sequence[tuple[str, Any]], str]] | None = None) -> None:
        self.script = list(script)
        self.respond = respond
        self.default = default
        self.model = model
        self.max_concurrency = max_concurrency
        self.delay = delay
        self.tokens = tokens
        self.p_yes = p_yes
        self.requests: list[Messages] = []
        self._lock = threading.Lock()
        self.tool_turns = None if tool_turns is None else list(tool_turns)
        self.tool_requests: list[tuple[Messages, Any]] = []
        if self.tool_turns is not None:  # the client calls tools natively where the provider can
            self.complete_tools = self._complete_tools

    @classmethod
    def metered(cls, script: Sequence[Any] = (), respond: Callable[[str], Any] | None = None, *,
                default: Any = "ok", max_concurrency: int = 8, delay: float = 0.0) -> "ScriptedProvider":
        """Fixed usage for tests that count the ledger: 10 prompt and 3 completion tokens a request,
        P(yes) 0.8, "ok" once the script runs out, model "fake-1"."""
        return cls(script, respond, default=default, model="fake-1", max_concurrency=max_concurrency,
                   delay=delay, tokens=(10, 3), p_yes=0.8)

    def _next(self, messages: Messages) -> str:
        with self._lock:
            self.requests.append(messages)
            step = self.script.pop(0) if self.script else _NO_DEFAULT
        # outside the lock: concurrent requests are answered concurrently, as by a server
        if self.delay:
            time.sleep(self.delay)
        if step is _NO_DEFAULT and self.respond is not None:
            step = self.respond(_text(next((m.get("content") for m in reversed(messages)
                                            if m.get("role") == "user"), "")))
        elif step is _NO_DEFAULT:
            if self.default is _NO_DEFAULT:
                raise UnscriptedCall(f"ScriptedProvider: no reply left for request {len(self.requests)}")
            step = self.default
        if isinstance(step, BaseException):
            raise step
        return str(step)

    def _usage(self, messages: Messages, text: str) -> tuple[int, int]:
        if self.tokens is not None:
            return self.tokens
        return sum(len(_text(m.get("content")).split()) for m in messages), len(text.split())

    def complete(self, messages: Messages, *, temperature: float, max_tokens: int,
                 json_schema: dict[str, Any] | None) -> Completion:
        text = self._next(messages)
        prompt_tokens, completion_tokens = self._usage(messages, text)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          model=self.model, finish_reason="stop")

    def yes_probability(self, messages: Messages) -> Completion:
        """P(yes) from the text answer, as OpenAI-compatible servers without log-probabilities give it
        (or the fixed `p_yes`)."""
        if self.p_yes is not None:
            with self._lock:
                self.requests.append(messages)
            text, p = "yes", self.p_yes
        else:
            text = self._next(messages)
            word = text.strip().lower()
            p = 1.0 if word.startswith("yes") else 0.0 if word.startswith("no") else 0.5
        prompt_tokens, completion_tokens = self.tokens if self.tokens is not None else (1, 1)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          model=self.model, extra={"p_yes": p})

    def _complete_tools(self, messages: Messages, *, tools: Any, temperature: float, max_tokens: int) -> Completion:
        """The next tool turn (`complete_tools` when `tool_turns` is given)."""
        assert self.tool_turns is not None
        with self._lock:
            self.tool_requests.append((json.loads(json.dumps(messages)), tools))  # as sent, not as later extended
            if not self.tool_turns:
                raise UnscriptedCall(f"ScriptedProvider: no tool turn left for request {len(self.tool_requests)}")
            calls, text = self.tool_turns.pop(0)
        return Completion(text=text, prompt_tokens=100, completion_tokens=5, model=self.model,
                          extra={"tool_calls": [{"id": f"c{i}", "name": name,
                                                 "arguments": args if isinstance(args, str) else json.dumps(args)}
                                                for i, (name, args) in enumerate(calls)]})


# -- graph extraction -----------------------------------------------------------------------------

def extraction_bodies(call: LLMCall) -> list[str]:
    """The node texts of an extraction prompt's fragments, in order (without the closing line)."""
    frags = call.prompt.split("--- N")[1:]
    return [f.split("---\n", 1)[1].split("\n\nAnswer with exactly")[0] for f in frags]


class ExtractionScript:
    """FakeLLM replies (`FakeLLM(ExtractionScript(...))`) to the graph extractor's batches, built from
    the prompt's fragments: each capitalised word of a node's text (stripped of `strip`, at least
    `min_length` long) is a `concept` entity described by `description`, and the first two are joined
    by a relation with the fields of `relation`.

    A fragment containing a `broken` marker makes the whole call fail (malformed JSON, `error`), like
    a small model that garbles its answer; one containing a `flaky_once` marker is left out of the
    answer the first time only. Both sets can be changed between runs (a model that recovers). With
    `answer_er`, entity resolution's "which candidate?" always gets "a new entity"; otherwise any
    stage but `extract` is a test error.
    """

    def __init__(self, broken: Sequence[str] = (), flaky_once: Sequence[str] = (), *, strip: str = ".,",
                 min_length: int = 1, description: str = "{name} in text",
                 relation: Mapping[str, Any] | None = None, error: str = "not JSON", answer_er: bool = False) -> None:
        self.broken = set(broken)
        self.flaky = set(flaky_once)
        self.strip = strip
        self.min_length = min_length
        self.description = description
        self.relation = dict(relation or {"description": "co", "keywords": "a, b", "weight": "7"})
        self.error = error
        self.answer_er = answer_er

    @classmethod
    def for_library(cls, broken: Sequence[str] = ()) -> "ExtractionScript":
        """The configuration of whole-library builds: entity resolution answered, words of three or
        more letters, list keywords and a numeric weight (what a well-behaved model returns)."""
        return cls(broken, strip=".,:|", min_length=3, description="{name} as mentioned",
                   relation={"description": "co-mentioned", "keywords": ["co"], "weight": 5},
                   error="not a valid BatchOut after one repair attempt", answer_er=True)

    def __call__(self, call: LLMCall) -> Any:
        if self.answer_er and call.stage == "er":
            return {"select_id": -1}
        assert call.stage == "extract" and call.schema is BatchOut
        frags = call.prompt.split("--- N")[1:]
        nodes = []
        for frag, body in zip(frags, extraction_bodies(call)):
            if any(b in body for b in self.broken):
                return LLMOutputError(self.error, stage=call.stage)
            hit = next((x for x in self.flaky if x in body), None)
            if hit:
                self.flaky.discard(hit)
                continue  # node missing from the answer this time
            words = [w.strip(self.strip) for w in body.split() if w[:1].isupper()]
            names = [w for w in dict.fromkeys(words) if len(w) >= self.min_length]
            ents = [{"name": w, "type": "concept", "description": self.description.format(name=w)} for w in names]
            rels = ([{"source": ents[0]["name"], "target": ents[1]["name"], **self.relation}]
                    if len(ents) > 1 else [])
            nodes.append({"node": "N" + frag.split(" ", 1)[0], "entities": ents, "relations": rels})
        return {"nodes": nodes}


# -- Embedder -------------------------------------------------------------------------------------

class FakeEmbedder:
    """Bag of hashed tokens in `dim` buckets, L2-normalised: cosine = token overlap, no model.

    Tokens are the whitespace-separated words of the lower-cased text, or the matches of `word`
    (e.g. r"\\w+"); `stem` cuts each to its first characters; `char_ngrams` uses the character
    n-grams of the padded text instead (similar names get similar vectors). A text without any
    token gets a zero row. `calls` counts encode() calls (tests check what was re-embedded).
    """

    def __init__(self, dim: int = 32, word: str | None = None, *, stem: int | None = None,
                 char_ngrams: int | None = None, name: str = "test-hash") -> None:
        self._dim = dim
        self._name = name
        self.word = re.compile(word) if word else None
        self.stem = stem
        self.char_ngrams = char_ngrams
        self.calls = 0

    # -- the configurations tests share (named, so no test file grows a factory of its own) --
    @classmethod
    def words(cls, dim: int = 64) -> "FakeEmbedder":
        """Hashed bag of words: texts sharing words get a high cosine."""
        return cls(dim=dim, word=r"\w+")

    @classmethod
    def stems(cls) -> "FakeEmbedder":
        """Bag of hashed word stems (first 5 characters) in 256-d vectors: "plots" meets "plotting"."""
        return cls(dim=256, word=r"[a-z0-9]+", stem=5)

    @classmethod
    def trigrams(cls, dim: int = 64) -> "FakeEmbedder":
        """Character-trigram vectors: similar names get similar vectors."""
        return cls(dim=dim, char_ngrams=3)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def tokens(self, text: str) -> list[str]:
        t = text.lower()
        if self.char_ngrams:
            n = self.char_ngrams
            padded = " " * (n - 1) + t + " " * (n - 1)
            return [padded[j:j + n] for j in range(len(padded) - n + 1)]
        words = self.word.findall(t) if self.word else t.split()
        return [w[:self.stem] for w in words] if self.stem else words

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in self.tokens(t):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self._dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class VocabEmbedder:
    """The vector the test chose for each text (looked up lower-cased), L2-normalised: for tests
    that need exact cosines between a few names, which hashing cannot give."""

    name = "test-vocab"

    def __init__(self, vocab: Mapping[str, Sequence[float]]) -> None:
        self.vocab = {k.lower(): list(v) for k, v in vocab.items()}
        self.dim = len(next(iter(self.vocab.values())))

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        m = np.array([self.vocab[t.lower()] for t in texts], np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


# -- llama-cpp-python -----------------------------------------------------------------------------

class FakeLlama:
    """Stands in for llama-cpp-python's `Llama` under the in-process provider: keeps what it was
    built with (`options`) and every request (`requests`: the keyword arguments), answers `reply`
    with one prompt token per character of the first message, and holds the tokens of its last
    call in `input_ids` as the real one does (what the provider's KV-cache accounting reads)."""

    def __init__(self, reply: str = "ok", **options: Any) -> None:
        self.reply = reply
        self.options = options
        self.requests: list[dict[str, Any]] = []
        self.input_ids: list[int] = []

    def create_chat_completion(self, messages: Messages, **kw: Any) -> dict[str, Any]:
        self.requests.append({"messages": messages, **kw})
        prompt = [ord(c) for c in _text(messages[0].get("content"))]
        self.input_ids = prompt + [7, 7]
        return {"choices": [{"message": {"content": self.reply}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": 2}}


__all__ = ["FakeLLM", "LLMCall", "UnscriptedCall", "ScriptedProvider", "ExtractionScript", "extraction_bodies",
           "FakeEmbedder", "VocabEmbedder", "FakeLlama"]


def _schema_of(schema: Any) -> dict[str, Any] | None:
    return None if schema is None else TypeAdapter(schema).json_schema()
