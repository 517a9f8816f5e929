"""Opening, closing, exiting and purging: nothing lost at exit, nothing left on disk after purge."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from lancedb.table import AsyncTable

from memory_retrievers import (
    ConfigError,
    DimensionMismatchError,
    EmbedderMismatchError,
    FilterError,
    FlushTimeoutError,
    HashEmbedder,
    InvalidInputError,
    MemoryRetriever,
    MemoryStore,
    RecallConfig,
    SchemaMismatchError,
    StorageError,
    StoreConfig,
    WriteAction,
)
from testing.threads import outcome_within

Make = Callable[..., MemoryStore]


def files_containing(folder: Path, *words: str) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            if any(w.lower().encode() in data for w in words):
                hits.append(str(path.relative_to(folder)))
    return hits


def test_a_table_folder_without_its_versions_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        store.add("a precious memory", namespace="u")
    shutil.rmtree(tmp_path / "db" / "memories.lance" / "_versions")
    with pytest.raises(StorageError, match=r"memories\.lance holds table data but no readable version"):
        MemoryStore(tmp_path / "db", embedder=HashEmbedder(16))
    assert not (tmp_path / "db" / "memories.lance" / "_versions").exists()  # nothing written over it


def test_close_still_closes_when_access_statistics_cannot_be_written(
    make_store: Make, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store()
    mem = store.add("a memory", namespace="u")
    store.record_access([mem.id], namespace="u")

    async def read_only(_data: object) -> None:
        raise StorageError("read-only file system")

    monkeypatch.setattr(store._table, "update", read_only)
    with caplog.at_level(logging.WARNING):
        store.close()
    assert "could not be written at close" in caplog.text
    with pytest.raises(StorageError, match="closed"):
        store.add("after close", namespace="u")


@pytest.mark.long
@pytest.mark.parametrize("optimized_first", [True, False], ids=["optimized first", "recalled only"])
def test_pending_access_statistics_are_written_at_exit_without_close(tmp_path: Path, optimized_first: bool) -> None:
    optimize = "store.admin.optimize()" if optimized_first else ""
    script = textwrap.dedent(
        f"""
        from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
        store = MemoryStore({str(tmp_path / "db")!r}, embedder=HashEmbedder(16))
        store.add_many([{{"text": f"the kettle {{i}} is in the kitchen"}} for i in range(3)], namespace="u")
        {optimize}  # an optimize starts the thread pool that exit stops before the close below
        MemoryRetriever(store, namespace="u").recall("where is the kettle?")  # records accesses, held in memory
        # no close(): the interpreter exits
        """
    )
    # The close at exit optimizes to write the accesses. It logged "closing a store at exit failed"
    # (RuntimeError: cannot schedule new futures after shutdown) once an optimize had run before;
    # and it ran after LanceDB's own exit hook had stopped its runtime, so that optimize never
    # returned: the program hung for the close timeout (300 s) before the same log line.
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=120)
    assert done.stderr == "", done.stderr
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        memories = store.list("u")
        assert len(memories) == 3
        assert all(m.access_count == 1 and m.last_accessed_at is not None for m in memories)


@pytest.mark.long
def test_an_exit_handler_registered_before_the_first_store_opens_still_uses_it(tmp_path: Path) -> None:
    # The hook that writes before LanceDB stops its runtime is registered when the first store
    # opens; the close stays registered at import. A first version closed the stores there, so an
    # app's shutdown hook registered at setup found its store closed and its write was lost.
    script = textwrap.dedent(
        f"""
        import atexit
        from memory_retrievers import HashEmbedder, MemoryRetriever, MemoryStore
        opened = {{}}
        atexit.register(lambda: opened["store"].add_later("the session ended", namespace="u"))
        opened["store"] = store = MemoryStore({str(tmp_path / "db")!r}, embedder=HashEmbedder(16))
        store.add_many([{{"text": f"the kettle {{i}} is in the kitchen"}} for i in range(3)], namespace="u")
        MemoryRetriever(store, namespace="u").recall("where is the kettle?")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=120)
    assert done.stderr == "", done.stderr
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(16)) as store:
        memories = {m.text: m for m in store.list("u")}
        assert "the session ended" in memories and len(memories) == 4
        assert all(m.access_count == 1 for text, m in memories.items() if "kettle" in text)


def test_purge_removes_forgotten_and_deleted_text_from_disk(make_store: Make) -> None:
    store = make_store()
    store.add_many([{"text": f"keep note {i}"} for i in range(20)], namespace="keep")
    store.add("my secret password is Zanzibar7", namespace="gone")
    doomed = store.add("the surprise party is for Quetzalcoatl", namespace="keep")
    store.admin.optimize()
    store.forget("gone")
    store.delete(doomed.id, namespace="keep")
    folder = Path(store.uri)
    assert files_containing(folder, "Zanzibar7", "Quetzalcoatl")  # still on disk before purge
    store.admin.purge()
    assert files_containing(folder, "Zanzibar7", "Quetzalcoatl") == []
    assert store.count("keep") == 20 and len(store.fts_search("note", namespace="keep", k=50)) == 20
    store.add("written after the purge", namespace="keep")
    assert store.fts_search("purge", namespace="keep")


