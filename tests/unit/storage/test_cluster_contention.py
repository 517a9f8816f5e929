"""Clustering passes of small chunks beside a steady writer (issue 29): nothing lost, nothing revived.

A pass commits ``cluster_chunk_rows`` rows at a time, so a small chunk size means many commits,
each racing the other writers. Run 10-row chunks beside a writer thread that adds, updates and
deletes continuously, the pass once failed with Lance's "Too many concurrent writers. Attempted 6
times, but failed on retry_timeout of 30.000 seconds" (a loaded 2-core machine): the chunk's merge
was preempted past Lance's own retry budget. A chunk is now sent again on contention.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from memory_retrievers import NotFoundError, StorageError
from memory_retrievers.storage.table import MemoryTable

from .test_cluster import layout, open_store, write_round_robin, write_steadily

#: The message LanceDB 0.40 (lance 13) raised in the failing run, as the table layer wraps it.
PREEMPTED = (
    "LanceDB could not update memories: lance error: Too many concurrent writers. Attempted 6 times,"
    " but failed on retry_timeout of 30.000 seconds."
)


def test_a_chunk_preempted_by_other_writers_is_sent_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(tmp_path / "db", cluster_min_run_rows=10, cluster_chunk_rows=25) as store:
        write_round_robin(store, rounds=6, tag="x")  # 108 rows: 5 chunks
        rewrite, calls = MemoryTable.rewrite, []

        async def preempted(self: MemoryTable, data: pa.Table, **kwargs: Any) -> Any:
            calls.append(data.num_rows)
            if len(calls) in (2, 3, 5):  # the second chunk twice, the third once
                raise StorageError(PREEMPTED)
            return await rewrite(self, data, **kwargs)

        monkeypatch.setattr(MemoryTable, "rewrite", preempted)
        result = store.admin.cluster()
        monkeypatch.undo()

        assert calls == [25, 25, 25, 25, 25, 25, 25, 8]  # each chunk sent until it landed, none dropped
        assert (result.moved, result.skipped, result.runs_after) == (108, 0, 1)
        rows = layout(store)
        keys = [(r["namespace"], r["created_at"], r["id"]) for r in rows]
        assert len(rows) == 108 and keys == sorted(keys)


def test_a_chunk_failing_otherwise_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(tmp_path / "db", cluster_min_run_rows=10, cluster_chunk_rows=25) as store:
        ids = write_round_robin(store, rounds=6, tag="x")
        calls: list[int] = []

        async def broken(self: MemoryTable, data: pa.Table, **kwargs: Any) -> Any:
            calls.append(data.num_rows)
            raise StorageError("LanceDB could not update memories: disk full")

        monkeypatch.setattr(MemoryTable, "rewrite", broken)
        with pytest.raises(StorageError, match="disk full"):
            store.admin.cluster()
        monkeypatch.undo()

        assert calls == [25]
        assert len(layout(store)) == 108 and len(store.get(ids["user03"], namespace="user03")) == 18


@pytest.mark.parametrize(
    ("rounds", "passes"),
    # long: 4 rounds x 4 passes, about a third of the size the failure was seen at (6 x 6, which took
    # over 200 s of the long tier's budget); the preempted chunk itself is forced deterministically
    # by test_a_chunk_preempted_by_other_writers_is_sent_again
    [(2, 2), pytest.param(4, 4, marks=pytest.mark.long)],
)
def test_small_chunk_passes_beside_a_writer_lose_and_revive_nothing(tmp_path: Path, rounds: int, passes: int) -> None:
    path = tmp_path / "db"
    with open_store(path, cluster_min_run_rows=10, cluster_max_runs=1, cluster_chunk_rows=10) as store:
        seeded = write_round_robin(store, rounds=rounds, tag="seed")
        stop = threading.Event()
        log: dict[str, Any] = {"expect": {}, "gone": [], "errors": []}
        thread = threading.Thread(target=write_steadily, args=(path, stop, log))
        thread.start()
        try:
            results = [store.admin.cluster() for _ in range(passes)]
        finally:  # a pass that raises must not leave the writer running forever
            stop.set()
            thread.join(120)
        assert not log["errors"] and not thread.is_alive()
        assert sum(r.moved for r in results) > 0
        for ns, texts in log["expect"].items():
            assert {m.id: m.text for m in store.get(list(texts), namespace=ns)} == texts, ns
        for ns, id_ in log["gone"]:
            with pytest.raises(NotFoundError):
                store.get(id_, namespace=ns)
        stored = [r["id"] for r in layout(store)]
        assert len(stored) == len(set(stored))  # no row stored twice
        assert set(stored) == {i for ids in seeded.values() for i in ids} | {
            i for texts in log["expect"].values() for i in texts
        }
        final = store.admin.cluster()
        assert final.skipped == 0
