"""The async API gives the same results as the sync one, and does not block the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, InvalidInputError, MemoryStore, NotFoundError, WriteAction

RECORDS = [
    {"text": "Alice moved to Berlin in 2021", "entities": ["Alice", "Berlin"], "tags": ["home"]},
    {"text": "Alice likes green tea", "entities": ["Alice"], "kind": "preference"},
    {"text": "Bob plays the violin", "entities": ["Bob"], "project": "music"},
    {"text": "first turn", "kind": "message", "session_id": "s1"},
    {"text": "second turn", "kind": "message", "session_id": "s1"},
]


def run_sync_scenario(store: MemoryStore) -> list[object]:
    out: list[object] = []
    added = store.add_many(RECORDS, namespace="n")
    ids = [m.id for m in added]
    out.append([(m.text, m.action, m.context) for m in added])
    out.append(store.add("Alice likes green tea", namespace="n", kind="preference").action)
    out.append(store.update(ids[2], namespace="n", priority=2.0).priority)
    new = store.supersede(ids[0], "Alice moved to Munich in 2023", namespace="n")
    out.append((new.text, new.supersedes == ids[0]))
    out.append([h.id == ids[1] for h in store.fts_search("green tea", namespace="n")])
    out.append([round(h.score, 5) for h in store.vector_search("alice tea", namespace="n", k=3)])
    out.append([h.score for h in store.entity_search(["alice"], namespace="n")])
    out.append(len(store.recency_search(namespace="n", k=10)))
    out.append([m.text for m in store.list("n", newest_first=False)])
    out.append(store.count("n"))
    out.append(store.get(ids[1], namespace="n").text)
    out.append(store.delete([ids[3]], namespace="n"))
    out.append(store.forget("n"))
    return out


async def run_async_scenario(store: MemoryStore) -> list[object]:
    out: list[object] = []
    added = await store.aadd_many(RECORDS, namespace="n")
    ids = [m.id for m in added]
    out.append([(m.text, m.action, m.context) for m in added])
    out.append((await store.aadd("Alice likes green tea", namespace="n", kind="preference")).action)
    out.append((await store.aupdate(ids[2], namespace="n", priority=2.0)).priority)
    new = await store.asupersede(ids[0], "Alice moved to Munich in 2023", namespace="n")
    out.append((new.text, new.supersedes == ids[0]))
    out.append([h.id == ids[1] for h in await store.afts_search("green tea", namespace="n")])
    out.append([round(h.score, 5) for h in await store.avector_search("alice tea", namespace="n", k=3)])
    out.append([h.score for h in await store.aentity_search(["alice"], namespace="n")])
    out.append(len(await store.arecency_search(namespace="n", k=10)))
    out.append([m.text for m in await store.alist("n", newest_first=False)])
    out.append(await store.acount("n"))
    out.append((await store.aget(ids[1], namespace="n")).text)  # type: ignore[union-attr]
    out.append(await store.adelete([ids[3]], namespace="n"))
    out.append(await store.aforget("n"))
    return out


def test_sync_and_async_give_identical_results(tmp_path: Path, clock) -> None:
    sync_store = MemoryStore(tmp_path / "sync", embedder=HashEmbedder(32), clock=clock)
    sync_result = run_sync_scenario(sync_store)

    async def main() -> list[object]:
        store = await MemoryStore.aopen(tmp_path / "async", embedder=HashEmbedder(32), clock=clock)
        async with store:
            return await run_async_scenario(store)

    async_result = asyncio.run(main())
    assert sync_result == async_result
    assert sync_result[0][3][2] == "second turn"  # type: ignore[index]
    assert sync_result[1] is WriteAction.SKIPPED


async def test_async_errors_are_the_same_types(tmp_path: Path) -> None:
    store = await MemoryStore.aopen(tmp_path / "db", embedder=HashEmbedder(8))
    with pytest.raises(InvalidInputError, match="empty"):
        await store.aadd(" ", namespace="n")
    with pytest.raises(NotFoundError):
        await store.aget(["missing"], namespace="n")
    await store.aclose()


async def test_async_calls_do_not_block_the_loop(tmp_path: Path) -> None:
    store = await MemoryStore.aopen(tmp_path / "db", embedder=HashEmbedder(8))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await store.aadd_many([{"text": f"memory {i} words {i}"} for i in range(200)], namespace="n")
    await asyncio.gather(*(store.afts_search("memory", namespace="n") for _ in range(10)))
    task.cancel()
    assert ticks > 10  # the loop kept running other tasks while LanceDB worked
    await store.aclose()


def test_sync_api_works_inside_a_running_loop(tmp_path: Path) -> None:
    # e.g. a notebook: sync calls from code that runs inside an event loop
    async def main() -> int:
        store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(8))
        store.add("from inside a loop", namespace="n")
        return store.count("n")

    assert asyncio.run(main()) == 1
