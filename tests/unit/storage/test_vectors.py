"""Every vector that enters the store is checked and made unit length, once."""

from __future__ import annotations

import numpy as np
import pytest

from memory_retrievers import DimensionMismatchError, EmbeddingError, HashEmbedder, InvalidInputError
from memory_retrievers.storage.vectors import VectorMaker, unit


def test_unit_rows_keep_their_exact_bits_and_others_are_scaled() -> None:
    rows = np.array([[0.6, 0.8], [3.0, 4.0]], dtype=np.float32)
    out = unit(rows, source="v")
    assert out[0].tobytes() == rows[0].tobytes()
    assert np.allclose(out[1], [0.6, 0.8]) and rows[1].tolist() == [3.0, 4.0]  # input unchanged
    already = rows[:1]
    assert unit(already, source="v") is already


def test_zero_rows_are_refused_naming_the_row() -> None:
    with pytest.raises(InvalidInputError, match=r"v is all zeros \(row 1\)"):
        unit(np.array([[1.0, 0.0], [0.0, 0.0]]), source="v")


async def test_embedding_runs_in_batches_and_returns_unit_rows() -> None:
    sizes: list[int] = []

    class Unnormalised(HashEmbedder):
        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            sizes.append(len(texts))
            return 5.0 * self.embed_documents(texts)

    maker = VectorMaker(Unnormalised(16), 16, batch_size=3)
    out = await maker.embed([f"text {i}" for i in range(7)])
    assert sizes == [3, 3, 1] and out.shape == (7, 16)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)


async def test_texts_go_to_the_model_by_length_and_come_back_in_their_order() -> None:
    # A transformer pads a call to its longest text: calls of similar lengths waste nothing.
    calls: list[list[str]] = []

    class Recording(HashEmbedder):
        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            calls.append(list(texts))
            return self.embed_documents(texts)

    embedder = Recording(16)
    texts = [
        "a fairly long text about many things",
        "hi",
        "a medium text",
        "yo",
        "the longest text of them all, by far",
    ]
    out = await VectorMaker(embedder, 16, batch_size=2).embed(texts)
    assert [len(t) for call in calls for t in call] == sorted(len(t) for t in texts)
    assert np.allclose(out, embedder.embed_documents(texts), atol=1e-6)  # row i is still text i


async def test_bad_embedder_output_is_an_embedding_error() -> None:
    class Zero(HashEmbedder):
        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            return np.zeros((len(texts), 16))

        async def aembed_query(self, text):  # type: ignore[no-untyped-def]
            return np.zeros(16)

    maker = VectorMaker(Zero(16), 16, batch_size=8)
    with pytest.raises(EmbeddingError, match="all zeros"):
        await maker.embed(["a"])
    with pytest.raises(EmbeddingError, match="all zeros"):
        await maker.query("a")


async def test_caller_vectors_are_checked_with_their_record_index() -> None:
    maker = VectorMaker(HashEmbedder(4), 4, batch_size=8)
    recs = [{"text": "a"}, {"text": "b", "vector": [0.0, 0.0, 3.0, 4.0]}]
    out = await maker.for_records(recs, first_index=10)
    assert np.allclose(out[1], [0.0, 0.0, 0.6, 0.8])
    with pytest.raises(DimensionMismatchError, match="record 11"):
        await maker.for_records([{"text": "a"}, {"text": "b", "vector": [1.0, 2.0]}], first_index=10)
