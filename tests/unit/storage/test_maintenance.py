"""Maintenance: index builds after the first write, optimize on thresholds, one run at a time."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from lancedb.table import AsyncTable

from memory_retrievers import AddedMemory, MemoryStore, StorageError, StoreConfig, WriteAction
from memory_retrievers.storage.access import AccessLog
from memory_retrievers.storage.maintenance import Maintainer
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.storage.temp_files import remove_stale_temp_files
from testing.threads import outcome_within

from .conftest import T0, rows


async def test_the_first_commit_builds_the_indexes(table: MemoryTable) -> None:
    maintainer = Maintainer(table, StoreConfig(), AccessLog(table))
    assert not maintainer.has_base_indexes()
    await table.add(rows("u", ["alpha"]))
    assert maintainer.has_base_indexes()
    # inline, only what full-text search needs at once; the scalar indexes come with optimize
    assert {"FTS:text", "FTS:search_text", "FTS:entities"} == table.indexed
    await maintainer.optimize(wait=True)
    assert {"Bitmap:namespace", "BTree:id", "LabelList:tags"} <= table.indexed


async def test_optimize_runs_when_the_commit_threshold_is_reached(table: MemoryTable) -> None:
    access = AccessLog(table)
    maintainer = Maintainer(table, StoreConfig(optimize_after_commits=3), access)
    await table.add(rows("u", ["first"]))  # builds the indexes, inline: FTS needs them at once
    assert maintainer.has_base_indexes()
    await table.add(rows("u", ["second"]))
    await table.add(rows("u", ["third"]))
    await maintainer.await_idle()
    first = (await table.rows("namespace = 'u'", ["id"])).column("id")[0].as_py()
    access.record("u", [first], T0)  # pending: optimize writes it before folding rows in
    assert (await table.handle.index_stats("text_idx")).num_unindexed_rows == 2
    await table.add(rows("u", ["fourth"]))  # the third commit since the build: optimize, in the background
    await maintainer.await_idle()
    assert (await table.handle.index_stats("text_idx")).num_unindexed_rows == 0
    assert (await table.rows_by_id("u", [first]))[first]["access_count"] == 1  # written by that optimize


async def test_a_cancelled_waiter_does_not_leave_maintenance_locked(table: MemoryTable) -> None:
    # Regression: the lock was taken by a worker thread; a waiter cancelled while that thread
    # waited left the lock held once the thread got it, and every later maintenance hung.
    maintainer = Maintainer(table, StoreConfig(), AccessLog(table))
    await table.add(rows("u", ["alpha"]))
    release = asyncio.Event()

    async def slow() -> None:
        await release.wait()

    holder = asyncio.ensure_future(maintainer._exclusive(slow, wait=True))
    await asyncio.sleep(0.05)
    waiter = asyncio.ensure_future(maintainer.optimize(wait=True))
    await asyncio.sleep(0.05)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    release.set()
    assert await holder is True
    await asyncio.wait_for(maintainer.optimize(wait=True), timeout=60)  # hung before the fix


async def test_automatic_maintenance_skips_while_another_run_holds_the_lock(table: MemoryTable) -> None:
    maintainer = Maintainer(table, StoreConfig(), AccessLog(table))
    release = asyncio.Event()

    async def slow() -> None:
        await release.wait()

    holder = asyncio.ensure_future(maintainer._exclusive(slow, wait=True))
    await asyncio.sleep(0.05)
    await table.add(rows("u", ["alpha"]))  # would build the indexes, but another run is in progress
    assert not maintainer.has_base_indexes()
    release.set()
    await holder
    await maintainer.ensure_indexes()
    assert maintainer.has_base_indexes()


def test_only_old_temp_files_are_removed(tmp_path: Path) -> None:
    from .conftest import new_table

    table = new_table(tmp_path)
    folder = tmp_path / "memories.lance" / "data"
    folder.mkdir(parents=True)
    old, young, data = folder / ".tmp_old", folder / ".tmp_young", folder / "real.lance"
    for path in (old, young, data):
        path.write_bytes(b"x")
    an_hour_ago = time.time() - 7200
    os.utime(old, (an_hour_ago, an_hour_ago))
    os.utime(data, (an_hour_ago, an_hour_ago))
    assert remove_stale_temp_files(table) == 1
    assert not old.exists() and young.exists() and data.exists()


async def _hang(*args: object, **kwargs: object) -> None:
    await asyncio.sleep(3600)  # a LanceDB call that never answers (a storage server gone silent)


@pytest.mark.parametrize(
    ("method", "admin", "setting"),
    [
        ("optimize", "optimize", "maintenance_timeout"),  # compaction: the long step of optimize
        ("list_versions", "purge", "storage_timeout"),  # a plain read of maintenance
    ],
)
def test_a_hung_lancedb_call_of_maintenance_raises_past_its_deadline(
    make_store: Callable[..., MemoryStore], monkeypatch: pytest.MonkeyPatch, method: str, admin: str, setting: str
) -> None:
    # Issue 40 item 13: maintenance did not go through the store's deadline; a storage that stopped
    # answering hung optimize() (and close(), which waits for it) for good.
    deadline = {"storage_timeout": timedelta(seconds=0.5), "maintenance_timeout": timedelta(seconds=0.5)}
    store = make_store(config=deadline)
    store.add("Alice likes green tea", namespace="u")
    monkeypatch.setattr(AsyncTable, method, _hang)
    failed = outcome_within(getattr(store.admin, admin))
    assert isinstance(failed, StorageError) and f"StoreConfig.{setting}" in str(failed), failed
    monkeypatch.undo()
    assert store.add("Bob likes coffee", namespace="u").action is WriteAction.ADDED  # nothing left locked
    store.admin.optimize()


def test_a_hung_index_build_after_the_first_write_keeps_the_write(
    make_store: Callable[..., MemoryStore], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(config={"maintenance_timeout": timedelta(seconds=0.5)})
    monkeypatch.setattr(AsyncTable, "create_index", _hang)
    added: list[AddedMemory] = []
    assert outcome_within(lambda: added.append(store.add("Alice likes green tea", namespace="u"))) is None
    assert added[0].action is WriteAction.ADDED and [m.text for m in store.list("u")] == ["Alice likes green tea"]
    assert "maintenance_timeout" in caplog.text  # logged; the next write or optimize builds them
    monkeypatch.undo()
    store.admin.optimize()
    assert [h.id for h in store.fts_search("tea", namespace="u")] == [added[0].id]


async def test_compaction_preempted_every_time_is_deferred_with_a_line_that_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 40 item 11: when something is wrong, the library's own line says what to do."""
    from memory_retrievers.storage import conflicts

    async def no_pause(seconds: float) -> None:
        return None

    async def preempted() -> None:
        raise RuntimeError("lance error: Retryable commit conflict for version 7: preempted by concurrent transaction")

    monkeypatch.setattr(conflicts.asyncio, "sleep", no_pause)
    with caplog.at_level(logging.WARNING, logger=conflicts.__name__):
        assert await conflicts.retry_conflicts("optimize the table", preempted, defer_ok=True) is None
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("memory-retrievers: optimize the table was deferred") and "Nothing is lost" in line
    assert "run `memory-retrievers optimize`" in line