FAR = timezone(timedelta(hours=23, minutes=59))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda s: s.list("u", filter={"created_after": datetime.min.replace(tzinfo=FAR)}),
            FilterError,
            "years 1-9999",
        ),
        (
            lambda s: s.add("x", namespace="u", created_at=datetime.min.replace(tzinfo=FAR)),
            InvalidInputError,
            "created_at",
        ),
        (
            lambda s: MemoryRetriever(s, namespace="u").recall("x", now=datetime.min.replace(tzinfo=FAR)),
            InvalidInputError,
            "now",
        ),
        (lambda s: s.add("x", namespace="u", metadata=_deep(5000)), InvalidInputError, "nested too deeply"),
        (lambda s: s.flush(timeout=0), InvalidInputError, "timeout must be a positive number"),
        (lambda s: s.close(timeout=True), InvalidInputError, "timeout must be a positive number"),
        (
            lambda s: StoreConfig(read_consistency_interval=timedelta(seconds=-1)),
            ConfigError,
            "read_consistency_interval",
        ),
        (lambda s: StoreConfig(write_batch_size=True), ConfigError, "write_batch_size must be a number"),
        (lambda s: RecallConfig(k=True), ConfigError, "k must be a number"),
        (lambda s: RecallConfig(weights={"vector": False}), ConfigError, "vector must be a number"),
        (
            lambda s: MemoryRetriever(s, namespace="u", config={"channels": {"candidate_depth": True}}),
            ConfigError,
            "candidate_depth",
        ),
    ],
)
def test_extreme_and_mistyped_arguments_are_typed_errors(store: MemoryStore, call, error, match) -> None:  # type: ignore[no-untyped-def]
    before = store.count("u", filter={"include_superseded": True})
    with pytest.raises(error, match=match):
        call(store)
    assert store.count("u", filter={"include_superseded": True}) == before


def _deep(levels: int) -> dict:
    root: dict = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


# ---------------------------------------------------------------- wrong embedder at open
@pytest.mark.parametrize("other", [HashEmbedder(64), HashEmbedder(32, name="another-model")])
def test_a_wrong_embedder_at_open_raises_one_error_type(store: MemoryStore, other: HashEmbedder) -> None:
    store.add("x", namespace="u")
    with pytest.raises(EmbedderMismatchError, match="pass the original embedder") as info:
        MemoryStore(Path(store.uri), embedder=other)
    assert isinstance(info.value, SchemaMismatchError) and isinstance(info.value, DimensionMismatchError)


# ---------------------------------------------------------------- use after close
def test_record_access_after_close_raises(make_store) -> None:
    store = make_store()
    mem = store.add("x", namespace="u")
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.record_access([mem.id], namespace="u")


def _held_until(release: threading.Event, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of LanceDB's table, held (a storage that stopped answering) until ``release`` is set."""

    async def held(*args: Any, **kwargs: Any) -> Any:
        while not release.is_set():
            await asyncio.sleep(0.01)
        return await method(*args, **kwargs)

    return held


def test_flush_and_close_past_their_deadline_raise_and_drop_nothing(
    make_store: Make, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Issue 40 item 13: flush() and close() had no deadline: a commit that never ended held them for good.
    store = make_store(config={"storage_timeout": None})
    store.add("the first memory builds the indexes", namespace="u")
    release = threading.Event()
    monkeypatch.setattr(AsyncTable, "add", _held_until(release, AsyncTable.add))
    try:
        pending = store.add_later("Alice likes green tea", namespace="u")  # acknowledged: queued
        for call in (store.flush, store.close):
            failed = outcome_within(lambda call=call: call(timeout=0.3))
            assert isinstance(failed, FlushTimeoutError) and failed.queued == 1, failed
        assert store.count("v") == 0  # close() raised: the store is still open (reads of "u" wait for its queued write)
    finally:
        release.set()
    store.close()
    assert pending.result(timeout=30).action is WriteAction.ADDED
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)) as reopened:
        assert sorted(m.text for m in reopened.list("u")) == [
            "Alice likes green tea",
            "the first memory builds the indexes",
        ]


def test_close_past_its_deadline_stops_running_maintenance_and_closes(
    make_store: Make, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(config={"optimize_after_commits": 2})
    release = threading.Event()
    monkeypatch.setattr(AsyncTable, "optimize", _held_until(release, AsyncTable.optimize))
    try:
        for text in ("Alice likes green tea", "Bob likes coffee", "Carol likes cocoa"):
            store.add(text, namespace="u")  # the second commit since the index build starts an optimize
        assert isinstance(outcome_within(lambda: store.flush(timeout=0.3)), FlushTimeoutError)
        assert outcome_within(lambda: store.close(timeout=0.3)) is None
        assert "stopped maintenance still running" in caplog.text
    finally:
        release.set()
    with pytest.raises(StorageError, match="closed"):
        store.add("after close", namespace="u")
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(32)) as reopened:
        assert reopened.count("u") == 3
