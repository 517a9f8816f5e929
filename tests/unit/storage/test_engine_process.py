"""The engine process (what a forked child's store uses) gives the same results as LanceDB in-process.

``_fork.lancedb_inherited`` is forced true, so the store talks to LanceDB through
``storage.remote.RemoteTable`` without forking; every kind of call the store makes (reads, merges,
deletes, index builds, optimize, stats) runs once each way and the results must match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memory_retrievers.runtime.fork as _fork
from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore, StorageError
from memory_retrievers.storage.remote import RemoteTable
from memory_retrievers.testing import ManualClock

# Processes and the real model: the long tier (python -m pytest -m long).
pytestmark = pytest.mark.long


def _workload(store: MemoryStore, clock: ManualClock) -> dict[str, Any]:
    added = store.add_many(
        [{"text": f"Alice note {i} about tea and {'Berlin' if i % 2 else 'Paris'}", "id": f"m{i}"} for i in range(12)],
        namespace="alice",
    )
    clock.advance(days=1)
    store.add("Bob likes coffee", namespace="bob", id="b1", entities=["Bob"])
    store.update("m1", namespace="alice", text="Alice moved to Berlin")
    newer = store.supersede("m2", {"text": "Alice now prefers coffee", "id": "m2b"}, namespace="alice")
    store.delete(["m3"], namespace="alice")
    store.admin.optimize()  # index builds and compaction go through the engine too
    exported = store.admin.export("alice", include_vectors=False)
    return {
        "added": [a.action.value for a in added],
        "count": store.count(namespace="alice"),
        "fts": [h.id for h in store.fts_search("Berlin", namespace="alice", k=5)],
        "vector": [h.id for h in store.vector_search("tea in Paris", namespace="alice", k=5)],
        "entity": [h.id for h in store.entity_search(["bob"], namespace="bob")],
        "newest": [h.id for h in store.recency_search(namespace="alice", k=3)],
        "superseded_by": store.get("m2", namespace="alice").superseded_by == newer.id,
        "recall": [m.id for m in MemoryRetriever(store, namespace="alice").recall("Berlin tea", k=4).memories],
        "exported": sorted(r["id"] for r in exported),
        "indexes": sorted(i.name for i in store.admin.stats().indexes),
        "rows": store.admin.stats().rows,
    }


def test_the_engine_process_gives_the_same_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = {}
    for mode in ("in-process", "engine"):
        if mode == "engine":
            monkeypatch.setattr(_fork, "lancedb_inherited", lambda: True)
        clock = ManualClock()
        store = MemoryStore(tmp_path / mode, embedder=HashEmbedder(32), clock=clock)
        assert isinstance(store._table.handle, RemoteTable) == (mode == "engine")
        results[mode] = _workload(store, clock)
        if mode == "engine":
            engine = store._table.handle._client._process
            store.close()
            assert engine.wait(timeout=60) == 0  # closing the store stops its engine
        else:
            store.close()
    assert results["engine"] == results["in-process"]
    assert results["engine"]["count"] == 11 and results["engine"]["indexes"]


def test_an_engine_error_is_a_storage_error_and_a_dead_engine_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_fork, "lancedb_inherited", lambda: True)
    store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
    store.add("one", namespace="n")
    store._table.handle._client._process.kill()
    with pytest.raises(StorageError, match="engine process"):
        store.count(namespace="n")
    store.close()  # closing a store whose engine died still works (the pending flush is logged)
