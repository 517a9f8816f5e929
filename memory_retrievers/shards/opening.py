"""The shards of a :class:`~memory_retrievers.ShardedMemoryStore`: each opened once, shared, closed.

A shard's store is constructed without I/O, then opened on the private loop whoever asks first, so
callers on any loop (and sync callers) share one opening and one store object (its write queue and
forget barrier). A failed opening is forgotten, so the next call tries again; an opening that ends
after :meth:`ShardOpener.aclose` closes its shard itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future

import memory_retrievers.runtime.loop as _loop
import memory_retrievers.store.lifecycle as _store_lifecycle
from memory_retrievers.errors import MemoryRetrieversError, StorageError
from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["ShardOpener"]


class ShardOpener:
    """Shard stores by index: the open ones, the ones opening, and how to make another.

    Args:
        make: Constructs shard ``index``'s store, without I/O (``MemoryStore(..., _open=False)``).
        given: The stores already open (given by the caller), by index.
    """

    def __init__(self, make: Callable[[int], MemoryStore], given: Mapping[int, MemoryStore]) -> None:
        self._make = make
        self._stores: dict[int, MemoryStore] = dict(given)
        self._opening: dict[int, Future[MemoryStore]] = {}
        self._making: dict[int, MemoryStore] = {}  # constructed, being opened
        self._lock = threading.Lock()
        self._closed = False

    def get(self, index: int) -> MemoryStore | None:
        """Shard ``index``'s store if it is open, else None (no I/O)."""
        with self._lock:
            return self._stores.get(index)

    def opened(self) -> dict[int, MemoryStore]:
        """The open shards' stores, by index, in index order."""
        with self._lock:
            return {i: self._stores[i] for i in sorted(self._stores)}

    async def open(self, index: int) -> MemoryStore:
        """Shard ``index``'s store, opened now if it is not yet (one opening shared by every caller).

        Raises:
            StorageError: It could not be opened (the next call tries again), or the shards are closed.
        """
        while True:
            self.made(index)
            with self._lock:
                store, future = self._stores.get(index), self._opening.get(index)
            if store is not None:
                return store
            if future is not None:
                break  # else another caller just dropped a failed opening: start a new one
        try:
            # Shielded: the opening is shared, and a caller cancelled meanwhile (its timeout) must not
            # cancel it for the others (wrap_future passes a cancellation on to the shared future).
            return await asyncio.shield(asyncio.wrap_future(future))
        except BaseException:
            with self._lock:
                if self._opening.get(index) is future and future.done():
                    del self._opening[index], self._making[index]  # a failed open is retried by the next call
            raise

    def made(self, index: int) -> MemoryStore:
        """Shard ``index``'s store, constructed (no I/O) and its opening started if it is not open yet."""
        with self._lock:
            store = self._stores.get(index) or self._making.get(index)
            if store is None:
                store = self._making[index] = self._make(index)
                self._opening[index] = _loop.submit(self._finish(index, store))
            return store

    async def _finish(self, index: int, store: MemoryStore) -> MemoryStore:
        await store._table.open()
        with self._lock:
            closed = self._closed
            if not closed:
                _store_lifecycle.register(store)
                self._stores[index] = store
            self._opening.pop(index, None)
            self._making.pop(index, None)
        if closed:  # close() ran meanwhile: this shard must not stay open (nor take writes) behind it
            await store.aclose()
            raise StorageError("this ShardedMemoryStore is closed; open a new one")
        return store

    async def aclose(self, deadline: float | None = None, timeout: float | None = None) -> None:
        """Wait for the openings under way, then close every open shard (the others still close on a failure).

        Args:
            deadline: When closing must be done (a ``time.monotonic()`` time; ``None``: no limit).
            timeout: The caller's timeout, for messages.

        Raises:
            MemoryRetrieversError: The first shard that failed to close.
        """
        with self._lock:
            self._closed = True  # an opening that finishes from now on closes its shard itself
            opening = [asyncio.wrap_future(future) for future in self._opening.values()]
        if opening:
            await asyncio.wait(opening)  # their outcome is their callers' to report: here, only that they ended
            for ended in opening:
                _ = ended.cancelled() or ended.exception()  # seen here: never logged as "never retrieved"
        errors = []
        for store in self.opened().values():
            try:
                await store._close_by(deadline, timeout)
            except MemoryRetrieversError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
