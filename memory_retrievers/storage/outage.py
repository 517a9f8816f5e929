"""How the write queue meets a storage failure: a batch retried alone only when it may be its own.

Under an outage every queued group used to be redone batch by batch, each waiting out its own
failure, and ``flush``/``close`` waited for all of them (issue 27 item 18: six queued writes took
about 50 s to fail with 1 s request timeouts, minutes each with the defaults).
"""

from __future__ import annotations

import time

from memory_retrievers.errors import StorageError

__all__ = ["Outages", "batch_specific"]


def batch_specific(exc: BaseException) -> bool:
    """Whether a group's failure may come from one caller's batch, so each batch is worth trying alone.

    A :class:`~memory_retrievers.errors.StorageError` is the store's, not a batch's (the writer
    validated every record, and a commit that raised is checked for having landed before this is
    raised): every batch would meet it again. Nor is any error raised once part of the group
    landed (the writer marks it ``after_commit``): redoing a batch alone would write it twice.
    """
    return not isinstance(exc, StorageError) and not getattr(exc, "after_commit", False)


class Outages:
    """The last storage failure the queue met; add groups queued before it fail with it untried.

    A group is taken in queue order, so every group queued before a failure was waiting while the
    store failed: it fails at once instead of waiting out the same failure. Groups queued after it
    are tried (the store may be back). Exclusive operations (deletes, forgets) are always tried.
    """

    def __init__(self) -> None:
        self._last: tuple[float, BaseException] | None = None

    def note(self, exc: BaseException) -> None:
        """Remember ``exc`` if it is the store's (not one batch's)."""
        if not batch_specific(exc):
            self._last = (time.monotonic(), exc)

    def backlog_error(self, queued_at: float) -> StorageError | None:
        """The error of an add group whose first op was queued at ``queued_at``, if it came before a failure."""
        if self._last is None or queued_at > self._last[0]:
            return None
        return StorageError(
            f"not attempted: the store failed while this write was queued ({self._last[1]}); nothing of it was "
            "stored, write it again"
        )
