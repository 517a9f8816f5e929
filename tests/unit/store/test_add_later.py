"""Micro-batched writes: ``add_later`` and ``StoreConfig.write_linger``.

What a caller relies on: a queued write returns at once; it is committed with its neighbours
(fewer commits); ``flush``/``close``/interpreter exit/``fork`` wait for it, so a program that ends
normally loses nothing; a write whose ``result()`` returned survives a SIGKILL; bad input is refused
before anything is queued; a failed write says so.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_retrievers import (
    ConfigError,
    EmbeddingError,
    HashEmbedder,
    InvalidInputError,
    MemoryStore,
    PendingWrite,
    StorageError,
    WriteAction,
)

Make = Callable[..., MemoryStore]


def lingering(make_store: Make, ms: float, **config: Any) -> MemoryStore:
    return make_store(config={"write_linger": timedelta(milliseconds=ms), **config})


def primed_version(store: MemoryStore) -> int:
    """The table version once the first write's index builds (a dozen commits) are done."""
    store.add("priming write", namespace="elsewhere")
    store.flush()
    return store.admin.stats().version


def test_queued_writes_return_at_once_and_commit_together(make_store: Make) -> None:
    store = lingering(make_store, 300)
    before = primed_version(store)
    pending = [store.add_later(f"turn {i} of the chat", namespace="u", session_id="s") for i in range(40)]
    assert all(isinstance(p, PendingWrite) for p in pending)
    results = [p.result(timeout=60) for p in pending]
    assert [r.action for r in results] == [WriteAction.ADDED] * 40
    assert store.count("u") == 40
    assert {m.text for m in store.list("u", limit=100)} == {f"turn {i} of the chat" for i in range(40)}
    # One group within the linger (measured: one commit); forty adds one at a time make forty.
    store.flush()
    assert store.admin.stats().version - before <= 2


def test_without_linger_each_lone_add_is_its_own_commit(make_store: Make) -> None:
    store = make_store()
    before = primed_version(store)
    for i in range(5):
        store.add(f"fact {i}", namespace="u", dedup=False)
    assert store.admin.stats().version - before >= 5


def test_a_full_group_does_not_wait_for_the_linger(make_store: Make) -> None:
    store = lingering(make_store, 10_000, write_batch_size=4)  # a 10 s linger, groups of 4
    pending = [store.add_later(f"note {i}", namespace="u") for i in range(4)]
    assert [p.result(timeout=8).text for p in pending] == [f"note {i}" for i in range(4)]


def test_flush_commits_without_waiting_for_the_linger(make_store: Make) -> None:
    store = lingering(make_store, 10_000)
    pending = store.add_later("remember the milk", namespace="u")
    assert not pending.done()
    started = time.monotonic()
    store.flush()
    assert time.monotonic() - started < 8
    assert pending.done() and pending.result().action is WriteAction.ADDED
    assert store.count("u") == 1


def test_close_commits_what_is_queued_without_waiting_for_the_linger(make_store: Make) -> None:
    store = lingering(make_store, 10_000)
    for i in range(3):
        store.add_later(f"queued {i}", namespace="u")
    started = time.monotonic()
    store.close()
    assert time.monotonic() - started < 8
    assert make_store().count("u") == 3


def test_a_blocking_write_behind_queued_ones_ends_the_linger(make_store: Make) -> None:
    old = make_store().add("an old memory", namespace="u")  # committed at once: no linger there
    store = lingering(make_store, 10_000)
    queued = store.add_later("queued first", namespace="u")
    started = time.monotonic()
    assert store.delete(old.id, namespace="u") == 1  # queued behind the add: it ends the linger
    assert time.monotonic() - started < 8 and queued.done()
    assert [m.text for m in store.list("u")] == ["queued first"]


