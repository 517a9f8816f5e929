"""One object per process, made on first use: the store pattern that survives pre-forking servers.

gunicorn ``--preload``, Celery's prefork pool and ``multiprocessing`` with ``fork`` copy the parent
process, and a :class:`~memory_retrievers.MemoryStore` opened there belongs to the parent
(:class:`~memory_retrievers.ForkedStoreError` in a child). A module-level ``PerProcess`` makes the
store in whichever process first asks for it, and a new one in each forked child.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

T = TypeVar("T")

_ALL: weakref.WeakSet[PerProcess[object]] = weakref.WeakSet()


class PerProcess(Generic[T]):
    """Makes ``factory()`` once per process, on first :meth:`get` in that process.

    Args:
        factory: Builds the object, e.g. ``lambda: MemoryStore("./memories")``.

    Example:
        >>> stores = PerProcess(lambda: MemoryStore("./memories"))     # doctest: +SKIP
        >>> stores.get().add("Alice likes tea", namespace="alice")     # in any worker process
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: T | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        _ALL.add(self)  # type: ignore[arg-type]

    def get(self) -> T:
        """This process's object, made now if this process has none yet (thread-safe)."""
        with self._lock:
            if self._value is None or self._pid != os.getpid():
                self._value = self._factory()
                self._pid = os.getpid()
            return self._value

    def close(self) -> None:
        """Close this process's object if it was made here (and has ``close()``); :meth:`get` makes a new one."""
        with self._lock:
            value, mine = self._value, self._pid == os.getpid()
            self._value, self._pid = None, None
        close = getattr(value, "close", None)
        if mine and callable(close):
            close()


def _after_fork_in_child() -> None:
    # The parent's object stays the parent's; a lock held by one of its threads would never be released here.
    for holder in list(_ALL):
        holder._lock = threading.Lock()
        holder._value, holder._pid = None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
