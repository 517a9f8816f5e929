"""Red-team tests of the issue 28 refactor: behaviour users relied on at c4d7fc4 that changed.

Each test pins one defect found by probing the merged tree; they fail until it is fixed.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from datetime import timedelta
from pathlib import Path

import lancedb
import pytest

from memory_retrievers import (
    ChannelFailedWarning,
    ChannelInput,
    ConfigError,
    HashEmbedder,
    MemoryRetriever,
    MemoryStore,
    Need,
    RankedList,
)

# ---------------------------------------------------------------------------------------------
# A plug-in channel with a plain (sync) search: the protocol allows it (runner._searched calls
# channel.search(given) and awaits only when the result is awaitable), but it then runs on the
# store's private event loop thread. asyncio.wait_for cannot interrupt it, and while it blocks,
# the built-in channels' own timers expire: they are the ones dropped and blamed.


class _SlowSync:
    """A user's channel whose search is plain (not async) and slow: e.g. a blocking HTTP client."""

    name = "slow"
    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def runs(self, features: object, config: object, mode: object) -> bool:
        return True

    def search(self, given: object) -> list[RankedList]:
        time.sleep(self.seconds)
        return []


def _recall_with_slow_plugin(store: MemoryStore) -> tuple[float, list[str], list[str]]:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = MemoryRetriever(store, channels=[_SlowSync(1.5)], channel_timeout_s=0.3)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = retriever.recall("what does alice like to drink, tea?", namespace="alice")
    elapsed = time.perf_counter() - started
    failed = [str(w.message) for w in caught if issubclass(w.category, ChannelFailedWarning)]
    return elapsed, failed, [m.text for m in result.memories]


def test_a_slow_sync_plugin_channel_is_cut_at_channel_timeout_s(store: MemoryStore) -> None:
    # Given a plug-in whose plain search takes 1.5 s and a retriever with channel_timeout_s=0.3
    elapsed, failed, _ = _recall_with_slow_plugin(store)
    # Then the recall does not wait for it (the documented promise of channel_timeout_s) and the
    # warning names the slow plug-in.
    # Observed: elapsed ~1.5 s, no warning about 'slow' at all.
    assert elapsed < 1.0, f"recall took {elapsed:.2f} s: the sync plug-in blocked the store's loop"
    assert any("'slow'" in message for message in failed), failed


def test_a_slow_sync_plugin_does_not_get_built_in_channels_dropped(store: MemoryStore) -> None:
    # Observed: "channel 'bm25' timed out after 0.3 s" and "channel 'context' timed out after 0.3 s":
    # the built-ins are dropped from the fusion (and blamed) because the plug-in blocked the loop
    # past their deadline; the recall silently loses its two strongest channels.
    _, failed, _ = _recall_with_slow_plugin(store)
    blamed = [m for m in failed if "'slow'" not in m]
    assert blamed == [], blamed


class _CancelledInside:
    """A user's channel whose own awaited call was cancelled (e.g. a client's internal cancel scope)."""

    name = "cancelled"
    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def runs(self, features: object, config: object, mode: object) -> bool:
        return True

    async def search(self, given: object) -> list[RankedList]:
        raise asyncio.CancelledError()


def test_a_plugin_raising_cancelled_error_is_dropped_not_the_recall(store: MemoryStore) -> None:
    # runner.ChannelRunner._guarded catches `Exception` only; CancelledError is a BaseException,
    # so a plug-in's own CancelledError escapes the guard and cancels the whole recall.
    # Observed: the sync recall() raises asyncio.CancelledError. Expected (runner's docstring: a
    # channel that raises is dropped with a ChannelFailedWarning, the recall goes on).
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = MemoryRetriever(store, channels=[_CancelledInside()])
    with pytest.warns(ChannelFailedWarning, match="cancelled"):
        result = retriever.recall("what does alice drink?", namespace="alice")
    assert [m.text for m in result.memories] == ["alice likes green tea"]


# ---------------------------------------------------------------------------------------------
# The store on a caller's LanceDB connection (storage/caller.py): two stores on one connection.


def test_two_stores_on_one_caller_connection_see_each_others_writes(tmp_path: Path, embedder: HashEmbedder) -> None:
    # Given one application connection (lancedb.connect defaults) and two stores on it, as a
    # service opening a store per worker/request on its shared connection would
    db = lancedb.connect(tmp_path / "app")
    first = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    second = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    try:
        # When one store writes and flushes
        first.add("alice likes green tea", namespace="alice")
        first.flush()
        # Then the other reads it: each store reports read_consistency_interval=0 ("every read
        # checks", docs/RELIABILITY.md), and a URI store does see another store's commits.
        # Observed: second.count() == 0 forever; the caller's connection never checks for updates
        # and the store's own setting is silently not applied.
        assert second.config.read_consistency_interval == timedelta(0)
        assert second.count(namespace="alice") == 1
        found = MemoryRetriever(second).recall("what does alice drink?", namespace="alice")
        assert [m.text for m in found.memories] == ["alice likes green tea"]
    finally:
        first.close()
        second.close()


