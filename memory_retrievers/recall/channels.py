"""Retrieval channels: ranked lists searched concurrently through a :class:`RecallSource`.

Each launched search becomes one :class:`~memory_retrievers.RankedList` (a label, a channel and a
weight). BM25 lists rank ties together (a query matching only the user's name scores many
memories the same); the other channels rank by position.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..dates import DateSpan
from ..fusion import RankedList, tied_ranks
from ..models import FtsField
from .source import RecallSource, SourceHits
from .tasks import RecallTasks

__all__ = ["Channels"]

# What a channel found: ids best first, and their ranks when ties share one (None: by position).
Found = tuple[tuple[str, ...], tuple[int, ...] | None]


class Channels:
    """Launches one recall's searches and collects them as ranked lists, in launch order.

    Args:
        source: The namespace under the recall's filter.
        tasks: The recall's task group (searches run concurrently).
        depth: Hits taken from each list (``RecallConfig.candidate_depth``).
        embed: Embeds a text query (for LLM rewrites and HyDE texts).
    """

    def __init__(
        self,
        source: RecallSource,
        tasks: RecallTasks,
        depth: int,
        embed: Callable[[str], Awaitable[np.ndarray]],
    ) -> None:
        self._source = source
        self._tasks = tasks
        self._depth = depth
        self._embed = embed
        self._jobs: list[tuple[RankedList, asyncio.Task[Found]]] = []

    def _launch(self, label: str, channel: str, weight: float, coro: Coroutine[Any, Any, Found]) -> None:
        self._jobs.append((RankedList(label, (), weight, channel), self._tasks.start(coro)))

    def text(
        self, label: str, channel: str, weight: float, query: str, field: FtsField, *, with_context_only: bool = False
    ) -> None:
        """BM25 over ``field`` (of memories with a context only, if asked); tied scores share a rank."""
        self._launch(label, channel, weight, self._text(query, field, with_context_only))

    def vector(
        self, label: str, channel: str, weight: float, vector: np.ndarray, *, within: Sequence[DateSpan] = ()
    ) -> None:
        """Cosine similarity to a unit vector (among memories created ``within`` those spans, if given)."""
        source, depth = self._source, self._depth
        # ``within`` only when given: a source written before the dated channel still works.
        search = source.vector_search(vector, depth, within=within) if within else source.vector_search(vector, depth)
        self._launch(label, channel, weight, self._positional(search))

    def vector_of_text(self, label: str, channel: str, weight: float, text: str) -> None:
        """Cosine similarity to a text, embedded first (rewrites, HyDE)."""
        self._launch(label, channel, weight, self._vector_of_text(text))

    def entity(self, weight: float, entities: Sequence[str]) -> None:
        """Shared entities."""
        self._launch("entity", "entity", weight, self._positional(self._source.entity_search(entities, self._depth)))

    def recency(self, weight: float) -> None:
        """Newest first."""
        self._launch("recency", "recency", weight, self._positional(self._source.recency_search(self._depth)))

    async def collect(self) -> list[RankedList]:
        """Every list launched since the last collect, searched, in launch order."""
        jobs, self._jobs = self._jobs, []
        out = []
        for spec, task in jobs:
            ids, ranks = await task
            out.append(replace(spec, ids=ids, ranks=ranks))
        return out

    async def _text(self, query: str, field: FtsField, with_context_only: bool) -> Found:
        hits = await self._source.text_search(query, field, self._depth, with_context_only=with_context_only)
        return hits.ids, tied_ranks(hits.scores)

    @staticmethod
    async def _positional(search: Awaitable[SourceHits]) -> Found:
        return (await search).ids, None

    async def _vector_of_text(self, text: str) -> Found:
        vector = await self._embed(text)
        return (await self._source.vector_search(vector, self._depth)).ids, None
