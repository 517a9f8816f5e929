"""A private event loop on a daemon thread: the sync API runs the async implementation there.

Keeping one implementation (async, over LanceDB's native async API) avoids copy-pasted sync and
async bodies. Running it on our own loop, rather than ``asyncio.run`` in the caller's thread,
lets the sync API work inside notebooks and other code that already runs a loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["on_loop_thread", "run_sync", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="memory-retrievers-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def _forget_loop_in_child() -> None:
    # The loop's thread does not survive fork: a child that used the parent's loop would queue work
    # that no thread ever runs (a hang). It gets a new loop on first use instead.
    global _loop, _lock, _thread
    _loop = None
    _thread = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop_in_child)


def on_loop_thread() -> bool:
    """Whether the caller runs on the library's loop thread (which must never wait for itself)."""
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule ``coro`` on the private loop without waiting (used for off-hot-path work)."""
    return asyncio.run_coroutine_threadsafe(coro, _get_loop())


#: How long an interrupted sync call waits for its cancelled work to stop before re-raising.
_CANCEL_WAIT_S = 10.0
_POLL_S = 0.1


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the private loop and block the calling thread until it finishes.

    If the calling thread is interrupted (Ctrl-C is a ``KeyboardInterrupt`` raised in the main
    thread while it waits), the work is cancelled and awaited before the interrupt propagates: a
    write the user stopped must not commit later behind their back.
    """
    loop = _get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:  # pragma: no cover - a programming error inside this package
        coro.close()
        raise RuntimeError("sync MemoryStore methods cannot be called from the store's own loop")
    # The task is created by a callback scheduled from this thread: the callback runs in a copy of
    # this thread's context, so context variables (e.g. tracing callbacks) reach the work.
    done = threading.Event()
    box: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro)
        task.add_done_callback(lambda _: done.set())
        box.append(task)

    loop.call_soon_threadsafe(start)
    try:
        # A timed wait returns to Python now and then, so an interrupt is raised promptly even when
        # no signal wakes the wait (``_thread.interrupt_main``, a signal taken by another thread).
        while not done.wait(_POLL_S):
            pass
    except BaseException:
        # Scheduled after start() (the loop runs callbacks in order), so the task exists by then;
        # a task cancelled before its first step still finishes (cancelled) and sets `done`.
        loop.call_soon_threadsafe(lambda: box[0].cancel())
        done.wait(_CANCEL_WAIT_S)
        raise
    return box[0].result()
