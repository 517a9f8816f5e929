"""Recall's cues (who speaks, whether any memory has entities) come from the namespace's view.

A tenant's first recall used to make a query for its speakers and a count for its entities beside
the view load and the BM25 searches; the view holds every row, so both are answered from it. They
must stay as fresh as the view: this store's own writes at once, another handle's commits as soon
as the view sees them (``read_consistency_interval=0`` here: at the next recall).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
from memory_retrievers.storage import search, view_cues
from memory_retrievers.storage.table import MemoryTable
from memory_retrievers.testing import ManualClock

EMBEDDER = HashEmbedder(32)
CUE_ACTIONS = {"read who speaks in a namespace", "read who joined a namespace's chat", "count entity-tagged memories"}


def _chat(store: MemoryStore, namespace: str, n: int = 12) -> None:
    store.add_many(
        [{"text": f"{('Caroline', 'Melanie')[i % 2]}: I went hiking {i}", "kind": "message"} for i in range(n)],
        namespace=namespace,
        dedup=False,
    )


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The action of every LanceDB read (search or count) the table layer makes."""
    actions: list[str] = []
    search_, count = MemoryTable.search, MemoryTable.count

    async def recorded_search(self: MemoryTable, request: Any, action: str) -> Any:
        actions.append(action)
        return await search_(self, request, action)

    async def recorded_count(self: MemoryTable, where: str | None = None, *, action: str = "count rows") -> int:
        actions.append(action)
        return await count(self, where, action=action)

    monkeypatch.setattr(MemoryTable, "search", recorded_search)
    monkeypatch.setattr(MemoryTable, "count", recorded_count)
    return actions


def test_a_tenants_first_recall_reads_the_view_and_bm25_only(tmp_path: Path, reads: list[str]) -> None:
    store = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    for t in range(3):
        _chat(store, f"user-{t}")
    store.add("Caroline: I painted a lake", namespace="user-1", kind="message", entities=["lake"])
    reads.clear()
    result = MemoryRetriever(store, namespace="user-1", config={"record_access": False}).recall(
        "What did Caroline paint at the lake?"
    )
    assert result.plan["speakers"] == ["Caroline"]  # the cue still works
    assert not CUE_ACTIONS & set(reads), reads
    # The view's load (no count before it), then BM25 (text and context): nothing else.
    assert len(reads) <= 3 and "count rows" not in reads, reads
    assert reads.count("load a namespace view") == 1, reads
    store.close()


def test_speakers_include_one_written_by_another_handle_after_the_view_loaded(tmp_path: Path) -> None:
    a = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    b = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    _chat(a, "u")
    retriever = MemoryRetriever(a, namespace="u", config={"record_access": False})
    assert retriever.recall("What did Dave say about hiking?").plan["speakers"] == []
    assert asyncio.run(a.aspeakers("u")) == frozenset({"Caroline", "Melanie"})
    b.add("Dave: I went hiking too", namespace="u", kind="message")
    # The searcher's cache alone would have said so only after max_age_s (60 s).
    assert retriever.recall("What did Dave say about hiking?").plan["speakers"] == ["Dave"]
    assert asyncio.run(a.aspeakers("u")) == frozenset({"Caroline", "Melanie", "Dave"})
    a.close()
    b.close()


def test_own_writes_join_the_cues_at_once(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    _chat(store, "u")

    async def cues() -> tuple[bool, frozenset[str]]:
        source = await store.arecall_source("u")
        return await source.has_entities(), await source.speakers()

    assert asyncio.run(cues()) == (False, frozenset({"Caroline", "Melanie"}))
    store.add("Zoe: my dog loves the lake", namespace="u", kind="message", entities=["dog"])
    assert asyncio.run(cues()) == (True, frozenset({"Caroline", "Melanie", "Zoe"}))
    store.close()


def test_entities_written_by_another_handle_are_seen_at_the_next_recall(tmp_path: Path) -> None:
    a = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    b = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    _chat(a, "u")

    async def has_entities() -> bool:
        return await (await a.arecall_source("u")).has_entities()

    assert asyncio.run(has_entities()) is False
    b.add("Melanie: the kettle broke", namespace="u", kind="message", entities=["kettle"])
    assert asyncio.run(has_entities()) is True
    a.close()
    b.close()


def test_other_namespaces_speakers_never_leak_into_a_view(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    _chat(store, "u")
    store.add("Mallory: secret plans", namespace="other", kind="message", entities=["plans"])

    async def cues() -> tuple[bool, frozenset[str]]:
        source = await store.arecall_source("u")
        return await source.has_entities(), await source.speakers()

    assert asyncio.run(cues()) == (False, frozenset({"Caroline", "Melanie"}))
    store.add("Mallory: more plans", namespace="other", kind="message")
    assert asyncio.run(cues()) == (False, frozenset({"Caroline", "Melanie"}))
    store.close()


@pytest.mark.parametrize("sample", [5, 2_000])
def test_view_speakers_equal_the_searchers_on_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample: int
) -> None:
    # Only the messages written last count (a long chat's old speakers drop out), on both paths.
    monkeypatch.setattr(search, "SPEAKER_SAMPLE", sample)
    monkeypatch.setattr(view_cues, "SPEAKER_SAMPLE", sample)
    clock = ManualClock()
    viewed = MemoryStore(tmp_path / "db", embedder=EMBEDDER, clock=clock)
    table_only = MemoryStore(tmp_path / "db", embedder=EMBEDDER, clock=clock, config={"recall_view_max_rows": 0})
    for i in range(12):
        viewed.add(f"Speaker{i}: turn {i}", namespace="u", kind="message")
        viewed.add(f"note {i} by nobody", namespace="u", kind="fact")
        clock.advance(seconds=1)

    async def from_view() -> frozenset[str]:
        return await (await viewed.arecall_source("u")).speakers()

    expected = asyncio.run(table_only.aspeakers("u"))
    assert len(expected) == min(sample, 12)
    assert asyncio.run(from_view()) == expected
    viewed.close()
    table_only.close()


def test_speakers_read_during_a_view_load_wait_for_it(tmp_path: Path, reads: list[str]) -> None:
    store = MemoryStore(tmp_path / "db", embedder=EMBEDDER)
    _chat(store, "u")

    async def both() -> tuple[frozenset[str], frozenset[str]]:
        source = asyncio.ensure_future(store.arecall_source("u"))
        speakers = await store.aspeakers("u")  # while the source's view loads
        return speakers, await (await source).speakers()

    reads.clear()
    assert asyncio.run(both()) == (frozenset({"Caroline", "Melanie"}),) * 2
    assert reads.count("load a namespace view") == 1 and not CUE_ACTIONS & set(reads), reads
    store.close()


def test_a_namespace_without_a_view_still_answers_from_the_table(tmp_path: Path, reads: list[str]) -> None:
    store = MemoryStore(tmp_path / "db", embedder=EMBEDDER, config={"recall_view_max_rows": 0})
    _chat(store, "u")
    reads.clear()
    assert asyncio.run(store.aspeakers("u")) == frozenset({"Caroline", "Melanie"})
    assert "read who speaks in a namespace" in reads
    store.close()
