"""Running a plug-in channel's search away from the store's loop, as other plug-ins run.

A user's channel is other people's code: a plain ``search`` that does blocking I/O, or an
``async def`` one with a blocking call inside, would stop the store's loop if run there. No timer
fires on a stopped loop, so ``channel_timeout_s`` would not cut it, the built-in channels' own
timeouts would expire in its place, and every write and recall of every namespace would wait
(docs/explanation/reliability.md item 10). So, like rerankers and LLMs:

- a plain ``search`` runs on the library's ``"channel"`` thread pool
  (:func:`memory_retrievers.runtime.plugins.pool`); one that never returns is written off at its timeout;
- an ``async def`` one runs on the plug-in loop (:func:`memory_retrievers.runtime.plugin_loop.isolated`).

The recall's source is bound to the store's loop: the channel gets a :class:`LoopBoundSource`,
whose awaits run there whatever loop the channel awaits them from. Built-in channels do not come
here: they run on the store's loop, where a hop per search would cost latency for nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from memory_retrievers.models import FtsField, Memory
from memory_retrievers.recall.channel import Channel, ChannelInput
from memory_retrievers.recall.source import RecallSource, SourceHits
from memory_retrievers.runtime.plugin_loop import isolated
from memory_retrievers.runtime.plugins import pool as plugin_pool
from memory_retrievers.text.dates import DateSpan

__all__ = ["ChannelCancelledItself", "LoopBoundSource", "plugin_search"]

T = TypeVar("T")

#: Plug-in searches given up on (timed out) and still winding down; held so they are not collected.
_ABANDONED: set[asyncio.Task[Any]] = set()


class ChannelCancelledItself(Exception):
    """A plug-in channel's search raised ``CancelledError`` of its own (nobody cancelled it)."""


class LoopBoundSource:
    """A recall source whose async methods run on the loop it is bound to, awaited from any loop.

    Its plain methods (``memory``, ``vector``...) read what the recall already fetched and are
    called directly. Once :meth:`close` is called (the recall gave the channel up), its searches
    raise, so a channel that wakes up late cannot query on behalf of a finished recall.

    Args:
        source: The recall's source.
        loop: The loop ``source`` is bound to (the store's).
    """

    def __init__(self, source: RecallSource, loop: asyncio.AbstractEventLoop) -> None:
        self._source = source
        self._loop = loop
        self._closed = False

    def close(self) -> None:
        """Refuse further searches."""
        self._closed = True

    @property
    def namespace(self) -> str:
        """The namespace read."""
        return self._source.namespace

    @property
    def description(self) -> str:
        """The wrapped source's."""
        return self._source.description

    async def _at_home(self, make: Callable[[], Awaitable[T]]) -> T:
        if self._closed:
            raise RuntimeError("the recall gave this channel up (it timed out); its source is closed")
        if asyncio.get_running_loop() is self._loop:
            return await make()

        async def run() -> T:
            return await make()

        # Cancelling the wrapped future (the channel was cancelled) cancels the search on the store's loop.
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self._loop))

    async def text_search(self, text: str, field: FtsField, k: int, *, with_context_only: bool = False) -> SourceHits:
        """As the source's."""
        only = with_context_only
        return await self._at_home(lambda: self._source.text_search(text, field, k, with_context_only=only))

    async def vector_search(self, vector: np.ndarray, k: int, *, within: Sequence[DateSpan] = ()) -> SourceHits:
        """As the source's."""
        return await self._at_home(lambda: self._source.vector_search(vector, k, within=within))

    async def entity_search(self, entities: Sequence[str], k: int) -> SourceHits:
        """As the source's."""
        return await self._at_home(lambda: self._source.entity_search(entities, k))

    async def recency_search(self, k: int) -> SourceHits:
        """As the source's."""
        return await self._at_home(lambda: self._source.recency_search(k))

    async def fetch(self, ids: Sequence[str]) -> tuple[str, ...]:
        """As the source's."""
        return await self._at_home(lambda: self._source.fetch(ids))

    async def has_entities(self) -> bool:
        """As the source's."""
        return await self._at_home(self._source.has_entities)

    async def speakers(self) -> frozenset[str]:
        """As the source's."""
        return await self._at_home(self._source.speakers)

    def memory(self, id_: str) -> Memory:
        """As the source's."""
        return self._source.memory(id_)

    def memories_of(self, ids: Sequence[str]) -> list[Memory]:
        """As the source's."""
        return self._source.memories_of(ids)

    def vector(self, id_: str) -> np.ndarray:
        """As the source's."""
        return self._source.vector(id_)


async def plugin_search(channel: Channel, given: ChannelInput, timeout_s: float) -> Any:
    """A plug-in channel's answer, off the store's loop, cut at ``timeout_s``.

    Raises:
        asyncio.TimeoutError: The search took longer; it is given up, not awaited.
        ChannelCancelledItself: The search raised ``CancelledError`` without being cancelled.
    """
    source = LoopBoundSource(given.source, asyncio.get_running_loop())
    given = replace(given, source=source)
    if inspect.iscoroutinefunction(channel.search):
        job = asyncio.ensure_future(isolated(lambda: channel.search(given)))
    else:
        job = asyncio.ensure_future(_plain_search(channel, given))
    try:
        done, _ = await asyncio.wait({job}, timeout=timeout_s)
    except asyncio.CancelledError:  # the recall itself was cancelled
        _abandon(job, source)
        raise
    if not done:
        # Not awaited: a search blocked on the plug-in loop acknowledges a cancellation only once it
        # unblocks, and the recall must not wait for that.
        _abandon(job, source)
        raise asyncio.TimeoutError
    if job.cancelled():  # nobody cancelled it: the plug-in raised CancelledError itself
        raise ChannelCancelledItself("raised CancelledError")
    return job.result()


async def _plain_search(channel: Channel, given: ChannelInput) -> Any:
    """A plain ``search`` on a pool thread; an awaitable it returns is awaited on the plug-in loop."""
    context = contextvars.copy_context()
    found: Any = await plugin_pool("channel").run(context.run, _called, channel, given)
    if inspect.isawaitable(found):
        awaitable = found
        found = await isolated(lambda: awaitable)
    return found


def _called(channel: Channel, given: ChannelInput) -> Any:
    # A CancelledError leaving a pool thread would read as the caller's own cancellation.
    try:
        return channel.search(given)
    except asyncio.CancelledError:
        raise ChannelCancelledItself("raised CancelledError") from None


def _abandon(job: asyncio.Task[Any], source: LoopBoundSource) -> None:
    source.close()
    job.cancel()
    _ABANDONED.add(job)
    job.add_done_callback(_ABANDONED.discard)
