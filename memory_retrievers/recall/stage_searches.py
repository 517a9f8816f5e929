"""Searches launched by recall stages (LLM rewrites, HyDE, feedback) as ranked lists, and the statement cut.

The channels themselves are :class:`~memory_retrievers.recall.channel.Channel` plug-ins
(:mod:`memory_retrievers.recall.builtin`); the stages of :mod:`memory_retrievers.recall.expansion`
launch their extra text and vector searches through :class:`Channels`. Each launched search
becomes one :class:`~memory_retrievers.RankedList` (a label, a channel and a weight). BM25 lists
rank ties together (a query matching only the user's name scores many memories the same); the
other channels rank by position.

Questions do not use up a text or vector list's depth, nor push statements down it. A stored
question is closer to a query that repeats it than the statement answering it is, and a chat where
questions were asked before holds many: measured on LoCoMo replayed as chat traffic
(``benchmarks/agent_context.py``), earlier questions pushed 5% of the evidence out of the candidate
lists. So those searches fetch twice the depth, a list ends after ``depth`` statements (keeping the
questions found among them), and ranks are counted among statements: a question takes the rank of
the statement after it (:func:`statement_ranks`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memory_retrievers.models import FtsField
from memory_retrievers.recall.fusion import RankedList, tied_ranks
from memory_retrievers.recall.source import RecallSource, SourceHits
from memory_retrievers.recall.tasks import RecallTasks
from memory_retrievers.text.dates import DateSpan
from memory_retrievers.text.lines import line_asks

__all__ = ["Channels", "statement_ranks", "statements_cut"]

# What a channel found: ids best first, and their ranks when ties share one (None: by position).
Found = tuple[tuple[str, ...], tuple[int, ...] | None]


def statement_ranks(asks: Sequence[bool], scores: Sequence[float] | None) -> tuple[int, ...]:
    """Ranks counted among statements: a question takes the rank of the statement after it.

    So a stored question never pushes the statements below it down a list, whatever it matches.
    With ``scores``, statements with equal scores share a rank (as :func:`tied_ranks`).

    >>> statement_ranks([True, False, False, True], None)
    (1, 1, 2, 3)
    >>> statement_ranks([False, True, False, False], [9.0, 8.0, 7.0, 7.0])
    (1, 2, 2, 2)
    """
    ranks = [0] * len(asks)
    count = rank = 0
    previous: float | None = None
    for i, question in enumerate(asks):
        if question:
            continue
        count += 1
        score = None if scores is None else scores[i]
        if scores is None or previous is None or score != previous:
            rank = count
        previous = score
        ranks[i] = rank
    following = count + 1
    for i in range(len(asks) - 1, -1, -1):
        if asks[i]:
            ranks[i] = following
        else:
            following = ranks[i]
    return tuple(ranks)


def statements_cut(source: RecallSource, ids: tuple[str, ...], scores: tuple[float, ...] | None, depth: int) -> Found:
    """The hits up to the ``depth``-th statement (the questions among them kept), ranked among statements.

    ``scores`` (BM25) make equal scores share a rank; ``None`` ranks statements by position.
    """
    asks = [line_asks(m.text) for m in source.memories_of(list(ids))]
    end = len(ids)
    statements = 0
    for i, question in enumerate(asks):
        if statements == depth:
            end = i
            break
        statements += not question
    ids, asks = ids[:end], asks[:end]
    if not any(asks):
        return ids, None if scores is None else tied_ranks(scores[:end])
    return ids, statement_ranks(asks, None if scores is None else scores[:end])


class Channels:
    """Launches one recall's stage searches and collects them as ranked lists, in launch order.

    Args:
        source: The namespace under the recall's filter.
        tasks: The recall's task group (searches run concurrently).
        depth: Hits taken from each list (``RecallConfig.channels.candidate_depth``).
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
        source, fetch = self._source, self._fetch
        # ``within`` only when given: a source written before the dated channel still works.
        search = source.vector_search(vector, fetch, within=within) if within else source.vector_search(vector, fetch)
        self._launch(label, channel, weight, self._statements(search))

    def vector_of_text(self, label: str, channel: str, weight: float, text: str) -> None:
        """Cosine similarity to a text, embedded first (rewrites, HyDE)."""
        self._launch(label, channel, weight, self._vector_of_text(text))

    async def collect(self) -> list[RankedList]:
        """Every list launched since the last collect, searched, in launch order."""
        jobs, self._jobs = self._jobs, []
        out = []
        for spec, task in jobs:
            ids, ranks = await task
            out.append(replace(spec, ids=ids, ranks=ranks))
        return out

    @property
    def _fetch(self) -> int:
        """Hits a text or vector search asks for: questions do not count against the depth."""
        return 2 * self._depth

    def _cut(self, ids: tuple[str, ...], scores: tuple[float, ...] | None) -> Found:
        return statements_cut(self._source, ids, scores, self._depth)

    async def _text(self, query: str, field: FtsField, with_context_only: bool) -> Found:
        hits = await self._source.text_search(query, field, self._fetch, with_context_only=with_context_only)
        return self._cut(hits.ids, hits.scores)

    async def _statements(self, search: Awaitable[SourceHits]) -> Found:
        return self._cut((await search).ids, None)

    async def _vector_of_text(self, text: str) -> Found:
        vector = await self._embed(text)
        return self._cut((await self._source.vector_search(vector, self._fetch)).ids, None)
