"""The concurrent work of one recall, kept together: nothing outlives a recall that failed.

Channels, embeddings and LLM calls of a recall run as tasks. If the recall fails or is cancelled
half-way, every task it started and that is still running is cancelled and awaited, so no LLM call
or search keeps running (and no exception goes unobserved) after the caller got its error.
(``asyncio.TaskGroup`` does this from Python 3.11; the library supports 3.10.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["RecallTasks"]

T = TypeVar("T")


class RecallTasks:
    """An async context manager that owns the tasks started through it."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[Any]] = []

    def start(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` concurrently; it is cancelled if still running when the block exits."""
        task = asyncio.ensure_future(coro)
        self._tasks.append(task)
        return task

    async def __aenter__(self) -> RecallTasks:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pending = [t for t in self._tasks if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for task in self._tasks:  # mark every outcome as seen: errors are the caller's, not the loop's
            if task.done() and not task.cancelled():
                task.exception()
