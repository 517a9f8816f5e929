"""Administration apart (``store.admin``), the deprecated old spellings, and the sync facade (issue 28)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
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


@pytest.mark.parametrize("name", ADMIN)
def test_the_old_spellings_warn_naming_store_admin_and_still_work(store: MemoryStore, name: str) -> None:
    store.add("Bob reads", namespace="bob")
    args: dict[str, tuple[object, ...]] = {"export": ("bob",), "restore": ([],)}
    with pytest.warns(
        DeprecationWarning, match=rf"MemoryStore\.{name}\(\) is deprecated; use store\.admin\.{name}\(\)"
    ):
        result = getattr(store, name)(*args.get(name, ()))  # codemod: keep
    expected = getattr(store.admin, name)(*args.get(name, ()))
    if name == "stats":
        assert result.rows == expected.rows == 1
    elif name == "restore":
        assert result.added == expected.added == 0
    else:
        assert result == expected


async def test_the_old_async_spellings_warn_too(store: MemoryStore) -> None:
    await store.aadd("Carol swims", namespace="carol")
    with pytest.warns(DeprecationWarning, match=r"store\.admin\.aexport\(\)"):
        exported = await store.aexport("carol")  # codemod: keep
    assert [r["text"] for r in exported] == ["Carol swims"]
    with pytest.warns(DeprecationWarning, match=r"store\.admin\.aoptimize\(\)"):
        await store.aoptimize()  # codemod: keep


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
