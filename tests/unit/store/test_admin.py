"""Administration apart (``store.admin``, and only there) and the sync facade (issue 28)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore, ShardedMemoryStore
from memory_retrievers.shards.admin import ShardedAdmin
from memory_retrievers.storage.stats import StoreStats
from memory_retrievers.store.admin import StoreAdmin

ADMIN = ["optimize", "purge", "expire", "stats", "export", "restore", "flush_access"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)) as s:
        yield s


def test_admin_is_one_object_with_every_operation_and_its_async_twin(store: MemoryStore) -> None:
    assert isinstance(store.admin, StoreAdmin) and store.admin is store.admin
    for name in ADMIN:
        sync, twin = getattr(StoreAdmin, name), getattr(StoreAdmin, f"a{name}")
        assert inspect.iscoroutinefunction(twin) and not inspect.iscoroutinefunction(sync)
        assert sync.__doc__ == twin.__doc__ and sync.__name__ == name
        assert inspect.signature(sync) == inspect.signature(twin).replace(
            return_annotation=sync.__annotations__["return"]
        )


def test_admin_works_through_the_store(store: MemoryStore) -> None:
    store.add("Alice likes tea", namespace="alice")
    store.admin.optimize()
    exported = store.admin.export("alice")
    assert [r["text"] for r in exported] == ["Alice likes tea"]
    assert store.forget("alice") == 1
    assert store.admin.restore(exported).added == 1
    assert isinstance(store.admin.stats(), StoreStats) and store.admin.stats().rows == 1
    assert store.admin.expire() == 0 and store.admin.flush_access() == 0
    store.admin.purge()
    assert store.count(namespace="alice") == 1


def test_the_admin_operations_are_only_on_store_admin() -> None:
    # Before 1.0 there are no aliases: store.optimize() is an AttributeError, on a sharded store too.
    for name in [*ADMIN, *(f"a{n}" for n in ADMIN)]:
        assert hasattr(StoreAdmin, name) and hasattr(ShardedAdmin, name), name
        assert not hasattr(MemoryStore, name) and not hasattr(ShardedMemoryStore, name), name


def test_each_sync_method_is_its_async_twin_with_the_same_signature_and_docstring() -> None:
    twins = ["add", "add_many", "replace", "update", "supersede", "delete", "forget", "list", "count"]
    twins += ["namespaces", "vector_search", "fts_search", "entity_search", "recency_search"]
    for name in twins:
        sync, twin = getattr(MemoryStore, name), getattr(MemoryStore, f"a{name}")
        assert sync.__doc__ == twin.__doc__ and sync.__doc__ and not sync.__doc__.startswith("Async twin"), name
        assert list(inspect.signature(sync).parameters) == list(inspect.signature(twin).parameters), name
    assert MemoryStore.get.__doc__ and "NotFoundError" in MemoryStore.get.__doc__


def test_maintenance_holds_the_access_log_and_the_queue_not_the_store(store: MemoryStore) -> None:
    maintainer = store._maintainer
    assert maintainer._access is store._access and maintainer._queue is store._queue
    held = [v for v in vars(maintainer).values() if getattr(v, "__self__", None) is store]
    assert held == []  # no bound method of the facade: nothing below calls back up
