"""Threads of the library's own for blocking plug-in calls: embedding, reranking, sync LLMs.

Plug-ins are other people's code, and some calls never return (a hung HTTP request in a sync LLM
client). Run on asyncio's default executor, each such call would keep a thread for good, and once
that pool (``min(32, cores + 4)`` threads) is used up every embedding and every write of the
process waits behind them. So each kind of plug-in gets its own :class:`PluginPool`:

- a kind never shares threads with another, so a hung LLM cannot stop embeddings or writes;
- a call whose caller gave up (a timeout cancelled it) while it runs is *written off*: its thread
  is left to finish on its own and a replacement thread takes its place, so the pool keeps its
  size for the calls that do return;
- at most ``max_written_off`` threads may be written off at once; past that, the pool refuses new
  calls at once with :class:`PluginStalledError` (recall then continues without the plug-in)
  instead of starting threads without end. A written-off call that returns frees its place.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memory_retrievers.errors import MemoryRetrieversError

__all__ = ["PluginPool", "PluginStalledError", "pool"]

T = TypeVar("T")


class PluginStalledError(MemoryRetrieversError, RuntimeError):
    """A plug-in pool has too many calls that never returned; new calls are refused until some do."""


@dataclass(eq=False)
class _Call:
    fn: Callable[[], Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    lock: threading.Lock = field(default_factory=threading.Lock)
    started: bool = False
    given_up: bool = False


class PluginPool:
    """A bounded set of worker threads for one kind of plug-in call.

    Args:
        name: Names the threads and the errors (``"llm"``, ``"embed"``...).
        size: Threads that run calls.
        max_written_off: Most calls that may be abandoned while still running.
    """

    def __init__(self, name: str, size: int, max_written_off: int) -> None:
        self.name = name
        self.size = size
        self.max_written_off = max_written_off
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0  # threads serving the queue (written-off ones excluded)
        self._written_off = 0

    @property
    def written_off(self) -> int:
        """Calls abandoned by their callers and still running."""
        with self._lock:
            return self._written_off

    def _ensure_workers(self) -> None:
        with self._lock:
            while self._workers < self.size:
                self._workers += 1
                threading.Thread(target=self._work, name=f"memory-retrievers-{self.name}", daemon=True).start()

    def _work(self) -> None:
        while True:
            call = self._queue.get()
            if call is None:  # pragma: no cover - only used to stop surplus threads
                return
            with call.lock:
                if call.given_up:
                    continue
                call.started = True
            try:
                result: Any = call.fn()
                error: BaseException | None = None
            except BaseException as exc:  # delivered to the caller, whatever it is
                result, error = None, exc
            with call.lock:
                written_off = call.given_up
            if written_off:
                # This thread was replaced while the call ran: it frees the call's place and ends.
                with self._lock:
                    self._written_off -= 1
                return
            with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody waits for the result
                call.loop.call_soon_threadsafe(_settle, call.future, result, error)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on a pool thread and await its result.

        Cancelling the await (e.g. by ``asyncio.wait_for``) gives the call up: if it had not
        started it never will; if it is running, its thread is written off and replaced.

        Raises:
            PluginStalledError: ``max_written_off`` calls are already written off.
        """
        with self._lock:
            if self._written_off >= self.max_written_off:
                raise PluginStalledError(
                    f"{self._written_off} {self.name} plug-in calls never returned; new {self.name} calls are refused "
                    "until some do (check the plug-in: a network call without a timeout?)"
                )
        self._ensure_workers()
        loop = asyncio.get_running_loop()
        call = _Call(functools.partial(fn, *args, **kwargs), loop, loop.create_future())
        self._queue.put(call)
        try:
            result: T = await asyncio.shield(call.future)
            return result
        except asyncio.CancelledError:
            self._give_up(call)
            raise

    def _give_up(self, call: _Call) -> None:
        with call.lock:
            call.given_up = True
            running = call.started
        if running:
            with self._lock:
                self._workers -= 1
                self._written_off += 1
            self._ensure_workers()

    def _after_fork(self) -> None:
        # Threads do not survive fork: a child starts with no workers and nothing written off.
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._written_off = 0


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


_CORES = os.cpu_count() or 2

#: The process's pools: embedding (CPU-bound; one thread per core), reranking, sync LLM calls
#: (I/O-bound: more threads, and the ones most likely to hang) and plug-in channels' plain searches.
_POOLS = {
    "embed": PluginPool("embed", size=max(2, _CORES), max_written_off=8),
    "rerank": PluginPool("rerank", size=2, max_written_off=8),
    "llm": PluginPool("llm", size=8, max_written_off=32),
    "channel": PluginPool("channel", size=4, max_written_off=32),
}


def pool(kind: str) -> PluginPool:
    """The process-wide pool for ``"embed"``, ``"rerank"``, ``"llm"`` or ``"channel"`` (plain searches) calls."""
    return _POOLS[kind]


def _reset_pools_in_child() -> None:
    for p in _POOLS.values():
        p._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pools_in_child)
