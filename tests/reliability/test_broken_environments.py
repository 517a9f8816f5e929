"""Broken environments: a clear, typed error that says what to do; never a silent empty store."""

from __future__ import annotations

import shutil
from pathlib import Path

import lancedb
import pytest

from memory_retrievers import DimensionMismatchError, HashEmbedder, MemoryStore, SchemaMismatchError, StorageError
from memory_retrievers.storage.schema import META_SCHEMA_VERSION, memory_schema


def filled(path: Path) -> MemoryStore:
    store = MemoryStore(path, embedder=HashEmbedder(32))
    store.add_many([{"text": f"memory {i}"} for i in range(5)], namespace="u")
    return store


def test_table_folder_removed_while_open(tmp_path: Path) -> None:
    store = filled(tmp_path / "db")
    shutil.rmtree(tmp_path / "db" / "memories.lance")
    with pytest.raises(StorageError, match="LanceDB could not"):
        store.list("u")
    with pytest.raises(StorageError):
        store.add("after the folder vanished", namespace="u")
    store.close()


def test_corrupted_manifest_is_a_storage_error_at_open(tmp_path: Path) -> None:
    filled(tmp_path / "db").close()
    for manifest in (tmp_path / "db" / "memories.lance" / "_versions").glob("*.manifest"):
        manifest.write_bytes(b"\x00garbage, not a lance manifest")
    with pytest.raises(StorageError, match="open"):
        MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))


def test_deleted_data_files_are_reported_not_returned_empty(tmp_path: Path) -> None:
    filled(tmp_path / "db").close()
    for data in (tmp_path / "db" / "memories.lance" / "data").glob("*.lance"):
        data.unlink()
    with pytest.raises(StorageError):
        store = MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))
        store.list("u")


def test_embedder_dimension_changed(tmp_path: Path) -> None:
    filled(tmp_path / "db").close()
    with pytest.raises(DimensionMismatchError, match="new table_name/path for the new model"):
        MemoryStore(tmp_path / "db", embedder=HashEmbedder(64))
    with pytest.raises(SchemaMismatchError, match="pass the original embedder"):
        MemoryStore(tmp_path / "db", embedder=HashEmbedder(32, name="another-model"))


@pytest.mark.parametrize(("version", "advice"), [(0, "export it with the older version"), (99, "upgrade")])
def test_schema_of_another_version(tmp_path: Path, version: int, advice: str) -> None:
    schema = memory_schema(32, HashEmbedder(32).name)
    schema = schema.with_metadata({**schema.metadata, META_SCHEMA_VERSION: str(version).encode()})
    lancedb.connect(tmp_path / "db").create_table("memories", schema=schema)
    with pytest.raises(SchemaMismatchError, match=advice):
        MemoryStore(tmp_path / "db", embedder=HashEmbedder(32))


def test_path_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "not-a-folder"
    target.write_text("x")
    with pytest.raises(StorageError):
        MemoryStore(target, embedder=HashEmbedder(32))


def test_optimize_removes_only_stale_temporary_files(tmp_path: Path) -> None:
    import os
    import time

    store = filled(tmp_path / "db")
    data = tmp_path / "db" / "memories.lance" / "data"
    stale, fresh = data / ".tmp_stale", data / "in-flight.tmp"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"y")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    store.admin.optimize()
    assert not stale.exists() and fresh.exists()  # a young file may belong to a write in flight
    assert store.count("u") == 5
    store.close()


async def test_maintenance_retries_commit_conflicts_and_defers_compaction(caplog: pytest.LogCaptureFixture) -> None:
    from memory_retrievers.storage import conflicts as store_module

    calls = {"n": 0}

    async def conflicted_twice() -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise RuntimeError("lance error: Retryable commit conflict for version 7")
        return "done"

    assert await store_module.retry_conflicts("build indexes", conflicted_twice) == "done" and calls["n"] == 3

    async def always_conflicted() -> None:
        raise RuntimeError("Retryable commit conflict for version 9")

    with pytest.raises(StorageError, match="build indexes"):
        await store_module.retry_conflicts("build indexes", always_conflicted)
    with caplog.at_level("WARNING"):
        assert await store_module.retry_conflicts("optimize the table", always_conflicted, defer_ok=True) is None
    assert "optimize the table was deferred" in caplog.text

    async def broken() -> None:
        raise RuntimeError("disk I/O error")

    with pytest.raises(StorageError, match="disk I/O error"):
        await store_module.retry_conflicts("optimize the table", broken, defer_ok=True)
