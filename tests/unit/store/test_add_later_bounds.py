"""Issue 27 item 13: ``add_later`` has backpressure, and ``os.fork()`` never waits for an idle queue.

Before the fix ``add_later`` queued without bound (fed ~4,000 writes/s, ``close()`` was still
draining after 100 s), and ``os.fork()`` waited up to 60 s for an idle queue that never came while
other threads kept queueing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memory_retrievers import ConfigError, HashEmbedder, MemoryStore, QueueFullError

Make = Callable[..., MemoryStore]


class GatedEmbedder(HashEmbedder):
    """Embeds only while its gate is open (a slow or stalled model)."""

    def __init__(self) -> None:
        super().__init__(32)
        self.gate = threading.Event()
        self.gate.set()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.gate.wait(30)
        time.sleep(0.002 * len(texts))
        return super().embed_documents(texts)


def test_item13_add_later_waits_for_room_and_loses_nothing(make_store: Make) -> None:
    embedder = GatedEmbedder()
    store = make_store(embedder=embedder, config={"max_queued_records": 20, "write_batch_size": 8})
    most = 0
    pending = []
    for i in range(200):
        pending.append(store.add_later(f"turn number {i}", namespace="u", dedup=False))
        most = max(most, store._queue._queued_records)
    store.flush()
    assert most <= 20  # never more than the bound waited in the queue
    assert all(p.result().action.value == "added" for p in pending)
    assert store.count("u") == 200


def test_item13_a_full_queue_raises_queue_full_and_queues_nothing(make_store: Make) -> None:
    embedder = GatedEmbedder()
    store = make_store(
        embedder=embedder,
        config={"max_queued_records": 5, "write_batch_size": 1, "queue_full_timeout": timedelta(0)},
    )
    embedder.gate.clear()  # the first write takes the model; the next five wait in the queue
    first = store.add_later("turn 0", namespace="u")
    time.sleep(0.2)
    queued = [store.add_later(f"turn {i}", namespace="u") for i in range(1, 6)]
    with pytest.raises(QueueFullError, match="max_queued_records"):
        store.add_later("one too many", namespace="u")
    embedder.gate.set()
    store.flush()
    assert first.result() and all(p.result() for p in queued)
    assert sorted(m.text for m in store.list("u")) == sorted(f"turn {i}" for i in range(6))


def test_item13_queue_full_timeout_must_not_be_negative(make_store: Make) -> None:
    with pytest.raises(ConfigError, match="queue_full_timeout"):
        make_store(config={"queue_full_timeout": timedelta(seconds=-1)})


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
def test_item13_fork_waits_only_for_what_was_queued_when_it_was_called(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    store = MemoryStore(
        tmp_path / "db",
        embedder=embedder,
        config={"write_linger": timedelta(milliseconds=50), "max_queued_records": 300},
    )
    stop = threading.Event()
    lock = threading.Lock()
    counts = [0]

    def keep_queueing() -> None:
        while not stop.is_set():
            with lock:
                n = counts[0]
                counts[0] += 1
            store.add_later(f"turn {n}", namespace="u", dedup=False)
            time.sleep(0.001)

    feeders = [threading.Thread(target=keep_queueing) for _ in range(2)]
    for t in feeders:
        t.start()
    try:
        time.sleep(0.5)
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child only proves it was born
            os._exit(0)
        took = time.monotonic() - started
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        stop.set()
        for t in feeders:
            t.join()
    queued = counts[0]
    store.close()
    assert took < 10, f"os.fork() waited {took:.1f} s for a queue other threads kept filling"
    reopened = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    try:
        assert reopened.count("u") == queued  # every queued write still committed (by the parent)
    finally:
        reopened.close()


async def test_item13_a_full_queue_never_blocks_the_callers_event_loop(make_store: Make) -> None:
    # Red-team of issue 27: from a coroutine, add_later on a full queue blocked the caller's loop
    # for the whole wait (3.1 s with a 3 s embedder). From a running loop it raises at once.
    import asyncio

    embedder = GatedEmbedder()
    store = make_store(embedder=embedder, config={"max_queued_records": 3, "write_batch_size": 1})
    embedder.gate.clear()
    first = store.add_later("turn 0", namespace="u")
    await asyncio.sleep(0.2)  # the first write holds the model; the queue fills behind it
    queued = [store.add_later(f"turn {i}", namespace="u") for i in range(1, 4)]
    started = time.monotonic()
    with pytest.raises(QueueFullError):
        store.add_later("one too many", namespace="u")
    assert time.monotonic() - started < 1.0  # queue_full_timeout is 30 s: it did not wait
    embedder.gate.set()
    await store.aflush()
    assert await first and all([await p for p in queued])
    assert await store.acount("u") == 4
