"""A second private event loop, on its own daemon thread, for other people's ``async def`` code.

The library's own loop (:mod:`memory_retrievers.runtime.loop`) runs every store of the process. An async
plug-in (an LLM client, an embedder, a reranker) that blocks inside ``async def`` (a ``requests``
call, ``time.sleep``) would stop that loop: no timer fires, so ``llm_timeout_s`` never does, and
every write and recall of every store waits. Run on this loop instead, such a plug-in stalls only
the plug-ins; the library's loop awaits it through a future, times it out and goes on.

One persistent loop, not one per call: async clients (httpx, aiohttp) bind their connection pools
to the loop they first ran on, so a plug-in always meets the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["isolated"]

T = TypeVar("T")

_THREAD_NAME = "memory-retrievers-plugins"
#: How long a cancelled caller waits for its plug-in call to acknowledge the cancellation.
_CANCEL_WAIT_S = 1.0
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name=_THREAD_NAME, daemon=True).start()
            _loop = loop
        return _loop


def _forget_loop_in_child() -> None:
    # As in _loop: the thread does not survive fork, so a child starts its own on first use.
    global _loop, _lock
    _loop = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop_in_child)


async def isolated(make: Callable[[], Awaitable[T]]) -> T:
    """Await ``make()`` on the plug-in loop; cancelling the await cancels it there.

    The coroutine runs in a copy of the caller's context (tracing callbacks and other context
    variables reach the plug-in). Called from the plug-in loop itself (a plug-in calling back into
    a plug-in), it is simply awaited.

    Args:
        make: Returns the awaitable to run (called on the plug-in loop).
    """
    loop = _get_loop()
    if asyncio.get_running_loop() is loop:
        return await make()
    context = contextvars.copy_context()
    done: Future[T] = Future()
    box: list[asyncio.Task[Any]] = []

    async def run() -> T:
        return await make()

    def start() -> None:
        if not done.set_running_or_notify_cancel():
            return  # the caller gave up before it started
        task = loop.create_task(run(), context=context)
        box.append(task)

        def settle(t: asyncio.Task[Any]) -> None:
            if done.done():
                return
            if t.cancelled():  # cancelled on its own loop (not by us): the caller sees a cancellation
                done.set_exception(asyncio.CancelledError())
            elif (error := t.exception()) is not None:
                done.set_exception(error)
            else:
                done.set_result(t.result())

        task.add_done_callback(settle)

    loop.call_soon_threadsafe(start)
    try:
        return await asyncio.wrap_future(done)
    except asyncio.CancelledError:
        if not done.cancel():  # running: cancel the task on its loop
            loop.call_soon_threadsafe(lambda: box[0].cancel() if box else None)
            # Give it a moment to stop, so a caller that gave up finds its plug-in calls ended as
            # when they ran on its own loop; one blocked in sync code is left behind after that.
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(done)), _CANCEL_WAIT_S)
        raise
