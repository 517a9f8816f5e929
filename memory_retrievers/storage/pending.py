"""Writes queued but not committed yet, as this process's recall sees them (read-your-writes).

``add_later`` and ``add_many_later`` return once their records are checked and queued; the commit
follows within ``StoreConfig.write_linger`` plus the commits queued before it. A chat adapter
queues a turn that way and returns, and the next turn's recall (often a few milliseconds later)
must still find it. So the store keeps its queued batches by namespace (:class:`PendingOverlay`)
until their writes settle, and a recall of a namespace with queued records reads through a
:class:`PendingSource`: the namespace's view (or table) with those records merged into every
search, as the memories they will be once stored (their planned ids, texts and fields; no
``context`` yet, which the commit fills from the session's neighbours).

How each search merges them, so that ranks stay those of one list:

- vector, dated: the records' cosine similarity, computed as the view computes it (exact, float64),
  merged by similarity;
- entity and recency: by shared entities and by ``created_at``, as the table orders them;
- BM25 (text, context): LanceDB's index does not hold them, and its scores depend on statistics
  of the whole index. Each queued record is placed among LanceDB's hits by a local BM25 computed
  over those hits and the queued records alike: it goes above every hit that scores lower than
  it locally, and takes a score between its neighbours', so the hits keep their order and scores
  (:func:`~memory_retrievers.storage.pending_text.placed`).

A queued record is embedded once: by whichever needs its vector first, the writer or a recall
(:func:`batch_vectors`). Records a forget, a failed embedding or a refused write never commit
leave the overlay when their write settles. Other processes see a queued record only once it is
committed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import numpy as np

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.errors import MemoryRetrieversError
from memory_retrievers.filters import MemoryFilter, matches
from memory_retrievers.models import FtsField, Memory, MemoryKind
from memory_retrievers.recall.source import RecallSource, SourceHits
from memory_retrievers.storage.fields import build_row
from memory_retrievers.storage.pending_text import placed
from memory_retrievers.storage.queue import AddBatch
from memory_retrievers.storage.schema import row_to_memory
from memory_retrievers.storage.search import joined_speakers
from memory_retrievers.storage.vectors import VectorMaker
from memory_retrievers.storage.write_plan import NEW_ID, record_vectors
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.text.speakers import speaker_of
from memory_retrievers.validation import content_hash

__all__ = ["PendingOverlay", "PendingSource", "Queued", "batch_vectors", "queued_memories", "searched_text"]


class Queued(NamedTuple):
    """A queued batch, the store's time when it was queued (its records' ``created_at`` until stored), its write."""

    batch: AddBatch
    queued_at: datetime
    write: Future[Any]


class PendingOverlay:
    """A store's queued ``add_later`` batches, by namespace, from queueing until their write settles."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_namespace: dict[str, list[Queued]] = {}

    def add(self, batch: AddBatch, future: Future[Any], queued_at: datetime) -> None:
        """Show ``batch`` (queued at ``queued_at``) to recall until ``future``, its write, settles."""
        namespaces = {str(r["namespace"]) for r in batch.records}
        with self._lock:
            for ns in namespaces:
                self._by_namespace.setdefault(ns, []).append(Queued(batch, queued_at, future))
        future.add_done_callback(lambda _f: self._drop(batch, namespaces))

    def _drop(self, batch: AddBatch, namespaces: set[str]) -> None:
        with self._lock:
            for ns in namespaces:
                held = [q for q in self._by_namespace.get(ns, ()) if q.batch is not batch]
                if held:
                    self._by_namespace[ns] = held
                else:
                    self._by_namespace.pop(ns, None)

    def batches(self, namespace: str) -> list[Queued]:
        """The batches holding records of ``namespace`` whose write has not settled, oldest first."""
        with self._lock:
            return list(self._by_namespace.get(namespace, ()))

    def writes(self, namespace: str | None = None) -> list[Future[Any]]:
        """The unsettled writes of ``namespace`` (of every namespace for ``None``)."""
        with self._lock:
            groups = self._by_namespace.values() if namespace is None else [self._by_namespace.get(namespace, [])]
            return list({id(q.write): q.write for group in groups for q in group}.values())

    async def settled(self, namespace: str | None, hurry: Callable[[], None]) -> None:
        """Wait until the writes of ``namespace`` queued so far have settled (committed or failed).

        The store's plain reads (``get``, ``list``, ``count``, the search primitives) call it: they
        read the table, so they see a queued write once it is committed. ``hurry`` tells the queue
        to stop lingering. A failed write is not this read's error: it is reported to its caller.
        """
        writes = self.writes(namespace)
        if not writes:
            return
        hurry()
        await asyncio.gather(*(asyncio.wrap_future(w) for w in writes), return_exceptions=True)


