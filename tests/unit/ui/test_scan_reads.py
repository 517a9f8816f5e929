"""The review scan reads only what it can report: live memories of kinds a write dedups, with vectors."""

from __future__ import annotations

from typing import Any

import pytest

from memory_retrievers import MemoryStore
from memory_retrievers.ui.scans import run_scan


async def test_a_chat_namespace_is_scanned_without_reading_its_messages_vectors(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 300 chat messages (exempt from dedup on write) and one duplicate pair of facts.
    await store.aadd_many(
        [{"text": f"user: message number {i} about the weather", "kind": "message"} for i in range(300)],
        namespace="chat",
    )
    await store.aadd("Alice's dog is called Rex", namespace="chat", kind="fact")
    await store.aadd("Alice's dog is called Rex", namespace="chat", kind="fact", dedup=False)
    with_vectors: list[int] = []
    original = store.aget

    async def aget(ids: Any, **kwargs: Any) -> Any:
        if kwargs.get("include_vector"):
            with_vectors.append(len(ids))
        return await original(ids, **kwargs)

    async def no_export(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the scan exported the namespace whole")

    monkeypatch.setattr(store, "aget", aget)
    monkeypatch.setattr(store.admin, "aexport", no_export)
    scan = await run_scan(store, "chat", 0)
    assert with_vectors == [2]  # the two facts, not the 300 messages
    (group,) = scan.groups
    assert group.keep_text == "Alice's dog is called Rex" and [o[2] for o in group.others] == [1.0]


async def test_a_memory_forgotten_during_the_scan_is_skipped(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await store.aadd("Bob likes green tea", namespace="bob", kind="fact")
    await store.aadd("Bob likes green tea", namespace="bob", kind="fact", dedup=False)
    await store.aadd("Bob lives in Oslo", namespace="bob", kind="fact")
    original = store.aget
    forgotten = False

    async def aget(ids: Any, **kwargs: Any) -> Any:
        nonlocal forgotten
        if not forgotten:  # between the listing and the vector read, another tab forgets one
            forgotten = True
            await store.adelete(a.id, namespace="bob")
        return await original(ids, **kwargs)

    monkeypatch.setattr(store, "aget", aget)
    scan = await run_scan(store, "bob", 0)
    assert scan.groups == ()  # its twin has no duplicate left, and nothing failed
