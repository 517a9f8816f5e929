"""Forget as a barrier: work handed over before ``forget(namespace)`` never lands after it.

Memory formation can run for minutes (LLM calls) between the moment a conversation is handed
over and the moment its facts are written; a ``forget`` issued meanwhile must win. Each store
numbers the forgets requested per namespace and remembers the highest one applied. Work that must
respect later forgets takes a :class:`Ticket` (the number of forgets requested so far) when it is
handed over and runs inside :func:`holding`; every write it queues carries the ticket, and the
store's write queue checks it right before applying the write. The queue's one consumer also
applies the forgets, so no forget can slip between that check and the commit. A ticket is stale
once a forget requested after it has been applied; a forget requested before it (still queued)
does not make it stale, and a forget whose caller gave up before it ran never applies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from memory_retrievers.errors import NamespaceForgottenError

__all__ = ["ForgetBarrier", "Ticket", "current_check", "holding"]


class ForgetBarrier:
    """One store's forget numbers per namespace: requested (at the call) and applied (in the queue)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested: dict[str, int] = {}
        self._applied: dict[str, int] = {}

    def ticket(self, namespace: str) -> Ticket:
        """A ticket for work on ``namespace`` handed over now."""
        with self._lock:
            return Ticket(self, namespace, self._requested.get(namespace, 0))

    def request(self, namespace: str) -> int:
        """Number a forget of ``namespace`` as it is called (before it is queued)."""
        with self._lock:
            number = self._requested.get(namespace, 0) + 1
            self._requested[namespace] = number
            return number

    def apply(self, namespace: str, number: int) -> None:
        """Record forget ``number`` as applied (on the queue's consumer, before it deletes)."""
        with self._lock:
            # Two forgets of one namespace may be queued in either order: keep the highest.
            self._applied[namespace] = max(self._applied.get(namespace, 0), number)

    def applied(self, namespace: str) -> int:
        """The highest forget number of ``namespace`` applied so far."""
        with self._lock:
            return self._applied.get(namespace, 0)


@dataclass(frozen=True, slots=True)
class Ticket:
    """Work on a namespace handed over after ``requested`` forgets of it were requested."""

    barrier: ForgetBarrier
    namespace: str
    requested: int

    def check(self) -> None:
        """Raise when a forget requested after this ticket was taken has been applied.

        Raises:
            NamespaceForgottenError: The namespace was forgotten since; nothing may be written.
        """
        if self.barrier.applied(self.namespace) > self.requested:
            raise NamespaceForgottenError(
                f"namespace {self.namespace!r} was forgotten while this work was in flight; nothing of it "
                "was stored after the forget (hand the conversation over again to remember it)",
                namespace=self.namespace,
            )


_CURRENT: ContextVar[Ticket | None] = ContextVar("memory_retrievers_forget_ticket", default=None)


@contextmanager
def holding(ticket: Ticket) -> Iterator[None]:
    """Run the block (and the tasks it starts) with ``ticket``: the writes it queues carry it."""
    token = _CURRENT.set(ticket)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_check(barrier: ForgetBarrier) -> Callable[[], None] | None:
    """The check of the ticket held here, if it was taken from ``barrier`` (called as a write is queued)."""
    ticket = _CURRENT.get()
    return ticket.check if ticket is not None and ticket.barrier is barrier else None
