"""Model backends behind LLMClient: an OpenAI-compatible endpoint, an in-process GGUF, or none.

Providers do one request each; retries, caching, JSON handling and accounting live in the client.
They raise `TransientError` for failures worth retrying (timeouts, connection errors, 429, 5xx)
and `LLMRequestError` for ones that are not (bad request, authentication, missing model).
"""

from __future__ import annotations

import atexit
import base64
import ipaddress
import math
import mimetypes
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast
from urllib.parse import urlparse

import numpy as np

from bookindex.core.config import LLMSettings
from bookindex.core.errors import ConfigError, LLMRequestError, LLMUnavailable
from bookindex.providers.llm.local_model import resolve_gguf

if TYPE_CHECKING:  # the SDKs' message types, for the casts below (no import at run time)
    from llama_cpp.llama_types import ChatCompletionRequestMessage
    from openai.types.chat import ChatCompletionMessageParam

Messages = list[dict[str, Any]]
LOCAL_DUMMY_KEY = "sk-no-key-required"
T = TypeVar("T")


class TransientError(Exception):
    """A failure the client retries with backoff."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # prompt tokens the provider did not evaluate again (the in-process model's KV cache held
    # them from the previous call); prompt_tokens - cached_tokens is what the first token waits on
    cached_tokens: int = 0


class Provider(Protocol):
    name: str
    model: str
    max_concurrency: int

    def complete(self, messages: Messages, *, temperature: float, max_tokens: int,
                 json_schema: dict[str, Any] | None) -> Completion: ...

    def yes_probability(self, messages: Messages) -> Completion:
        """One-token answer; `extra["p_yes"]` = P(yes) / (P(yes) + P(no))."""
        ...


class StreamingProvider(Provider, Protocol):
    """A provider that can hand out the reply's text deltas as they are generated (`on_delta`),
    then returns the whole Completion as `complete` does (llamacpp, openai)."""

    def complete_stream(self, messages: Messages, *, temperature: float, max_tokens: int,
                        json_schema: dict[str, Any] | None, on_delta: Callable[[str], None]) -> Completion: ...


def physical_cores() -> int:
    """Cores this process may run on, counting physical cores only: llama.cpp's matrix kernels
    gain nothing from a core's second hardware thread, and llama-cpp-python's own default (half
    the logical CPUs) leaves one of two cores idle on a small machine."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        allowed = os.cpu_count() or 1
    try:
        import psutil  # type: ignore[import-untyped]  # deferred: only the in-process model asks, once

        physical = psutil.cpu_count(logical=False) or allowed
        logical = psutil.cpu_count(logical=True) or allowed
    except ImportError:
        physical = logical = allowed
    # an affinity mask over hyper-threaded CPUs: scale it by physical/logical
    return max(1, min(allowed, round(allowed * physical / max(1, logical))))


def image_part(image: str | os.PathLike[str] | bytes, mime: str | None = None) -> dict[str, Any]:
    """An OpenAI-style image content part with a base64 data URL (for vision models)."""
    if isinstance(image, bytes):
        data, mime = image, mime or "image/png"
    else:
        path = Path(image)
        data = path.read_bytes()
        mime = mime or mimetypes.guess_type(path.name)[0] or "image/png"
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def user_message(text: str, images: list[Any] | None = None) -> dict[str, Any]:
    """A user message with optional images (paths or bytes) as OpenAI content parts."""
    if not images:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text}] + [image_part(i) for i in images]}


