"""The store's one write path: every mutation is queued and applied by one consumer, in order.

Why one consumer:
- Writes that read rows and write them back (chat-turn context, dedup updates, ``update``,
  ``supersede``, access statistics) cannot interleave within the process, so none of them can
  rewrite a row from a copy that another thread's write made stale.
- Concurrent writers share commits (group commit): queued ``add``s of several threads become one
  embedding call and one LanceDB commit, instead of eight writers queueing for eight commits.
- With a linger (``StoreConfig.write_linger``) the consumer waits that long after the first queued
  add for others to join (micro-batching, for object storage where a commit is many requests),
  unless the group is already full or someone waits for the queue to empty (``flush``, ``close``,
  interpreter exit, a fork).

Other processes are kept honest by the table layer's conditional commits (see ``table``).

Callers on any event loop or thread submit an operation and await its result. A caller that
stops waiting (Ctrl-C, a cancelled task) takes its records out if the write has not reached its
commit yet; once the commit has started it lands.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any, TypeVar

import memory_retrievers.runtime.loop as _loop
from memory_retrievers.errors import QueueFullError
from memory_retrievers.storage.batch import AddBatch
from memory_retrievers.storage.outage import Outages, batch_specific

__all__ = ["Abandoned", "AddBatch", "WriteQueue", "batch_specific"]

T = TypeVar("T")


class Abandoned(Exception):  # a control-flow signal, never seen by a caller
    """Raised inside a group write when a caller gave up before the commit: redo without it."""


@dataclass(eq=False)
class _Op:
    run: Callable[[], Awaitable[Any]] | None  # an exclusive operation
    batch: AddBatch | None  # or records to add, grouped with neighbours
    future: Future[Any] = field(default_factory=Future)
    given_up: bool = False
    queued_at: float = field(default_factory=time.monotonic)
    check: Callable[[], None] | None = None  # raises when the op must not be applied any more
    maintenance: bool = False  # the store's own upkeep (compaction), not a caller's write


#: Applies grouped batches (one commit) and returns each batch's results, in order (or the error of
#: a batch that did not land while the others did). ``proceed`` is checked right before the commit:
#: when it says no, the writer raises :class:`Abandoned`.
GroupWriter = Callable[[list[AddBatch], Callable[[], bool]], Awaitable[Sequence[list[Any] | BaseException]]]


class WriteQueue:
    """Queues a store's writes and applies them one group at a time on the library's loop.

    Args:
        write_group: Applies a group of add batches in one commit.
        max_records: Most records grouped into one commit.
        linger_s: How long the first queued add waits for others before its group commits.
        prepare: Runs before each unit of work (the store moves its table handle to the latest
            version there, so a write never acts on a stale view of the table).
        barrier: Called as an operation is queued, in the caller's context; returns a check the
            consumer calls right before applying it (a raise drops it and goes to its caller), or
            ``None``. The store uses it so work handed over before a ``forget`` never lands after it
            (see ``memory_retrievers.store.barrier``): the consumer that applies forgets runs the checks.
    """

    def __init__(
        self,
        write_group: GroupWriter,
        *,
        max_records: int,
        prepare: Callable[[], Awaitable[None]],
        linger_s: float = 0.0,
        barrier: Callable[[], Callable[[], None] | None] | None = None,
        max_queued: int | None = None,
        full_timeout_s: float = 30.0,
    ) -> None:
        self._write_group = write_group
        self._barrier = barrier
        self._prepare = prepare
        self._max = max_records
        self._linger_s = linger_s
        self._outages = Outages()
        self._max_queued = max_queued
        self._full_timeout_s = full_timeout_s
        self.after_fork()

    def after_fork(self) -> None:
        """A new, empty queue's state; in a forked child, forget the parent's (its consumer thread is gone)."""
        self._hurry = False  # someone waits for the queue to empty: stop lingering
        self._lock = threading.Lock()
        self._pending: deque[_Op] = deque()
        self._draining = False
        self._idle = threading.Event()
        self._idle.set()
        self._queued_records = 0  # records of add batches waiting (not yet taken for a commit)
        self._room = threading.Condition(self._lock)
        self._current: list[_Op] = []  # the unit of work being applied

    async def add(self, batch: AddBatch) -> list[Any]:
        """Queue records to add (grouped with other writers' when they queue at the same time)."""
        result: list[Any] = await self._submit(_Op(None, batch))
        return result

    async def exclusive(self, run: Callable[[], Awaitable[T]], *, maintenance: bool = False) -> T:
        """Queue an operation that runs alone, after everything queued before it.

        ``maintenance``: the store's own upkeep, which :meth:`waiting` and :meth:`await_writes` do not count.
        """
        result: T = await self._submit(_Op(run, None, maintenance=maintenance))
        return result

    def add_nowait(self, batch: AddBatch) -> Future[Any]:
        """Queue records to add from any thread without waiting for their commit; the future gets their results.

        The records are in the queue when this returns, so a ``flush`` that follows waits for them.
        When ``max_queued`` records are already waiting, this waits for room first (backpressure),
        at most ``full_timeout_s``; called from a running event loop it does not wait (that would
        block the loop) and raises at once.

        Raises:
            QueueFullError: No room in time; nothing was queued.
        """
        self._wait_for_room(len(batch.records))
        op = _Op(None, batch)
        self._enqueue(op)
        return op.future

    def _wait_for_room(self, records: int) -> None:
        if self._max_queued is None:
            return
        # Waiting would block an event loop (ours: a deadlock, the queue drains there; the caller's:
        # every task on it stalls): from a loop, a full queue raises at once.
        wait_s = 0.0 if _on_an_event_loop() else self._full_timeout_s
        deadline = time.monotonic() + wait_s
        with self._room:
            # An empty queue always takes a batch, however large: the bound stops growth, not writes.
            while self._queued_records and self._queued_records + records > self._max_queued:
                self._hurry = True  # a full queue commits without lingering
                left = deadline - time.monotonic()
                if left <= 0:
                    raise QueueFullError(
                        f"the write queue holds {self._queued_records:,} records, the most "
                        f"StoreConfig.max_queued_records ({self._max_queued:,}) allows, and did not drain in "
                        f"{wait_s:g} s (StoreConfig.queue_full_timeout); nothing was queued. Slow down, "
                        "or use add()/add_many(), which wait for their commit"
                    )
                self._room.wait(left)

    def wait_queued(self, timeout: float) -> bool:
        """Wait for what is queued or being applied *now* (not for later arrivals), at most ``timeout`` s.

        ``os.fork()`` waits this way: with other threads still queueing, an idle queue may never come.
        Returns whether all of it was settled in time.
        """
        with self._lock:
            futures = [op.future for op in (*self._current, *self._pending)]
            if futures:
                self._hurry = True
        _, not_done = wait_futures(futures, timeout=timeout)
        return not not_done

    def _enqueue(self, op: _Op) -> None:
        if self._barrier is not None:
            op.check = self._barrier()
        with self._lock:
            self._pending.append(op)
            if op.batch is not None:
                self._queued_records += len(op.batch.records)
            self._idle.clear()
            start = not self._draining
            self._draining = True
        if start:
            _loop.submit(self._drain())

    async def _submit(self, op: _Op) -> Any:
        self._enqueue(op)
        try:
            return await asyncio.wrap_future(op.future)
        except asyncio.CancelledError:
            op.given_up = True
            raise

    def hurry(self) -> None:
        """Commit what is queued without lingering (someone waits for it)."""
        self._hurry = bool(self._pending) or self._hurry

    @property
    def idle(self) -> bool:
        """Whether nothing is queued or running."""
        return self._idle.is_set()

    def waiting(self) -> int:
        """Writes queued or being applied now (a group of adds counts each caller's batch; a given-up one, none).

        The store's own maintenance on the queue (a compaction between writes) is not counted.
        """
        with self._lock:
            ops = (*self._current, *self._pending)
            return sum(1 for op in ops if not op.future.done() and not op.given_up and not op.maintenance)

    async def await_writes(self, timeout: float | None = None) -> bool:
        """Whether every write queued or being applied committed within ``timeout`` s (``None``: no limit).

        Maintenance running on the queue is not waited for: a store closing past its deadline stops
        that instead (see ``MemoryStore.close``).
        """
        if self.waiting():
            self._hurry = True
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.waiting():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def _next(self) -> list[_Op]:
        """The next unit of work: one exclusive op, or consecutive add batches up to the size limit."""
        with self._lock:
            while self._pending and (self._pending[0].given_up or self._refused(self._pending[0])):
                self._settle(self._popleft(), error=asyncio.CancelledError())  # no-op if refused
            if not self._pending:
                self._draining = False
                self._hurry = False
                self._idle.set()
                self._current = []
                return []
            first = self._popleft()
            group = [first]
            if first.batch is not None:
                size = len(first.batch.records)
                while self._pending and (nxt := self._pending[0]).batch is not None:
                    if self._refused(nxt):
                        self._popleft()
                        continue
                    if nxt.batch.dedup != first.batch.dedup or size + len(nxt.batch.records) > self._max:
                        break
                    group.append(self._popleft())
                    size += len(nxt.batch.records)
            self._current = group
            return group

    def _popleft(self) -> _Op:
        """Take the head of the queue (the lock is held), freeing its records' room."""
        op = self._pending.popleft()
        if op.batch is not None:
            self._queued_records -= len(op.batch.records)
            self._room.notify_all()
        return op

    def _refused(self, op: _Op) -> bool:
        """Whether ``op``'s check refuses it now (its caller then gets the check's error).

        Checked when the op is taken for applying: this consumer applies every op in order, so
        nothing (a forget) runs between the check and the op's commit.
        """
        if op.check is None:
            return False
        try:
            op.check()
        except Exception as exc:
            self._settle(op, error=exc)
            return True
        return False

    def _linger_left(self) -> float:
        """Seconds the head of the queue should still wait for more adds (0: take it now)."""
        with self._lock:
            if self._hurry or not self._pending:
                return 0.0
            head = self._pending[0]
            left = head.queued_at + self._linger_s - time.monotonic()
            if head.batch is None or left <= 0:
                return 0.0
            if any(op.run is not None for op in self._pending):
                return 0.0  # an exclusive operation (a delete, an update, close's access log) waits behind it
            size = 0
            for op in self._pending:  # the group _next would take: stop where it would stop
                if op.batch is None or op.batch.dedup != head.batch.dedup:
                    break
                size += len(op.batch.records)
                if size >= self._max:
                    return 0.0
            return left

    async def _drain(self) -> None:
        while True:
            if self._linger_s > 0:
                # Polled rather than signalled: callers queue from any thread or event loop.
                while (left := self._linger_left()) > 0:
                    await asyncio.sleep(min(left, 0.005))
            group = self._next()
            if not group:
                return
            if group[0].batch is not None and (failed := self._outages.backlog_error(max(o.queued_at for o in group))):
                for op in group:  # queued before the store failed: not tried (see outage.Outages)
                    self._settle(op, error=failed)
                continue
            try:
                await self._prepare()
            except Exception as exc:  # the group cannot start: its callers hear why
                for op in group:
                    self._settle(op, error=exc)
                self._outages.note(exc)
                continue
            if group[0].run is not None:
                await self._run_exclusive(group[0])
            else:
                await self._run_adds(group)

    async def _run_exclusive(self, op: _Op) -> None:
        assert op.run is not None
        try:
            result = await op.run()
        except BaseException as exc:  # delivered to the caller, whatever it is
            self._settle(op, error=exc)
            if not isinstance(exc, Exception):
                raise
            return
        self._settle(op, result=result)

    async def _run_adds(self, group: list[_Op]) -> None:
        while group:
            live = [op for op in group if not op.given_up]
            for op in group:
                if op.given_up:
                    self._settle(op, error=asyncio.CancelledError())
            if not live:
                return
            try:
                results = await self._write_group([op.batch for op in live if op.batch is not None], _proceed(live))
            except Abandoned:
                group = live  # a caller left before the commit: redo without it
                continue
            except Exception as exc:
                self._outages.note(exc)
                if len(live) == 1 or not batch_specific(exc):
                    # A storage failure (an outage, a commit whose outcome is unknown) fails the whole
                    # group at once: redoing each batch alone made every caller wait out its own
                    # failure (issue 27 item 18), and could write again what had landed.
                    for op in live:
                        self._settle(op, error=exc)
                    return
                # One writer's bad batch must not fail the others: apply each alone (nothing of the
                # group was committed: the writer raises these before its commit).
                for op in live:
                    await self._run_adds([op])
                return
            except BaseException as exc:
                for op in live:
                    self._settle(op, error=exc)
                raise
            for op, result in zip(live, results, strict=True):
                if isinstance(result, BaseException):  # that batch did not land; the others did
                    self._settle(op, error=result)
                else:
                    self._settle(op, result=result)
            return

    @staticmethod
    def _settle(op: _Op, *, result: Any = None, error: BaseException | None = None) -> None:
        if op.future.done():
            return
        if error is not None:
            op.future.set_exception(error)
        else:
            op.future.set_result(result)


def _on_an_event_loop() -> bool:
    """Whether the calling thread is running an event loop (the library's or the caller's own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _loop.on_loop_thread()
    return True


def _proceed(ops: list[_Op]) -> Callable[[], bool]:
    """Whether every caller of a group still waits (checked right before its commit)."""
    return lambda: not any(op.given_up for op in ops)
