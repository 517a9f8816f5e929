"""Maintenance: index builds after the first write, optimize on thresholds, one run at a time."""

from __future__ import annotations

import asyncio
import os
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
    assert Maintainer(table, StoreConfig(), AccessLog(table)).remove_stale_temp_files() == 1
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
