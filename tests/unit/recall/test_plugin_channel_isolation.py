"""Plug-in channels run off the store's loop, as other plug-ins do (docs/explanation/reliability.md item 10).

A plain ``search`` runs on the ``"channel"`` pool, an ``async def`` one on the plug-in loop; the
source they read still runs its searches on the store's loop. The red-team cases (timeouts,
other tenants' writes, a plug-in's own CancelledError) are in tests/unit/test_redteam28.py.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Sequence

import pytest

from memory_retrievers import (
    ChannelFailedWarning,
    ChannelInput,
    FtsField,
    MemoryRetriever,
    MemoryStore,
    Need,
    RankedList,
)


class Spy:
    """A channel that records the threads it and its source's search ran on."""

    needs: frozenset[Need] = frozenset()
    default_weight = 1.0

    def __init__(self, name: str = "spy") -> None:
        self.name = name
        self.threads: list[str] = []

    def runs(self, features: object, config: object, mode: object) -> bool:
        return True


class AsyncSpy(Spy):
    async def search(self, given: ChannelInput) -> Sequence[RankedList]:
        self.threads.append(threading.current_thread().name)
        hits = await given.source.text_search("tea", FtsField.TEXT, given.depth)
        self.threads.append(threading.current_thread().name)
        return [RankedList(self.name, hits.ids, given.weight)]


class SyncSpy(Spy):
    def search(self, given: ChannelInput) -> Sequence[RankedList]:
        self.threads.append(threading.current_thread().name)
        return []


def test_an_async_plugin_channel_runs_on_the_plugin_loop_and_its_source_still_answers(store: MemoryStore) -> None:
    tea = store.add("alice likes green tea", namespace="alice")
    spy = AsyncSpy()
    res = MemoryRetriever(store, channels=[spy]).recall("what does alice drink?", namespace="alice")
    assert spy.threads == ["memory-retrievers-plugins", "memory-retrievers-plugins"]
    assert "spy" in res.plan["channels"]
    (found,) = [m for m in res.memories if m.id == tea.id]
    assert "spy" in [c.channel for c in found.explanation.channels]


def test_a_plain_plugin_search_runs_on_the_channel_pool(store: MemoryStore) -> None:
    store.add("alice likes green tea", namespace="alice")
    spy = SyncSpy()
    MemoryRetriever(store, channels=[spy]).recall("what does alice drink?", namespace="alice")
    assert spy.threads == ["memory-retrievers-channel"]


def test_a_plain_plugin_search_raising_cancelled_error_is_dropped(store: MemoryStore) -> None:
    class Cancels(Spy):
        def search(self, given: ChannelInput) -> Sequence[RankedList]:
            raise asyncio.CancelledError()

    store.add("alice likes green tea", namespace="alice")
    with pytest.warns(ChannelFailedWarning, match="'cancels' was cancelled"):
        res = MemoryRetriever(store, channels=[Cancels("cancels")]).recall("what does alice drink?", namespace="alice")
    assert [m.text for m in res.memories] == ["alice likes green tea"]


def test_a_timed_out_plugin_that_wakes_up_finds_its_source_closed(store: MemoryStore) -> None:
    late: list[BaseException] = []
    recalled, woke = threading.Event(), threading.Event()

    class Late(Spy):
        async def search(self, given: ChannelInput) -> Sequence[RankedList]:
            recalled.wait(5)  # blocks the plug-in loop until the recall gave up on it and returned
            try:
                await given.source.text_search("tea", FtsField.TEXT, 5)
            except BaseException as exc:
                late.append(exc)
                raise
            finally:
                woke.set()
            return []

    store.add("alice likes green tea", namespace="alice")
    retriever = MemoryRetriever(store, channels=[Late("late")], channel_timeout_s=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retriever.recall("what does alice drink?", namespace="alice")
    recalled.set()
    assert any("'late' timed out" in str(w.message) for w in caught)
    assert woke.wait(5)
    assert len(late) == 1 and isinstance(late[0], RuntimeError) and "source is closed" in str(late[0])


class MyVector(Spy):
    default_weight = 3.0

    def __init__(self) -> None:
        super().__init__("vector")
        self.weights: list[float] = []

    def search(self, given: ChannelInput) -> Sequence[RankedList]:
        self.weights.append(given.weight)
        return []


def test_a_plugin_replacing_a_built_in_takes_the_weight_the_user_set_even_at_the_built_ins_default(
    store: MemoryStore,
) -> None:
    store.add("alice likes green tea", namespace="alice")
    mine = MyVector()
    retriever = MemoryRetriever(store, channels=[mine], config={"weights": {"vector": 1.0}})
    retriever.recall("what does alice drink?", namespace="alice")
    assert mine.weights == [1.0]  # 1.0 is also ChannelWeights' default, but here the user said it


def test_a_plugin_replacing_a_built_in_keeps_its_default_weight_through_a_per_call_override(
    store: MemoryStore,
) -> None:
    store.add("alice likes green tea", namespace="alice")
    mine = MyVector()
    retriever = MemoryRetriever(store, channels=[mine], config={"weights": {"bm25": 1.0}})
    retriever.recall("what does alice drink?", namespace="alice", config={"weights": {"bm25": 2.0}})
    retriever.recall("what does alice drink?", namespace="alice", config={"weights": {"vector": 0.5}})
    assert mine.weights == [3.0, 0.5]
