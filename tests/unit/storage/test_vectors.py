"""Every vector that enters the store is checked and made unit length, once."""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pytest

from memory_retrievers import (
    DimensionMismatchError,
    EmbeddingError,
    HashEmbedder,
    InvalidInputError,
    MemoryRetriever,
    MemoryStore,
    WriteAction,
)
from memory_retrievers.storage.vectors import VectorMaker, unit

QUIET = {"scoring": {"decay": "none"}, "selection": {"mmr": False}, "record_access": False}


def version(store: MemoryStore) -> int:
    return int(lancedb.connect(store.uri).open_table(store.table_name).version)


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


# ---------------------------------------------------------------- caller vectors that are not unit length
def test_caller_vectors_longer_than_one_do_not_swallow_distinct_memories(make_store) -> None:
    store = make_store()
    rng = np.random.default_rng(7)
    directions = rng.standard_normal((100, 32))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    out = store.add_many([{"text": f"record {i}", "vector": 3 * d} for i, d in enumerate(directions)], namespace="u")
    assert all(r.action is WriteAction.ADDED for r in out) and store.count("u") == 100
    uniform = rng.uniform(0.0, 1.0, (40, 32))  # all positive: dot products far above 0.95 unnormalised
    out = store.add_many([{"text": f"uniform {i}", "vector": v} for i, v in enumerate(uniform)], namespace="w")
    assert all(r.action is WriteAction.ADDED for r in out) and store.count("w") == 40
    stored = store.get(out[0].id, namespace="w", include_vector=True)
    assert np.linalg.norm(stored.vector) == pytest.approx(1.0, abs=1e-5)
    # A true near duplicate is still found, whatever its length.
    again = store.add("uniform 0.", namespace="w", vector=5 * uniform[0])  # same words, same direction
    assert again.action is WriteAction.SKIPPED and again.duplicate_of == out[0].id


def test_caller_vectors_rank_the_same_with_and_without_the_namespace_view(make_store, tmp_path: Path) -> None:
    store = make_store()
    rng = np.random.default_rng(3)
    vectors = rng.uniform(0.1, 1.0, (30, 32)) * rng.uniform(0.5, 4.0, (30, 1))  # varied lengths
    store.add_many([{"text": f"item {i}", "vector": v} for i, v in enumerate(vectors)], namespace="u", dedup=False)
    flat = MemoryStore(Path(store.uri), embedder=store.embedder, config={"recall_view_max_rows": 0})
    config = {**QUIET, "mode": "vector"}
    query = rng.uniform(0.1, 1.0, 32) * 7
    with_view = MemoryRetriever(store, namespace="u", config=config).recall("item", query_vector=query, k=10)
    without = MemoryRetriever(flat, namespace="u", config=config).recall("item", query_vector=query, k=10)
    assert [m.id for m in with_view.memories] == [m.id for m in without.memories]
    scaled, plain = store.vector_search(query, namespace="u", k=5), store.vector_search(query / 7, namespace="u", k=5)
    assert [h.id for h in scaled] == [h.id for h in plain]
    assert [h.score for h in scaled] == pytest.approx([h.score for h in plain], abs=1e-6)
    flat.close()


def test_an_all_zero_caller_vector_is_refused_naming_the_record(make_store) -> None:
    store = make_store()
    before = version(store)
    with pytest.raises(InvalidInputError, match=r"record 3.*all zeros"):
        store.add_many(
            [{"text": f"t {i}", "vector": [0.0] * 32 if i == 3 else [1.0] * 32} for i in range(5)],
            namespace="u",
            dedup=False,
        )
    assert version(store) == before and store.count("u") == 0


# ---------------------------------------------------------------- dead configuration and enum members
def test_embed_batch_size_sets_the_texts_per_embedder_call(make_store) -> None:
    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(32)
            self.calls: list[int] = []

        async def aembed_documents(self, texts):  # type: ignore[no-untyped-def]
            self.calls.append(len(texts))
            return self.embed_documents(texts)

    embedder = Counting()
    store = make_store(embedder=embedder, config={"embed_batch_size": 2})
    store.add_many([{"text": f"distinct text number {i}"} for i in range(5)], namespace="u", dedup=False)
    assert embedder.calls == [2, 2, 1]