@pytest.mark.long  # a Python process: LanceDB reads its log level once, when first imported
def test_lance_does_not_print_its_compaction_conflicts_on_stderr(tmp_path: Path) -> None:
    """Issue 40 item 11: "WARN lance::dataset::optimize] Compaction commit failed ... conflict_resolver.rs"."""
    script = tmp_path / "race.py"
    script.write_text(_RACING_OPTIMIZES)
    for env, shown in ((_without("LANCEDB_LOG"), False), ({**os.environ, "LANCEDB_LOG": "warn"}, True)):
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path / f"db-{shown}")],
            capture_output=True, text=True, env=env, timeout=300, check=True,
        )  # fmt: skip
        assert done.stdout.strip().endswith("preempted"), done.stdout  # the race did happen
        assert ("lance::dataset::optimize" in done.stderr) is shown, done.stderr[-2000:]  # the user's level wins


def _without(name: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != name}


# Three handles compact one table of 60 one-row fragments at once: all but one commit lose (tried on
# up to five tables, in case the threads happen not to overlap).
_RACING_OPTIMIZES = """
import sys, threading
import memory_retrievers.storage  # what every store opens through, before LanceDB is imported
import lancedb, pyarrow as pa

lost = []

def optimize(handle):
    try:
        handle.optimize()
    except Exception as exc:
        lost.append(str(exc))

for attempt in range(5):
    db = lancedb.connect(f"{sys.argv[1]}-{attempt}")
    table = db.create_table("t", pa.table({"id": [0]}))
    for i in range(1, 60):
        table.add(pa.table({"id": [i]}))
    handles = [lancedb.connect(f"{sys.argv[1]}-{attempt}").open_table("t") for _ in range(3)]
    threads = [threading.Thread(target=optimize, args=(h,)) for h in handles]
    [t.start() for t in threads]
    [t.join() for t in threads]
    if any("preempted" in e for e in lost):
        break
print("preempted" if any("preempted" in e for e in lost) else "no conflict")
"""


@pytest.mark.long  # versions are pruned by their age: half a minute of wall-clock writes
def test_versions_on_disk_stay_bounded_over_many_writes_by_default(tmp_path: Path) -> None:
    """Issue 40 item 12: after 60 chat turns, 166 versions and 9.6 MB on disk for 363 KB of memories.

    Nothing was pruned for an hour by default, and the automatic compaction lost every attempt to
    the chat loop's own context updates. Now versions older than twice ``storage_timeout`` go at
    every automatic optimize: here 10 s (a 5 s deadline), written at for three times that.
    """
    from datetime import timedelta

    from memory_retrievers import HashEmbedder, MemoryStore

    MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)).close()  # created (and indexed) without a deadline
    config = {"storage_timeout": timedelta(seconds=5), "optimize_after_commits": 16}  # version_retention: default
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32), config=config) as store:
        assert store.config.kept_versions_age == timedelta(seconds=10)
        started, turn, versions = time.monotonic(), 0, []
        while time.monotonic() - started < 30:
            store.add(f"user: turn {turn} about topic {turn % 7}", namespace="alice", kind="message", session_id="s")
            turn += 1
            if not versions and time.monotonic() - started > 10:
                versions.append(store.admin.stats().versions)  # one age in: what the window holds
        store.flush()
        stats = store.admin.stats()
    assert stats.rows == turn and turn >= 40
    assert stats.versions < 1.5 * versions[0], (versions[0], stats.versions)  # a plateau, not a line