def test_an_explicit_read_consistency_interval_on_a_caller_connection_is_not_silently_ignored(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    # storage_options + connection is refused with ConfigError ("set them on your connection");
    # read_consistency_interval given explicitly with connection= is accepted, reported by
    # store.config, and not applied. Either refuse it like storage_options or honour it.
    db = lancedb.connect(tmp_path / "app")
    cfg = {"read_consistency_interval": timedelta(0)}
    try:
        first = MemoryStore(connection=db, table_name="memories", embedder=embedder, config=cfg)
        second = MemoryStore(connection=db, table_name="memories", embedder=embedder, config=cfg)
    except ConfigError:
        return  # refused, like storage_options: fine
    try:
        first.add("alice likes green tea", namespace="alice")
        first.flush()
        assert second.count(namespace="alice") == 1, "read_consistency_interval=0 was accepted but not applied"
    finally:
        first.close()
        second.close()


# ---------------------------------------------------------------------------------------------
# MemoryStore.from_table: store.uri is the *table's* URI (<db>/memories.lance; CallerTable.open
# returns str(await table.uri())), while every other store's uri is the database's. store_spec
# (what pickle / model_dump / LangChain dumps of an adapter write) records that uri with the
# table name, so another process reopens MemoryStore("<db>/memories.lance", table_name="memories"):
# a new, empty table nested inside the caller's table directory. Recall there finds nothing and
# writes land in the nested table. (End to end, a RecallRetriever on a from_table store pickled
# and loaded in a subprocess returned [] where the original returned the memory.)


def test_a_from_table_store_reopens_from_its_spec_on_the_same_table(tmp_path: Path, embedder: HashEmbedder) -> None:
    from memory_retrievers.integration.handles import store_spec

    db = lancedb.connect(tmp_path / "app")
    owner = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    owner.add("alice likes green tea", namespace="alice")
    owner.flush()
    mine = MemoryStore.from_table(db.open_table("memories"), embedder=embedder)
    spec = store_spec(mine, "RecallRetriever")
    # What another process does with the spec (handles.open_store, without this process's live store)
    reopened = MemoryStore(spec["uri"], table_name=spec["table_name"], embedder=embedder)
    try:
        # Observed: spec["uri"] == ".../app/memories.lance", reopened.count(...) == 0, and a
        # directory memories.lance/memories.lance now exists inside the caller's table.
        assert reopened.count(namespace="alice") == 1
        assert not (tmp_path / "app" / "memories.lance" / "memories.lance").exists()
    finally:
        reopened.close()
        mine.close()
        owner.close()


def test_a_from_table_store_reports_the_database_uri_like_any_store(tmp_path: Path, embedder: HashEmbedder) -> None:
    db = lancedb.connect(tmp_path / "app")
    owner = MemoryStore(connection=db, table_name="memories", embedder=embedder)
    mine = MemoryStore.from_table(db.open_table("memories"), embedder=embedder)
    try:
        # Observed: owner.uri == ".../app", mine.uri == ".../app/memories.lance" for the same table
        assert mine.uri == owner.uri
    finally:
        mine.close()
        owner.close()


# ---------------------------------------------------------------------------------------------
# A plug-in replacing a built-in: MemoryRetriever's docstring says "channels: ... or replacing the
# built-in of the same name. Give each a weight in config.weights by its name (else it weighs its
# default_weight)". ChannelRegistry.weight asks weights.get(name), and a built-in name is a
# ChannelWeights field that always has a value, so the replacement's default_weight never applies.


class _MyVector:
    """A user's own vector channel (e.g. over an external ANN index), replacing the built-in."""

    name = "vector"
    needs: frozenset[Need] = frozenset({Need.VECTOR})
    default_weight = 3.0

    def __init__(self) -> None:
        self.weights: list[float] = []

    def runs(self, features: object, config: object, mode: object) -> bool:
        return True

    def search(self, given: ChannelInput) -> list[RankedList]:
        self.weights.append(given.weight)
        return []


def test_a_plugin_replacing_a_built_in_weighs_its_default_weight_when_the_config_names_none(
    store: MemoryStore,
) -> None:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    mine = _MyVector()
    retriever = MemoryRetriever(store, channels=[mine])
    retriever.recall("what does alice drink?", namespace="alice")
    # Observed: [1.0] (ChannelWeights().vector, the built-in's default), not the plug-in's 3.0
    assert mine.weights == [3.0]


# docs/RELIABILITY.md item 10: "A plug-in that never returns, or blocks, costs itself, not the
# process ... An `async def` plug-in runs on a loop of its own, so one that blocks inside
# `async def` no longer stops every store's writes and recalls, and its timeout fires."
# Channels are the new plug-ins (issue 28) and get neither: ChannelRunner awaits their search on
# the store's loop.


class _BlocksInsideAsync:
    """A user's channel with an `async def` search that does blocking work (a sync client call)."""

    name = "blocking"
    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def runs(self, features: object, config: object, mode: object) -> bool:
        return True

    async def search(self, given: object) -> list[RankedList]:
        time.sleep(1.5)
        return []


def test_an_async_plugin_channel_that_blocks_inside_async_def_is_cut_at_its_timeout(store: MemoryStore) -> None:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = MemoryRetriever(store, channels=[_BlocksInsideAsync()], channel_timeout_s=0.3)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        retriever.recall("what does alice drink?", namespace="alice")
    # Observed: ~1.5 s (the timeout never fires while the loop is blocked)
    assert time.perf_counter() - started < 1.0


def test_a_blocking_plugin_channel_in_one_tenants_recall_does_not_stall_another_tenants_write(
    store: MemoryStore,
) -> None:
    import threading

    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = MemoryRetriever(store, channels=[_SlowSync(2.0)], channel_timeout_s=0.3)

    def alice() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            retriever.recall("what does alice drink?", namespace="alice")

    worker = threading.Thread(target=alice)
    worker.start()
    time.sleep(0.3)  # alice's recall is inside the plug-in now
    started = time.perf_counter()
    store.add("bob likes black coffee", namespace="bob")
    waited = time.perf_counter() - started
    worker.join()
    # Observed: bob's add waits ~1.7 s, until alice's plug-in returns (one loop for the store)
    assert waited < 0.5, f"bob's add waited {waited:.2f} s behind alice's plug-in channel"
