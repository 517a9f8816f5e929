"""The recall source: what the recall pipeline reads one namespace through, under one filter.

A :class:`RecallSource` is obtained from :meth:`MemoryStore.arecall_source
<memory_retrievers.MemoryStore.arecall_source>` for one recall. The store hands out an in-memory
view of the namespace when it is small enough, else a source that queries LanceDB; both return the
same results (tested). Every id a search returns can then be resolved with :meth:`memory` and
:meth:`vector` without another query, so the pipeline's stages never touch the store's internals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from memory_retrievers.models import FtsField, Memory
from memory_retrievers.text.dates import DateSpan

__all__ = ["RecallSource", "SourceHits"]


@dataclass(frozen=True, slots=True)
class SourceHits:
    """One search's result: memory ids best first, and the channel's raw scores (higher is better)."""

    ids: tuple[str, ...]
    scores: tuple[float, ...]


@runtime_checkable
class RecallSource(Protocol):
    """One namespace, one filter, one recall: searches, and the memories they found.

    Every search applies the namespace and the filter; ``k`` is the most hits returned.
    """

    @property
    def namespace(self) -> str:
        """The namespace read."""
        ...

    @property
    def description(self) -> str:
        """What the source is, for the recall plan's notes (e.g. ``"namespace view: 600 memories in memory"``)."""
        ...

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """BM25 over the memory text, the text with its context, or the entities.

        ``with_context_only`` keeps only memories that have a context: the original query's context
        channel uses it, since for the others it would repeat the text channel (the same words
        would vote twice). They are the ones with a context among the namespace's best few times
        ``k`` hits (a prefilter on "has a context" would scan the whole column). Rewrites and
        feedback terms search every memory's text with its context.
        """
        ...

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """Cosine similarity to a unit ``vector``; only memories created within ``within`` if given."""
        ...

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """Number of shared entities (case-insensitive), ties newest first."""
        ...

    async def recency_search(self, k: int) -> SourceHits:
        """Newest first (score: ``created_at`` in POSIX seconds)."""
        ...

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """Of ``ids``, those that exist and pass the filter; they become resolvable."""
        ...

    async def has_entities(self) -> bool:
        """Whether any memory of the namespace has entities (else the entity channel is useless)."""
        ...

    async def speakers(self) -> frozenset[str]:
        """Who speaks in the namespace's chat: names of ``"Name: text"`` messages (may lag other processes' writes)."""
        ...

    def memory(self, id_: str) -> Memory:
        """A memory found by an earlier search or fetch (without its vector)."""
        ...

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """``memory()`` of each id, in order; a source may build them at once (recall's candidates)."""
        ...

    def vector(self, id_: str) -> np.ndarray:
        """Its unit vector."""
        ...