def test_bad_input_is_refused_before_anything_is_queued(make_store: Make) -> None:
    store = lingering(make_store, 50)
    with pytest.raises(InvalidInputError, match="text"):
        store.add_later("   ", namespace="u")
    with pytest.raises(InvalidInputError, match="namespace"):
        store.add_later("fine", namespace="")
    with pytest.raises(InvalidInputError, match="priority"):
        store.add_later("fine", namespace="u", priority="high")
    with pytest.raises(InvalidInputError, match="dedup must be True, False or None"):
        store.add_later("fine", namespace="u", dedup="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="dedup must be True, False or None"):
        store.add_many([{"text": "fine"}], namespace="u", dedup=1)  # type: ignore[arg-type]
    store.flush()
    assert store.count("u") == 0


@pytest.mark.parametrize("bad", [timedelta(seconds=-1), timedelta(seconds=11), "soon"])
def test_a_bad_linger_is_a_config_error(make_store: Make, bad: Any) -> None:
    with pytest.raises(ConfigError, match="write_linger"):
        make_store(config={"write_linger": bad})


class _FailingEmbedder(HashEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if any("poison" in t for t in texts):
            raise RuntimeError("model crashed")
        return super().embed_documents(texts)

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(texts)


def test_a_failed_queued_write_is_reported_and_stores_nothing(
    make_store: Make, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(embedder=_FailingEmbedder(32), config={"write_linger": timedelta(milliseconds=200)})
    with caplog.at_level(logging.WARNING, logger="memory_retrievers"):
        good = store.add_later("a good memory", namespace="u")
        bad = store.add_later("a poison memory", namespace="u")
        store.flush()
    with pytest.raises(EmbeddingError):
        bad.result(timeout=10)
    assert good.result(timeout=10).action is WriteAction.ADDED  # its neighbour's failure is not its own
    assert [m.text for m in store.list("u")] == ["a good memory"]
    assert any("add_later failed" in r.getMessage() for r in caplog.records)
    assert "failed" in repr(bad)


def test_queued_duplicates_within_one_group_are_one_memory(make_store: Make) -> None:
    store = lingering(make_store, 300)
    first = store.add_later("Alice prefers the dark theme", namespace="u", kind="preference")
    second = store.add_later("Alice prefers the dark theme", namespace="u", kind="preference")
    actions = sorted(p.result(timeout=30).action.value for p in (first, second))
    assert actions == sorted([WriteAction.ADDED.value, WriteAction.SKIPPED.value])
    assert store.count("u") == 1


def test_async_code_awaits_the_commit(make_store: Make) -> None:
    store = lingering(make_store, 100)

    async def main() -> list[str]:
        pending = [store.add_later(f"async {i}", namespace="u") for i in range(5)]
        return [(await p).text for p in pending]

    assert asyncio.run(main()) == [f"async {i}" for i in range(5)]


def test_a_closed_store_refuses_queued_writes(make_store: Make) -> None:
    store = make_store()
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.add_later("too late", namespace="u")


def test_queued_writes_are_not_a_way_around_namespaces(make_store: Make) -> None:
    store = lingering(make_store, 200)
    for ns in ("alice", "bob"):
        for i in range(3):
            store.add_later(f"{ns} note {i}", namespace=ns)
    store.flush()
    assert {m.text for m in store.list("alice")} == {f"alice note {i}" for i in range(3)}
    assert {m.text for m in store.list("bob")} == {f"bob note {i}" for i in range(3)}


# ---------------------------------------------------------------- process boundaries
_SCRIPT = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from datetime import timedelta
    from memory_retrievers import HashEmbedder, MemoryStore

    class ExecutorEmbedder(HashEmbedder):  # a plug-in that embeds on asyncio's default executor
        async def aembed_documents(self, texts):
            return await asyncio.to_thread(self.embed_documents, texts)

    path, mode = sys.argv[1], sys.argv[2]
    embedder = ExecutorEmbedder(32) if mode == "exit-executor" else HashEmbedder(32)
    store = MemoryStore(path, embedder=embedder, config={"write_linger": timedelta(seconds=5)})
    pending = [store.add_later(f"turn {i}", namespace="u") for i in range(30)]
    if mode.startswith("exit"):
        sys.exit(0)  # no close(), no flush(): interpreter exit must commit them
    acknowledged = [p.result(timeout=60).id for p in pending[:10]]
    print(",".join(acknowledged), flush=True)
    for i in range(30, 60):
        store.add_later(f"turn {i}", namespace="u")
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _run_script(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "writer.py"
    script.write_text(_SCRIPT)
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path / "db"), mode],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.long
@pytest.mark.parametrize("mode", ["exit", "exit-executor"])
def test_interpreter_exit_commits_queued_writes(tmp_path: Path, make_store: Make, mode: str) -> None:
    done = _run_script(tmp_path, mode)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "failed" not in done.stderr, done.stderr[-2000:]
    assert make_store().count("u") == 30


@pytest.mark.long
def test_acknowledged_queued_writes_survive_a_sigkill(tmp_path: Path, make_store: Make) -> None:
    done = _run_script(tmp_path, "kill")
    assert done.returncode == -9, done.stderr[-2000:]
    acknowledged = done.stdout.strip().split(",")
    assert len(acknowledged) == 10
    store = make_store()
    assert {m.id for m in store.get(acknowledged, namespace="u")} == set(acknowledged)
    assert store.count("u") >= 10  # the unacknowledged ones may or may not have made it


def _child_counts(path: str, out: Any) -> None:
    try:
        store = MemoryStore(path, embedder=HashEmbedder(32))
        out.put(store.count("u"))
        store.close()
    except BaseException as exc:  # reported to the parent
        out.put(repr(exc))


@pytest.mark.long
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork start method is POSIX-only")
def test_a_forked_child_finds_what_its_parent_queued(tmp_path: Path, make_store: Make) -> None:
    store = lingering(make_store, 10_000)
    pending = [store.add_later(f"before the fork {i}", namespace="u") for i in range(5)]
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    proc = ctx.Process(target=_child_counts, args=(str(tmp_path / "db"), out))
    proc.start()  # os.fork() waits for the queue: the child sees the five memories
    proc.join(180)
    assert proc.exitcode == 0
    assert out.get(timeout=10) == 5
    assert all(p.done() for p in pending)


# ---------------------------------------------------------------------- read-your-writes (issue 42)


def _table_rows(store: MemoryStore) -> int:
    """Rows committed to the table, read through a handle of its own (no read-your-writes)."""
    import lancedb

    return int(lancedb.connect(store.uri).open_table(store.table_name).count_rows())


def test_recall_finds_a_queued_write_before_its_commit_and_no_other_namespace_does(make_store: Make) -> None:
    from memory_retrievers import MemoryRetriever

    with make_store() as first:
        first.add_many([{"text": f"note {i} about the garden shed"} for i in range(5)], namespace="u")
    store = lingering(make_store, 10_000)  # a queued write stays queued until something waits for it
    before = _table_rows(store)
    (pending,) = store.add_many_later(
        [{"text": "user: my dog is called Rex", "kind": "message", "session_id": "s"}], namespace="u"
    )
    retriever = MemoryRetriever(store)
    found = retriever.recall("what is my dog called?", namespace="u")
    assert _table_rows(store) == before  # recall did not wait for the commit
    assert found.memories[0].id == pending.id and found.memories[0].text == "user: my dog is called Rex"
    assert not pending.done()
    assert all(m.id != pending.id for m in retriever.recall("what is my dog called?", namespace="v").memories)
    store.flush()
    assert pending.result(timeout=0).id == pending.id  # stored under the id recall showed
    assert retriever.recall("what is my dog called?", namespace="u").memories[0].id == pending.id


def test_plain_reads_wait_for_this_processs_queued_writes(make_store: Make) -> None:
    store = lingering(make_store, 10_000)
    pending = store.add_later("Alice prefers the dark theme", namespace="u", kind="preference")
    assert [m.id for m in store.list("u")] == [pending.id]  # list waited for the commit (no linger)
    assert pending.done() and store.count("u") == 1
    assert store.get(pending.id, namespace="u").text == "Alice prefers the dark theme"


def test_add_many_later_checks_every_record_before_queueing_any(make_store: Make) -> None:
    store = make_store()
    with pytest.raises(InvalidInputError, match="record 1"):
        store.add_many_later([{"text": "fine"}, {"text": ""}], namespace="u")
    with pytest.raises(InvalidInputError, match="one namespace"):
        store.add_many_later([{"text": "fine"}, {"text": "elsewhere", "namespace": "v"}], namespace="u")
    store.flush()
    assert store.count("u") == 0 and store.count("v") == 0


def test_forget_after_a_queued_write_wins_for_recall_too(make_store: Make) -> None:
    from memory_retrievers import MemoryRetriever

    store = lingering(make_store, 10_000)
    pending = store.add_later("Alice's bank PIN hint is her dog's name", namespace="u")
    assert MemoryRetriever(store).recall("bank PIN hint", namespace="u").memories[0].id == pending.id
    assert store.forget("u") == 1  # the queued write committed first, then went with the rest
    assert pending.result(timeout=30).action is WriteAction.ADDED
    assert MemoryRetriever(store).recall("bank PIN hint", namespace="u").memories == ()
