"""A private event loop on a daemon thread: the sync API runs the async implementation there.

Keeping one implementation (async, over LanceDB's native async API) avoids copy-pasted sync and
async bodies. Running it on our own loop, rather than ``asyncio.run`` in the caller's thread,
lets the sync API work inside notebooks and other code that already runs a loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["run_sync", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="memory-retrievers-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule ``coro`` on the private loop without waiting (used for off-hot-path work)."""
    return asyncio.run_coroutine_threadsafe(coro, _get_loop())


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the private loop and block the calling thread until it finishes."""
    loop = _get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:  # pragma: no cover - a programming error inside this package
        coro.close()
        raise RuntimeError("sync MemoryStore methods cannot be called from the store's own loop")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()
