"""SIGKILL a writer at random points; the store must reopen with every acknowledged write intact."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore

OPERATIONS = ["add_many", "upsert", "supersede", "optimize"]
KILLS_PER_OPERATION = 3


@pytest.mark.parametrize("operation", OPERATIONS)
def test_sigkill_during_writes_loses_no_acknowledged_write(tmp_path: Path, operation: str, workers: Any) -> None:
    store_dir, acks = tmp_path / "db", tmp_path / "acks.jsonl"
    rng = random.Random(f"crash-{operation}")  # reproducible kill points
    for _ in range(KILLS_PER_OPERATION):
        proc = workers.start(store_dir, acks, operation, worker=0)
        time.sleep(rng.uniform(0.05, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL

    # Stale temporary files, as an interrupted write can leave them (aged past the safety window).
    table = store_dir / "memories.lance" / "data"
    planted = table / ".tmp_interrupted_write"
    planted.write_bytes(b"partial")
    os.utime(planted, (time.time() - 7200, time.time() - 7200))

    acked = workers.acks(acks)
    with MemoryStore(store_dir, embedder=HashEmbedder(32)) as store:
        ns = "w0"
        expected = {i for record in acked for i in record["ids"]}
        stored = {m.id: m for m in store.list(ns, limit=100_000, filter={"include_superseded": True})}
        missing = expected - set(stored)
        assert not missing, f"{len(missing)} acknowledged writes lost: {sorted(missing)[:5]}"
        # Nothing half-written: every row is complete and every supersession pair is consistent.
        for memory in stored.values():
            assert memory.text.startswith(ns) and memory.created_at is not None and memory.content_hash
            if memory.superseded_by is not None:
                assert stored[memory.superseded_by].supersedes == memory.id
        for record in acked:
            if "pair" in record:
                old, new = record["pair"]
                assert stored[old].superseded_by == new and stored[new].supersedes == old
            for key in record.get("text", {}):
                assert key in stored
        last_upsert: dict[str, str] = {}
        for record in acked:
            last_upsert.update(record.get("text", {}))
        for key, text in last_upsert.items():
            # the last acknowledged upsert, or a later one that committed but was not yet acknowledged
            assert int(stored[key].text.rsplit(" ", 1)[1]) >= int(text.rsplit(" ", 1)[1])
        # Still writable and searchable, and maintenance removed the leftover temporary file.
        store.add(f"{ns} after the crashes", namespace=ns)
        store.admin.optimize()
        assert not planted.exists()
        assert store.fts_search("crashes", namespace=ns, k=1)
    workers.summary(
        f"crash/{operation}",
        crashes_injected=KILLS_PER_OPERATION,
        writes_acknowledged=sum(len(record["ids"]) for record in acked),
        distinct_memories_acknowledged=len(expected),
        distinct_memories_found=len(expected & set(stored)),
        lost=len(missing),
    )