async def batch_vectors(maker: VectorMaker, batches: Sequence[AddBatch]) -> list[np.ndarray]:
    """Each batch's record vectors, embedded once whoever asks first (the writer or a recall).

    Batches nobody embedded yet are embedded together, in one call; the others are awaited. Any
    event loop may ask (a recall runs on its caller's loop, the writer on the library's).

    Raises:
        EmbeddingError: The embedder failed (on every batch of that call).
    """
    return [await _vectors(f) for f in _embeddings(maker, batches)]


async def _vectors(future: Future[np.ndarray]) -> np.ndarray:
    """A batch's vectors, awaited on the caller's loop (a cancelled caller leaves the embedding running)."""
    return await asyncio.shield(asyncio.wrap_future(future))


_EMBEDDING_LOCK = threading.Lock()  # who starts a batch's embedding: the writer and recalls race for it


def _embeddings(maker: VectorMaker, batches: Sequence[AddBatch]) -> list[Future[np.ndarray]]:
    """Each batch's embedding future; one call on the library's loop embeds the batches nobody embedded yet."""
    with _EMBEDDING_LOCK:
        fresh = [b for b in batches if b.embedding is None]
        start = _start_embedding(maker, fresh) if fresh else None
        futures = [b.embedding for b in batches if b.embedding is not None]
    if start is not None:
        start()  # outside the lock: an embedding already done settles at once, taking the lock
    return futures


def _start_embedding(maker: VectorMaker, batches: Sequence[AddBatch]) -> Callable[[], None]:
    """Give each batch its future for its rows of one embedding call; returns what starts the call."""
    records = [r for b in batches for r in b.records]
    spans: list[tuple[AddBatch, Future[np.ndarray], int, int]] = []
    start = 0
    for batch in batches:
        batch.embedding = Future()
        spans.append((batch, batch.embedding, start, start + len(batch.records)))
        start += len(batch.records)

    def settle(done: Future[np.ndarray]) -> None:
        error: BaseException | None = asyncio.CancelledError() if done.cancelled() else done.exception()
        with _EMBEDDING_LOCK:
            for batch, future, lo, hi in spans:
                if future.done():
                    continue
                if error is not None:
                    # Whoever awaits it gets the failure; a retry (the queue writes a failed group's
                    # batches one by one) embeds the batch again.
                    batch.embedding = None
                    future.set_exception(error)
                else:
                    future.set_result(done.result()[lo:hi])

    return lambda: _loop.submit(record_vectors(maker, records)).add_done_callback(settle)


async def queued_memories(
    maker: VectorMaker, queued: Sequence[Queued], namespace: str
) -> list[tuple[Memory, np.ndarray]]:
    """The queued records of ``namespace`` as the memories they will be once stored, with their vectors.

    No ``context`` yet (the commit fills a chat turn's from its neighbours); ``created_at`` is the
    time it was queued (the commit's time, a few milliseconds later, unless the record gave one).
    A batch whose embedding failed is left out: its write fails too, and stores nothing.
    """
    futures = _embeddings(maker, [q.batch for q in queued])
    out: list[tuple[Memory, np.ndarray]] = []
    for (batch, queued_at, _), embedding in zip(queued, futures, strict=True):
        try:
            vectors = await _vectors(embedding)
        except MemoryRetrieversError:
            continue
        for j, record in enumerate(batch.records):
            if record["namespace"] == namespace:
                row_id = record.get("id") or record[NEW_ID]
                at = queued_at + timedelta(microseconds=j)
                row = build_row(record, content_hash(record["text"]), None, at, row_id=row_id)
                out.append((row_to_memory(row), vectors[j]))
    return out


