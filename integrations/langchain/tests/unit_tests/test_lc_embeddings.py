"""LangChainEmbedder: any LangChain Embeddings as the store's embedder."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_memory_retrievers import LangChainEmbedder, RecallRetriever
from memory_retrievers import ConfigError, DimensionMismatchError, EmbeddingError, MemoryStore, SchemaMismatchError


class Keyword(Embeddings):
    """Tiny interpretable embeddings: one axis per keyword (so similarity is predictable)."""

    axes = ("tea", "coffee", "dog", "cat")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(t.lower().count(a)) + 0.01 for a in self.axes] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_store_with_langchain_embeddings_recalls_by_vector(make_store: Callable[..., MemoryStore]) -> None:
    embedder = LangChainEmbedder(Keyword())
    assert embedder.dimension == 4 and embedder.name == "langchain:Keyword"
    store = make_store(embedder=embedder)
    _, dog = store.add_many([{"text": "loves tea"}, {"text": "walks the dog"}], namespace="u")
    hits = store.vector_search("dog", namespace="u", k=2)
    assert hits[0].id == dog.id and hits[0].score == pytest.approx(1.0, abs=1e-3)
    docs = RecallRetriever(store=store, namespace="u", recall_config={"mode": "vector"}).invoke("tea")
    assert docs[0].page_content == "loves tea"


def test_vectors_are_unit_length_and_async_matches_sync() -> None:
    import asyncio

    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=16), name="fake-16")
    docs = embedder.embed_documents(["a", "b"])
    assert docs.shape == (2, 16) and np.allclose(np.linalg.norm(docs, axis=1), 1.0)
    assert np.allclose(asyncio.run(embedder.aembed_documents(["a", "b"])), docs)
    assert np.allclose(asyncio.run(embedder.aembed_query("a")), embedder.embed_query("a"))


def test_reopening_with_other_embeddings_is_refused(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=16), name="fake"))
    store.add("x", namespace="u")
    store.close()
    with pytest.raises((SchemaMismatchError, DimensionMismatchError)):
        make_store(embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=8), name="fake"))


class Broken(Keyword):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[math.nan, 1.0, 0.0, 0.0] for _ in texts]


def test_bad_embeddings_are_typed_errors_and_write_nothing(make_store: Callable[..., MemoryStore]) -> None:
    with pytest.raises(ConfigError, match="Embeddings"):
        LangChainEmbedder(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="dimension"):
        LangChainEmbedder(Keyword(), dimension=0)
    store = make_store(embedder=LangChainEmbedder(Broken(), dimension=4))
    with pytest.raises(EmbeddingError, match="NaN"):
        store.add("x", namespace="u")
    assert store.count("u") == 0
