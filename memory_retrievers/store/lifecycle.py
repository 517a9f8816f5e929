"""The process lifecycle of open stores: commit before ``os.fork()``, commit and close at exit.

A store registers here once open (:func:`register`) and leaves at close (:func:`unregister`). The
hooks are installed once: at import ``os.register_at_fork`` (commit queued writes before a fork,
forget the parent's stores in the child), threading's shutdown (commit queued writes while
executors still take work) and ``atexit`` (close what is still open, then let LanceDB's threads
leave Python before the interpreter finalizes: see :func:`_let_foreign_threads_leave`); when the
first store opens, one more ``atexit`` hook writes what needs LanceDB's runtime before LanceDB
stops it (see :func:`_hook_lancedb_exit`).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
import weakref
from concurrent.futures import thread as _futures_thread  # noqa: F401  (its exit hook first, see _commit_queued_writes)
from typing import TYPE_CHECKING

import memory_retrievers.runtime.loop as _loop

if TYPE_CHECKING:
    from memory_retrievers.store.base import StoreBase

__all__ = ["register", "unregister"]

logger = logging.getLogger("memory_retrievers.store.memory_store")


#: Stores not closed yet: at interpreter exit they are closed, so pending access statistics and
#: queued writes are not lost by a program that never called close().
_OPEN: weakref.WeakSet[StoreBase] = weakref.WeakSet()

#: How long ``os.fork()`` waits for the writes queued when it was called to commit before it forks
#: anyway. Only those: writes other threads keep queueing meanwhile are the parent's to commit.
_FORK_COMMIT_WAIT_S = 60.0


#: Whether LanceDB was imported before this module: its exit hook then runs after our close anyway.
_LANCEDB_FIRST = "lancedb" in sys.modules
#: Whether :func:`_finish_lancedb_work` is registered (at the first store opened), and whether it ran.
_LANCEDB_HOOKED = False
_LANCEDB_STOPPING = False
_HOOK_LOCK = threading.Lock()


def register(store: StoreBase) -> None:
    """Track an open store: queued writes are committed before a fork and at exit, and it is closed at exit."""
    _OPEN.add(store)
    _hook_lancedb_exit()


def _hook_lancedb_exit() -> None:
    """Register :func:`_finish_lancedb_work` once, after LanceDB's own exit hook, so that it runs before it.

    ``atexit`` runs its handlers last registered first. Importing ``lancedb`` (when the first store
    opens, after this module registered the close at exit) registers a hook that stops its async
    runtime, which then ran before our close: a close that still had LanceDB work to do (the access
    statistics a recall records are written by an optimize) awaited a call that never completed,
    so a program that recalled and exited without ``close()`` hung for the whole close timeout
    (300 s), then logged "closing a store at exit failed". The close itself stays registered at
    import, so that the program's own exit handlers, registered later, still find their stores open.
    """
    global _LANCEDB_HOOKED
    if _LANCEDB_FIRST or _LANCEDB_HOOKED:
        return
    with _HOOK_LOCK:
        if not _LANCEDB_HOOKED:
            import lancedb  # noqa: F401  (imported by then: an open store has a LanceDB table; its hook first)

            atexit.register(_finish_lancedb_work)
            _LANCEDB_HOOKED = True


def _finish_lancedb_work() -> None:
    """At exit, just before LanceDB stops its runtime: commit queued writes, write access statistics.

    The stores stay open (exit handlers registered before the first store opened run after this,
    and may still use them); their close at exit then has no optimize left to run.
    """
    global _LANCEDB_STOPPING
    for store in list(_OPEN):
        try:
            store._finish_at_exit()
        except Exception:  # at exit: report, never raise
            logger.warning("memory-retrievers: writing a store's pending work at exit failed", exc_info=True)
    _LANCEDB_STOPPING = True


def unregister(store: StoreBase) -> None:
    """Stop tracking a closed store."""
    _OPEN.discard(store)


def _forget_parents_stores() -> None:
    # Stores of the parent are the parent's to close: at this child's exit, closing them would write
    # the parent's pending access statistics a second time, through LanceDB handles unsafe here.
    _OPEN.clear()


def _stores_with_queued_writes() -> list[StoreBase]:
    """This process's open stores that have writes queued or being committed."""
    return [store for store in list(_OPEN) if not store._forked() and not store._queue.idle]


