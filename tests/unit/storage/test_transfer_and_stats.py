"""Export/restore (exact, through the table's commits) and the stats read, on a real table."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from memory_retrievers import InvalidInputError, MemoryStore
from memory_retrievers.config import StoreConfig
from memory_retrievers.storage.transfer import RestoreResult, parse_restore_record
from memory_retrievers.testing import ManualClock


def _fill(store: MemoryStore, clock: ManualClock) -> None:
    old = store.add("Alice prefers the dark theme", namespace="alice", kind="preference", tags=["ui"])
    clock.advance(hours=1)
    store.supersede(old.id, "Alice now prefers the light theme", namespace="alice")
    clock.advance(hours=1)
    store.add_many(
        [
            {"text": "hi there", "kind": "message", "session_id": "s1"},
            {"text": "hello, how are you?", "kind": "message", "session_id": "s1"},
        ],
        namespace="alice",
    )
    store.add("Bob likes tea", namespace="bob", entities=["Bob"], metadata={"source": "chat", "n": [1, 2]})
    store.record_access([old.id], namespace="alice", at=clock() + timedelta(minutes=5))


def test_export_restore_round_trips_every_field_and_vector_exactly(
    make_store: Callable[..., MemoryStore], clock: ManualClock, tmp_path: Path
) -> None:
    source = make_store()
    _fill(source, clock)
    exported = source.admin.export("alice")
    assert len(exported) == 4 and any(r["superseded_by"] for r in exported)
    assert any(r["access_count"] == 1 for r in exported)  # the pending access was flushed first
    text = [json.dumps(r) for r in exported]  # through JSON text, as the CLI writes it

    target = MemoryStore(tmp_path / "copy", embedder=source.embedder, clock=clock)
    result = target.admin.restore([json.loads(t) for t in text])
    assert (result.added, result.replaced, result.embedded) == (4, 0, 0)
    assert target.admin.export("alice") == exported  # ids, timestamps, stats, links, context, vectors
    again = target.admin.restore([json.loads(t) for t in text])
    assert (again.added, again.replaced) == (0, 4)
    assert target.admin.export("alice") == exported
    # The restored store searches like the original: supersession hides the old memory.
    assert [h.id for h in target.fts_search("theme", namespace="alice")] == [
        h.id for h in source.fts_search("theme", namespace="alice")
    ]
    target.close()


def test_restore_is_seen_by_the_recall_view_of_the_same_store(
    make_store: Callable[..., MemoryStore], clock: ManualClock
) -> None:
    store = make_store()
    store.add("Alice drinks green tea", namespace="alice")
    records = store.admin.export("alice")
    store.forget("alice")
    store.admin.restore(records)
    # vector_search reads through the view cache; a stale view would return nothing.
    assert [h.id for h in store.vector_search("green tea", namespace="alice")] == [records[0]["id"]]


def test_restore_without_vectors_embeds_and_rejects_bad_records_naming_them(
    make_store: Callable[..., MemoryStore], clock: ManualClock
) -> None:
    store = make_store()
    store.add("Alice drinks green tea", namespace="alice")
    records = store.admin.export("alice", include_vectors=False)
    assert "vector" not in records[0]
    store.forget("alice")
    assert store.admin.restore(records).embedded == 1
    bad = [dict(records[0], id="x2"), {**records[0], "id": "x3", "created_at": "yesterday"}]
    version_before = store.admin.stats().version
    with pytest.raises(InvalidInputError, match=r"record 1: created_at is not an ISO 8601 timestamp"):
        store.admin.restore(bad)
    assert store.admin.stats().version == version_before  # nothing written
    with pytest.raises(InvalidInputError, match="id is required"):
        parse_restore_record({k: v for k, v in records[0].items() if k != "id"}, StoreConfig())
    with pytest.raises(InvalidInputError, match="unknown field"):
        parse_restore_record({**records[0], "colour": "red"}, StoreConfig())


def test_export_pages_oldest_first(make_store: Callable[..., MemoryStore], clock: ManualClock) -> None:
    store = make_store()
    for i in range(5):
        store.add(f"memory number {i} about topic {i}", namespace="u")
        clock.advance(seconds=1)
    pages = [store.admin.export("u", limit=2, offset=o, include_vectors=False) for o in (0, 2, 4)]
    assert [r["text"] for page in pages for r in page] == [f"memory number {i} about topic {i}" for i in range(5)]


def test_stats_counts_namespaces_kinds_indexes_fragments_and_size(
    make_store: Callable[..., MemoryStore], clock: ManualClock
) -> None:
    store = make_store()
    _fill(store, clock)
    stats = store.admin.stats()
    counts = {n.namespace: n for n in stats.namespaces}
    assert counts["alice"].live == 3 and counts["alice"].superseded == 1
    assert counts["alice"].kinds == {"message": 2, "preference": 1}
    assert counts["bob"].kinds == {"fact": 1}
    assert stats.rows == 5 and stats.embedder == "hash-32" and stats.dimension == 32
    fts = [i for i in stats.indexes if i.columns == ("text",) and i.index_type == "FTS"]
    assert fts and fts[0].indexed_rows + fts[0].unindexed_rows == 5
    assert stats.fragments >= 1 and stats.versions >= 1 and stats.version >= stats.versions
    assert stats.disk_bytes is not None and stats.disk_bytes >= stats.data_bytes > 0
    store.admin.optimize()
    after = store.admin.stats()
    assert all(i.unindexed_rows == 0 for i in after.indexes) and after.fragments <= stats.fragments
    assert json.loads(json.dumps(after.to_dict()))["namespaces"][0]["namespace"] == "alice"


def test_item8_backups_with_expiring_memories_restore(
    make_store: Callable[..., MemoryStore], clock: ManualClock, tmp_path: Path
) -> None:
    # Issue 27 item 8: restore(export()) raised "expires_at must be a datetime, got str".
    source = make_store()
    source.add("the door code is 4711 until Friday", namespace="u", expires_at=clock() + timedelta(days=3))
    source.add("Alice likes tea", namespace="u")
    exported = source.admin.export("u")
    assert any(r["expires_at"] for r in exported)
    target = MemoryStore(tmp_path / "copy", embedder=source.embedder, clock=clock)
    try:
        assert target.admin.restore(exported).added == 2  # as export returns them
        assert target.admin.export("u") == exported
        assert target.admin.restore([json.loads(json.dumps(r)) for r in exported]).replaced == 2  # through JSON text
        assert target.admin.export("u") == exported
        clock.advance(days=4)  # the restored expiry still counts
        assert [m.text for m in target.list("u")] == ["Alice likes tea"]
        with pytest.raises(InvalidInputError, match="expires_at"):
            target.admin.restore([{**exported[0], "expires_at": "next Friday"}])
    finally:
        target.close()


@pytest.mark.parametrize("count", [2**63, 10**30])
def test_item11_an_access_count_past_int64_is_a_typed_error_naming_it(
    make_store: Callable[..., MemoryStore], count: int
) -> None:
    # Found by the red-team pass of issue 27: a raw OverflowError aborted the whole restore/import.
    store = make_store()
    store.add("Alice likes tea", namespace="u")
    (record,) = store.admin.export("u")
    with pytest.raises(InvalidInputError, match="access_count"):
        store.admin.restore([{**record, "id": "other", "access_count": count}])
    assert [m.id for m in store.list("u")] == [record["id"]]
    assert store.admin.restore([{**record, "access_count": 2**63 - 1}]).replaced == 1


def test_concurrent_restores_of_the_same_new_ids_report_each_added_once(
    make_store: Callable[..., MemoryStore], clock: ManualClock, tmp_path: Path
) -> None:
    # Issue 40 item 13: stores on one folder restoring the same export at once were all told
    # "added" for every memory. A restore reproduces a row's revision and updated_at exactly, so
    # "did my row land?" must be asked of the stamp the commit drew, not of those.
    source = make_store()
    source.add_many([{"text": f"fact number {i} about the garden", "id": f"m{i}"} for i in range(4)], namespace="u")
    records = source.admin.export("u")
    stores = [MemoryStore(tmp_path / "copy", embedder=source.embedder, clock=clock) for _ in range(3)]
    start = threading.Barrier(len(stores))

    def restore(store: MemoryStore) -> RestoreResult:
        start.wait()
        return store.admin.restore(records)

    try:
        with ThreadPoolExecutor(len(stores)) as pool:
            results = list(pool.map(restore, stores))
        assert sum(r.added for r in results) == len(records), results  # each id added by exactly one
        assert all(r.added + r.replaced == len(records) for r in results), results  # the others replaced it
        assert stores[0].admin.export("u") == records  # one row per id, as exported
    finally:
        for store in stores:
            store.close()