class PendingSource:
    """A recall source with this process's queued records of the namespace merged into every search.

    Args:
        base: The namespace's source (its view, or the table).
        queued: The queued records of the namespace as memories, with their unit vectors.
        flt: The recall's filter (records it rejects are left out).
    """

    def __init__(self, base: RecallSource, queued: Sequence[tuple[Memory, np.ndarray]], flt: MemoryFilter) -> None:
        self._base = base
        held = getattr(base, "holds", None)
        self._queued = {
            m.id: (m, v)
            for m, v in queued
            if m.namespace == base.namespace and matches(m, flt) and not (held is not None and held(m.id))
        }

    @property
    def namespace(self) -> str:
        """The namespace read."""
        return self._base.namespace

    @property
    def description(self) -> str:
        """The base source's, and how many queued records join it."""
        return f"{self._base.description} + {len(self._queued)} queued write(s) not committed yet"

    def _base_only(self, hits: SourceHits) -> list[tuple[str, float]]:
        """The base hits that are not queued records (a record committed meanwhile is shown once)."""
        return [(i, s) for i, s in zip(hits.ids, hits.scores, strict=True) if i not in self._queued]

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """LanceDB's hits, with the queued records placed among them by a local BM25 (see :func:`placed`)."""
        hits = await self._base.text_search(text, field, k, with_context_only=with_context_only)
        candidates = [
            (m.id, searched_text(m, field))
            for m, _ in self._queued.values()
            if not with_context_only or _gets_context(m)
        ]
        base = self._base_only(hits)
        if not candidates:
            return _hits(base)
        texts = [searched_text(self._base.memory(i), field) for i, _ in base]
        return placed(base, texts, candidates, text, k)

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """The base hits and the queued records, by exact cosine similarity (ties by id)."""
        hits = await (
            self._base.vector_search(vector, k, within=within) if within else self._base.vector_search(vector, k)
        )
        query = vector.astype(np.float64)
        mine = [
            (i, float(np.dot(v.astype(np.float64), query)))
            for i, (m, v) in self._queued.items()
            if not within or _created_within(m, within)
        ]
        return _hits(sorted([*self._base_only(hits), *mine], key=lambda p: (-p[1], p[0]))[:k])

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """Shared entities, most first, then newest, then by id (as the table orders them)."""
        hits = await self._base.entity_search(entities, k)
        wanted = {e.strip().casefold() for e in entities}
        scored = [(i, s, _seconds(self._base.memory(i))) for i, s in self._base_only(hits)]
        for i, (m, _) in self._queued.items():
            shared = len(wanted.intersection(m.entities))
            if shared:
                scored.append((i, float(shared), _seconds(m)))
        scored.sort(key=lambda p: (-p[1], -p[2], p[0]))
        return _hits([(i, s) for i, s, _ in scored[:k]])

    async def recency_search(self, k: int) -> SourceHits:
        """Newest first (score: ``created_at`` in POSIX seconds), ties by id."""
        hits = await self._base.recency_search(k)
        mine = [(i, _seconds(m)) for i, (m, _) in self._queued.items()]
        return _hits(sorted([*self._base_only(hits), *mine], key=lambda p: (-p[1], p[0]))[:k])

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """Queued records (already filtered) and what the base finds of the others."""
        found = set(await self._base.fetch([i for i in ids if i not in self._queued]))
        return tuple(i for i in ids if i in self._queued or i in found)

    async def has_entities(self) -> bool:
        """Whether a queued record or a stored memory has entities."""
        return any(m.entities for m, _ in self._queued.values()) or await self._base.has_entities()

    async def speakers(self) -> frozenset[str]:
        """The base's speakers and those of the queued chat turns."""
        said = [speaker_of(m.text) for m, _ in self._queued.values() if m.kind is MemoryKind.MESSAGE]
        return joined_speakers(await self._base.speakers(), said)

    def memory(self, id_: str) -> Memory:
        """The queued record's memory, or the base's."""
        queued = self._queued.get(id_)
        return queued[0] if queued is not None else self._base.memory(id_)

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """``memory()`` of each id (the base builds its own at once)."""
        stored = [i for i in ids if i not in self._queued]
        built = dict(zip(stored, self._base.memories_of(stored), strict=True))
        return [self._queued[i][0] if i in self._queued else built[i] for i in ids]

    def vector(self, id_: str) -> np.ndarray:
        """The queued record's vector, or the base's."""
        queued = self._queued.get(id_)
        return queued[1] if queued is not None else self._base.vector(id_)


def _hits(pairs: Sequence[tuple[str, float]]) -> SourceHits:
    return SourceHits(tuple(i for i, _ in pairs), tuple(float(s) for _, s in pairs))


def _seconds(memory: Memory) -> float:
    return memory.created_at.timestamp() if memory.created_at is not None else 0.0


def _created_within(memory: Memory, spans: Sequence[DateSpan]) -> bool:
    created = memory.created_at
    return created is not None and any(span.start <= created < span.end for span in spans)


def _gets_context(memory: Memory) -> bool:
    """Whether the memory has a context, or a chat turn's context will be filled at its commit."""
    return bool(memory.context) or (memory.kind is MemoryKind.MESSAGE and memory.session_id is not None)


def searched_text(memory: Memory, field: FtsField) -> str:
    """What a full-text search of ``field`` reads of a memory."""
    if field is FtsField.ENTITIES:
        return " ".join(memory.entities)
    if field is FtsField.CONTEXT and memory.context:
        return f"{memory.text}\n{memory.context}"
    return memory.text
