"""Item 3 of issue 27: an id is unique in the table, whatever the number of writing processes.

Four processes (one ``MemoryStore`` each) add a memory with the same new id at the same moment,
round after round. Lance rebases two concurrent inserts of one key as compatible (both only add
fragments), so without the write path's check the table held 2-4 rows with that id and every
writer was told ``ADDED``.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, MemoryStore

WORKER = Path(__file__).with_name("_same_id_worker.py")


def load_worker() -> Any:
    spec = importlib.util.spec_from_file_location("_same_id_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_unique(store: MemoryStore, acks: list[dict[str, Any]], writers: int, rounds: int) -> None:
    """One row per id; one writer told ADDED per id, the others UPDATED; the stored text is the last reported."""
    rows = store.list("n", limit=10 * writers * rounds)
    per_id = Counter(m.id for m in rows)
    assert per_id == {f"key-{i}": 1 for i in range(rounds)}, per_id
    assert len(acks) == writers * rounds
    by_round: dict[int, list[dict[str, Any]]] = {}
    for ack in acks:
        by_round.setdefault(ack["round"], []).append(ack)
    stored = {m.id: m.text for m in rows}
    for i, got in by_round.items():
        actions = Counter(a["action"] for a in got)
        assert actions == {"added": 1, "updated": writers - 1}, (i, got)
        assert stored[f"key-{i}"] in {a["text"] for a in got}


@pytest.mark.long
def test_item3_one_id_one_row_across_processes_on_a_local_folder(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with MemoryStore(str(store_dir), embedder=HashEmbedder(32)) as store:
        store.add("seed", namespace="other")
    writers, rounds = 4, 6
    acks = load_worker().race(str(store_dir), None, tmp_path, writers, rounds)
    with MemoryStore(str(store_dir), embedder=HashEmbedder(32)) as store:
        check_unique(store, acks, writers, rounds)


@pytest.mark.long
def test_concurrent_restores_of_one_new_id_across_processes_report_it_added_once(tmp_path: Path) -> None:
    # Issue 40 item 13: processes restoring the same new id were each told "added".
    store_dir = tmp_path / "store"
    with MemoryStore(str(store_dir), embedder=HashEmbedder(32)) as store:
        store.add("seed", namespace="other")
    writers, rounds = 2, 4
    acks = load_worker().race(str(store_dir), None, tmp_path, writers, rounds, op="restore")
    with MemoryStore(str(store_dir), embedder=HashEmbedder(32)) as store:
        check_unique(store, acks, writers, rounds)