def _commit_before_fork() -> None:
    # A child must find what its parent queued before the fork (add_later, other threads' writes)
    # already in the table: read-your-writes across the fork. The parent would commit them anyway.
    if _loop.on_loop_thread():  # the queue's own thread cannot wait for itself
        return
    for store in _stores_with_queued_writes():
        if not store._queue.wait_queued(_FORK_COMMIT_WAIT_S):
            logger.warning(
                "memory-retrievers: forking while writes to %s are still queued after %.0f s; the parent "
                "commits them, the child may not see them",
                store.uri,
                _FORK_COMMIT_WAIT_S,
            )


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_commit_before_fork, after_in_child=_forget_parents_stores)


def _commit_queued_writes() -> None:
    # Runs in threading's shutdown, before concurrent.futures refuses new work: a plug-in that embeds
    # on an executor (asyncio.to_thread) still can. Registered after concurrent.futures' own hook,
    # so it runs first. Stores stay open: the user's atexit handlers may still use them.
    for store in _stores_with_queued_writes():
        try:
            store.flush()
        except Exception:  # at exit: report, never raise
            logger.warning("memory-retrievers: committing queued writes at exit failed", exc_info=True)


_register_threading_exit = getattr(threading, "_register_atexit", None)
if _register_threading_exit is not None:  # CPython; elsewhere the atexit close below commits them
    _register_threading_exit(_commit_queued_writes)


#: How long the exit waits for threads Python did not start to leave Python code. They need
#: milliseconds; the bound only keeps a thread that never leaves from delaying the exit for long.
_FOREIGN_LEAVE_WAIT_S = 2.0
_FOREIGN_POLL_S = 0.001


def _foreign_threads_in_python() -> list[int]:
    """Ids of threads running Python code that Python did not start (LanceDB's tokio workers...).

    ``sys._current_frames()`` has an entry for every thread with a Python frame; those of threads
    started through ``threading`` are ours to know. A foreign thread's ``_DummyThread`` (made by
    ``threading.current_thread()`` called there) does not make it known: it is still foreign.
    """
    current_frames = getattr(sys, "_current_frames", None)
    if current_frames is None:  # not CPython: nothing to look at
        return []
    known = {t.ident for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}
    return [ident for ident in current_frames() if ident not in known]


def _let_foreign_threads_leave(timeout_s: float = _FOREIGN_LEAVE_WAIT_S) -> None:
    """Wait until no thread Python did not start is inside Python code, or ``timeout_s`` passed.

    A LanceDB call completes on a tokio thread, which enters Python (PyO3, ``PyGILState_Ensure``)
    to hand the result to the waiting event loop: ``loop.call_soon_threadsafe``, whose wake-up
    write releases the GIL. The waiting caller can return, and the program exit, before that
    thread takes the GIL back (likely under CPU load: it is not scheduled). If the interpreter is
    finalizing by then, CPython ends the thread (``pthread_exit``), the unwind runs PyO3's guard,
    and its ``PyGILState_Release`` of a state finalization deleted aborts the process: "Fatal Python
    error: PyGILState_Release: thread state ... must be current when releasing", exit code -6.
    Sleeping here releases the GIL so such a thread returns and leaves Python first.
    """
    deadline = time.monotonic() + timeout_s
    while (inside := _foreign_threads_in_python()) and time.monotonic() < deadline:
        time.sleep(_FOREIGN_POLL_S)
    if inside:
        logger.debug("memory-retrievers: %d foreign thread(s) still in Python code at exit", len(inside))


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN):
        try:
            if _LANCEDB_STOPPING:  # LanceDB's runtime has stopped: an optimize would never return
                store._drop_access_statistics()
            store.close()
        except Exception:  # at exit: report, never raise
            logger.warning("memory-retrievers: closing a store at exit failed", exc_info=True)
    # Also after a program's own close(): its last LanceDB call may still be returning on a tokio thread.
    _let_foreign_threads_leave()
