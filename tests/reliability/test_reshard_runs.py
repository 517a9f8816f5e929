"""Issue 40 item 1: ``reshard()`` runs at once, and runs killed mid-way, lose nothing.

Each run takes the other's complete copy of a namespace for a crash's leftover and forgets it:
two runs started together both exited 0 and left a namespace with none of its memories in any
shard. A run now holds a lease on every table it touches (``shards/lease.py``): a second run is
refused with ``ReshardInProgressError``, and a run killed mid-way is taken over by the next one.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from memory_retrievers import HashEmbedder, ShardedMemoryStore

WORKER = Path(__file__).with_name("_reshard_worker.py")
NAMESPACES = [f"tenant-{i:02d}" for i in range(24)]
PER_NAMESPACE = 8


def load_worker() -> Any:
    spec = importlib.util.spec_from_file_location("_reshard_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fill(old: list[str], options: dict[str, str] | None) -> dict[str, set[str]]:
    """Every namespace's memories in the old shards; their ids by namespace."""
    with ShardedMemoryStore(old, embedder=HashEmbedder(32), storage_options=options) as store:
        return {
            ns: {
                m.id
                for m in store.add_many(
                    [{"text": f"{ns} remembers fact number {i}"} for i in range(PER_NAMESPACE)], namespace=ns
                )
            }
            for ns in NAMESPACES
        }


def check_nothing_lost(new: list[str], options: dict[str, str] | None, ids: dict[str, set[str]]) -> None:
    """Every memory is in its namespace's new shard, once."""
    with ShardedMemoryStore(new, embedder=HashEmbedder(32), storage_options=options) as store:
        found = {ns: [m.id for m in store.list(ns, limit=1000)] for ns in NAMESPACES}
    lost = {ns: len(ids[ns] - set(got)) for ns, got in found.items() if set(got) != ids[ns] or len(got) != len(ids[ns])}
    assert not lost, f"namespaces missing memories (or holding duplicates): {lost}"


def check_outcomes(outcomes: list[dict[str, Any]]) -> None:
    """One run moved the namespaces; the others were refused, or found nothing left to move."""
    assert not [o for o in outcomes if o["outcome"] == "error"], outcomes
    done = [o for o in outcomes if o["outcome"] == "done"]
    assert done and sum(1 for o in done if o["moved"]) == 1, outcomes


@pytest.mark.long
def test_two_reshard_runs_at_once_lose_nothing_on_a_local_folder(tmp_path: Path) -> None:
    old = [str(tmp_path / f"shard-{i}") for i in range(2)]
    new = [*old, str(tmp_path / "shard-2")]
    ids = fill(old, None)
    outcomes = load_worker().race(old, new, None, tmp_path, runs=2)
    check_outcomes(outcomes)
    check_nothing_lost(new, None, ids)
