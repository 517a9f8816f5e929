"""LanceDB's retryable commit conflicts, retried with jittered pauses; compaction deferred when they persist."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from memory_retrievers.errors import StorageError
from memory_retrievers.storage.table import storage_error

__all__ = ["retry_conflicts"]

logger = logging.getLogger(__name__)

_CONFLICT_ATTEMPTS = 10


async def retry_conflicts(action: str, attempt: Callable[[], Awaitable[Any]], *, defer_ok: bool = False) -> Any:
    """Run maintenance, retrying LanceDB's *retryable* commit conflicts.

    Index builds and compaction commit a new table version; when another thread or process
    committed first, Lance reports a retryable conflict. Retrying (with a short, growing pause)
    is what it asks for; any other error raises StorageError. Conflicts that persist raise too,
    unless ``defer_ok``: compaction that concurrent deletes and updates keep preempting is only
    deferred (the data is intact), so it is logged and left to the next optimize.
    """
    for n in range(_CONFLICT_ATTEMPTS):
        try:
            return await attempt()
        except StorageError:  # the store's own: a deadline that passed (it names the action), a failed read
            raise
        except Exception as exc:
            conflict = "retryable commit conflict" in str(exc).lower()
            if conflict and defer_ok and n == _CONFLICT_ATTEMPTS - 1:
                logger.warning(
                    "memory-retrievers: %s was deferred: concurrent writes preempted it %d times. Nothing is "
                    "lost, and the next optimize tries again; if this keeps happening, run "
                    "`memory-retrievers optimize` (store.admin.optimize()) while fewer processes write (%s)",
                    action,
                    _CONFLICT_ATTEMPTS,
                    exc,
                )
                return None
            if not conflict or n == _CONFLICT_ATTEMPTS - 1:
                raise storage_error(action, exc) from exc
            # Jittered, growing pauses (20 ms .. ~1 s) so racing maintainers do not retry in lockstep.
            await asyncio.sleep(min(1.0, 0.02 * 2**n) * (0.5 + random.random()))
    raise AssertionError("unreachable")  # pragma: no cover
