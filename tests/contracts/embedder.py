"""The `Embedder` contract: (n, dim) float32 rows, L2-normalised, deterministic, in input order.

Dense retrieval takes a dot product as the cosine and stacks vectors built at different times
(index build, query time, one text or a batch), so a vector must not depend on its batch or its
position in it, and an empty batch must still have `dim` columns.
"""

from __future__ import annotations

import numpy as np
import pytest

from bookindex.core.protocols import Embedder

TEXTS = [
    "Install the package with pip on Linux and macOS.",
    "The png terminal writes bitmap images through the cairo library.",
    "Zebras are striped animals of the African savanna.",
    "Table 1 lists the parsing speed of three runs.",
    "Colors are given by name or as a hexadecimal triplet.",
]


class EmbedderContract:
    """Every `Embedder`. A subclass provides the `embedder` fixture."""

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("subclass provides `embedder`")

    def test_satisfies_the_protocol(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder.name, str) and embedder.name
        assert isinstance(embedder.dim, int) and embedder.dim > 0

    def test_rows_are_l2_normalised_float32(self, embedder: Embedder) -> None:
        vecs = embedder.encode(TEXTS)
        assert isinstance(vecs, np.ndarray) and vecs.dtype == np.float32
        assert vecs.shape == (len(TEXTS), embedder.dim)
        assert np.isfinite(vecs).all()
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)

    def test_empty_input_keeps_the_dimension(self, embedder: Embedder) -> None:
        vecs = embedder.encode([])
        assert vecs.shape == (0, embedder.dim) and vecs.dtype == np.float32

    def test_deterministic(self, embedder: Embedder) -> None:
        assert np.allclose(embedder.encode(TEXTS), embedder.encode(TEXTS), atol=1e-6)

    def test_a_vector_depends_on_its_text_only(self, embedder: Embedder) -> None:
        """Input order is kept and neither batch neighbours nor position change a vector."""
        batch = embedder.encode(TEXTS)
        assert np.allclose(embedder.encode(TEXTS[::-1]), batch[::-1], atol=1e-4)
        for i, text in enumerate(TEXTS):
            assert np.allclose(embedder.encode([text])[0], batch[i], atol=1e-4), text
        assert not np.allclose(batch[0], batch[2], atol=1e-3)  # different texts, different vectors

    def test_cosine_reflects_shared_meaning(self, embedder: Embedder) -> None:
        q, near, far = embedder.encode(["install the package with pip",
                                        "Install the package with pip on Linux and macOS.",
                                        "Zebras are striped animals of the African savanna."])
        assert float(q @ near) > float(q @ far)

    def test_progress_flag_changes_nothing(self, embedder: Embedder) -> None:
        assert np.allclose(embedder.encode(TEXTS, progress=True), embedder.encode(TEXTS), atol=1e-6)
