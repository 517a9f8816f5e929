"""A write queued by :meth:`MemoryStore.add_later <memory_retrievers.MemoryStore.add_later>`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator
from concurrent.futures import Future
from typing import Any

from memory_retrievers.models import AddedMemory

__all__ = ["PendingWrite"]

logger = logging.getLogger("memory_retrievers")


class PendingWrite:
    """One memory handed to the store's write queue, not yet known to be committed.

    It commits with the writes queued around it (see ``StoreConfig.write_linger``). Until
    :meth:`result` returns, nothing is promised: a process killed before the commit loses it.
    ``store.flush()``, ``store.close()``, interpreter exit and ``os.fork()`` wait for it. Until then
    this process's recall already finds it (read-your-writes); other processes once it is committed.

    A write that fails (its embedder raised, the table refused it) is logged at WARNING when it
    fails, and :meth:`result` raises the same error.

    Await it in async code (``memory = await pending``), or call :meth:`result`.
    """

    def __init__(self, future: Future[list[AddedMemory]], text: str, *, index: int = 0, id: str | None = None) -> None:
        self._future = future
        self._text = text
        self._index = index
        self._id = id
        if index == 0:  # one warning per failed write, however many records it held
            future.add_done_callback(self._report_failure)

    @property
    def id(self) -> str | None:
        """The id the memory is stored under, unless it turns out to duplicate another memory.

        Known before the commit: this process's recall shows the queued memory by it. ``result().id``
        is the memory it landed in (the duplicate's, when it was skipped as one).
        """
        return self._id

    def done(self) -> bool:
        """Whether the write has committed or failed."""
        return self._future.done()

    def result(self, timeout: float | None = None) -> AddedMemory:
        """Wait for the commit and return the memory (``.action``: added, updated or skipped).

        Args:
            timeout: Seconds to wait; ``None`` waits for as long as the commit takes.

        Raises:
            TimeoutError: Not committed within ``timeout`` (it may still commit later).
            MemoryRetrieversError: The write failed (e.g. ``EmbeddingError``); nothing was stored,
                unless it is a ``StorageError`` saying the outcome could not be read back (check
                with ``get()`` before writing it again).
        """
        return self._future.result(timeout)[self._index]

    def __await__(self) -> Generator[Any, None, AddedMemory]:
        memories = yield from asyncio.wrap_future(self._future).__await__()
        return memories[self._index]

    def __repr__(self) -> str:
        state = "pending" if not self._future.done() else "failed" if self._future.exception() else "committed"
        return f"PendingWrite({self._text[:40]!r}, {state})"

    def _report_failure(self, future: Future[list[AddedMemory]]) -> None:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            # The error says whether anything may have landed (an outage after the commit): not this line.
            logger.warning("memory-retrievers: a write queued with add_later failed: %s", error)
