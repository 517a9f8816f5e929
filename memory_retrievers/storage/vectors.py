"""Vectors in: every embedding and caller-given vector is checked and made unit length here, once.

Duplicate detection and the in-memory views compare vectors by dot product, LanceDB by cosine
distance; both agree only for unit vectors. A caller's vector of length 3 (or an embedder that does
not normalise) would otherwise make near-duplicate detection swallow distinct memories, and rank
differently depending on namespace size.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import numpy as np

from memory_retrievers.embeddings import Embedder, check_vectors
from memory_retrievers.errors import EmbeddingError, InvalidInputError, MemoryRetrieversError
from memory_retrievers.runtime.plugin_loop import isolated
from memory_retrievers.storage.schema import SEARCHED_CHARS
from memory_retrievers.validation import MAX_QUERY_CHARS, check_text

__all__ = ["VectorMaker", "unit"]

# Rows already within this of length 1 keep their exact bits (every normal embedder's output).
_UNIT_TOLERANCE = 1e-4


def unit(vectors: np.ndarray, *, source: str) -> np.ndarray:
    """Rows scaled to length 1 (rows already unit length are returned unchanged).

    Each row is divided by its largest magnitude before its length is taken: the length of a
    finite row such as ``[1e30] * 8`` overflows float32 (and ``[1e-30] * 8`` underflows to 0),
    yet its direction is well defined and kept.

    Raises:
        InvalidInputError: A row is all zeros (it has no direction to compare).
    """
    scale = np.abs(vectors).max(axis=1) if vectors.shape[0] else np.zeros(0, dtype=np.float32)
    if (scale == 0).any():
        row = int(np.flatnonzero(scale == 0)[0])
        where = f" (row {row})" if len(vectors) > 1 else ""
        raise InvalidInputError(f"{source} is all zeros{where}; pass a real embedding or leave it out")
    scaled = vectors / scale[:, None]  # largest magnitude 1: its length neither overflows nor underflows
    lengths = np.linalg.norm(scaled, axis=1)
    with np.errstate(over="ignore"):
        norms = lengths * scale  # inf for a huge row: "off", scaled below
    off = ~(np.abs(norms - 1.0) <= _UNIT_TOLERANCE)
    if not off.any():
        return vectors
    out = vectors.copy()
    out[off] = scaled[off] / lengths[off, None]
    return out.astype(np.float32, copy=False)


class VectorMaker:
    """Embeds with the store's embedder and validates every vector that enters the store.

    Args:
        embedder: The store's embedder.
        dimension: The table's vector width.
        batch_size: Texts per embedder call (``StoreConfig.embed_batch_size``).
    """

    def __init__(self, embedder: Embedder, dimension: int, batch_size: int) -> None:
        self.embedder = embedder
        self.dimension = dimension
        self.batch_size = batch_size

    def _check(self, raw: Any, rows: int, source: str) -> np.ndarray:
        return unit(check_vectors(raw, rows=rows, dimension=self.dimension, source=source), source=source)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (in their order), embedded ``batch_size`` at a time.

        The texts go to the model shortest first, so each call holds texts of similar length: a
        transformer pads every text of a call to the longest, and LoCoMo's turns embedded 64 at a
        time in arrival order ran at 95-97 texts/s, sorted at 125-144/s (as fast as calls of 512).

        Raises:
            EmbeddingError: The embedder failed or returned unusable vectors.
        """
        name = f"embedder {self.embedder.name!r}"
        # A long memory is embedded by its opening (the model reads 256 word pieces; tokenizing a
        # million characters to throw them away costs more than the embedding).
        texts = [t[:SEARCHED_CHARS] for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        by_length = [texts[i] for i in order]
        parts = []
        for start in range(0, len(by_length), self.batch_size):
            chunk = by_length[start : start + self.batch_size]
            try:
                raw = await _call(self.embedder.aembed_documents, chunk)
            except MemoryRetrieversError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"{name} failed: {exc}") from exc
            try:
                parts.append(self._check(raw, len(chunk), name))
            except InvalidInputError as exc:  # a zero vector from the model is the model's fault
                raise EmbeddingError(str(exc)) from None
        if not parts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        out[order] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return out

    def given(self, vector: Any, *, source: str) -> np.ndarray:
        """A caller's vector, checked (shape, finite, not zero) and scaled to unit length."""
        row: np.ndarray = self._check(vector, 1, source)[0]
        return row

    async def for_records(self, recs: Sequence[Mapping[str, Any]], *, first_index: int = 0) -> np.ndarray:
        """One unit vector per record: the caller's (checked) or embedded in batches."""
        vectors = np.empty((len(recs), self.dimension), dtype=np.float32)
        need = [i for i, r in enumerate(recs) if r.get("vector") is None]
        for i, r in enumerate(recs):
            if r.get("vector") is not None:
                vectors[i] = self.given(r["vector"], source=f"the vector of record {first_index + i}")
        if need:
            vectors[need] = await self.embed([recs[i]["text"] for i in need])
        return vectors

    async def query(self, text: str) -> np.ndarray:
        """The unit vector of a search query.

        Raises:
            InvalidInputError: Empty or over-long query.
            EmbeddingError: The embedder failed.
        """
        row: np.ndarray = (await self.queries([text]))[0]
        return row

    async def queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of a few search queries, one row each.

        In one call when the embedder offers ``aembed_queries(texts)`` (one forward pass, as
        :class:`~memory_retrievers.SentenceTransformerEmbedder` does), else one ``aembed_query``
        each, concurrently.

        Raises:
            InvalidInputError: An empty or over-long query.
            EmbeddingError: The embedder failed.
        """
        queries = [check_text(t, field="query", max_chars=MAX_QUERY_CHARS) for t in texts]
        name = f"embedder {self.embedder.name!r}"
        batch = getattr(self.embedder, "aembed_queries", None)
        try:
            if batch is not None and len(queries) > 1:
                raw: Any = await _call(batch, queries)
                rows = [(raw, len(queries))]
            else:
                each = await asyncio.gather(*(_call(self.embedder.aembed_query, q) for q in queries))
                rows = [(one, 1) for one in each]
        except MemoryRetrieversError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"{name} failed on the query: {exc}") from exc
        try:
            checked = [self._check(part, n, name) for part, n in rows]
        except InvalidInputError as exc:  # a zero or malformed vector from the model is the model's fault
            raise EmbeddingError(str(exc)) from None
        return checked[0] if len(checked) == 1 else np.concatenate(checked)


async def _call(method: Callable[[Any], Awaitable[Any]], arg: Any) -> Any:
    """Await an embedder's async method; a user's own on the plug-in loop.

    The library's embedders never block their loop (they embed on plug-in threads); a user's
    ``async def`` might, and on the library's loop it would stall every store of the process.
    """
    if getattr(method, "__module__", "").startswith("memory_retrievers."):
        return await method(arg)
    return await isolated(lambda: method(arg))
