"""A sentence-transformers model run by ONNX Runtime instead of torch.

Why: on a 2-core CPU the same MiniLM weights encode ~1.6x faster under ONNX Runtime, and a
process that only queries never imports torch (3-4 s saved when a library is opened). The ONNX
graph is exported once from the local model with torch (needs the `onnx` package) and cached
under the bookindex cache directory; vectors match the torch path to ~1e-6 cosine.

`quantize=True` runs an int8 copy of the graph (ONNX Runtime dynamic quantization: int8
weights, activations quantized per batch), made once from the fp32 export and cached beside it;
`max_tokens` truncates shorter than the model's own limit. Both trade a little recall for speed
and are meant for bulk corpus embedding (the skills compiler), not for a library's index vectors
(docs/benchmarks.md, "Corpus embedding speed and the members beam").

Only plain "Transformer → Pooling (mean or CLS) [→ Normalize]" models qualify; anything else
raises `UnsupportedModel` so the caller can fall back to torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from bookindex.core.errors import BookIndexError

EXPORT_VERSION = "1"  # bump when the exported graph changes shape or inputs
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class UnsupportedModel(BookIndexError):
    """The model directory is not a plain Transformer + Pooling sentence-transformers model."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(f"{path}: {exc}") from None


def model_layout(model_dir: Path) -> tuple[str, int, int]:
    """(pooling mode 'mean'|'cls', max_seq_length, hidden size) of a sentence-transformers dir."""
    modules = _read_json(model_dir / "modules.json") if (model_dir / "modules.json").exists() else None
    if not isinstance(modules, list) or not modules:
        raise UnsupportedModel(f"{model_dir}: no modules.json")
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise UnsupportedModel(f"{model_dir}: modules {kinds} are not Transformer + Pooling")
    pool_cfg = _read_json(model_dir / modules[1].get("path", "1_Pooling") / "config.json")
    if pool_cfg.get("pooling_mode_mean_tokens"):
        pooling = "mean"
    elif pool_cfg.get("pooling_mode_cls_token"):
        pooling = "cls"
    else:
        raise UnsupportedModel(f"{model_dir}: pooling {pool_cfg} is neither mean nor CLS")
    st_cfg = model_dir / "sentence_bert_config.json"
    max_len = int(_read_json(st_cfg).get("max_seq_length") or 256) if st_cfg.exists() else 256
    hidden = int(_read_json(model_dir / "config.json").get("hidden_size") or 0)
    if not hidden or not (model_dir / "tokenizer.json").exists():
        raise UnsupportedModel(f"{model_dir}: no hidden_size or no tokenizer.json")
    return pooling, max_len, hidden


def export_key(model_dir: Path) -> str:
    """Identifies the weights cheaply (names, sizes, mtimes): a changed model re-exports."""
    h = hashlib.sha1(f"{EXPORT_VERSION}|{model_dir.resolve()}".encode())
    for f in sorted(model_dir.glob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def export_onnx(model_dir: Path, out: Path) -> Path:
    """Export the transformer to ONNX (dynamic batch and length), atomically, and return `out`."""
    try:  # deferred: torch, transformers and onnx are heavy and needed only for the one-off export
        import onnx  # noqa: F401  (torch's exporter needs it; fail early with a clear message)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise UnsupportedModel(f"exporting {model_dir} to ONNX needs torch, transformers and "
                               f"onnx ({exc})") from None
    # deferred with the imports above
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    ids = torch.ones(2, 8, dtype=torch.long)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    axes = {name: {0: "batch", 1: "seq"} for name in (*INPUT_NAMES, "last_hidden_state")}
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer notes about shapes; the vectors are tested
            torch.onnx.export(_Hidden(model), (ids, ids, torch.zeros_like(ids)), str(tmp),
                              input_names=list(INPUT_NAMES), output_names=["last_hidden_state"],
                              dynamic_axes=axes, opset_version=17, dynamo=False)
        os.replace(tmp, out)
    except Exception as exc:  # the exporter raises many types; none of them should be fatal here
        tmp.unlink(missing_ok=True)
        raise UnsupportedModel(f"ONNX export of {model_dir} failed: {exc}") from None
    return out


class _FromPackage(logging.Filter):
    """Drops the records logged from inside one package's folder (by the caller's file path)."""

    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = folder

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.startswith(self.folder)


@contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """Silence ONNX Runtime's quantizer for the duration of one call, and only it.

    Why: `quantize_dynamic` logs its "please consider to run pre-processing" advice through the
    root logger (`logging.warning(...)`, not a named logger), and that module-level call also runs
    `logging.basicConfig()` when the root logger has no handler, so the advice reached the user's
    stderr as "WARNING:root:..." and every later root record would have too. Within this block the
    root logger drops records made from onnxruntime's quantization package, and a handler that
    does nothing keeps `basicConfig` from installing one; both are removed afterwards, so other
    libraries' logging and the application's own are untouched."""
    import onnxruntime.quantization as ort_quant  # deferred: only the int8 build needs it

    root = logging.getLogger()
    only_ort = _FromPackage(os.path.dirname(os.path.abspath(ort_quant.__file__)))
    placeholder = logging.NullHandler()
    root.addFilter(only_ort)
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)
        root.removeFilter(only_ort)


def quantize_onnx(src: Path, out: Path) -> Path:
    """An int8 dynamic-quantized copy of `src` (weights int8, activations quantized at run
    time), written atomically to `out`. On this project's AVX2 CPUs it encodes MiniLM 1.46x faster
    per CPU second (docs/benchmarks.md)."""
    try:  # deferred: the quantizer imports onnx, needed only for this one-off step
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise UnsupportedModel(f"int8 quantization of {src} needs onnx and onnxruntime ({exc})") from None
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp.onnx")
    try:
        with _quiet_quantizer(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", module="onnx")  # onnx and onnxruntime only
            quantize_dynamic(str(src), str(tmp), weight_type=QuantType.QInt8)
        os.replace(tmp, out)
    except Exception as exc:  # the quantizer raises many types; fall back like a failed export
        tmp.unlink(missing_ok=True)
        raise UnsupportedModel(f"int8 quantization of {src} failed: {exc}") from None
    return out


class OnnxEmbedder:
    """Same vectors as `SentenceTransformerEmbedder`, computed by ONNX Runtime (or, with
    `quantize` / `max_tokens`, a faster approximation of them)."""

    def __init__(self, model_dir: Path, cache_root: Path, name: str, batch_size: int = 32,
                 threads: int | None = None, quantize: bool = False, max_tokens: int | None = None) -> None:
        # deferred: when these are missing (ImportError), get_embedder falls back to torch
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.pooling, self.max_len, self._dim = model_layout(model_dir)
        if max_tokens:
            self.max_len = min(self.max_len, int(max_tokens))
        onnx_path = cache_root / "onnx" / f"{model_dir.name}-{export_key(model_dir)}.onnx"
        if not onnx_path.exists():
            export_onnx(model_dir, onnx_path)
        if quantize:
            q_path = onnx_path.with_name(f"{onnx_path.stem}-int8.onnx")
            if not q_path.exists():
                quantize_onnx(onnx_path, q_path)
            onnx_path = q_path
        self.quantized = quantize
        self.max_tokens = int(max_tokens or 0)  # 0: the model's own limit
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # Idle intra-op threads sleep instead of spinning: a spinning thread burns its core
        # between batches, and on cores other processes share (a `--workers 2` build, a busy
        # server) that is CPU time taken from them for nothing; vectors are unchanged.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_len)
        self.tokenizer.enable_padding()
        self.name = name  # the same model and vector space: queries embedded at full precision match
        self.variant = ("int8" if quantize else "fp32") + f", {self.max_len} tokens"
        self.path = model_dir
        self.onnx_path = onnx_path
        self.batch_size = batch_size
        self._lock = threading.Lock()  # the tokenizer's padding state is shared

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """Batches of similar length (less padding), results returned in input order."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([len(t) for t in texts], kind="stable")
        starts: Iterable[int] = range(0, len(texts), self.batch_size)
        if progress and len(texts) >= 256:
            starts = tqdm(starts, desc="embed", unit="batch")
        for start in starts:
            idx = order[start:start + self.batch_size]
            out[idx] = self._encode_batch([texts[i] for i in idx])
        return out

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            enc = self.tokenizer.encode_batch([t if t else " " for t in texts])
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if self.pooling == "cls":
            vec = hidden[:, 0]
        else:
            m = mask[..., None].astype(np.float32)
            vec = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(vec, axis=1, keepdims=True)
        return (vec / np.where(norms > 0, norms, 1.0)).astype(np.float32)