def is_loopback_url(url: str | None) -> bool:
    host = urlparse(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _p_yes_from_top(top: list[tuple[str, float]]) -> float | None:
    p_yes = sum(math.exp(lp) for tok, lp in top if tok.strip().lower() == "yes")
    p_no = sum(math.exp(lp) for tok, lp in top if tok.strip().lower() == "no")
    return p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None


def _p_yes_from_text(text: str) -> float:
    word = text.strip().lower()
    return 1.0 if word.startswith("yes") else 0.0 if word.startswith("no") else 0.5


class NoneProvider:
    """Provider `none`: every call raises LLMUnavailable so callers take their no-LLM path."""

    name = "none"
    model = ""
    max_concurrency = 1

    def __init__(self, section: str = "llm") -> None:
        self.section = section

    def _fail(self) -> Completion:
        raise LLMUnavailable(f"no LLM configured ({self.section}.provider = none); set "
                             f"{self.section}.provider to openai or llamacpp")

    def complete(self, messages: Messages, **_: Any) -> Completion:
        return self._fail()

    def yes_probability(self, messages: Messages) -> Completion:
        return self._fail()


class OpenAIProvider:
    """Any OpenAI-compatible chat endpoint: OpenAI, vLLM, Ollama, llama.cpp's server."""

    name = "openai"

    def __init__(self, cfg: LLMSettings, section: str = "llm") -> None:
        import openai  # deferred: the SDK takes over a second to import and only this provider needs it

        self._openai = openai
        self.cfg = cfg
        self.section = section
        self.model = cfg.model
        self.max_concurrency = cfg.max_concurrency
        self.base_url = cfg.base_url or None
        key = os.environ.get(cfg.api_key_env or "", "")
        if not key:
            if self.base_url and is_loopback_url(self.base_url):
                key = LOCAL_DUMMY_KEY
            else:
                where = self.base_url or "api.openai.com"
                raise ConfigError(
                    f"{section}.api_key_env: environment variable {cfg.api_key_env or '(empty)'} "
                    f"is not set; export it with the API key for {where} or point "
                    f"{section}.api_key_env at the variable that holds it")
        self._client = openai.OpenAI(
            api_key=key, base_url=self.base_url, max_retries=0,
            timeout=openai.Timeout(cfg.timeout, connect=min(cfg.timeout, 10.0)))
        self._model_lock = threading.Lock()
        self._logprobs_ok = True

    def _yes_from_text(self, messages: Messages) -> Completion:
        comp = self.complete(messages, temperature=0.0, max_tokens=2, json_schema=None)
        comp.extra["p_yes"] = _p_yes_from_text(comp.text)
        return comp

    @property
    def endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def _resolve_model(self) -> str:
        """Empty llm.model: use the first model the server lists (single-model local servers)."""
        with self._model_lock:
            if not self.model:
                models = self._call(lambda: self._client.models.list())
                ids = [m.id for m in models.data]
                if not ids:
                    raise ConfigError(f"{self.section}.model is empty and {self.endpoint} lists "
                                      "no models; set it")
                self.model = ids[0]
        return self.model

    def _call(self, fn: Callable[[], T]) -> T:
        oa = self._openai
        try:
            return fn()
        except oa.APITimeoutError:
            raise TransientError(f"timed out after {self.cfg.timeout:g}s at {self.endpoint}") from None
        except oa.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise TransientError(f"cannot connect to {self.endpoint} ({_short(cause)})") from None
        except oa.APIStatusError as exc:
            status = exc.status_code
            msg = f"HTTP {status} from {self.endpoint}: {_short(exc.message)}"
            if status in (408, 409, 425, 429) or status >= 500:
                raise TransientError(msg) from None
            if status in (401, 403):
                msg += f" (check the API key in ${self.cfg.api_key_env})"
            if status == 404:
                msg += f" (check {self.section}.base_url and {self.section}.model)"
            raise LLMRequestError(msg) from None

    def _response_format(self, json_schema: dict[str, Any] | None) -> dict[str, Any]:
        """The `response_format` argument for the configured JSON mode (none for "prompt")."""
        if json_schema is not None and self.cfg.json_mode == "json_object":
            return {"response_format": {"type": "json_object", "schema": json_schema}}
        if json_schema is not None and self.cfg.json_mode == "json_schema":
            return {"response_format": {"type": "json_schema", "json_schema": {
                "name": "response", "schema": json_schema, "strict": False}}}
        return {}

    def complete(self, messages: Messages, *, temperature: float, max_tokens: int,
                 json_schema: dict[str, Any] | None) -> Completion:
        model = self._resolve_model()
        kwargs = self._response_format(json_schema)
        resp = self._call(lambda: self._client.chat.completions.create(
            model=model, messages=_openai_messages(messages), temperature=temperature,
            max_tokens=max_tokens, **kwargs))
        choice = resp.choices[0]
        usage = resp.usage
        return Completion(
            text=choice.message.content or "", model=resp.model or model,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            finish_reason=choice.finish_reason)

    def complete_stream(self, messages: Messages, *, temperature: float, max_tokens: int,
                        json_schema: dict[str, Any] | None, on_delta: Callable[[str], None]) -> Completion:
        """`complete` with `stream: true`: each content delta goes to `on_delta` as it arrives;
        token counts come from the final usage chunk (`stream_options.include_usage`)."""
        model = self._resolve_model()
        kwargs = self._response_format(json_schema)

        def run() -> Completion:
            stream = self._client.chat.completions.create(
                model=model, messages=_openai_messages(messages), temperature=temperature,
                max_tokens=max_tokens, stream=True, stream_options={"include_usage": True}, **kwargs)
            parts: list[str] = []
            finish: str | None = None
            prompt_tokens = completion_tokens = 0
            name = model
            for chunk in stream:
                name = getattr(chunk, "model", None) or name
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
                    completion_tokens = getattr(usage, "completion_tokens", 0) or 0
                for choice in chunk.choices or []:
                    delta = getattr(choice.delta, "content", None) if choice.delta is not None else None
                    if delta:
                        parts.append(delta)
                        on_delta(delta)
                    finish = choice.finish_reason or finish
            return Completion(text="".join(parts), model=name, prompt_tokens=prompt_tokens,
                              completion_tokens=completion_tokens or len(parts), finish_reason=finish)

        return self._call(run)

    def complete_tools(self, messages: Messages, *, tools: list[dict[str, Any]], temperature: float,
                       max_tokens: int) -> Completion:
        """One chat turn with native tool calling; the calls come back in
        `extra["tool_calls"]` as [{"id", "name", "arguments" (a JSON string)}]."""
        model = self._resolve_model()
        resp = self._call(lambda: self._client.chat.completions.create(
            model=model, messages=_openai_messages(messages), temperature=temperature,
            max_tokens=max_tokens, tools=cast(Any, tools)))
        choice = resp.choices[0]
        usage = resp.usage
        calls = []
        for c in choice.message.tool_calls or []:
            fn = getattr(c, "function", None)  # custom (non-function) tool calls are not ours
            if fn is not None:
                calls.append({"id": c.id, "name": fn.name, "arguments": fn.arguments or "{}"})
        return Completion(
            text=choice.message.content or "", model=resp.model or model,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            finish_reason=choice.finish_reason, extra={"tool_calls": calls})

    def yes_probability(self, messages: Messages) -> Completion:
        model = self._resolve_model()
        if not self._logprobs_ok:
            return self._yes_from_text(messages)
        try:
            resp = self._call(lambda: self._client.chat.completions.create(
                model=model, messages=_openai_messages(messages), temperature=0.0, max_tokens=1,
                logprobs=True, top_logprobs=10))
        except TransientError as exc:  # llama.cpp without logits_all answers 500 "logprobs ..."
            if "logprob" not in str(exc).lower():
                raise
            self._logprobs_ok = False
            return self._yes_from_text(messages)
        except LLMRequestError:  # server without logprobs support: fall back to the text answer
            self._logprobs_ok = False
            return self._yes_from_text(messages)
        choice = resp.choices[0]
        text = choice.message.content or ""
        p = None
        content = getattr(choice.logprobs, "content", None) or []
        if content:
            p = _p_yes_from_top([(t.token, t.logprob) for t in content[0].top_logprobs or []])
        usage = resp.usage
        return Completion(text=text, model=resp.model or model,
                          prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                          extra={"p_yes": p if p is not None else _p_yes_from_text(text)})


_LLAMA_MODELS: dict[tuple[str, int, int | None], Any] = {}
_LLAMA_LOCK = threading.Lock()


@atexit.register
def _close_llama_models() -> None:
    """Free in-process models before interpreter teardown (avoids llama.cpp __del__ noise)."""
    with _LLAMA_LOCK:
        for model in _LLAMA_MODELS.values():
            try:
                model.close()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
        _LLAMA_MODELS.clear()


class LlamaCppProvider:
    """A GGUF model run in process by llama-cpp-python (the `local-llm` extra).

    `llm.model` is a GGUF path, or empty / "qwen2.5-coder-1.5b" for the embedded default model,
    or "qwen2.5-coder-0.5b" for the small test model. Calls are serialised: one context, one thread.
    JSON output follows `llm.json_mode` as for the OpenAI provider: "prompt" (default) asks by
    instruction only; "json_object" / "json_schema" constrain decoding to the schema.
    """

    name = "llamacpp"
    max_concurrency = 1

    def __init__(self, cfg: LLMSettings, section: str = "llm", cache_root: Path | None = None) -> None:
        self.cfg = cfg
        self.section = section
        self.path = resolve_gguf(cfg.model, cache_root=cache_root, key=f"{section}.model")
        self.model = cfg.model or self.path.name
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load the model now (it is otherwise loaded on the first call)."""
        self._llama()

    @property
    def threads(self) -> int:
        """`llm.threads`, else the physical cores this process may use."""
        return self.cfg.threads or physical_cores()

    def _llama(self) -> Any:
        try:  # deferred: llama-cpp-python is the optional `local-llm` extra
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError(f"{self.section}.provider = llamacpp needs llama-cpp-python: "
                              "pip install 'bookindex[local-llm]'") from None
        threads = self.threads
        key = (str(self.path), self.cfg.context_size, threads)
        with _LLAMA_LOCK:
            if key not in _LLAMA_MODELS:
                try:
                    _LLAMA_MODELS[key] = Llama(
                        model_path=str(self.path), n_ctx=self.cfg.context_size,
                        n_threads=threads, n_threads_batch=threads,
                        verbose=False, logits_all=False)
                except (ValueError, RuntimeError) as exc:
                    raise LLMRequestError(f"cannot load GGUF model {self.path}: {exc}") from None
            return _LLAMA_MODELS[key]

    def _request(self, messages: Messages, json_schema: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """The loaded model and the extra arguments of one chat completion (text-only models)."""
        for m in messages:
            if isinstance(m.get("content"), list):
                raise LLMRequestError(f"{self.section}.provider = llamacpp runs text-only models; "
                                      "use an OpenAI-compatible vision server for images")
        kwargs: dict[str, Any] = {}
        if json_schema is not None and self.cfg.json_mode in ("json_object", "json_schema"):
            # Grammar-constrained decoding (llama-cpp-python takes the schema with type
            # json_object, like llama.cpp's server). It is slow on CPU for long outputs such as
            # extraction batches, so the default ("prompt") leaves JSON to the instruction and
            # the client's parse/repair/validate path.
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        return self._llama(), kwargs

    def complete(self, messages: Messages, *, temperature: float, max_tokens: int,
                 json_schema: dict[str, Any] | None) -> Completion:
        llm, kwargs = self._request(messages, json_schema)
        with self._lock:
            before = _evaluated_tokens(llm)
            try:
                resp = llm.create_chat_completion(messages=messages, temperature=temperature,
                                                  max_tokens=max_tokens, **kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise LLMRequestError(f"llama.cpp rejected the request: {exc}") from None
            usage = resp.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            cached = _reused_prefix(before, _evaluated_tokens(llm), prompt_tokens)
        choice = resp["choices"][0]
        return Completion(text=choice["message"].get("content") or "", model=self.model,
                          prompt_tokens=prompt_tokens,
                          completion_tokens=usage.get("completion_tokens", 0),
                          finish_reason=choice.get("finish_reason"), cached_tokens=cached)

    def complete_stream(self, messages: Messages, *, temperature: float, max_tokens: int,
                        json_schema: dict[str, Any] | None, on_delta: Callable[[str], None]) -> Completion:
        """`complete`, handing each generated piece of text to `on_delta` as it is decoded.

        The Llama object is shared by the process (one per model file), and llama-cpp-python
        keeps the previous evaluation's tokens: a prompt that starts like the previous one (the
        same instructions first) only evaluates the rest. llama-cpp-python's stream carries no
        usage, so the prompt tokens are counted from the context after the call."""
        llm, kwargs = self._request(messages, json_schema)
        parts: list[str] = []
        finish: str | None = None
        with self._lock:
            before = _evaluated_tokens(llm)
            try:
                for chunk in llm.create_chat_completion(messages=messages, temperature=temperature,
                                                        max_tokens=max_tokens, stream=True, **kwargs):
                    choice = chunk["choices"][0]
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        parts.append(delta)
                        on_delta(delta)
                    finish = choice.get("finish_reason") or finish
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise LLMRequestError(f"llama.cpp rejected the request: {exc}") from None
            text = "".join(parts)
            completion_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False)) if text else 0
            prompt_tokens = max(0, int(llm.n_tokens) - completion_tokens + (1 if finish == "stop" else 0))
            cached = _reused_prefix(before, _evaluated_tokens(llm), prompt_tokens)
        return Completion(text=text, model=self.model, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, finish_reason=finish, cached_tokens=cached)

    def yes_probability(self, messages: Messages) -> Completion:
        """P(yes) from the next-token logits after the chat prompt (no sampling)."""
        llm = self._llama()
        with self._lock:
            try:
                # deferred: llama-cpp-python is the optional `local-llm` extra
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter

                template = llm.metadata["tokenizer.chat_template"]
                eos = llm.detokenize([llm.token_eos()]).decode("utf-8", "ignore")
                bos = llm.detokenize([llm.token_bos()]).decode("utf-8", "ignore")
                prompt = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)(
                    messages=cast("list[ChatCompletionRequestMessage]", messages)).prompt
                tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
                llm.reset()
                llm.eval(tokens)
                logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
            except Exception:  # noqa: BLE001 - template or private API differences: text fallback
                logits = None
        if logits is None:
            comp = self.complete(messages, temperature=0.0, max_tokens=2, json_schema=None)
            comp.extra["p_yes"] = _p_yes_from_text(comp.text)
            return comp
        top = np.argsort(logits)[-20:]
        shifted = logits[top] - logits[top].max()
        logp = shifted - math.log(float(np.exp(shifted).sum()))
        pairs = [(llm.detokenize([int(t)]).decode("utf-8", "ignore"), float(lp))
                 for t, lp in zip(top, logp)]
        p = _p_yes_from_top(pairs)
        return Completion(text="", model=self.model, prompt_tokens=len(tokens),
                          extra={"p_yes": p if p is not None else 0.5})


def _evaluated_tokens(llm: Any) -> list[int]:
    """The tokens whose keys and values the Llama object holds now (prompt + reply of its last call)."""
    ids = getattr(llm, "input_ids", None)
    return [int(t) for t in ids] if ids is not None else []


def _reused_prefix(before: list[int], after: list[int], prompt_tokens: int) -> int:
    """Prompt tokens llama-cpp-python took from its KV cache: the common prefix of what it held
    before the call and this call's prompt (the first `prompt_tokens` it holds after). It always
    evaluates the prompt's last token again to get its logits, hence at most prompt_tokens - 1."""
    n = 0
    for a, b in zip(before, after[:prompt_tokens]):
        if a != b:
            break
        n += 1
    return max(0, min(n, prompt_tokens - 1))


def _openai_messages(messages: Messages) -> list[ChatCompletionMessageParam]:
    """Our message dicts are OpenAI chat messages; the SDK types them as TypedDicts."""
    return cast("list[ChatCompletionMessageParam]", messages)


def _short(obj: Any, limit: int = 200) -> str:
    text = " ".join(str(obj).split())
    return text if len(text) <= limit else text[:limit] + "..."
