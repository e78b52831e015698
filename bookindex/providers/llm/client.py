"""LLMClient: the one door for every LLM call — JSON handling, retries, disk cache, ledger."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from bookindex.core.config import LLMSettings
from bookindex.core.errors import BookIndexError, LLMOutputError, LLMRequestError
from bookindex.core.protocols import UsageLedger
from bookindex.providers.llm.cache import DiskCache, cache_key
from bookindex.providers.llm.jsonfix import NoJSON, extract_json
from bookindex.providers.llm.ledger import Ledger
from bookindex.providers.llm.providers import Completion, Messages, Provider, TransientError
from bookindex.providers.llm.streaming import TextSink, replay_text, text_sink_for

JSON_INSTRUCTION = (
    "Reply with compact JSON only: no code fences, no comments, no text before or after. "
    "It must validate against this JSON schema: {schema}")
REPAIR_PROMPT = ("Your reply was not valid: {error}. Reply again with only the corrected compact "
                 "JSON for the same request.")


class LLMClient:
    """Wraps a provider. `complete()` returns text, or a validated object when given a schema."""

    def __init__(self, provider: Provider, settings: LLMSettings, *, cache: DiskCache | None = None,
                 ledger: UsageLedger | None = None, section: str = "llm",
                 sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random) -> None:
        self.provider = provider
        self.settings = settings
        self.cache = cache
        self.ledger: UsageLedger = ledger or Ledger()
        self.section = section
        self._sleep = sleep
        self._jitter = jitter
        self._adapters: dict[Any, TypeAdapter[Any]] = {}
        self._adapter_lock = threading.Lock()

    @property
    def available(self) -> bool:
        """False for provider `none`: callers should take their no-LLM path."""
        return self.provider.name != "none"

    @property
    def model(self) -> str:
        return self.provider.model

    @property
    def context_size(self) -> int:
        """The model's context window in tokens (`llm.context_size`): what a long conversation,
        such as the skills navigator's, must fit into."""
        return self.settings.context_size

    # ----------------------------------------------------------------------------------- public
    def complete(self, messages: Messages | str, schema: Any = None, stage: str = "default", *,
                 temperature: float | None = None, max_tokens: int | None = None,
                 cache: bool = True, on_text: TextSink | None = None,
                 from_text: Callable[[str], Any] | None = None) -> Any:
        """Text of the reply, or — with `schema` (a pydantic model or any type) — a validated value.

        Invalid JSON gets one repair round trip showing the error to the model; after that an
        LLMOutputError names the stage, the model and the raw output. `from_text` is asked first:
        it may read a reply that does not validate as prose and return the value (None declines),
        which saves the repair call when a small model answered a JSON request in plain words.
        `on_text` streams the reply as it is generated (a provider without streaming, or a cache
        hit, hands it over as one chunk): the whole text, or with a schema the text of its first
        string field (`answer`), so a reader sees words, not JSON. The repair round is not streamed.
        """
        msgs = _normalise(messages)
        params = {"temperature": self.settings.temperature if temperature is None else temperature,
                  "max_tokens": max_tokens or self.settings.max_tokens}
        if schema is None:
            return self._request(msgs, params, stage, None, cache, on_text=on_text).text
        adapter = self._adapter(schema)
        json_schema = adapter.json_schema()
        msgs = _with_json_instruction(msgs, json_schema)
        raw = self._request(msgs, params, stage, json_schema, cache, on_text=on_text).text
        try:
            return _parse(raw, adapter)
        except (NoJSON, ValidationError) as exc:
            error = _error_text(exc)
        value = from_text(raw) if from_text is not None else None
        if value is not None:
            return value
        repair = msgs + [{"role": "assistant", "content": raw},
                         {"role": "user", "content": REPAIR_PROMPT.format(error=error)}]
        raw2 = self._request(repair, params, stage, json_schema, cache).text
        try:
            return _parse(raw2, adapter)
        except (NoJSON, ValidationError) as exc:
            name = getattr(schema, "__name__", str(schema))
            raise LLMOutputError(
                f"stage '{stage}': model {self.model or self.provider.name} returned output that is "
                f"not a valid {name} after one repair attempt ({_error_text(exc, 160)}); raw output: "
                f"{raw2[:300]!r}", stage=stage, model=self.model, raw=raw2) from None

    @property
    def supports_tools(self) -> bool:
        """Whether the provider does native tool calling (OpenAI-compatible servers)."""
        return self.available and callable(getattr(self.provider, "complete_tools", None))

    def complete_tools(self, messages: Messages | str, tools: list[dict[str, Any]], stage: str = "default", *,
                       temperature: float | None = None, max_tokens: int | None = None,
                       cache: bool = True) -> Completion:
        """One turn with native tool calling (cached by request hash with the tools, retried,
        counted like `complete`): the reply text and `extra["tool_calls"]`. Providers without
        tool calling raise LLMRequestError; callers check `supports_tools` first."""
        if not self.supports_tools:
            raise LLMRequestError(f"stage '{stage}': {self.section}.provider = {self.provider.name} "
                                  "has no native tool calling; use the JSON action protocol")
        msgs = _normalise(messages)
        params = {"temperature": self.settings.temperature if temperature is None else temperature,
                  "max_tokens": max_tokens or self.settings.max_tokens, "tools": tools}
        return self._request(msgs, params, stage, None, cache, tools=tools)

    def map(self, requests: Sequence[dict[str, Any]], *, max_concurrency: int | None = None,
            progress: bool = False, desc: str = "LLM", return_exceptions: bool = False,
            on_done: Callable[[int], None] | None = None) -> list[Any]:
        """`complete(**kwargs)` for each dict, concurrently (bounded), results in input order.

        Every finished request is cached at once, so a rerun after an interruption resumes.
        With `return_exceptions`, a failed item holds its BookIndexError instead of raising.
        `on_done(i)` is called (in the worker's thread) when request i has finished, so a caller
        can report progress in its own units; what it raises stops the map like a failure.
        """
        workers = max(1, min(max_concurrency or self.settings.max_concurrency,
                             self.provider.max_concurrency, len(requests) or 1))
        bar = _progress(len(requests), desc) if progress and len(requests) > 1 else None
        results: list[Any] = [None] * len(requests)

        def run(i: int) -> None:
            try:
                results[i] = self.complete(**requests[i])
            except BookIndexError as exc:
                if not return_exceptions:
                    raise
                results[i] = exc
            finally:
                if bar is not None:
                    bar.update(1)
            if on_done is not None:
                on_done(i)

        try:
            if workers == 1:
                for i in range(len(requests)):
                    run(i)
            else:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    futures = [pool.submit(run, i) for i in range(len(requests))]
                    try:
                        for fut in futures:
                            fut.result()
                    except BaseException:
                        for other in futures:
                            other.cancel()
                        raise
        finally:
            if bar is not None:
                bar.close()
        return results

    def judge(self, messages: Messages | str, stage: str = "judge", cache: bool = True) -> float:
        """P(yes) for a yes/no question, from next-token log-probabilities where the backend
        exposes them (llama.cpp), else from the text answer (1.0 / 0.0)."""
        msgs = _normalise(messages)
        comp = self._request(msgs, {"kind": "yes_no"}, stage, None, cache, judge=True)
        return float(comp.extra.get("p_yes", 0.5))

    # --------------------------------------------------------------------------------- internals
    def _adapter(self, schema: Any) -> TypeAdapter[Any]:
        with self._adapter_lock:
            if schema not in self._adapters:
                self._adapters[schema] = TypeAdapter(schema)
            return self._adapters[schema]

    def _request(self, msgs: Messages, params: dict[str, Any], stage: str,
                 json_schema: dict[str, Any] | None, use_cache: bool, judge: bool = False,
                 tools: list[dict[str, Any]] | None = None, on_text: TextSink | None = None) -> Completion:
        resolve = getattr(self.provider, "_resolve_model", None)
        if resolve is not None and not self.provider.model and self.available:
            self._attempt(stage, resolve)
        key_params = dict(params, json_mode=self.settings.json_mode if json_schema else None)
        key = cache_key(self.provider.name, self.provider.model, msgs, key_params)
        if use_cache and self.cache is not None and self.available:
            hit = self.cache.get(key)
            if hit is not None:
                self.ledger.record(stage, cache_hits=1)
                comp = Completion(**hit)
                if on_text is not None:
                    shown = replay_text(comp.text, json_schema)
                    if shown:
                        on_text(shown)
                return comp
        stream = getattr(self.provider, "complete_stream", None) if on_text is not None else None

        def call() -> Completion:
            if stream is not None and on_text is not None:
                return cast(Completion, stream(msgs, temperature=params["temperature"], max_tokens=params["max_tokens"],
                                               json_schema=json_schema, on_delta=text_sink_for(json_schema, on_text)))
            if judge:
                return self.provider.yes_probability(msgs)
            if tools is not None:
                return self.provider.complete_tools(  # type: ignore[attr-defined]  # checked by supports_tools
                    msgs, tools=tools, temperature=params["temperature"], max_tokens=params["max_tokens"])
            return self.provider.complete(msgs, temperature=params["temperature"],
                                          max_tokens=params["max_tokens"], json_schema=json_schema)

        comp = self._attempt(stage, call)
        if on_text is not None and stream is None:  # no streaming provider: the reply in one chunk
            shown = replay_text(comp.text, json_schema)
            if shown:
                on_text(shown)
        if self.cache is not None and self.available:
            self.cache.put(key, asdict(comp))
        return comp

    def _attempt(self, stage: str, call: Callable[[], Any]) -> Any:
        """Run `call` with exponential backoff + jitter on TransientError; account for it."""
        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            start = time.perf_counter()
            try:
                result = call()
            except TransientError as exc:
                self.ledger.record(stage, seconds=time.perf_counter() - start)
                if attempt + 1 >= attempts:
                    self.ledger.record(stage, errors=1)
                    raise LLMRequestError(
                        f"stage '{stage}': {self.section} request failed after {attempts} attempts: "
                        f"{exc}; check {self.section}.base_url and that the server is up") from None
                self.ledger.record(stage, retries=1)
                self._sleep(self._backoff(attempt))
                continue
            except BookIndexError:
                if self.available:
                    self.ledger.record(stage, errors=1, seconds=time.perf_counter() - start)
                raise
            elapsed = time.perf_counter() - start
            if isinstance(result, Completion):
                self.ledger.record(stage, calls=1, seconds=elapsed, prompt_tokens=result.prompt_tokens,
                                   completion_tokens=result.completion_tokens, cached_tokens=result.cached_tokens)
            return result
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        """base * 2**attempt capped at retry_max_delay, half of it randomised (equal jitter)."""
        delay = min(self.settings.retry_max_delay, self.settings.retry_base_delay * (2 ** attempt))
        return delay / 2 + self._jitter() * delay / 2


def _normalise(messages: Messages | str) -> Messages:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _with_json_instruction(msgs: Messages, json_schema: dict[str, Any]) -> Messages:
    instruction = JSON_INSTRUCTION.format(schema=json.dumps(json_schema, separators=(",", ":")))
    if msgs and msgs[0].get("role") == "system" and isinstance(msgs[0].get("content"), str):
        return [dict(msgs[0], content=msgs[0]["content"].rstrip() + "\n\n" + instruction)] + msgs[1:]
    return [{"role": "system", "content": instruction}] + msgs


def _parse(raw: str, adapter: TypeAdapter[Any]) -> Any:
    return adapter.validate_python(extract_json(raw))


def _error_text(exc: Exception, limit: int = 600) -> str:
    if isinstance(exc, ValidationError):
        text = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                         for e in exc.errors()[:5])
    else:
        text = str(exc)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _progress(total: int, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="call")
